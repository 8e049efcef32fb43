"""A collection whose captures are known one by one (``demo.history``, derived by the rebuild), for
the calendar, site map, holdings and changes pages, and the server and app that show it.

``known``: host ``site.test`` in five runs from May 2023 to March 2024 (its home page new, unchanged,
changed, unchanged, changed; a news page new, unchanged, then deleted; another new then changed; a
team page new) and ``other.test`` once. ``KNOWN_KINDS`` says what the rebuild must find."""

from __future__ import annotations

import pytest

from demo.history import Event, write_history
from index.capture.rebuild import rebuild_state
from index.collection import Collection
from replay import create_app
from tests.support.replay_fixtures import StrataServer

SITE = "http://site.test"
OTHER = "http://other.test"
KNOWN_EVENTS = (
    Event("r1", SITE + "/", "2023-05-10T10:00:00Z", 1),
    Event("r2", SITE + "/", "2023-11-02T10:00:00Z", 1),
    Event("r2", SITE + "/news/a.html", "2023-11-02T10:00:01Z", 1),
    Event("r3", SITE + "/", "2024-01-15T10:00:00Z", 2),
    Event("r3", SITE + "/news/a.html", "2024-01-15T10:00:01Z", 1),
    Event("r3", SITE + "/news/b.html", "2024-01-15T10:00:02Z", 1),
    Event("r4", SITE + "/", "2024-03-05T10:00:00Z", 2),
    Event("r4", SITE + "/news/a.html", "2024-03-05T10:00:01Z", None),
    Event("r4", SITE + "/about/team.html", "2024-03-05T10:00:02Z", 1),
    Event("r4", OTHER + "/", "2024-03-05T10:00:03Z", 1),
    Event("r5", SITE + "/", "2024-03-20T10:00:00Z", 3),
    Event("r5", SITE + "/news/b.html", "2024-03-20T10:00:01Z", 2),
)
# (url, timestamp) -> the kind the rebuild derives
KNOWN_KINDS = {
    (SITE + "/", "20230510100000"): "new",
    (SITE + "/", "20231102100000"): "unchanged",
    (SITE + "/", "20240115100000"): "changed",
    (SITE + "/", "20240305100000"): "unchanged",
    (SITE + "/", "20240320100000"): "changed",
    (SITE + "/news/a.html", "20231102100001"): "new",
    (SITE + "/news/a.html", "20240115100001"): "unchanged",
    (SITE + "/news/a.html", "20240305100001"): "deleted",
    (SITE + "/news/b.html", "20240115100002"): "new",
    (SITE + "/news/b.html", "20240320100001"): "changed",
    (SITE + "/about/team.html", "20240305100002"): "new",
    (OTHER + "/", "20240305100003"): "new",
}


def write_known(root, name: str = "known") -> Collection:
    coll = Collection.open(root, name, create=True)
    write_history(coll.archive_dir, KNOWN_EVENTS)
    rebuild_state(coll)
    return coll


@pytest.fixture(scope="session")
def known_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("known") / "collections"
    root.mkdir()
    write_known(root)
    return root


@pytest.fixture(scope="session")
def known_client(known_root):
    return create_app(known_root).test_client()


@pytest.fixture(scope="session")
def known_server(known_root):
    server = StrataServer(known_root, known_root.parent / "strata-serve.log")
    yield server
    server.stop()
