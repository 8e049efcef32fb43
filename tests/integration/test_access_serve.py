"""``strata serve --reading-room CIDR --trusted-proxy ADDR`` over a real socket: the flags reach the
application, and the level follows the connection's address (X-Forwarded-For only from the proxy)."""

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


@pytest.mark.slow
def test_reading_room_and_trusted_proxy_flags(ruled):
    page = f"/{ruled.name}/{ruled.snapshot}/{ruled.url('/news/page/2.html')}"
    search = f"/api/search?q=mknewstwo&c={ruled.name}"
    # this machine's address is the reading room
    proc, log, base = _serve(ruled.root, "--reading-room", "127.0.0.0/8")
    try:
        assert httpx.get(base + page).status_code == 200
        assert httpx.get(base + search).json()["hits"]
    finally:
        _stop(proc, log)
    # another range is; 127.0.0.1 is a trusted proxy, so its X-Forwarded-For is believed
    proc, log, base = _serve(ruled.root, "--reading-room", "10.20.0.0/16", "--trusted-proxy", "127.0.0.1")
    try:
        assert httpx.get(base + page).status_code == 451
        assert httpx.get(base + page, headers={"X-Forwarded-For": "10.20.1.5"}).status_code == 200
        assert httpx.get(base + page, headers={"X-Forwarded-For": "10.20.1.5, 198.51.100.7"}).status_code == 451
        assert httpx.get(base + search).json()["hits"] == []
    finally:
        _stop(proc, log)
    # no trusted proxy: the header is the client's own words
    proc, log, base = _serve(ruled.root, "--reading-room", "10.20.0.0/16")
    try:
        assert httpx.get(base + page, headers={"X-Forwarded-For": "10.20.1.5"}).status_code == 451
        assert httpx.get(base + page, headers={"X-Pywb-ACL-User": "reading-room"}).status_code == 451
    finally:
        _stop(proc, log)
