"""The roller's gzip members: each record one member that gzip, Python's gzip and warcio read back
whole, with entropy-coded payloads stored behind deflated headers."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import random
import shutil
import subprocess

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvester.warcfile import WarcRoller

_BUILDER = WARCWriter(None, gzip=True, warc_version="1.1")


def _response(url: str, ctype: str, body: bytes, encoding: str | None = None):
    headers = [("Content-Type", ctype), ("Content-Length", str(len(body)))]
    if encoding:
        headers.append(("Content-Encoding", encoding))
    return _BUILDER.create_warc_record(
        url,
        "response",
        payload=io.BytesIO(body),
        length=len(body),
        http_headers=StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1"),
        warc_headers_dict={"WARC-Date": "2026-01-01T00:00:00Z"},
    )


@pytest.fixture
def bodies():
    rng = random.Random(14)
    jpeg = b"\xff\xd8\xff\xe0" + rng.randbytes(150_000) + b"\xff\xd9"  # past one 64 KiB stored block
    html = ("<html><body>" + "<p>archive text</p>" * 800 + "</body></html>").encode()
    return {
        "http://a.test/x.jpg": ("image/jpeg", jpeg, None),
        "http://a.test/page.html": ("text/html; charset=utf-8", html, None),
        "http://a.test/gz.html": ("text/html", gzip.compress(html), "gzip"),
        "http://a.test/empty.png": ("image/png", b"", None),
        "http://a.test/flat.png": ("image/png", b"\x89PNG\r\n\x1a\n" + b"\x00\x10\x20\x30" * 5000, None),
    }


def _roll(tmp_path, bodies) -> bytes:
    roller = WarcRoller(tmp_path, "c", warcinfo={"software": "test"}, max_size=1 << 30)
    locations = roller.write([_response(url, *spec) for url, spec in bodies.items()])
    roller.close()
    (name,) = roller.files
    data = (tmp_path / name).read_bytes()
    for loc in locations:  # each record one member at its offset
        assert gzip.decompress(data[loc.offset : loc.offset + loc.length]).startswith(b"WARC/1.1\r\n")
    return data


def test_every_record_reads_back_whole(tmp_path, bodies):
    data = _roll(tmp_path, bodies)
    read = {}
    for record in ArchiveIterator(io.BytesIO(data)):
        if record.rec_type == "response":
            payload = record.raw_stream.read()
            read[record.rec_headers.get_header("WARC-Target-URI")] = (
                payload,
                record.rec_headers.get_header("WARC-Payload-Digest"),
            )
    assert set(read) == set(bodies)
    for url, (_, body, _) in bodies.items():
        payload, digest = read[url]
        assert payload == body
        assert digest == "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
    if shutil.which("gzip"):
        path = tmp_path / "copy.gz"
        path.write_bytes(data)
        assert subprocess.run(["gzip", "-t", str(path)], capture_output=True).returncode == 0


def test_entropy_coded_payloads_are_stored_behind_deflated_headers(tmp_path, bodies):
    data = _roll(tmp_path, bodies)
    jpeg = bodies["http://a.test/x.jpg"][1]
    assert jpeg[:4096] in data  # stored from its first byte: the payload stands in the file as it is
    assert b"WARC-Target-URI: http://a.test/x.jpg" not in data  # its headers were deflated
    html = bodies["http://a.test/page.html"][1]
    assert html[:200] not in data  # text is deflated


def test_a_payload_of_such_a_type_that_compresses_after_all_is_deflated(tmp_path, bodies):
    """A PNG written without compression (the sample site's): deflated like any other payload."""
    data = _roll(tmp_path, bodies)
    flat = bodies["http://a.test/flat.png"][1]
    assert flat[:4096] not in data and len(data) < 150_000 + 20_000 + len(flat) // 4


def test_a_payload_that_starts_as_a_jpeg_is_stored_without_the_probe(tmp_path):
    """The JPEG signature settles it (JPEG data is Huffman-coded): even a JPEG whose first segment
    is compressible text (a long XMP packet) is stored, while the same bytes without the signature,
    served under the same type, are probed and deflated. Either way the record reads back whole."""
    packet = b"<x:xmpmeta>" + b"<rdf:li>archive</rdf:li>" * 600 + b"</x:xmpmeta>"
    tail = random.Random(3).randbytes(20_000)
    bodies = {
        "http://a.test/xmp.jpg": ("image/jpeg", b"\xff\xd8\xff\xe1" + packet + tail, None),
        "http://a.test/not-a.jpg": ("image/jpeg", b"BM" + packet + tail, None),
    }
    data = _roll(tmp_path, bodies)
    assert packet[:4096] in data  # the JPEG: stored from its first byte
    assert data.count(packet[:4096]) == 1  # the other: deflated
    read = {
        record.rec_headers.get_header("WARC-Target-URI"): record.raw_stream.read()
        for record in ArchiveIterator(io.BytesIO(data))
        if record.rec_type == "response"
    }
    assert read == {url: body for url, (_, body, _) in bodies.items()}


def test_text_is_deflated_by_isa_l_within_a_tenth_of_zlib_s_size(tmp_path):
    """ISA-L's level 3 for text: what a reader inflates is the record, and the member is at most
    a tenth larger than zlib at level 6 makes the same record."""
    rng = random.Random(5)
    words = ["archive", "library", "harvest", "page", "notice", "ministry", "report", "2026", "section", "year"]
    text = " ".join(rng.choice(words) + str(rng.randrange(100)) for _ in range(6000))
    html = f"<html><body><p>{text}</p></body></html>".encode()
    roller = WarcRoller(tmp_path, "c", warcinfo={"software": "test"}, max_size=1 << 30)
    (loc,) = roller.write([_response("http://a.test/long.html", "text/html", html)])
    roller.close()
    member = (tmp_path / roller.files[0]).read_bytes()[loc.offset : loc.offset + loc.length]
    record = gzip.decompress(member)
    assert record.startswith(b"WARC/1.1\r\n") and html in record
    assert len(member) <= 1.1 * len(gzip.compress(record, 6)) and len(member) < len(html) / 2
