"""Tiny committed WARCs with their exact CDXJ lines, record fields and capture kinds, as warcio and
pywb test theirs: ``tests/data/tiny-revisits.warc.gz`` (warcio, ``make_warcs.py``: a response, an
identical-payload revisit, a server-not-modified revisit, a changed response) and
``tests/data/wget-1.21-contact.warc.gz`` (written by Debian's GNU Wget 1.21.3, kept as it wrote it)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from warcio.archiveiterator import ArchiveIterator

from index.capture.importing import import_files
from index.cdx import cdxj
from index.collection import Collection
from index.state import HarvestState
from tests.conftest import REPO, VENV_BIN
from tests.support.warc_makers import pywb_cdxj

DATA = REPO / "tests" / "data"
PAGE = "http://archive.example.org/page.html"

CDXJ = {
    "tiny-revisits.warc.gz": [
        'org,example,archive)/page.html 20200101000000 {"url": "http://archive.example.org/page.html", "mime": "text/html", "status": "200", "digest": "MS5QCATAZQPSK52PMHGGC3FTOVFYACV6", "length": "387", "offset": "0", "filename": "tiny-revisits.warc.gz"}',
        'org,example,archive)/page.html 20200201000000 {"url": "http://archive.example.org/page.html", "mime": "warc/revisit", "digest": "MS5QCATAZQPSK52PMHGGC3FTOVFYACV6", "length": "424", "offset": "387", "filename": "tiny-revisits.warc.gz"}',
        'org,example,archive)/page.html 20200301000000 {"url": "http://archive.example.org/page.html", "mime": "warc/revisit", "digest": "MS5QCATAZQPSK52PMHGGC3FTOVFYACV6", "length": "350", "offset": "811", "filename": "tiny-revisits.warc.gz"}',
        'org,example,archive)/page.html 20200401000000 {"url": "http://archive.example.org/page.html", "mime": "text/html", "status": "200", "digest": "IIVQGGWQKDWSPFXPWX4WNU22VRGSODN2", "length": "387", "offset": "1161", "filename": "tiny-revisits.warc.gz"}',
    ],
    "wget-1.21-contact.warc.gz": [
        '1,0,0,127:39241)/contact.html 20261201093642 {"url": "http://127.0.0.1:39241/contact.html", "mime": "text/html", "status": "200", "digest": "7SADTMTTTYDOJVHPUCNJZIHYGA5CRYZX", "length": "937", "offset": "865", "filename": "wget-1.21-contact.warc.gz"}',
        '1,0,0,127:39241)/robots.txt 20261201093642 {"url": "http://127.0.0.1:39241/robots.txt", "mime": "text/plain", "status": "200", "digest": "TPDHOBA5IOSTX7ZY77WY2ASJORYTJ4LH", "length": "504", "offset": "2206", "filename": "wget-1.21-contact.warc.gz"}',
        'org,gnu)/software/wget/warc/manifest.txt 20261201093642 {"url": "metadata://gnu.org/software/wget/warc/MANIFEST.txt", "mime": "text/plain", "digest": "D3MQHYM56VGQ2XY7YQ5LTECCTTFQLS3C", "length": "316", "offset": "2710", "filename": "wget-1.21-contact.warc.gz"}',
        'org,gnu)/software/wget/warc/wget_arguments.txt 20261201093642 {"url": "metadata://gnu.org/software/wget/warc/wget_arguments.txt", "mime": "text/plain", "digest": "HSR22IKMLQFIW6C2VFM5BSLVIXBUOHUW", "length": "444", "offset": "3026", "filename": "wget-1.21-contact.warc.gz"}',
    ],
}

RECORDS = {  # type, target URI, WARC-Date, payload digest, revisit profile (last part), refers-to date
    "tiny-revisits.warc.gz": [
        ("response", PAGE, "2020-01-01T00:00:00Z", "sha1:MS5QCATAZQPSK52PMHGGC3FTOVFYACV6", "", None),
        (
            "revisit",
            PAGE,
            "2020-02-01T00:00:00Z",
            "sha1:MS5QCATAZQPSK52PMHGGC3FTOVFYACV6",
            "identical-payload-digest",
            "2020-01-01T00:00:00Z",
        ),
        (
            "revisit",
            PAGE,
            "2020-03-01T00:00:00Z",
            "sha1:MS5QCATAZQPSK52PMHGGC3FTOVFYACV6",
            "server-not-modified",
            "2020-01-01T00:00:00Z",
        ),
        ("response", PAGE, "2020-04-01T00:00:00Z", "sha1:IIVQGGWQKDWSPFXPWX4WNU22VRGSODN2", "", None),
    ],
    "wget-1.21-contact.warc.gz": [
        ("warcinfo", None, "2026-12-01T09:36:42Z", None, "", None),
        ("request", "http://127.0.0.1:39241/contact.html", "2026-12-01T09:36:42Z", None, "", None),
        (
            "response",
            "http://127.0.0.1:39241/contact.html",
            "2026-12-01T09:36:42Z",
            "sha1:7SADTMTTTYDOJVHPUCNJZIHYGA5CRYZX",
            "",
            None,
        ),
        ("request", "http://127.0.0.1:39241/robots.txt", "2026-12-01T09:36:42Z", None, "", None),
        (
            "response",
            "http://127.0.0.1:39241/robots.txt",
            "2026-12-01T09:36:42Z",
            "sha1:TPDHOBA5IOSTX7ZY77WY2ASJORYTJ4LH",
            "",
            None,
        ),
        ("metadata", "metadata://gnu.org/software/wget/warc/MANIFEST.txt", "2026-12-01T09:36:42Z", None, "", None),
        (
            "resource",
            "metadata://gnu.org/software/wget/warc/wget_arguments.txt",
            "2026-12-01T09:36:42Z",
            None,
            "",
            None,
        ),
    ],
}


@pytest.mark.parametrize("name", sorted(CDXJ))
def test_exact_cdxj_lines_from_strata_and_from_pywb(name):
    ours = [line.decode("utf-8").rstrip("\n") for line in cdxj.index_warc(DATA / name, name)]
    assert ours == CDXJ[name]
    assert pywb_cdxj(DATA / name) == sorted(CDXJ[name])


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_exact_record_fields(name):
    with open(DATA / name, "rb") as fh:
        found = [
            (
                r.rec_type,
                r.rec_headers.get_header("WARC-Target-URI"),
                r.rec_headers.get_header("WARC-Date"),
                r.rec_headers.get_header("WARC-Payload-Digest"),
                (r.rec_headers.get_header("WARC-Profile") or "").rsplit("/", 1)[-1],
                r.rec_headers.get_header("WARC-Refers-To-Date"),
            )
            for r in ArchiveIterator(fh, check_digests=True)
        ]
    assert found == RECORDS[name]


def test_capture_kinds_once_imported(tmp_path):
    root = tmp_path / "collections"
    names = sorted(CDXJ)
    for name in names:
        shutil.copy(DATA / name, tmp_path / name)
    import_files(root, "tiny", [tmp_path / n for n in names], fulltext=False)
    with HarvestState(Collection(root, "tiny").db_path) as state:
        kinds = [(c["url"], c["timestamp"], c["record_type"], c["class"], c["status"]) for c in state.captures()]
    assert sorted(kinds) == sorted(
        [
            (PAGE, "20200101000000", "response", "new", 200),
            (PAGE, "20200201000000", "revisit", "unchanged", 200),
            (PAGE, "20200301000000", "revisit", "not_modified", 304),
            (PAGE, "20200401000000", "response", "changed", 200),
            ("http://127.0.0.1:39241/contact.html", "20261201093642", "response", "new", 200),
            ("http://127.0.0.1:39241/robots.txt", "20261201093642", "response", "new", 200),
        ]
    )


def test_imported_files_from_other_tools_verify_intact(tmp_path):
    """warcio's, wget's and an ARC file, imported: in the fixity manifest, and strata verify finds
    nothing wrong (an ARC file's lines are not flagged for records verify does not parse)."""
    root = tmp_path / "collections"
    names = [*sorted(CDXJ), "legacy-1998.arc", "legacy-2001.arc.gz"]
    for name in names:
        shutil.copy(DATA / name, tmp_path / name)
    import_files(root, "other", [tmp_path / n for n in names], fulltext=False)
    manifest = (Collection(root, "other").fixity_dir / "manifest-sha256.txt").read_text()
    assert sorted(line.split("  ", 1)[1] for line in manifest.splitlines()) == sorted(f"archive/{n}" for n in names)
    out = subprocess.run(
        [str(VENV_BIN / "strata"), "verify", "other", "--root", str(root)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and "intact" in out.stdout, out.stdout + out.stderr
