"""A harvest killed with SIGKILL at random points loses nothing sealed and leaves the collection
recoverable (and ``strata verify`` content); the next run completes the site."""

from __future__ import annotations

import gzip
import random
import signal
import subprocess
import time
import zlib
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from demo.sample_site import SampleSite
from demo.site_server import Resource, SiteServer
from index.cdx import cdxj
from index.collection import Collection
from index.storage.state import HarvestState
from tests.conftest import VENV_BIN, harvest
from tests.support.warc_makers import gzip_records, raw_record, sha1_digest

STRATA = str(VENV_BIN / "strata")


def check_collection(root, name="c"):
    """Every WARC whole and valid, every revisit's original indexed, every digest entry real."""
    archive = root / name / "archive"
    assert not list(archive.glob("*.open"))
    index = list(cdxj.iter_index(root / name / "indexes" / "index.cdxj"))
    originals = {(line["url"], line.get("digest")) for line in index if line.get("mime") != "warc/revisit"}
    record_ids = set()
    for path in sorted(archive.glob("*.warc.gz")):
        out = subprocess.run([str(VENV_BIN / "fastwarc"), "check", str(path)], capture_output=True, text=True)
        assert out.returncode == 0, (path.name, out.stdout, out.stderr)
        gzip.decompress(path.read_bytes())
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                record_ids.add(record.rec_headers.get_header("WARC-Record-ID"))
                if record.rec_type == "revisit":
                    target = record.rec_headers.get_header("WARC-Refers-To-Target-URI")
                    digest = record.rec_headers.get_header("WARC-Payload-Digest").split(":", 1)[1]
                    assert (target, digest) in originals, f"revisit of {target} has no original in the index"
    coll = Collection.open(root, name)
    with HarvestState(coll.db_path) as state:
        for row in state.conn.execute("SELECT * FROM digests"):
            assert row["record_id"] in record_ids, "digest entry points at a record that does not exist"
        for row in state.conn.execute("SELECT record_id FROM captures"):
            assert row["record_id"] in record_ids
        assert all(w["state"] == "indexed" for w in state.warcs())
        assert not state.runs(statuses=("running",))
    # every sealed file, torn ones repaired by recovery included, is in the fixity manifest and intact
    verified = subprocess.run([STRATA, "verify", name, "--root", str(root)], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.slow
def test_sigkill_at_random_points(root, site):
    rng = random.Random(29112026)
    site.latency = 0.005
    archive = root / "c" / "archive"
    kills = 0
    for version in (1, 1, 2, 2, 3):
        site.version = version
        proc = subprocess.Popen(
            [
                STRATA,
                "harvest",
                "c",
                "--seed",
                site.base_url + "/",
                "--delay",
                "0.02",
                "--depth",
                "6",
                "--root",
                str(root),
                "--json",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not list(archive.glob("*.open")) and proc.poll() is None:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 1.0))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=30)
        recovered = subprocess.run([STRATA, "recover", "c", "--root", str(root)], capture_output=True, text=True)
        assert recovered.returncode == 0, recovered.stderr
        check_collection(root)
    assert kills >= 3

    summary = harvest(root, site, name="c", depth=6, delay=0.0)
    assert summary["status"] == "finished"
    check_collection(root)
    coll = Collection.open(root, "c")
    with HarvestState(coll.db_path) as state:
        interrupted = state.runs(statuses=("interrupted",))
        assert len(interrupted) == kills
        caps = {urlsplit(c["url"]).path for c in state.captures(run_id=summary["run_id"])}
        known = {urlsplit(u["url"]).path for u in state.known_urls()}
    # the site as it stands now, plus every URL the collection ever saw (deleted ones are rechecked)
    assert SampleSite.paths(3, obey_robots=True) <= caps
    assert {p for p in known if SampleSite.robots_allowed(p)} == caps


