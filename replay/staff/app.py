"""The staff console: ``create_staff_app(root, config)`` builds it.

A separate Flask application from the public replay app, meant to be served on its own host name
(``replay.hosts.HostDispatcher`` sends the staff host here, everything else to replay), so that
archived JavaScript, which runs on the replay origin, never runs next to a staff session.

Every request passes, in order (``replay.staff.security``): the host check (``staff_hosts``), the
request size cap, session loading, the refusal of requests that other sites' pages send in the
background, authentication (every endpoint but the login page and static files), and the CSRF
check on every request that is not GET/HEAD/OPTIONS. No GET handler changes state.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

from flask import Flask
from flask.sessions import SessionInterface

from harvester.guard import NetworkPolicy
from replay.access import networks
from replay.staff.context import EXTENSION
from replay.staff.logins import HashRunner, LoginThrottle
from strata.errors import ConfigError
from strata.settings import Setting, apply_settings, check_bool, check_int


def _hosts(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError("expected a list of host names")
    return tuple(v.strip().lower() for v in value)


def _optional_url(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not value.startswith(("http://", "https://")):
        raise ValueError("expected an http(s) base URL such as http://archive.example.org")
    return value.rstrip("/")


def _https(value: Any) -> str | bool:
    if value not in ("auto", True, False):
        raise ValueError("expected 'auto', true or false")
    return value


def _networks(value: Any) -> tuple[str, ...]:
    items = _hosts(value) if value else ()
    try:
        NetworkPolicy.from_strings(items)
    except ConfigError as exc:
        raise ValueError(exc.message) from None
    return items


def _proxies(value: Any) -> tuple[str, ...]:
    return networks(value)


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise ValueError("expected a backend name such as 'sqlite'")
    return value


STAFF_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "staff_hosts",
        (),
        _hosts,
        "Host names the console answers to (others get 400). Empty: any (tests, or behind a dispatcher).",
    ),
    Setting(
        "archive_url",
        None,
        _optional_url,
        "Base URL of the public replay site, for links to snapshots (e.g. http://archive.example.org).",
    ),
    Setting(
        "https",
        "auto",
        _https,
        "Mark cookies Secure: 'auto' when the request came over HTTPS, or always (true) / never (false).",
    ),
    Setting(
        "allow_networks",
        (),
        _networks,
        "Non-public address ranges that URLs entered in the console may reach (SSRF guard), e.g. 10.0.0.0/8.",
    ),
    Setting(
        "max_request_size", 64 * 1024, check_int(1024, 16 * 1024 * 1024), "Largest request body accepted, in bytes."
    ),
    Setting("session_hours", 12, check_int(1, 24 * 30), "A login lasts at most this long."),
    Setting("idle_minutes", 120, check_int(1, 24 * 60), "A login ends after this long without a request."),
    Setting(
        "queue_backend",
        "auto",
        _name,
        "Run queue backend: auto (the root's: Redis when STRATA_REDIS or the root's settings name one), sqlite, redis.",
    ),
    Setting(
        "restricted_url",
        None,
        _optional_url,
        "Base URL of the restricted replay host (e.g. http://restricted.example.org), where staff open "
        "restricted captures with a session of their own; None: no restricted host.",
    ),
    Setting("restricted_minutes", 15, check_int(1, 24 * 60), "How long a restricted-host session lasts, in minutes."),
    Setting(
        "trusted_proxies",
        (),
        _proxies,
        "Addresses of reverse proxies whose X-Forwarded-For names the client (login pacing), as the replay app's.",
    ),
    Setting(
        "hsts_seconds",
        0,
        check_int(0, 2 * 365 * 24 * 3600),
        "Strict-Transport-Security max-age sent with answers over HTTPS (0: none).",
    ),
    Setting("debug", False, check_bool, "Let Flask show tracebacks (development only)."),
)


def build_config(values: dict | None) -> dict:
    return apply_settings(STAFF_SETTINGS, values, "staff")


def create_staff_app(root: Path, config: dict | None = None) -> Flask:
    settings = build_config(config)
    app = Flask(__name__, static_folder="static", static_url_path="/static")
    app.config.update(
        DEBUG=settings["debug"],
        PROPAGATE_EXCEPTIONS=False,
        MAX_CONTENT_LENGTH=settings["max_request_size"],
        MAX_FORM_MEMORY_SIZE=settings["max_request_size"],
        MAX_FORM_PARTS=200,
        TRUSTED_HOSTS=list(settings["staff_hosts"]) or None,
        SEND_FILE_MAX_AGE_DEFAULT=300,
    )
    app.session_interface = _NoFlaskSession()
    app.extensions[EXTENSION] = {
        "root": Path(root),
        "settings": settings,
        # the same allowance as the worker's: the setting plus STRATA_ALLOW_NETWORKS
        "policy": NetworkPolicy.from_env(settings["allow_networks"]),
        "trusted": tuple(ipaddress.ip_network(n) for n in settings["trusted_proxies"]),
        "throttle": LoginThrottle(),
        "hasher": HashRunner(),
    }

    from replay.staff import access, auth, describe, filters, jobs, qa, runs, security

    security.register(app)
    filters.register(app)
    app.register_blueprint(auth.bp)
    app.register_blueprint(jobs.bp)
    app.register_blueprint(runs.bp)
    app.register_blueprint(qa.bp)
    app.register_blueprint(access.bp)
    app.register_blueprint(describe.bp)
    app.jinja_env.globals["config_restricted"] = lambda: bool(settings["restricted_url"])
    return app


class _NoFlaskSession(SessionInterface):
    """Flask's signed-cookie session is not used: sessions live in the staff database
    (``replay.staff.users``), so logging out really ends them."""

    def open_session(self, app, request):
        return None

    def save_session(self, app, session, response) -> None:
        return None
