"""Revisits of another URL: the original is the one ``index.revisits`` gives (the captures of the
URI the revisit names, closest to the date it names, same digest), the record its ``WARC-Refers-To``
names first among equals, located through the harvest state; whatever the harvest state says, the
index decides, so a broken or missing state changes nothing that is served.

The tests replay every revisit of another URL as raw bytes (``id_``). They use the sample harvest
``three`` (``replay_fixtures``) and ``copies``, a site that publishes the same pages again under
other URLs in its second version; the tests that break the harvest state work on a copy.

The last test replays both collections whole with the warcserver's record reading
(``replay.recordload``), with records rebuilt from its memo (``replay.recordmemo``) and with pywb's
own loading, and compares every byte and header.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from demo.sample_site import SampleSite
from demo.site_server import _NOT_FOUND, Resource, SiteServer
from index.collection import Collection
from tests.conftest import harvest
from tests.support.replay_fixtures import Archive

HTML = (("Content-Type", "text/html"),)


class Copies:
    """v1: ``/`` links three pages; v2: it also links a copy of each under another URL."""

    PAGES = {
        f"/page-{i}.html": f"<html><body><p>{f'page {i}, said again. ' * 150}</p></body></html>".encode()
        for i in range(3)
    }
    COPIES = {f"/copy-{i}.html": f"/page-{i}.html" for i in range(3)}

    @classmethod
    def resolve(cls, version, path, headers=None):
        if path == "/":
            paths = list(cls.PAGES) + (list(cls.COPIES) if version >= 2 else [])
            return Resource(200, HTML, "".join(f'<a href="{p}">{p}</a>' for p in paths).encode())
        if path in cls.PAGES or (version >= 2 and path in cls.COPIES):
            return Resource(200, HTML, cls.PAGES[cls.COPIES.get(path, path)])
        return None


@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> Archive:
    root = tmp_path_factory.mktemp("revisits") / "collections"
    root.mkdir()
    snapshots = []
    with SiteServer(Copies(), version=1) as site:
        for version in (1, 2):
            site.version = version
            summary = harvest(root, site, name="copies", robots="ignore")
            assert summary["status"] == "finished", summary
            snapshots.append(summary["snapshot"])
    return Archive(root, "copies", site.base_url, snapshots)


MODELS = {"three": SampleSite.resource, "copies": Copies.resolve}


def other_url_revisits(archive: Archive) -> list[tuple[dict, tuple[int, bytes]]]:
    """Each revisit of another URL, with the (status, body) the site served when it was taken."""
    run_ids = list(dict.fromkeys(c["run_id"] for c in sorted(archive.captures(), key=lambda c: c["timestamp"])))
    out = []
    for cap in archive.captures():
        if cap["record_type"] != "revisit" or cap["refers_to_uri"] == cap["url"]:
            continue
        resource = MODELS[archive.name](run_ids.index(cap["run_id"]) + 1, archive.path(cap["url"]))
        out.append((cap, (404, _NOT_FOUND.body) if resource is None else (resource.status, resource.body)))
    assert out, f"{archive.name} has no revisit of another URL"
    return out


def replay_wrong(root: Path, archive: Archive) -> list[tuple]:
    """Replays them all from ``root`` with a new application; the ones that come out wrong."""
    from replay import create_app

    client = create_app(root).test_client()
    wrong = []
    for cap, want in other_url_revisits(archive):
        r = client.get(f"/{archive.name}/{cap['timestamp']}id_/{cap['url']}")
        if (r.status_code, r.data) != want:
            wrong.append((cap["url"], cap["timestamp"], r.status_code, want[0]))
    return wrong


@pytest.fixture
def named_lookups(monkeypatch) -> list:
    """What the warcserver learnt from the harvest state of the record a revisit's WARC-Refers-To names."""
    from replay import warcserver

    seen: list = []
    real = warcserver.indexed_original

    def spying(conn, record_id):
        row = real(conn, record_id)
        seen.append(None if row is None else (row["warc"], row["offset"]))
        return row

    monkeypatch.setattr(warcserver, "indexed_original", spying)
    return seen


@pytest.fixture
def copied(copies, tmp_path) -> Path:
    """A root holding a copy of the ``copies`` collection, free to damage."""
    root = tmp_path / "collections"
    shutil.copytree(copies.root / copies.name, root / copies.name)
    return root


def execute(db_path: Path, sql: str) -> None:
    conn = sqlite3.connect(db_path, isolation_level=None)
    try:
        conn.execute(sql)
    finally:
        conn.close()


@pytest.mark.slow
def test_a_revisit_of_another_url_replays_its_original(copies, named_lookups):
    # ``three`` has none: its only shared payload is the 404 page, and error pages are written in full
    assert replay_wrong(copies.root, copies) == []
    assert named_lookups and all(found is not None for found in named_lookups)


@pytest.mark.parametrize("damage", ["no database", "no captures row"])
def test_without_the_harvest_state_the_index_finds_the_original(copies, copied, damage):
    db_path = Collection(copied, copies.name).db_path
    if damage == "no database":
        for suffix in ("", "-wal", "-shm"):
            Path(str(db_path) + suffix).unlink(missing_ok=True)
    else:
        execute(db_path, "DELETE FROM captures WHERE record_type='response'")
    assert replay_wrong(copied, copies) == []


