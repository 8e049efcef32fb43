"""``strata serve --with-worker``: its worker does not outlive it, and when the worker cannot run
(another holds its label) the server says so instead of serving on without one."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from tests.conftest import VENV_BIN
from tests.support.processes import stop_process
from tests.support.replay_fixtures import StrataServer

STRATA = str(VENV_BIN / "strata")


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(p) for p in fh.read().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def _serve(root, log) -> StrataServer:
    return StrataServer(root, log, ("--with-worker",))


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads /proc (Linux)")
def test_a_killed_server_takes_its_worker_with_it_and_the_next_one_says_when_it_has_none(root, tmp_path):
    log = tmp_path / "serve.log"
    first = _serve(root, tmp_path / "first.log")
    try:
        deadline = time.monotonic() + 20
        while not _children(first.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        (worker,) = _children(first.proc.pid)
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(10)
        deadline = time.monotonic() + 30
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(worker), "the worker outlived its server (an orphan holding its label)"
    finally:
        first.stop()
    # a worker that holds the label already: the next server's own worker cannot start; it says so
    holder = subprocess.Popen(
        [STRATA, "worker", "--root", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        time.sleep(2)
        second = _serve(root, log)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and b"its worker stopped" not in log.read_bytes():
                time.sleep(0.2)
            assert b"its worker stopped" in log.read_bytes()
        finally:
            second.stop()
    finally:
        stop_process(holder)
