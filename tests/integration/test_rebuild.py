"""Every index can be rebuilt from the WARC files alone: the CDXJ, the captures and their classes,
per-URL state, the digest index."""

from __future__ import annotations

import sqlite3

import pytest

from index.capture.rebuild import rebuild_state
from index.collection import Collection
from tests.conftest import harvest

CAPTURE_COLUMNS = (
    "run_id",
    "url",
    "timestamp",
    "warc_date",
    "record_type",
    "class",
    "status",
    "digest",
    "mime",
    "payload_length",
    "warc",
    "offset",
    "length",
    "record_id",
    "refers_to_uri",
    "refers_to_date",
    "location",
)
URL_COLUMNS = (
    "url",
    "found_on",
    "last_status",
    "last_class",
    "digest",
    "orig_uri",
    "orig_date",
    "orig_record_id",
    "orig_warc",
    "etag",
    "last_modified",
    "checks",
    "changes",
    "deleted_at",
)


def snapshot(db_path):
    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row
    try:
        caps = [
            tuple(r[c] for c in CAPTURE_COLUMNS) for r in conn.execute("SELECT * FROM captures ORDER BY warc, offset")
        ]
        urls = {
            r["url"]: tuple(r[c] for c in URL_COLUMNS) for r in conn.execute("SELECT * FROM urls") if r["last_checked"]
        }
        digests = sorted(tuple(r) for r in conn.execute("SELECT * FROM digests"))
        runs = [(r["run_id"], r["mode"], r["job"]) for r in conn.execute("SELECT * FROM runs ORDER BY run_id")]
        warcs = sorted((r["filename"], r["run_id"], r["state"]) for r in conn.execute("SELECT * FROM warcs"))
    finally:
        conn.close()
    return caps, urls, digests, runs, warcs


@pytest.mark.parametrize("runs", [3])
def test_rebuild_from_warcs_matches_the_live_state(site, root, runs):
    for version in range(1, runs + 1):
        site.version = version
        harvest(root, site)
    coll = Collection.open(root, "sample")
    before = snapshot(coll.db_path)
    cdx_before = coll.cdxj_path.read_bytes()
    coll.cdxj_path.unlink()
    figures = rebuild_state(coll)
    after = snapshot(coll.db_path)
    assert coll.cdxj_path.read_bytes() == cdx_before
    names = ("captures", "urls", "digests", "runs", "warcs")
    for name, old, new in zip(names, before, after, strict=True):
        if isinstance(old, dict):
            assert old.keys() == new.keys(), name
            for url in old:
                assert old[url] == new[url], (
                    name,
                    url,
                    dict(zip(URL_COLUMNS, old[url], strict=True)),
                    dict(zip(URL_COLUMNS, new[url], strict=True)),
                )
        else:
            assert old == new, name
    assert figures["runs"] == runs


def test_incremental_run_after_a_rebuild_still_dedups(site, root):
    harvest(root, site)
    coll = Collection.open(root, "sample")
    rebuild_state(coll)
    summary = harvest(root, site)
    assert summary["mode"] == "incremental"
    assert summary["new"] == 0 and summary["changed"] == 0
    # every payload is known again: all but the empty ones (always written in full) are revisits
    assert summary["revisits"] == summary["urls_fetched"] - _responses(coll, summary) > 0


def _responses(coll, summary):
    conn = sqlite3.connect(coll.db_path)
    try:
        return conn.execute(
            "SELECT COUNT(*) FROM captures WHERE run_id=? AND record_type='response'", (summary["run_id"],)
        ).fetchone()[0]
    finally:
        conn.close()
