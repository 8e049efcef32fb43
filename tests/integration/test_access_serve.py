"""``strata serve --reading-room CIDR --reading-room-host NAME --trusted-proxy ADDR`` over a real socket:
the flags reach the application, and the level follows the connection's address (X-Forwarded-For only
from the proxy), on the reading-room host only: its captures never share the public origin."""

from __future__ import annotations

import subprocess
import time

import httpx
import pytest

from tests.conftest import VENV_BIN, free_port
from tests.support.processes import stop_process


def _serve(root, *flags):
    port = free_port()
    log = open(root.parent / f"serve-{port}.log", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [str(VENV_BIN / "strata"), "serve", "--root", str(root), "--port", str(port), *flags],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(base + "/", timeout=1.0)
            return proc, log, base
        except httpx.HTTPError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError((root.parent / f"serve-{port}.log").read_text()[-2000:]) from None
            time.sleep(0.1)


def _stop(proc, log) -> None:
    stop_process(proc)
    log.close()


ROOM = "room.localhost"


def _room(base: str, path: str, headers: dict | None = None) -> httpx.Response:
    """A request to the reading-room host (the server listens on 127.0.0.1; the Host header names it)."""
    return httpx.get(base + path, headers={"Host": f"{ROOM}:{base.rsplit(':', 1)[1]}", **(headers or {})})


@pytest.mark.slow
def test_reading_room_and_trusted_proxy_flags(ruled):
    page = f"/{ruled.name}/{ruled.snapshot}/{ruled.url('/news/page/2.html')}"
    search = f"/api/search?q=mknewstwo&c={ruled.name}"
    # this machine's address is the reading room: on its host, not on the public one
    proc, log, base = _serve(ruled.root, "--reading-room", "127.0.0.0/8", "--reading-room-host", ROOM)
    try:
        assert _room(base, page).status_code == 200
        assert _room(base, search).json()["hits"]
        assert httpx.get(base + page).status_code == 451
        assert httpx.get(base + search).json()["hits"] == []
        walled = _room(base, page).headers
        assert walled["cross-origin-resource-policy"] == "same-origin"
        assert "frame-ancestors 'self'" in walled["content-security-policy"]
    finally:
        _stop(proc, log)
    # another range is; 127.0.0.1 is a trusted proxy, so its X-Forwarded-For is believed
    flags = ("--reading-room", "10.20.0.0/16", "--reading-room-host", ROOM, "--trusted-proxy", "127.0.0.1")
    proc, log, base = _serve(ruled.root, *flags)
    try:
        assert _room(base, page).status_code == 451
        assert _room(base, page, {"X-Forwarded-For": "10.20.1.5"}).status_code == 200
        assert _room(base, page, {"X-Forwarded-For": "10.20.1.5, 198.51.100.7"}).status_code == 451
        assert _room(base, search).json()["hits"] == []
    finally:
        _stop(proc, log)
    # no trusted proxy: the header is the client's own words
    proc, log, base = _serve(ruled.root, "--reading-room", "10.20.0.0/16", "--reading-room-host", ROOM)
    try:
        assert _room(base, page, {"X-Forwarded-For": "10.20.1.5"}).status_code == 451
        assert _room(base, page, {"X-Pywb-ACL-User": "reading-room"}).status_code == 451
    finally:
        _stop(proc, log)


def test_a_reading_room_needs_a_host_of_its_own(ruled):
    run = subprocess.run(
        [str(VENV_BIN / "strata"), "serve", "--root", str(ruled.root), "--reading-room", "10.0.0.0/8"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "--reading-room-host" in run.stderr and "Traceback" not in run.stderr
