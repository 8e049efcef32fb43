"""Shared fixtures: the sample site on a real socket, collection roots, harvests, and a real pywb.

Every fixture reaches the tests from here: the ones defined below, and those of the support modules
named in ``pytest_plugins`` (replay archives and servers, the searched collection, the staff
console). Test modules never import a fixture."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from demo.sample_site import serve_sample_site
from harvester.job import validate_job
from harvester.run import Harvest
from index.collection import Collection
from strata import eventloop
from tests.support import hostile
from tests.support.processes import stop_process

pytest_plugins = [
    "tests.support.replay_fixtures",
    "tests.support.replay_cjk_fixtures",
    "tests.support.search_fixtures",
    "tests.support.meta_fixtures",
    "tests.support.staff_fixtures",
    "tests.support.access_fixtures",
    "tests.support.banner_fixtures",
    "tests.support.history_fixtures",
    "tests.support.redis_server",
]

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


@pytest.fixture(autouse=True)
def _no_outer_redis(monkeypatch):
    """The suite's backend is chosen by its fixtures (``backend``), never by the shell's STRATA_REDIS."""
    monkeypatch.delenv("STRATA_REDIS", raising=False)


@pytest.fixture
def site():
    """The sample site, version 1, on an ephemeral 127.0.0.1 port."""
    with serve_sample_site(version=1, routes=hostile.resolve) as server:
        yield server


@pytest.fixture
def root(tmp_path) -> Path:
    """A collections root named `collections`, as an unmodified pywb expects under its directory."""
    path = tmp_path / "collections"
    path.mkdir()
    return path


def sample_job(site, **overrides):
    values = {"seeds": [site.base_url + "/"], "delay": 0.0, "depth": 6, "timeout": 10.0, **overrides}
    return validate_job("test", values)


def harvest(root: Path, site, name: str = "sample", mode: str | None = None, **overrides) -> dict:
    coll = Collection.open(root, name, create=True)
    return eventloop.run(Harvest(coll, sample_job(site, **overrides), mode=mode).run())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Wayback:
    """pywb's own unmodified `wayback` server over a collections root, in a subprocess."""

    def __init__(self, root: Path):
        self.root = root
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        # wayback logs every request to stderr: a file, not a pipe nobody drains (which blocks it)
        self.log = open(root.parent / "wayback.log", "w+b")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [str(VENV_BIN / "wayback"), "-p", str(self.port), "-b", "127.0.0.1", "-d", str(root.parent)],
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            env=env,
            cwd=str(root.parent),
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(self.base_url + "/", timeout=1.0)
                return
            except httpx.HTTPError as exc:
                if self.proc.poll() is not None:
                    self.log.seek(0)
                    raise RuntimeError("wayback exited: " + self.log.read().decode()[-2000:]) from exc
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("wayback did not start within 30 s")

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.close()


@pytest.fixture
def wayback_factory():
    started = []

    def start(root: Path) -> Wayback:
        server = Wayback(root)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