@pytest.mark.parametrize(
    "damage",
    [
        # the request record written right after the response: it loads, but is not a response
        "UPDATE captures SET offset = offset + length WHERE record_type='response'",
        # another response (the last one written, the v2 home page): it loads, but is not the original
        "UPDATE captures SET (warc, offset, length) = (SELECT warc, offset, length FROM captures WHERE id = "
        "(SELECT MAX(id) FROM captures WHERE record_type='response')) WHERE record_type='response'",
        # not where a record starts: it does not load (nor may that keep pywb from reading the file)
        "UPDATE captures SET offset = offset + 1 WHERE record_type='response'",
        # a WARC not (yet) in the CDXJ index: pywb would not find its records either
        "UPDATE warcs SET state='sealed'",
        # a row whose payload is another one
        "UPDATE captures SET digest='sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' WHERE record_type='response'",
    ],
    ids=["request record", "another response", "no record", "warc not indexed", "other digest"],
)
def test_a_row_that_does_not_hold_the_original_is_not_used(copies, copied, damage):
    execute(Collection(copied, copies.name).db_path, damage)
    assert replay_wrong(copied, copies) == []


def test_a_replaced_harvest_database_is_opened_again(copies, copied, named_lookups):
    """``strata index rebuild`` swaps in a new file: the server reads that one, not the one it had open."""
    from replay import create_app

    (cap, want), *_ = other_url_revisits(copies)
    address = f"/{copies.name}/{cap['timestamp']}id_/{cap['url']}"
    client = create_app(copied).test_client()
    r = client.get(address)
    assert (r.status_code, r.data) == want and named_lookups[-1] is not None

    db_path = Collection(copied, copies.name).db_path
    execute(db_path, "PRAGMA wal_checkpoint(TRUNCATE)")
    replacement = db_path.with_name("replacement.sqlite")
    shutil.copyfile(db_path, replacement)
    execute(replacement, "DELETE FROM captures")
    os.replace(replacement, db_path)

    r = client.get(address)
    assert (r.status_code, r.data) == want and named_lookups[-1] is None  # the new file: no such row


# -- records read from the buffer (replay.recordload) ----------------------------------------------
# Every record the warcserver loads goes through ``replay.recordload``, and the original of a
# revisit that has its own HTTP headers is loaded without parsing them. Nothing of that may show:
# each URL, at each capture time and each run, replays (status, headers, body) exactly as with
# pywb's own loading (``_RevisitLoader.fast_records = False``), raw and as a page.


@pytest.fixture
def fast_paths(monkeypatch) -> dict[str, list[bool]]:
    from tests.integration.test_replay_loader import count_fast_paths

    return count_fast_paths(monkeypatch)


def replay_all(archive: Archive, fast_paths: dict[str, list[bool]]) -> tuple[dict, dict]:
    """Each (url, time, mod): (status, headers, body); and for each ``id_`` request, the HTTP
    blocks stepped over."""
    from replay import create_app

    client = create_app(archive.root).test_client()
    times = sorted(set(archive.snapshots) | {c["timestamp"] for c in archive.captures()})
    out, skipped = {}, {}
    for url in archive.urls():
        for ts in times:
            for mod in ("id_", ""):
                before = len(fast_paths["skip"])
                r = client.get(f"/{archive.name}/{ts}{mod}/{url}")
                out[(url, ts, mod)] = (r.status_code, r.headers.to_wsgi_list(), r.data)
                if mod == "id_":
                    skipped[(url, ts)] = fast_paths["skip"][before:]
    return out, skipped


def served_capture(archive: Archive, url: str, ts: str) -> dict | None:
    """The capture ``id_`` replays: the last one at or before ``ts``."""
    before = [c for c in archive.captures(url) if c["timestamp"] <= ts]
    return before[-1] if before else None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["three", "copies"])
def test_every_capture_replays_as_with_pywbs_own_loading(archives, copies, fast_paths, reused, monkeypatch, name):
    from replay.warcserver import _RevisitLoader

    archive = copies if name == "copies" else archives[name]
    # every record read from the buffer, checked and parsed on each load
    monkeypatch.setattr(_RevisitLoader, "memo_records", False)
    fast, skipped = replay_all(archive, fast_paths)
    parsed = fast_paths["WARC"] + fast_paths["HTTP"]

    # the same, records rebuilt from the memo when their bytes read back the same
    monkeypatch.setattr(_RevisitLoader, "memo_records", True)  # `reused` counts from here: no memo before
    remembered, _ = replay_all(archive, fast_paths)
    assert sum(reused) > len(reused) / 2  # most loads are of a record loaded before

    monkeypatch.setattr(_RevisitLoader, "fast_records", False)
    for seen in fast_paths.values():
        seen.clear()
    reused.clear()
    slow, _ = replay_all(archive, fast_paths)
    assert fast_paths == {"WARC": [], "HTTP": [], "skip": []}  # pywb's own loading, throughout
    assert reused == []

    assert fast.keys() == slow.keys() == remembered.keys()
    assert [key for key in fast if fast[key] != slow[key]] == []
    assert [key for key in fast if remembered[key] != slow[key]] == []

    # Every record of the harvest was read from the buffer; the original of each revisit with its
    # own HTTP headers (not a 304's empty block, not a redirect) was loaded without parsing them.
    assert parsed and all(parsed)
    kinds = set()
    for (url, ts), steps in skipped.items():
        cap = served_capture(archive, url, ts)
        revisit = cap is not None and cap["record_type"] == "revisit"
        if revisit:
            kinds.add(cap["class"])
        identical = revisit and cap["class"] != "not_modified" and not str(cap["status"]).startswith("3")
        assert steps == ([True] if identical else []), (url, ts, cap)
    assert sum(map(len, skipped.values())) > 0
    if name == "three":
        assert {"unchanged", "not_modified"} <= kinds  # both kinds of revisit were replayed
