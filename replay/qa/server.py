"""The replay QA loads pages from: Strata's own application on its production server (gevent), in a
child process on a free port of the loopback, for the length of one QA.

``python -P -m replay.qa.server ROOT`` prints the port once it listens and serves until its stdin
closes (the QA stopped, or died however it died: the child also gets SIGTERM when its parent
dies, ``PR_SET_PDEATHSIG``). Replay answers it as it answers the reading room (``127.0.0.1`` is
its reading-room range): QA sees what readers on site see, so a capture hidden from them by an
access rule counts as failed in replay (451 or 404), and one open to the reading room does not.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

from strata.errors import StrataError

START_TIMEOUT = 60.0


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class QaReplayServer:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.proc: subprocess.Popen | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> QaReplayServer:
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-m", "replay.qa.server", str(self.root)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], START_TIMEOUT)
        line = self.proc.stdout.readline().strip() if ready else b""
        if not line.isdigit():
            self.stop()
            raise StrataError("the replay server for QA did not start")
        self.port = int(line)
        return self

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> QaReplayServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str]) -> int:
    from replay import create_app
    from replay.server import make_server

    app = create_app(Path(argv[0]), {"reading_room": ["127.0.0.1/32"]})
    server = make_server(app, "127.0.0.1", 0, log_requests=False)
    server.init_socket()
    print(server.socket.getsockname()[1], flush=True)

    def watch_stdin() -> None:  # the QA closes it, or is gone: nothing to finish, no state to save
        with contextlib.suppress(OSError):
            while os.read(0, 4096):
                pass
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
