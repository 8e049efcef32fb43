"""The replay application's settings: one table, each with its default and help text.

``create_app(root, config)`` validates ``config`` against ``REPLAY_SETTINGS``; an unknown key or a
bad value is rejected with the setting's name and the reason (``ConfigError``).
"""

from __future__ import annotations

from typing import Any

from strata.settings import Setting, apply_settings, check_bool, check_float, check_int


def _networks(value: Any) -> tuple[str, ...]:
    from replay.access import networks

    return networks(value)


def _host_names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not all(isinstance(v, str) and v.strip() and "/" not in v for v in value or ()):
        raise ValueError("expected a list of host names such as restricted.example.org")
    return tuple(v.strip().lower() for v in value or ())


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError("expected a list of header names")
    return tuple(v.strip() for v in value)


def _optional_url(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not value.startswith(("http://", "https://")) or "/" in value.split("://", 1)[1]:
        raise ValueError("expected an http(s) origin such as https://content.example.org, with no path")
    return value


def _optional_str(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError("expected a string, or None to leave it out")
    return value or None


REPLAY_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "strip_headers",
        (
            "Refresh",
            "Clear-Site-Data",
            "NEL",
            "Report-To",
            "Reporting-Endpoints",
            "WWW-Authenticate",
            "Proxy-Authenticate",
            "Set-Cookie",
            "Set-Cookie2",
            "Service-Worker-Allowed",
            "Strict-Transport-Security",
        ),
        _names,
        "Response headers never sent with a replayed capture, however they came (archived ones not on "
        "replay.headers.PASSED are renamed X-Archive-Orig-* anyway); replay.isolation always strips some.",
    ),
    Setting("nearby_limit", 20, check_int(0, 1000), "How many nearby archived URLs a 'not archived' page lists."),
    Setting("calendar_limit", 1000, check_int(0, 1000), "How many captures the calendar page of a URL lists at most."),
    Setting(
        "reading_room",
        (),
        _networks,
        "Client address ranges of the reading room (CIDR, e.g. 10.20.0.0/16): they see reading-room captures.",
    ),
    Setting(
        "trusted_proxies",
        (),
        _networks,
        "Addresses of reverse proxies whose X-Forwarded-For is believed; from anyone else it is ignored.",
    ),
    Setting(
        "restricted_hosts",
        (),
        _host_names,
        "Host names of the restricted replay host (staff, with a cookie the console issues); empty: none.",
    ),
    Setting(
        "content_url",
        None,
        _optional_url,
        "Origin of the host that serves archived content alone (replay addresses), e.g. "
        "https://content.example.org; None: the pages' own host (single host, replay.origins).",
    ),
    Setting(
        "pages_url",
        None,
        _optional_url,
        "Origin of the archive's own pages (home, search, calendars), where the content host sends "
        "everything that is not a replay address.",
    ),
    Setting(
        "reading_room_hosts",
        (),
        _host_names,
        "Host names that give reading-room clients their level; empty: any host but the content and "
        "restricted ones (single host: reading-room captures then share the public pages' origin).",
    ),
    Setting(
        "hsts_seconds",
        0,
        check_int(0, 2 * 365 * 24 * 3600),
        "Strict-Transport-Security max-age sent with answers over HTTPS (0: none).",
    ),
    Setting("restricted_minutes", 15, check_int(1, 24 * 60), "How long a restricted-host cookie lasts, in minutes."),
    Setting(
        "staff_url",
        None,
        _optional_str,
        "The staff console's address, linked from the restricted host's sign-in notice.",
    ),
    Setting(
        "cdx_limit",
        10000,
        check_int(1, 1000000),
        "Most lines one /<coll>/cdx answer gives (a larger limit is lowered).",
    ),
    Setting(
        "cdx_time_limit", 10, check_float(0.1, 600), "Seconds one /<coll>/cdx query may take before it is answered 503."
    ),
    Setting(
        "search_export_limit",
        10000,
        check_int(1, 1000000),
        "Most hits one download of search results (/search/export.csv, .jsonl) holds; a cut file says so.",
    ),
    Setting(
        "public_url",
        None,
        _optional_str,
        "The public archive's address (e.g. https://archive.example.org) that 'Cite this' gives, on the restricted "
        "host too; None: the address the request came to (strata serve --staff-host sets it from --archive-url).",
    ),
    Setting(
        "default_collection",
        None,
        _optional_str,
        "The collection /web/<ts>/<url> addresses resolve in (None: the only collection, when there is one).",
    ),
    Setting("debug", False, check_bool, "Let Flask show tracebacks (development only; never on a public server)."),
)


def build_config(values: dict | None) -> dict:
    return apply_settings(REPLAY_SETTINGS, values, "replay")
