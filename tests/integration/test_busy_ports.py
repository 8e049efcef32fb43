"""``strata serve`` and ``strata demo`` on a busy port: one clear line and exit 2, before any work;
the demo's sample site on a fixed port, so a second demo is incremental over the same URLs."""

from __future__ import annotations

import json
import socket
import subprocess

import pytest

from replay.server import serve
from strata.errors import ConfigError
from tests.conftest import VENV_BIN, free_port

STRATA = str(VENV_BIN / "strata")


@pytest.fixture
def busy_port():
    """A port on 127.0.0.1 that something listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        yield sock.getsockname()[1]


def strata(*args, root, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([STRATA, *args, "--root", str(root)], capture_output=True, text=True, timeout=timeout)


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_serve_on_a_busy_port_says_so_in_one_line(root, busy_port):
    line = one_error_line(strata("serve", "--port", str(busy_port), root=root, timeout=60))
    assert line == (
        f"Error: port {busy_port} on 127.0.0.1 is already in use (by another server, or an earlier "
        "strata serve or demo still running); stop it or choose another with --port PORT"
    )


def test_demo_serve_on_a_busy_port_stops_before_harvesting(root, busy_port):
    line = one_error_line(
        strata("demo", "--serve", "--port", str(busy_port), "--site-port", "0", root=root, timeout=60)
    )
    assert line.startswith(f"Error: port {busy_port} on 127.0.0.1 is already in use") and "--port PORT" in line
    assert not (root / "sample").exists()  # nothing harvested, no collection made


def test_demo_site_on_a_busy_port_names_the_option(root, busy_port):
    line = one_error_line(strata("demo", "--site-port", str(busy_port), root=root, timeout=60))
    assert line.startswith(f"Error: port {busy_port} on 127.0.0.1 is already in use") and "--site-port PORT" in line
    assert not (root / "sample").exists()


def test_the_server_s_own_listen_reports_a_busy_port_too(busy_port):
    """The early check can be raced; the real listen says the same."""
    with pytest.raises(ConfigError, match=f"port {busy_port} on 127.0.0.1 is already in use"):
        serve(lambda environ, start_response: [], "127.0.0.1", busy_port)


def test_the_demo_site_port_is_fixed_by_default():
    done = subprocess.run([STRATA, "demo", "--help"], capture_output=True, text=True, timeout=60)
    assert "--site-port" in done.stdout and "default: 8765" in done.stdout


@pytest.mark.slow
def test_a_second_demo_is_incremental_over_the_same_urls(root):
    port = str(free_port())
    first = json.loads(strata("demo", "--json", "--site-port", port, root=root).stdout)
    second = json.loads(strata("demo", "--json", "--site-port", port, root=root).stdout)
    assert [s["mode"] for s in first] == ["full", "incremental"]
    assert [s["mode"] for s in second] == ["incremental", "incremental"]
    assert all(s["errors"] == 0 and s["status"] == "finished" for s in first + second)
    # the second demo's v1 run rechecked the same URLs: most unchanged or 304, nothing new
    again = second[0]
    assert again["new"] == 0 and again["unchanged"] + again["not_modified"] > 0
