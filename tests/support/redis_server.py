"""A real ``redis-server`` (Debian's) for the tests: on a free loopback port, with its own data
directory, append-only persistence (so a restart keeps what was written), stopped by its PID.

Fixtures: ``redis_server`` (one per session; ``stop()``/``start()`` for outage tests),
``redis_url`` (that server, emptied for each test), ``backend`` (each test run once on SQLite and
once on Redis, with ``STRATA_REDIS`` set for the second)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.processes import stop_process

REDIS_SERVER = "/usr/bin/redis-server"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self, data_dir: Path, port: int | None = None):
        if not shutil.which(REDIS_SERVER):
            pytest.fail(f"{REDIS_SERVER} is missing: apt-get install -y redis-server (.ci/run does)")
        self.dir = Path(data_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = port or _free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        log = open(self.dir / "redis.log", "ab")  # noqa: SIM115 (the child holds it; closed below)
        self.proc = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.dir),
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--daemonize",
                "no",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server exited: " + (self.dir / "redis.log").read_text()[-2000:])
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(64).startswith(b"+PONG"):
                        return self
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("redis-server did not answer within 15 s")

    def stop(self) -> None:
        if self.proc is None:
            return
        stop_process(self.proc)
        self.proc = None

    def client(self):
        import valkey

        return valkey.Valkey.from_url(self.url, decode_responses=True)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(redis_server) -> str:
    """The session's Redis, started again if a test stopped it, and emptied."""
    if redis_server.proc is None:
        redis_server.start()
    client = redis_server.client()
    client.flushall()
    client.close()
    return redis_server.url


@pytest.fixture(params=["sqlite", "redis"])
def backend(request, monkeypatch) -> str:
    """Run the test on each backend: ``STRATA_REDIS`` set to a fresh Redis for ``redis``."""
    if request.param == "redis":
        monkeypatch.setenv("STRATA_REDIS", request.getfixturevalue("redis_url"))
    else:
        monkeypatch.delenv("STRATA_REDIS", raising=False)
    return request.param
