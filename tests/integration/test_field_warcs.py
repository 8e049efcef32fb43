"""WARC and ARC files from other tools' test data and real crawls (Heritrix 1 and 3, wget, warcprox,
Webrecorder, ArchiveWeb.page, Browsertrix, node-warc, Common Crawl, the BnF, the IIPC's dedup
samples), each marked valid, edge or invalid in the corpus's ``manifest.json``:

- every valid file imports (all of them into one collection: some revisits' originals are in other
  files), is indexed line for line as pywb's ``cdx-indexer`` indexes it, verifies clean, rebuilds to
  the same index and runs, and every capture replays as an unmodified pywb replays it, but for the
  differences listed in ``PYWB_DIFFERS`` (each with its reason);
- every edge file is either refused with an offset, leaving nothing behind, or imported so that
  Strata agrees with itself: CDXJ equal to pywb's, ``verify`` intact (notes allowed), the rebuild
  unchanged;
- every invalid file is refused with the byte offset where it stops being readable, and nothing of
  it is left: no collection, no file in ``archive/``, the index and the manifest of an existing
  collection unchanged.

The corpus is not part of the repository: it is read from ``STRATA_FIELD_WARCS`` or, by default,
``shared/field-warcs`` beside the repository (or beside the worktrees' folder); the tests skip when
it is not there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from index.capture.importing import import_files
from index.capture.rebuild import rebuild_state
from index.collection import Collection
from index.integrity.verify import verify
from index.storage.state import HarvestState
from tests.conftest import VENV_BIN
from tests.support.field_corpus import field_corpus
from tests.support.warc_makers import pywb_cdxj

STRATA = str(VENV_BIN / "strata")


FIELD = field_corpus()
pytestmark = pytest.mark.skipif(FIELD is None, reason="the field WARC corpus (STRATA_FIELD_WARCS) is not here")
MANIFEST = json.loads((FIELD / "manifest.json").read_text())["files"] if FIELD else []


def of_kind(kind: str) -> list[str]:
    return [f["name"] for f in MANIFEST if f["kind"] == kind]


# Where Strata's replay of a valid file's captures (raw bytes, ``id_``) answers otherwise than an
# unmodified pywb, and why; every other capture must come back with the same status and bytes.
PYWB_DIFFERS = {
    # ArchiveWeb.page stored these payloads decoded while their headers keep Content-Encoding and
    # the encoded Content-Length: what either sends for them is issue 35's, not this comparison's
    "pywacz-example-iana.warc": "decoded payloads under encoded headers",
    "pywacz-example-warcinfo-metadata.warc": "decoded payloads under encoded headers",
}
# (URL, timestamp): a redirect to the same URL over another scheme, or with a slash added. pywb
# refuses such a capture (it would loop in a replayed page) and serves another (307 to it, or its
# bytes); Strata's raw replay never serves a later capture: it answers the archived redirect.
SELF_REDIRECTS = {
    ("http://auer.netzliteratur.net/wendelin/wend.htm", "20200627135126"),
    ("http://www.archive.org/donate", "20080430205147"),
}
# Two POST captures of one URL in the same second: an address that names both. pywb's fuzzy match
# serves the first in its index, Strata the last written (as for any two captures of a second).
SAME_SECOND_POSTS = {("https://httpbin.org/post", "20200809195334")}


def strata(*args: str, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([STRATA, *args, "--root", str(root)], capture_output=True, text=True, timeout=600)


def index_lines(coll: Collection) -> list[str]:
    return sorted(line for line in coll.cdxj_path.read_text(encoding="utf-8").splitlines() if line.strip())


def runs(root: Path, name: str) -> list[dict]:
    return json.loads(strata("runs", name, "--json", root=root).stdout)


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    """Every valid file imported into one collection."""
    root = tmp_path_factory.mktemp("field") / "collections"
    root.mkdir()
    paths = [FIELD / name for name in of_kind("valid")]
    done = strata("import", "valid", *map(str, paths), "--no-fulltext", root=root)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return root, paths


def test_every_valid_file_is_imported_byte_for_byte_and_indexed_as_pywb_indexes_it(valid):
    root, paths = valid
    coll = Collection.open(root, "valid")
    assert sorted(coll.warc_files()) == sorted(p.name for p in paths)
    for path in paths:
        assert (coll.archive_dir / path.name).read_bytes() == path.read_bytes()
    assert index_lines(coll) == pywb_cdxj(*paths)
    assert all(r["mode"] == "imported" and r["status"] == "finished" and r["job"] is None for r in runs(root, "valid"))


def test_every_valid_file_verifies_clean_and_rebuilds_to_the_same_index_and_runs(valid, tmp_path):
    root, _ = valid
    done = strata("verify", "valid", "--json", "--strict", root=root)
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["problems"] == [] and report["deviations"] == [], report["problems"]
    assert report["revisits"] == 43  # the manifest's count: every one with its original found
    copy = tmp_path / "collections"
    shutil.copytree(root / "valid", copy / "valid")
    coll = Collection.open(copy, "valid")
    before, runs_before = index_lines(coll), runs(copy, "valid")
    coll.cdxj_path.unlink()
    coll.db_path.unlink()
    rebuilt = strata("index", "rebuild", "valid", "--only", "state", root=copy)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert index_lines(coll) == before and runs(copy, "valid") == runs_before


@pytest.mark.slow
def test_every_valid_capture_replays_as_an_unmodified_pywb_replays_it(valid, wayback_factory):
    from replay import create_app

    root, _ = valid
    wayback = wayback_factory(root)
    client = create_app(root).test_client()
    compared, differ = 0, []
    # one connection a request: a capture whose answer is longer than its Content-Length (issue 35)
    # must not be read as the next one's
    with httpx.Client(timeout=30, limits=httpx.Limits(max_keepalive_connections=0)) as pywb:
        for line in index_lines(Collection.open(root, "valid")):
            _, ts, blob = line.split(" ", 2)
            fields = json.loads(blob)
            url = fields["url"]
            if not url.startswith(("http:", "https:")) or fields["filename"] in PYWB_DIFFERS:
                continue
            address = f"/valid/{ts}id_/{url}"
            ours = client.get(address)
            if (url, ts) in SELF_REDIRECTS:
                assert ours.status_code in (301, 302) and ours.headers["Location"].split("://", 1)[1].startswith(
                    url.split("://", 1)[1].rstrip("/")
                ), address
                continue
            if (url, ts) in SAME_SECOND_POSTS:
                assert ours.status_code == 200, address
                continue
            theirs = pywb.get(wayback.base_url + address)
            compared += 1
            if (ours.status_code, ours.data) != (theirs.status_code, theirs.content):
                differ.append((address, ours.status_code, len(ours.data), theirs.status_code, len(theirs.content)))
    assert differ == [] and compared > 600


@pytest.mark.parametrize("name", of_kind("edge"))
def test_an_edge_file_is_refused_with_its_offset_or_imported_consistently(name, tmp_path):
    root = tmp_path / "collections"
    root.mkdir()
    path = FIELD / name
    report = import_files(root, "edge", [path], fulltext=False)
    if report.refused:
        (refused,) = report.refused
        assert refused.offset is not None and refused.reason, refused
        assert not (root / "edge").exists()
        return
    coll = Collection.open(root, "edge")
    assert index_lines(coll) == pywb_cdxj(path)
    verified = verify(coll)
    assert verified.intact, verified.problems  # notes at most: nothing imported is called damaged
    with HarvestState(coll.db_path) as state:
        runs_before = state.runs()
    before = index_lines(coll)
    rebuild_state(coll)
    with HarvestState(coll.db_path) as state:
        assert index_lines(coll) == before and state.runs() == runs_before


def test_every_invalid_file_is_refused_with_its_offset_and_leaves_nothing(tmp_path):
    paths = [FIELD / name for name in of_kind("invalid")]
    root = tmp_path / "collections"
    root.mkdir()
    done = strata("import", "bad", *map(str, paths), root=root)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    for path in paths:
        assert f"refused {path}: damaged at byte " in done.stderr, (path.name, done.stderr)
    assert "bad: 0 imported, 0 skipped, 29 refused; nothing was changed" in done.stdout
    assert not (root / "bad").exists()
    # into a collection that holds files: nothing of them enters, nothing there changes
    held = FIELD / "warcio-example.warc.gz"
    assert import_files(root, "held", [held], fulltext=False).imported
    coll = Collection.open(root, "held")
    manifest, index = (coll.fixity_dir / "manifest-sha256.txt").read_bytes(), coll.cdxj_path.read_bytes()
    report = import_files(root, "held", paths, fulltext=False)
    assert [r.source for r in report.refused] == list(map(str, paths)) and not report.imported
    assert all(r.offset is not None for r in report.refused)
    assert os.listdir(coll.archive_dir) == [held.name]
    assert (coll.fixity_dir / "manifest-sha256.txt").read_bytes() == manifest and coll.cdxj_path.read_bytes() == index
    assert verify(coll).intact
