"""``strata index rebuild`` over damaged and legacy files: a WARC with flipped bytes inside a gzip
member, or cut mid-record, is indexed up to the damage (every whole record before it), the file and
offset are named, and the command exits 1 without a traceback; ARC files are indexed as pywb's own
indexer indexes them."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess

import pytest

from index.capture.rebuild import rebuild_state
from index.cdx import cdxj
from index.collection import Collection
from replay import create_app
from tests.conftest import VENV_BIN, harvest
from tests.support.warc_makers import DATA, flip_bytes, pywb_cdxj

# pywb's `cdx-indexer -j -s -p` on the two committed ARC files (checked against it in the test too)
LEGACY_CDXJ = [
    'example,legacy)/ 19980301120005 {"url": "http://legacy.example/", "mime": "text/html", "status": "200", '
    '"digest": "CXPEU6NUOK55NX3N3FM734UR4DWXBLRY", "length": "288", "offset": "145", "filename": "legacy-1998.arc"}',
    'example,legacy)/ 20010615080004 {"url": "http://legacy.example/", "mime": "text/html", "status": "200", '
    '"digest": "VSCCRTQ5UEBBMYACMUPGLJNZLOTYFV3C", "length": "225", "offset": "355", "filename": "legacy-2001.arc.gz"}',
    'example,legacy)/logo.gif 19980301120007 {"url": "http://legacy.example/logo.gif", "mime": "image/gif", '
    '"status": "200", "digest": "SOPUBPT7DKXWEP3CRBW6JKV2HCDN7G3F", "length": "233", "offset": "434", '
    '"filename": "legacy-1998.arc"}',
    'example,legacy)/logo.gif 20010615080002 {"url": "http://legacy.example/logo.gif", "mime": "image/gif", '
    '"status": "200", "digest": "SOPUBPT7DKXWEP3CRBW6JKV2HCDN7G3F", "length": "212", "offset": "143", '
    '"filename": "legacy-2001.arc.gz"}',
]
# capture kinds in capture order: the 2001 logo is the 1998 payload again, the 2001 page is new text
LEGACY_KINDS = [
    ("http://legacy.example/", "19980301120005", "new"),
    ("http://legacy.example/logo.gif", "19980301120007", "new"),
    ("http://legacy.example/logo.gif", "20010615080002", "unchanged"),
    ("http://legacy.example/", "20010615080004", "changed"),
]


def _captures(coll):
    conn = sqlite3.connect(coll.db_path)
    try:
        return conn.execute(
            "SELECT url, timestamp, class, warc, offset, record_id, digest FROM captures ORDER BY timestamp, id"
        ).fetchall()
    finally:
        conn.close()


def _rebuild_cli(root, name, *extra):
    return subprocess.run(
        [str(VENV_BIN / "strata"), "index", "rebuild", name, "--root", str(root), *extra],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def harvested(site, root):
    harvest(root, site)
    coll = Collection.open(root, "sample")
    lines = list(cdxj.iter_index(coll.cdxj_path))
    by_file: dict[str, list[dict]] = {}
    for line in lines:
        by_file.setdefault(line["filename"], []).append(line)
    name = max(by_file, key=lambda f: len(by_file[f]))
    middle = sorted(by_file[name], key=lambda x: int(x["offset"]))[len(by_file[name]) // 2]
    return coll, lines, name, int(middle["offset"]), int(middle["length"])


def _expected_after(lines, name, offset):
    return sorted(
        (line["urlkey"], line["timestamp"], line["offset"], line["filename"])
        for line in lines
        if line["filename"] != name or int(line["offset"]) < offset
    )


def _have(coll):
    return sorted(
        (line["urlkey"], line["timestamp"], line["offset"], line["filename"])
        for line in cdxj.iter_index(coll.cdxj_path)
    )


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_rebuild_indexes_everything_before_the_damage(harvested, root, damage):
    coll, lines, name, offset, length = harvested
    captures_before = _captures(coll)
    path = coll.archive_dir / name
    if damage == "flip":
        flip_bytes(path, offset + length // 2, 10)
    else:
        path.write_bytes(path.read_bytes()[: offset + length // 2])
    result = _rebuild_cli(root, "sample")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    assert f"{name}: damaged at byte {offset}:" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("Error: 1 WARC file is damaged")
    assert _have(coll) == _expected_after(lines, name, offset)
    kept = [c for c in captures_before if c[3] != name or c[4] < offset]
    assert _captures(coll) == kept
    # the full-text index was rebuilt too, from the same records
    assert "Full-text index of sample rebuilt" in result.stdout


def test_rebuild_of_an_intact_collection_still_exits_0(harvested, root):
    coll, lines, *_ = harvested
    result = _rebuild_cli(root, "sample", "--only", "state")
    assert result.returncode == 0, result.stderr
    assert _have(coll) == _expected_after(lines, None, 0)


def test_a_file_with_nothing_readable_is_named_and_left_alone_by_recovery(harvested, root):
    coll, lines, *_ = harvested
    (coll.archive_dir / "junk.warc.gz").write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    result = _rebuild_cli(root, "sample", "--only", "state")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "junk.warc.gz: damaged at byte 0: gzip member does not inflate" in result.stderr
    assert _have(coll) == _expected_after(lines, None, 0)
    recovered = subprocess.run(
        [str(VENV_BIN / "strata"), "recover", "sample", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert recovered.returncode == 0 and "nothing to recover" in recovered.stdout, recovered.stderr


@pytest.fixture
def legacy(root):
    coll = Collection.open(root, "legacy", create=True)
    for name in ("legacy-1998.arc", "legacy-2001.arc.gz"):
        shutil.copyfile(DATA / name, coll.archive_dir / name)
    return coll


def test_arc_files_are_indexed_like_pywb_indexes_them(legacy):
    figures = rebuild_state(legacy)
    assert figures["damage"] == [] and figures["records"] == 4 and figures["runs"] == 2
    have = sorted(line.decode().rstrip("\n") for line in legacy.cdxj_path.read_bytes().splitlines(keepends=True))
    assert have == LEGACY_CDXJ
    assert pywb_cdxj(DATA / "legacy-1998.arc", DATA / "legacy-2001.arc.gz") == LEGACY_CDXJ
    captures = _captures(legacy)
    assert [(c[0], c[1], c[2]) for c in captures] == LEGACY_KINDS
    # the state's digests are the CDXJ's (pywb computes them for ARC records, so does the rebuild)
    digests = {
        (json_line["url"], json_line["timestamp"]): "sha1:" + json_line["digest"]
        for json_line in map(cdxj.parse_line, LEGACY_CDXJ)
    }
    assert {(c[0], c[1]): c[6] for c in captures} == digests
    # the same record ids at every rebuild
    rebuild_state(legacy)
    assert _captures(legacy) == captures


def test_arc_captures_replay(legacy, root):
    rebuild_state(legacy)
    client = create_app(root).test_client()
    page = client.get("/legacy/19980301120005id_/http://legacy.example/")
    assert page.status_code == 200 and b"Welcome, 1998." in page.get_data()
    later = client.get("/legacy/20010615080004id_/http://legacy.example/")
    assert b"2001 edition" in later.get_data()