class TwinsThenStall:
    """/a.html and /b.html carry one payload; /slow.html never finishes, so the harvest is killed
    with the twins in its open file."""

    BODY = b"<html><body>" + b"one report under two addresses. " * 100 + b"</body></html>"

    def resolve(self, version, path, headers=None):
        html = (("Content-Type", "text/html"),)
        if path == "/":
            return Resource(200, html, b'<a href="/a.html">a</a><a href="/b.html">b</a><a href="/slow.html">s</a>')
        if path in ("/a.html", "/b.html"):
            return Resource(200, html, self.BODY)
        if path == "/slow.html":
            return Resource(200, html, stream=lambda stop: (b"x" for _ in iter(lambda: stop.wait(0.05), True)))
        return None


def written(archive) -> bytes:
    """What the open WARC file holds so far: its whole gzip members, inflated."""
    out = b""
    for path in archive.glob("*.open"):
        data = path.read_bytes()
        while data:
            member = zlib.decompressobj(31)
            try:
                out += member.decompress(data)
            except zlib.error:
                break
            if not member.eof:
                break
            data = member.unused_data
    return out


def test_a_torn_file_keeps_every_same_file_original_its_surviving_revisits_need(root):
    archive = root / "c" / "archive"
    with SiteServer(TwinsThenStall()) as server:
        proc = subprocess.Popen(
            [STRATA, "harvest", "c", "--seed", server.base_url + "/", "--delay", "0"] + ["--root", str(root), "--json"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and b"WARC-Type: revisit" not in written(archive):
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    (torn,) = archive.glob("*.open")
    with open(torn, "rb") as fh:
        records = [
            (record.rec_type, record.rec_headers.get_header("WARC-Target-URI")) for record in ArchiveIterator(fh)
        ]
    assert sum(kind == "revisit" for kind, _ in records) == 1 and sum(kind == "response" for kind, _ in records) >= 2
    torn.write_bytes(torn.read_bytes()[:-7])  # the last record torn: a revisit, a request or a response
    recovered = subprocess.run([STRATA, "recover", "c", "--root", str(root)], capture_output=True, text=True)
    assert recovered.returncode == 0, recovered.stderr
    check_collection(root)


def _http_response(url: str, body: bytes, payload_digest: str) -> bytes:
    block = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    return raw_record(
        "response",
        url,
        "2026-01-01T00:00:00Z",
        block,
        "application/http;msgtype=response",
        **{"WARC-Payload-Digest": payload_digest},
    )


@pytest.mark.parametrize("tail", ["several records in one gzip member", "a payload digest that fails"])
def test_recovery_cuts_where_the_record_scanners_whole_prefix_ends(root, tail):
    """Recovery keeps what import and verify would keep (``index.integrity.recordscan.scan_prefix``):
    a tail whose first member holds more than one record, or whose record's payload digest fails, is
    cut, though each member inflates and its first block digest matches."""
    coll = Collection.open(root, "c", create=True)
    whole = [_http_response(f"http://x.test/{i}", b"page %d" % i, sha1_digest(b"page %d" % i)) for i in range(2)]
    path = gzip_records(coll.archive_dir / "c-0001.warc.gz.open", *whole)
    kept = path.read_bytes()
    if tail == "several records in one gzip member":
        more = [_http_response(f"http://x.test/more{i}", b"more", sha1_digest(b"more")) for i in range(2)]
        extra = gzip.compress(b"".join(r + b"\r\n\r\n" for r in more), mtime=0)
    else:
        extra = gzip.compress(_http_response("http://x.test/bad", b"bad", sha1_digest(b"other")) + b"\r\n\r\n")
    path.write_bytes(kept + extra)
    recovered = subprocess.run([STRATA, "recover", "c", "--root", str(root)], capture_output=True, text=True)
    assert recovered.returncode == 0, recovered.stderr
    assert not path.exists() and (coll.archive_dir / "c-0001.warc.gz").read_bytes() == kept
