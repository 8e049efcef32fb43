"""The keeper: the process that starts a run's Chromium and makes sure none of it outlives its owner.

``python -P -m harvester.browser.keeper WORKDIR CHROMIUM [FLAG ...]`` runs in a session of its own
(so a signal sent to the owner's process group does not reach it). It starts Chromium in another
new session whose leader dies with the keeper (``PR_SET_PDEATHSIG``; the keeper is their
subreaper, so every orphan of Chromium's is its child and reaped), with ``HOME`` and the XDG
directories inside ``WORKDIR`` (so every process Chromium starts, its crash handler included,
names ``WORKDIR`` on its command line), and answers one JSON line on stdout: ``{"pid": ..., "port":
...}`` once Chromium's DevTools endpoint listens, or ``{"error": ...}``.

Then it waits for its stdin to close. The owner holds the only write end: the pipe closes when the
owner closes it (a normal stop) or when the owner dies, however it dies (SIGKILL included: the
kernel closes a dead process's descriptors). The keeper then kills Chromium's process group and
every process whose command line names ``WORKDIR`` (Chromium's crash handler leaves the group),
waits until none is left, removes ``WORKDIR`` and exits. If Chromium exits first, the keeper
cleans up the same way and exits, and the owner finds the endpoint gone.

This module imports nothing of Strata's: it starts in a fresh interpreter, with nothing but the
standard library, and must stay small.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
START_TIMEOUT = 30.0  # seconds for Chromium to open its DevTools port
GONE_TIMEOUT = 10.0  # seconds for killed processes to disappear
ENDPOINT_FILE = "DevToolsActivePort"


def _child_setup() -> None:  # pragma: no cover - runs in the child between fork and exec
    os.setsid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def naming(workdir: str, exclude: int | None = None) -> list[int]:
    """Processes whose command line names ``workdir`` (other than ``exclude``)."""
    marker = os.fsencode(workdir)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (exclude, os.getpid()):
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(entry))
    return found


def _in_group(pgid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # fields after the name: state ppid pgrp ...; a zombie holds nothing
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
            found.append(int(entry))
    return found


def clean_up(workdir: str, pgid: int | None) -> bool:
    """Kill what is left of one Chromium and remove its directory. True when nothing is left."""
    deadline = time.monotonic() + GONE_TIMEOUT
    while True:
        left = set(naming(workdir))
        if pgid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            left.update(_in_group(pgid))
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap()
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for _ in range(5):  # the last ones killed may still be exiting
        time.sleep(0.02)
        _reap()
    shutil.rmtree(workdir, ignore_errors=True)
    return not left


def _reap() -> None:
    """Collect exited children (Chromium's leader is the keeper's child)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _wait_for_port(workdir: str, proc: subprocess.Popen) -> int:
    path = os.path.join(workdir, "profile", ENDPOINT_FILE)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Chromium exited at start (status {proc.returncode}); see {workdir}/chromium.log")
        try:
            with open(path, encoding="ascii") as fh:
                first = fh.readline().strip()
            if first.isdigit():
                return int(first)
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"Chromium did not open its DevTools port within {START_TIMEOUT:g} s")


def main(argv: list[str]) -> int:
    workdir, command = argv[0], argv[1:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the owner decides when Chromium stops
    # Chromium's orphans (its crash handler forks away from it) become the keeper's, which reaps
    # them: none is left a zombie under an init that does not reap (as in some containers).
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    env = dict(os.environ)
    for name, sub in (("HOME", "home"), ("XDG_CONFIG_HOME", "config"), ("XDG_CACHE_HOME", "cache")):
        env[name] = os.path.join(workdir, sub)
        os.makedirs(env[name], exist_ok=True)
    command = [*command, f"--user-data-dir={os.path.join(workdir, 'profile')}"]
    pgid = None
    answer: dict[str, object]
    try:
        with open(os.path.join(workdir, "chromium.log"), "wb") as log:
            proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                preexec_fn=_child_setup,  # safe: this process runs no threads
            )
        pgid = proc.pid
        port = _wait_for_port(workdir, proc)
        answer = {"pid": proc.pid, "port": port}
    except (OSError, RuntimeError) as exc:
        answer = {"error": str(exc)}
    try:
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    except OSError:  # the owner is gone already
        pass
    if "error" not in answer:
        stdin = sys.stdin.buffer
        while not stop:
            readable, _, _ = select.select([stdin], [], [], 0.5)
            if readable and not os.read(stdin.fileno(), 4096):
                break  # the owner closed the pipe, or died
            if proc.poll() is not None:
                break  # Chromium is gone on its own
            _reap()  # orphans that exited meanwhile
    clean_up(workdir, pgid)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
