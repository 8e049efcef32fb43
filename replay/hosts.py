"""One server, two origins: the staff console on its own host name, public replay on every other.

Archived pages run their own JavaScript on the replay origin. If the staff console shared that
origin, an archived script could act with a staff session (ArchiveBox CVE-2023-45815); cookies
ignore ports, so a second port is not enough. ``HostDispatcher`` sends requests whose ``Host`` is
one of the staff host names to the staff app and everything else to the replay app; the staff
app also refuses any other host itself (``TRUSTED_HOSTS``), so it cannot be reached through the
archive's name even if mounted wrongly.

``build_site`` builds both apps for ``strata serve --staff-host NAME``; ``start_services`` starts
``strata worker`` (with its scheduler) as a child process for a single-machine install.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from replay.origins import bare_host as _bare_host
from strata.errors import ConfigError


class HostDispatcher:
    """WSGI: the staff app for ``staff_hosts`` (names without port), the replay app for the rest."""

    def __init__(self, replay_app, staff_app, staff_hosts: Iterable[str]):
        self.replay_app = replay_app
        self.staff_app = staff_app
        self.staff_hosts = frozenset(_bare_host(h) for h in staff_hosts)
        if not self.staff_hosts:
            raise ConfigError("give the staff console a host name of its own, e.g. --staff-host staff.example.org")

    def app_for(self, environ) -> Callable[..., Iterable[bytes]]:
        host = environ.get("HTTP_HOST") or environ.get("SERVER_NAME") or ""
        return self.staff_app if _bare_host(host) in self.staff_hosts else self.replay_app

    def __call__(self, environ, start_response):
        return self.app_for(environ)(environ, start_response)


def build_site(
    root: Path,
    staff_host: str,
    archive_url: str | None = None,
    replay_config: dict | None = None,
    staff_config: dict | None = None,
    restricted_host: str | None = None,
    restricted_url: str | None = None,
):
    """The WSGI application ``strata serve --staff-host`` runs: replay everywhere, staff on its host,
    and with ``restricted_host`` the restricted replay host (replay that answers staff sessions the
    console issues; ``replay.access``)."""
    from replay import create_app
    from replay.staff import create_staff_app

    if archive_url and _bare_host(archive_url.split("://", 1)[-1].split("/", 1)[0]) == _bare_host(staff_host):
        raise ConfigError(
            "the staff host and the archive host must differ: archived pages would run next to the staff session"
        )
    replay_settings = dict(replay_config or {})
    if archive_url:
        replay_settings.setdefault("public_url", archive_url)  # citations name the public host, not the restricted one
    staff_settings = {"staff_hosts": [_bare_host(staff_host)], "archive_url": archive_url, **(staff_config or {})}
    if restricted_host:
        restricted = _bare_host(restricted_host)
        archive = _bare_host(archive_url.split("://", 1)[-1].split("/", 1)[0]) if archive_url else None
        if restricted in (_bare_host(staff_host), archive):
            raise ConfigError(
                "--restricted-host: give it a name of its own, neither the staff host nor the archive host"
            )
        replay_settings["restricted_hosts"] = [restricted]
        replay_settings.setdefault("staff_url", staff_config.get("staff_url") if staff_config else None)
        staff_settings["restricted_url"] = restricted_url or f"http://{restricted}"
    return HostDispatcher(
        create_app(Path(root), replay_settings), create_staff_app(Path(root), staff_settings), [staff_host]
    )


def start_services(root: Path, allow_networks: Iterable[str] = (), parallel: int = 2) -> subprocess.Popen:
    """``strata worker --with-scheduler`` as a child process (stop it with ``terminate()``: the worker
    stops its runs cleanly and queues them again). On Linux the kernel sends it SIGTERM when this
    process dies, however it dies (``kill -9`` included): an orphaned worker would keep its label's
    lock, and the next ``serve --with-worker`` would start a worker that exits at once."""
    args = [
        sys.executable,
        "-P",  # not the working directory first on the path: a `cli` folder there is not Strata
        "-c",
        "from cli import main; main()",
        "worker",
        "--with-scheduler",
        "--root",
        str(root),
        "--parallel",
        str(parallel),
    ]
    for network in allow_networks:
        args += ["--allow-network", network]
    return subprocess.Popen(args, env=dict(os.environ), preexec_fn=_stop_with_parent)


def _stop_with_parent() -> None:
    """In the child, before exec: SIGTERM when the parent dies (Linux ``PR_SET_PDEATHSIG``)."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


def watch_services(services: subprocess.Popen, say: Callable[[str], None], every: float = 1.0):
    """A greenlet that says so, once, when the worker ``start_services`` started has stopped while
    the server runs (another worker holding its label, a crash): queued runs would otherwise wait
    for a worker that is not there, and nobody would know."""
    import gevent

    def watch() -> None:
        while services.poll() is None:
            gevent.sleep(every)
        say(
            f"strata serve: its worker stopped (exit {services.returncode}); queued harvests will not run "
            "until a worker does (see the worker's message above; strata worker --root ... starts one)"
        )

    return gevent.spawn(watch)
