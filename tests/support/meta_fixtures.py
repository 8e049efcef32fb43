"""Fixtures for the search tests of page metadata, boilerplate and publications: one real harvest
of the records office site (``tests.support.meta_site``), indexed by ``index_run`` as the harvester
does after a run. Harvested once per session; tests that change the index copy the collection."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from index.collection import Collection
from index.fulltext.update import index_run
from tests.conftest import harvest
from tests.support.meta_site import start_meta_site


@dataclasses.dataclass
class MetaHarvest:
    root: Path
    name: str
    base_url: str
    host: str
    run: dict
    figures: dict

    @property
    def coll(self) -> Collection:
        return Collection(self.root, self.name)


_KEY = pytest.StashKey[MetaHarvest]()


@pytest.fixture
def meta_harvest(request, tmp_path_factory) -> MetaHarvest:
    if _KEY not in request.config.stash:
        root = tmp_path_factory.mktemp("meta") / "collections"
        root.mkdir()
        with start_meta_site() as site:
            summary = harvest(root, site, name="records", fulltext=False)
            assert summary["status"] == "finished", summary
            base_url = site.base_url
        figures = index_run(Collection(root, "records"), summary["run_id"])
        request.config.stash[_KEY] = MetaHarvest(root, "records", base_url, "127.0.0.1", summary, figures)
    return request.config.stash[_KEY]
