"""Fixtures for the search tests: real harvests of the sample site (versions 1, 2, 3), the full-text
index updated after each run with ``index_run``, and the ground truth the tests compare with.

``searched`` (one per session) harvests into its own collections root; tests that damage an index
copy the collection first (``copy_collection``).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from demo.sample_site import SampleSite, serve_sample_site
from index.collection import Collection
from index.fulltext.update import index_run
from index.storage.state import HarvestState
from tests.conftest import harvest

NAME = "fixture"
VERSIONS = (1, 2, 3)


@dataclasses.dataclass
class Searched:
    root: Path
    name: str
    base_url: str
    runs: list[dict]  # harvest summaries, run i harvested version i + 1
    index_figures: list[dict]

    @property
    def coll(self) -> Collection:
        return Collection(self.root, self.name)

    def window(self, version: int) -> tuple[str, str]:
        """14-digit bounds holding exactly the captures of the run that harvested ``version``."""
        run = self.runs[version - 1]
        return _ts(run["started"]), run["snapshot"]

    def captured(self, version: int) -> dict[str, list[dict]]:
        """path -> captures of the run that harvested ``version`` (successful payloads only)."""
        run_id = self.runs[version - 1]["run_id"]
        with HarvestState(self.coll.db_path) as state:
            caps = state.captures(run_id=run_id)
        out: dict[str, list[dict]] = {}
        for cap in caps:
            ok = cap["status"] is not None and (200 <= cap["status"] < 300 or cap["status"] == 304)
            if ok and cap["url"].startswith(self.base_url):
                out.setdefault(cap["url"][len(self.base_url) :] or "/", []).append(cap)
        return out

    def expected(self, terms: list[str], versions=VERSIONS, exclude: list[str] = ()) -> set[str]:
        """Paths whose text in a harvested version contains one of ``terms`` (any letter case) and
        none of ``exclude``, captured in that version's run: the ground truth."""
        out: set[str] = set()
        for version in versions:
            captured = self.captured(version)
            hits = set().union(*(_containing(version, t) for t in terms))
            hits -= set().union(set(), *(_containing(version, t) for t in exclude))
            out |= {p for p in hits if p in captured}
        return out


def _containing(version: int, term: str) -> set[str]:
    variants = {term, term.lower(), term.capitalize(), term.title()}
    return set().union(*(SampleSite.containing(version, v) for v in variants))


def _ts(iso: str) -> str:
    return "".join(ch for ch in iso if ch.isdigit())[:14]


def harvest_and_index(root: Path, name: str = NAME, versions=VERSIONS, index_after=VERSIONS) -> Searched:
    runs, figures = [], []
    with serve_sample_site(versions[0]) as site:
        for version in versions:
            site.version = version
            # the harvester's own full-text hook is off: these tests decide when index_run runs
            summary = harvest(root, site, name=name, fulltext=False)
            assert summary["status"] == "finished", summary
            runs.append(summary)
            if version in index_after:
                figures.append(index_run(Collection(root, name), summary["run_id"]))
        base_url = site.base_url
    return Searched(root, name, base_url, runs, figures)


_KEY = pytest.StashKey[dict]()


@pytest.fixture
def searched(request, tmp_path_factory) -> Searched:
    store = request.config.stash.setdefault(_KEY, {})
    if "searched" not in store:
        root = tmp_path_factory.mktemp("search") / "collections"
        root.mkdir()
        store["searched"] = harvest_and_index(root)
    return store["searched"]


def copy_collection(src: Searched, dest_root: Path, name: str | None = None) -> Searched:
    name = name or src.name
    dest_root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src.root / src.name, dest_root / name)
    return dataclasses.replace(src, root=dest_root, name=name)
