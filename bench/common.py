"""Helpers the benchmarks share: a measured child process, WARC statistics, a raw HTTP probe.

- :func:`run_measured` runs one command in a fresh child and reports its wall time and its own peak
  RSS (``os.wait4`` in a small wrapper process gives the rusage of that child alone;
  ``RUSAGE_CHILDREN`` would be the maximum over every child so far).
- :func:`scan_warcs` counts records by type and keeps each record's size on disk (its gzip member).
- :class:`RawClient` sends requests on one keep-alive socket and counts the exact bytes of each
  response (status line, headers, body, chunk framing), for the bandwidth floor's 304 sizes.
- :func:`compile_project` writes the bytecode of Strata's packages before a measured run.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

__all__ = [
    "Measured",
    "RawClient",
    "RawResponse",
    "WarcStats",
    "b32_sha1",
    "compile_project",
    "median",
    "run_measured",
    "scan_warcs",
    "validators",
]


PROJECT_PACKAGES = ("strata", "demo", "index", "harvester", "replay", "cli")


def compile_project() -> None:
    """Write the ``__pycache__`` bytecode of Strata's packages, as ``pip install`` does for an
    installed package. A checkout run with ``PYTHONDONTWRITEBYTECODE`` set (this machine sets it)
    would otherwise compile every module from source in every measured run: 0.1 s of CPU a run,
    which wget and an installed Strata do not pay. Python reads bytecode even with that variable."""
    import compileall

    root = Path(__file__).resolve().parent.parent
    for package in PROJECT_PACKAGES:
        compileall.compile_dir(root / package, quiet=1)


@dataclasses.dataclass
class Measured:
    returncode: int | None
    wall: float  # seconds, from spawn to exit
    maxrss: int  # bytes, the child's own peak resident set
    timed_out: bool
    cpu: float = 0.0  # seconds of CPU (user + system) the child used


# Runs the command as its own child and reports that child's peak RSS. The wrapper is a fresh, small
# interpreter: a child forked straight from the benchmark (which holds the whole site in memory)
# would report the benchmark's resident set as its own peak, since ru_maxrss counts the pages it
# shared before exec. Here the count starts from the wrapper's few megabytes.
_WRAPPER = """
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(f"{usage.ru_maxrss * 1024} {usage.ru_utime + usage.ru_stime:.3f}")
sys.exit(os.waitstatus_to_exitcode(status) % 256)
"""


def run_measured(
    cmd: Sequence[str],
    timeout: float,
    stdout: Path,
    stderr: Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Measured:
    """Run ``cmd`` as a fresh child; kill its process group after ``timeout`` seconds."""
    rss_file = stdout.with_suffix(stdout.suffix + ".maxrss")
    rss_file.unlink(missing_ok=True)
    started = time.monotonic()
    timed_out = False
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRAPPER, str(rss_file), *cmd],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, 9)
            proc.wait()
    wall = time.monotonic() - started
    maxrss, cpu = (rss_file.read_text().split() + ["0", "0"])[:2] if rss_file.exists() else ("0", "0")
    rss_file.unlink(missing_ok=True)
    return Measured(proc.returncode, wall, int(maxrss), timed_out, float(cpu))


@dataclasses.dataclass
class WarcStats:
    files: int = 0
    bytes: int = 0
    records: Counter = dataclasses.field(default_factory=Counter)  # by WARC-Type
    record_bytes: dict[str, list[int]] = dataclasses.field(default_factory=lambda: defaultdict(list))
    captures: dict[str, list[tuple[str, str | None, str | None]]] = dataclasses.field(
        default_factory=lambda: defaultdict(list)
    )  # url -> [(type, http status, payload digest)]

    def total(self, rtype: str) -> int:
        return sum(self.record_bytes.get(rtype, ()))


def scan_warcs(paths: Iterable[Path]) -> WarcStats:
    stats = WarcStats()
    for path in paths:
        stats.files += 1
        stats.bytes += path.stat().st_size
        with open(path, "rb") as fh:
            it = ArchiveIterator(fh)
            for record in it:
                rtype = record.rec_type
                stats.records[rtype] += 1
                url = record.rec_headers.get_header("WARC-Target-URI")
                status = record.http_headers.get_statuscode() if record.http_headers else None
                digest = record.rec_headers.get_header("WARC-Payload-Digest")
                stats.record_bytes[rtype].append(it.get_record_length())
                if url and rtype in ("response", "revisit", "resource"):
                    stats.captures[url].append((rtype, status, digest))
    return stats


def median(values: Sequence[int]) -> float:
    return statistics.median(values) if values else 0.0


def b32_sha1(data: bytes) -> str:
    """The payload digest as WARC writers spell it (base32 SHA-1, no prefix)."""
    return base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


@dataclasses.dataclass
class RawResponse:
    status: int
    head_bytes: int  # status line and headers, blank line included
    body_bytes: int  # payload as received (de-chunked, still content-encoded)
    wire_bytes: int  # everything the server sent for this response
    body: bytes = b""  # the payload (de-chunked, still content-encoded)


class RawClient:
    """HTTP/1.1 on one keep-alive socket to 127.0.0.1, counting bytes exactly. Only what
    ``SiteServer`` sends is understood (Content-Length or chunked framing; 304 has no body)."""

    def __init__(self, port: int, timeout: float = 10.0):
        self.port = port
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self.buf = b""

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _recv(self) -> None:
        data = self.sock.recv(256 * 1024)
        if not data:
            raise ConnectionError("server closed the connection")
        self.buf += data

    def _take(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._recv()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            self._recv()
        i = self.buf.index(b"\r\n") + 2
        data, self.buf = self.buf[:i], self.buf[i:]
        return data

    def get(self, path: str, headers: dict[str, str] | None = None) -> RawResponse:
        if self.sock is None:
            self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=self.timeout)
            self.buf = b""
        lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        while b"\r\n\r\n" not in self.buf:
            self._recv()
        end = self.buf.index(b"\r\n\r\n") + 4
        head, self.buf = self.buf[:end], self.buf[end:]
        status = int(head.split(b" ", 2)[1])
        fields = {}
        for line in head.split(b"\r\n")[1:]:
            if b":" in line:
                k, v = line.split(b":", 1)
                fields[k.strip().lower()] = v.strip()
        chunks: list[bytes] = []
        wire = 0
        if status == 304 or status < 200:
            pass
        elif b"content-length" in fields:
            chunks.append(self._take(int(fields[b"content-length"])))
            wire = len(chunks[0])
        elif fields.get(b"transfer-encoding", b"").lower() == b"chunked":
            while True:
                size_line = self._line()
                size = int(size_line.split(b";")[0], 16)
                wire += len(size_line) + size + 2
                chunks.append(self._take(size + 2)[:size])
                if size == 0:
                    break
        if fields.get(b"connection", b"").lower() == b"close":
            self.close()
        body = b"".join(chunks)
        return RawResponse(status, len(head), len(body), len(head) + wire, body)


def validators(resource) -> dict[str, str]:
    """The conditional headers a client holding ``resource`` (a ``site_server.Resource``) sends."""
    headers = {}
    if resource.etag:
        headers["If-None-Match"] = resource.etag
    if resource.last_modified:
        headers["If-Modified-Since"] = resource.last_modified
    return headers


REDIS_SERVER = "/usr/bin/redis-server"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(data_dir: Path) -> tuple[subprocess.Popen, str]:
    """Debian's redis-server on a free loopback port with its own data directory, no persistence;
    the process (stop it by PID) and its URL."""
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with open(data_dir / "redis.log", "wb") as log:
        proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data_dir), "--save", ""]
            + ["--appendonly", "no", "--daemonize", "no"],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("redis-server did not start")
