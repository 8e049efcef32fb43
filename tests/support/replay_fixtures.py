"""Fixtures for the replay tests: real harvests of the sample site, then replay with the site gone.

``archives`` (session) harvests the sample site into one collections root: ``two`` (versions 1, 2)
and ``three`` (versions 1, 2, 3), each run a real ``harvester.run.Harvest`` over a real socket.
The live site is stopped as soon as the harvests end, so every replay test also checks that
nothing is fetched from it. ``strata_server`` runs ``strata serve`` on that root in a subprocess;
``wayback_server`` runs pywb's unmodified ``wayback`` on the same root.

The root ``tests/conftest.py`` loads this module as a plugin; test modules never import its fixtures. The session
fixtures exist once however many modules use them.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from demo.sample_site import serve_sample_site
from index.cdx import cdxj
from index.collection import Collection
from index.state import HarvestState
from tests.conftest import VENV_BIN, Wayback, free_port, harvest
from tests.support.processes import stop_process


@dataclasses.dataclass
class Archive:
    root: Path
    name: str
    base_url: str  # the (now stopped) live site, e.g. http://127.0.0.1:PORT
    snapshots: list[str]  # one per run; run i harvested version i + 1

    def url(self, path: str) -> str:
        return self.base_url + path

    def path(self, url: str) -> str:
        parts = urlsplit(url)
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    def cdx(self) -> list[dict]:
        return list(cdxj.iter_index(Collection(self.root, self.name).cdxj_path))

    def urls(self) -> list[str]:
        """Archived URLs (not the runs' reports, which pywb's indexer indexes too)."""
        return sorted({line["url"] for line in self.cdx() if not line["url"].startswith("urn:strata:run:")})

    def captures(self, url: str | None = None) -> list[dict]:
        with HarvestState(Collection(self.root, self.name).db_path) as state:
            return state.captures(url=url)

    def version_at(self, snapshot: str) -> int:
        return self.snapshots.index(snapshot) + 1


def harvest_versions(root: Path, name: str, versions: tuple[int, ...]) -> Archive:
    snapshots = []
    with serve_sample_site(versions[0]) as site:
        for version in versions:
            site.version = version
            summary = harvest(root, site, name=name)
            assert summary["status"] == "finished", summary
            snapshots.append(summary["snapshot"])
        base_url = site.base_url
    return Archive(root, name, base_url, snapshots)


@pytest.fixture(scope="session")
def archives(tmp_path_factory) -> dict[str, Archive]:
    root = tmp_path_factory.mktemp("replay") / "collections"
    root.mkdir()
    return {"two": harvest_versions(root, "two", (1, 2)), "three": harvest_versions(root, "three", (1, 2, 3))}


@pytest.fixture(scope="session")
def replay_root(archives) -> Path:
    return archives["three"].root


@pytest.fixture(scope="session")
def app(replay_root):
    from replay import create_app

    return create_app(replay_root)


@pytest.fixture
def client(app):
    return app.test_client()


class StrataServer:
    """``strata serve`` in a subprocess."""

    def __init__(self, root: Path, log_path: Path):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        # The access log goes to a file: a pipe nobody reads fills up and blocks the server.
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [str(VENV_BIN / "strata"), "serve", "--root", str(root), "--port", str(self.port)],
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=env,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(self.base_url + "/", timeout=1.0)
                return
            except httpx.HTTPError as exc:
                if self.proc.poll() is not None:
                    raise RuntimeError("strata serve exited: " + log_path.read_text()[-2000:]) from exc
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("strata serve did not start within 30 s")

    def stop(self) -> None:
        stop_process(self.proc)


@pytest.fixture(scope="session")
def strata_server(replay_root):
    server = StrataServer(replay_root, replay_root.parent / "strata-serve.log")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def wayback_server(replay_root):
    server = Wayback(replay_root)  # its request log goes to a file
    yield server
    server.stop()


@pytest.fixture
def reused(monkeypatch) -> list[bool]:
    """For each record the warcserver looks up in its memo from now on: whether it was reused."""
    seen: list[bool] = []
    from replay.recordmemo import RecordMemo

    record = RecordMemo.record

    def counting_record(memo, key, raw):
        got = record(memo, key, raw)
        seen.append(got is not None)
        return got

    monkeypatch.setattr(RecordMemo, "record", counting_record)
    return seen
