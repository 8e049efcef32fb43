"""``strata import``: WARC and ARC files written by other tools (warcio, Debian's wget, the
committed ARCs) enter a collection byte for byte, after every record was checked; a file that does
not parse is refused with its offset and nothing of it enters; the state is the one ``strata index
rebuild`` derives from the same files."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from demo.sample_site import serve_sample_site
from index.capture.rebuild import rebuild_state
from index.cdx import cdxj
from index.collection import Collection
from tests.conftest import VENV_BIN
from tests.integration.test_rebuild import snapshot
from tests.integration.test_rebuild_damage import LEGACY_CDXJ, LEGACY_KINDS
from tests.support.warc_makers import DATA, Cap, flip_bytes, pywb_cdxj, write_warc


def strata_import(root: Path, coll: str, *paths, extra=()):
    return subprocess.run(
        [str(VENV_BIN / "strata"), "import", coll, *map(str, paths), "--root", str(root), *extra],
        capture_output=True,
        text=True,
        timeout=300,
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def kinds(coll: Collection) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(coll.db_path)
    try:
        return conn.execute("SELECT url, timestamp, class FROM captures ORDER BY timestamp, id").fetchall()
    finally:
        conn.close()


def index_lines(coll: Collection) -> list[str]:
    return sorted(line.decode("utf-8").rstrip("\n") for line in coll.cdxj_path.read_bytes().splitlines())


def _site_captures(host="http://example.test"):
    page = Cap(f"{host}/", "2020-03-01T10:00:00Z", b"<html><title>Home</title>one</html>")
    img = Cap(f"{host}/a.png", "2020-03-01T10:00:01Z", b"\x89PNG fake", mime="image/png")
    again = Cap(f"{host}/", "2020-04-01T10:00:00Z", page.body, revisit_of=page)
    changed = Cap(f"{host}/", "2020-05-01T10:00:00Z", b"<html><title>Home</title>two</html>")
    gone = Cap(f"{host}/a.png", "2020-05-01T10:00:01Z", b"Not Found", status="404 Not Found")
    return [page, img, again, changed, gone]


@pytest.mark.parametrize(("version", "gz"), [("1.0", True), ("1.0", False), ("1.1", True), ("1.1", False)])
def test_warcio_files_are_imported_byte_for_byte(tmp_path, root, version, gz):
    source = write_warc(
        tmp_path / f"site-{version}.warc{'.gz' if gz else ''}",
        _site_captures(),
        gzip=gz,
        version=version,
        warcinfo={"software": "warcio", "isPartOf": "test"},
    )
    digest = sha256(source)
    result = strata_import(root, "other", source)
    assert result.returncode == 0, result.stderr
    coll = Collection.open(root, "other")
    kept = coll.archive_dir / source.name
    assert sha256(kept) == digest and sha256(source) == digest  # copied, never modified
    assert f"imported {source} as archive/{source.name}: 11 records, WARC/{version}" in result.stdout
    assert index_lines(coll) == pywb_cdxj(source)
    assert kinds(coll) == [
        ("http://example.test/", "20200301100000", "new"),
        ("http://example.test/a.png", "20200301100001", "new"),
        ("http://example.test/", "20200401100000", "unchanged"),
        ("http://example.test/", "20200501100000", "changed"),
        ("http://example.test/a.png", "20200501100001", "deleted"),
    ]
    runs = json.loads(
        subprocess.run(
            [str(VENV_BIN / "strata"), "runs", "other", "--root", str(root), "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert [r["run_id"] for r in runs] == [source.name]  # no Strata warcinfo: one run for the file
    assert sorted(p.name for p in coll.archive_dir.iterdir()) == [source.name]


def _wget(tmp_path: Path, base_url: str, name: str) -> Path:
    work = tmp_path / f"wget-{name}"
    work.mkdir()
    subprocess.run(
        [
            "/usr/bin/wget",
            "--warc-file",
            str(work / name),
            "-r",
            "-l",
            "2",
            "-e",
            "robots=off",
            "--no-verbose",
            "--delete-after",
            "--tries",
            "1",
            "--timeout",
            "10",
            "-P",
            str(work / "files"),
            base_url + "/",
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    path = work / f"{name}.warc.gz"
    assert path.exists()
    return path


def test_wget_warcs(tmp_path, root):
    with serve_sample_site(version=1) as site:
        first = _wget(tmp_path, site.base_url, "wget-1")
        site.version = 2
        second = _wget(tmp_path, site.base_url, "wget-2")
    digests = {p: sha256(p) for p in (first, second)}
    result = strata_import(root, "wget", first, second)
    assert result.returncode == 0, result.stderr
    coll = Collection.open(root, "wget")
    assert {p: sha256(coll.archive_dir / p.name) for p in (first, second)} == digests
    assert index_lines(coll) == pywb_cdxj(first, second)
    conn = sqlite3.connect(coll.db_path)
    rows = conn.execute("SELECT url, run_id, class, digest, status FROM captures ORDER BY timestamp, id").fetchall()
    conn.close()
    runs = {r[1] for r in rows}
    assert runs == {first.name, second.name}
    seen: dict[str, tuple] = {}
    for url, run, cls, digest, status in rows:
        before = seen.get(url)
        if 300 <= status < 400:
            assert cls == "redirect", (url, run)
        elif before is None:
            assert cls == "new", (url, run)
        elif status in (404, 410) and 200 <= before[1] < 300:
            assert cls == "deleted", url
        else:
            assert cls == ("unchanged" if digest == before[0] else "changed"), (url, cls)
        seen[url] = (digest, status)
    assert {cls for _, run, cls, _, _ in rows if run == second.name} >= {"unchanged", "changed"}


def test_a_file_that_does_not_parse_is_refused_with_its_offset(tmp_path, root):
    good = write_warc(tmp_path / "good.warc.gz", _site_captures()[:2], warcinfo={"software": "warcio"})
    bad = write_warc(tmp_path / "bad.warc.gz", _site_captures("http://bad.test"), warcinfo={"software": "warcio"})
    data = bad.read_bytes()
    # the third record (after warcinfo and the first response) is where the damage is
    from warcio.archiveiterator import ArchiveIterator

    with open(bad, "rb") as fh:
        it = ArchiveIterator(fh)
        offsets = []
        for record in it:
            it.read_to_end(record)
            offsets.append((it.get_record_offset(), it.get_record_length()))
    start, length = offsets[3]
    flip_bytes(bad, start + length // 2, 10)
    assert bad.read_bytes() != data
    result = strata_import(root, "mixed", good, bad)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"refused {bad}: damaged at byte {start}: gzip member does not inflate" in result.stderr
    assert "mixed: 1 imported, 0 skipped, 1 refused" in result.stdout
    coll = Collection.open(root, "mixed")
    assert sorted(p.name for p in coll.archive_dir.iterdir()) == ["good.warc.gz"]  # no temp file either
    assert {line["filename"] for line in cdxj.iter_index(coll.cdxj_path)} == {"good.warc.gz"}
    assert [k[0] for k in kinds(coll)] == ["http://example.test/", "http://example.test/a.png"]


def test_a_refused_command_creates_nothing(tmp_path, root):
    bad = tmp_path / "truncated.warc"
    write_warc(bad, _site_captures(), gzip=False)
    bad.write_bytes(bad.read_bytes()[:700])
    missing = tmp_path / "missing.warc.gz"
    result = strata_import(root, "fresh", bad, missing)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"refused {bad}: damaged at byte " in result.stderr and "cut short" in result.stderr
    assert f"refused {missing}: no such file" in result.stderr
    assert not (root / "fresh").exists()


def test_a_clashing_name_gets_a_deterministic_one(tmp_path, root):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    first = write_warc(one / "crawl.warc.gz", _site_captures()[:2])
    second = write_warc(two / "crawl.warc.gz", _site_captures("http://other.test")[:2])
    assert strata_import(root, "c", first).returncode == 0
    result = strata_import(root, "c", second)
    assert result.returncode == 0, result.stderr
    expected = f"crawl-{sha256(second)[:12]}.warc.gz"
    assert (
        f"imported {second} as archive/{expected} (renamed: 'crawl.warc.gz' is taken by another file)" in result.stdout
    )
    coll = Collection.open(root, "c")
    assert sha256(coll.archive_dir / expected) == sha256(second)
    assert sha256(coll.archive_dir / "crawl.warc.gz") == sha256(first)
    again = strata_import(root, "c", second, first)
    assert again.returncode == 0
    assert f"skipped {second}: the same bytes are already in archive/{expected}" in again.stdout
    assert f"skipped {first}: the same bytes are already in archive/crawl.warc.gz" in again.stdout
    assert sorted(p.name for p in coll.archive_dir.iterdir()) == sorted(["crawl.warc.gz", expected])


def test_import_gives_the_state_a_rebuild_gives(tmp_path, root):
    files = [
        write_warc(tmp_path / "site.warc.gz", _site_captures(), warcinfo={"software": "warcio"}),
        write_warc(tmp_path / "plain.warc", _site_captures("http://plain.test"), gzip=False, version="1.0"),
        DATA / "legacy-1998.arc",
        DATA / "legacy-2001.arc.gz",
    ]
    result = strata_import(root, "imported", *files)
    assert result.returncode == 0, result.stderr
    imported = Collection.open(root, "imported")
    rebuilt = Collection.open(root, "rebuilt", create=True)
    for path in files:
        shutil.copyfile(path, rebuilt.archive_dir / path.name)
    rebuild_state(rebuilt)
    assert snapshot(imported.db_path) == snapshot(rebuilt.db_path)
    assert imported.cdxj_path.read_bytes() == rebuilt.cdxj_path.read_bytes()
    legacy = [line for line in index_lines(imported) if "legacy" in line]
    assert legacy == LEGACY_CDXJ
    assert [k for k in kinds(imported) if "legacy" in k[0]] == LEGACY_KINDS


def test_kinds_follow_capture_time_whatever_the_file_names(tmp_path, root):
    original = Cap("http://dates.test/", "2020-01-10T00:00:00Z", b"<html>same</html>")
    revisit = Cap("http://dates.test/", "2021-01-10T00:00:00Z", original.body, revisit_of=original)
    changed = Cap("http://dates.test/", "2022-01-10T00:00:00Z", b"<html>other</html>")
    # names sort opposite to the capture dates
    write_warc(tmp_path / "c-2020.warc.gz", [original])
    write_warc(tmp_path / "b-2021.warc.gz", [revisit])
    write_warc(tmp_path / "a-2022.warc.gz", [changed])
    result = strata_import(root, "dates", *sorted(tmp_path.glob("*.warc.gz")))
    assert result.returncode == 0, result.stderr
    assert kinds(Collection.open(root, "dates")) == [
        ("http://dates.test/", "20200110000000", "new"),
        ("http://dates.test/", "20210110000000", "unchanged"),
        ("http://dates.test/", "20220110000000", "changed"),
    ]


def test_import_into_a_collection_holding_a_damaged_file(tmp_path, root):
    coll = Collection.open(root, "held", create=True)
    damaged = write_warc(coll.archive_dir / "old.warc.gz", _site_captures("http://old.test"))
    damaged.write_bytes(damaged.read_bytes()[:-30])  # cut inside its last gzip member
    new = write_warc(tmp_path / "new.warc.gz", _site_captures()[:2])
    result = strata_import(root, "held", new)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"imported {new} as archive/new.warc.gz" in result.stdout
    assert "damaged: old.warc.gz: damaged at byte " in result.stderr and "cut short" in result.stderr
    files = {line["filename"] for line in cdxj.iter_index(coll.cdxj_path)}
    assert files == {"old.warc.gz", "new.warc.gz"}  # the old file's whole records are indexed
