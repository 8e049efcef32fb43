"""One Chromium process owned by this Python process: Debian's ``/usr/bin/chromium``, headless, with
a fresh profile in a directory of its own, reached over the DevTools protocol.

Chromium is started by a keeper (``harvester.browser.keeper``), a small process in a session of its
own that holds the other end of a pipe from this one. When this process stops the browser, or dies
(SIGKILL included), the pipe closes and the keeper kills Chromium's process group and every process
that names the browser's directory (its crash handler leaves the group), then removes the
directory. Chromium's first process also dies with the keeper (``PR_SET_PDEATHSIG``), should the
keeper itself be killed; ``sweep`` removes what such a double kill leaves. So no Chromium process
outlives its owner, whatever kills it.

Flags: those FIELD-NOTES gives for these closed machines (no sandbox as root, no GPU, no QUIC, no
background networking), plus:

- ``--disable-features=HttpsUpgrades,...``: Chromium 156 asks for ``https://`` first when a page
  names ``http://``; the archive must request what the page named.
- ``--disable-site-isolation-trials``: a page's cross-site frames in its own renderer, so that
  interception on the page's session sees their requests.
- ``--proxy-server`` to a closed port on the loopback with ``--proxy-bypass-list=<-loopback>``
  (``dead_proxy=True``, for capture): every request is answered by interception
  (``harvester.browser.intercept``), so anything that would slip past it (a WebSocket, a
  request interception does not see) reaches a proxy that refuses, never the network.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from strata.errors import BrowserUnavailable

CHROMIUM = "/usr/bin/chromium"
# FIELD-NOTES' flags for these closed machines (the tests' Playwright launches use them too)
CLOSED_MACHINE_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
FLAGS = (
    "--headless",
    *CLOSED_MACHINE_FLAGS,
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-breakpad",
    "--mute-audio",
    "--hide-scrollbars",
    # A page in a context the DevTools protocol made counts as in the background: without these its
    # timers and frames are throttled, and IntersectionObserver callbacks (lazy images) come late or never.
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--disable-back-forward-cache",
    "--disable-ipc-flooding-protection",
    "--disable-hang-monitor",
    "--disable-client-side-phishing-detection",
    "--password-store=basic",
    "--metrics-recording-only",
    "--autoplay-policy=no-user-gesture-required",  # the media behaviour plays without a click
    # One renderer for a page and its frames, cross-site ones included: interception on the page's
    # session then pauses the requests of every frame and dedicated worker (harvester.browser.intercept).
    "--disable-site-isolation-trials",
    "--disable-features=HttpsUpgrades,HttpsFirstBalancedModeAutoEnable,MediaRouter,OptimizationHints,"
    "IsolateOrigins,site-per-process",
    # No first tab: the driver attaching while Chromium opens one could wait forever (Playwright's
    # own launches pass it too); each page is opened in a context of its own.
    "--no-startup-window",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)
# Port 9 (discard) on the loopback: nothing listens there, so a request past interception fails.
DEAD_PROXY = ("--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>")
WORKDIR_PREFIX = "strata-chromium-"
OWNER_FILE = "owner"
START_TIMEOUT = 40.0


@dataclass
class ChromiumProcess:
    """A running Chromium: its DevTools endpoint (``cdp_url``), its first process (``pid``, also its
    process group), its directory (``workdir``) and the keeper that cleans up after it."""

    workdir: Path
    pid: int
    port: int
    keeper: subprocess.Popen = field(repr=False)

    @property
    def cdp_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @classmethod
    def start(
        cls,
        *,
        parent: Path | None = None,
        dead_proxy: bool = True,
        extra_args: tuple[str, ...] = (),
        executable: str = CHROMIUM,
    ) -> ChromiumProcess:
        """Start Chromium with a fresh directory under ``parent`` (the system's temporary directory
        by default). Raises ``BrowserUnavailable`` when it cannot start."""
        check_executable(executable)
        if parent is not None:
            Path(parent).mkdir(parents=True, exist_ok=True)
            sweep(Path(parent))
        workdir = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX, dir=parent))
        (workdir / OWNER_FILE).write_text(str(os.getpid()))
        command = [executable, *FLAGS, *(DEAD_PROXY if dead_proxy else ()), *extra_args]
        keeper = subprocess.Popen(
            [sys.executable, "-P", "-m", "harvester.browser.keeper", str(workdir), *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a signal to the owner's group does not stop the cleanup
        )
        answer = _first_line(keeper, START_TIMEOUT)
        if "error" in answer or "port" not in answer:
            _close(keeper)
            shutil.rmtree(workdir, ignore_errors=True)
            raise BrowserUnavailable(f"Chromium did not start: {answer.get('error', 'no answer from its keeper')}")
        return cls(workdir, int(answer["pid"]), int(answer["port"]), keeper)

    @property
    def alive(self) -> bool:
        return self.keeper.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        """Close the keeper's pipe and wait for it to have killed Chromium and removed its directory."""
        _close(self.keeper, timeout)

    def __enter__(self) -> ChromiumProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def check_executable(executable: str = CHROMIUM) -> None:
    """``BrowserUnavailable``, saying what to install, when ``executable`` is not there."""
    if not shutil.which(executable):
        raise BrowserUnavailable(f"{executable} is missing: install Debian's chromium (apt-get install chromium)")


def _first_line(keeper: subprocess.Popen, timeout: float) -> dict:
    assert keeper.stdout is not None
    deadline = time.monotonic() + timeout
    data = b""
    while b"\n" not in data and time.monotonic() < deadline:
        readable, _, _ = select.select([keeper.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not readable:
            break
        chunk = os.read(keeper.stdout.fileno(), 4096)
        if not chunk:
            break
        data += chunk
    try:
        return json.loads(data.split(b"\n", 1)[0] or b"{}")
    except ValueError:
        return {"error": f"unreadable answer {data[:200]!r}"}


def _close(keeper: subprocess.Popen, timeout: float = 20.0) -> None:
    for pipe in (keeper.stdin, keeper.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    try:
        keeper.wait(timeout)
    except subprocess.TimeoutExpired:
        keeper.kill()  # the keeper is stuck: Chromium dies with it (PR_SET_PDEATHSIG)
        keeper.wait(5)


def sweep(parent: Path) -> list[Path]:
    """Remove what a Chromium of a dead owner left under ``parent`` (owner and keeper both killed):
    its processes, then its directory. Returns the directories removed."""
    from harvester.browser.keeper import clean_up

    removed = []
    for workdir in parent.glob(WORKDIR_PREFIX + "*"):
        try:
            owner = int((workdir / OWNER_FILE).read_text())
        except (OSError, ValueError):
            owner = None
        if owner is not None and _alive(owner):
            continue
        clean_up(str(workdir), None)
        removed.append(workdir)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False
