"""Properties of import, verify and rebuild over generated WARC and ARC files (Hypothesis).

A file is made of captures (responses, some chunked, resources, identical-payload revisits of the
same or another URL, with or without their ``WARC-Refers-To*`` headers), then written in one of the
ways tools write them: WARC/1.0 or 1.1, uncompressed, one gzip member per record or one gzip stream
for the whole file, records duplicated, reordered, followed by CRLF CRLF, one CRLF, or nothing; or
as an ARC file. For every one:

- the import either refuses it with a message, leaving the collection as it was, or takes it, and
  then the collection's CDXJ is pywb's indexer's over the file, line for line;
- ``verify`` finds nothing wrong with what it took (tolerated deviations are notes);
- ``index rebuild`` gives back the same index, runs and captures.

Examples are few and small (each imports into a fresh collection): the suite stays fast.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import shutil
import tempfile
import uuid
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from index.capture.importing import import_files
from index.capture.rebuild import rebuild_state
from index.cdx import cdxj
from index.collection import Collection
from index.integrity.verify import verify
from index.storage.state import HarvestState

URLS = ["http://example.test/", "https://example.test/", "http://example.test/a.html", "http://other.test/b.png"]
BODIES = [b"<html><p>one</p></html>", b"<html><p>two</p></html>", b"\x89PNG fake image", b""]
DATES = [f"2020-0{m}-01T10:00:0{s}Z" for m in (3, 4) for s in range(4)]


def _sha1(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def _chunked(body: bytes) -> bytes:
    half = len(body) // 2
    parts = [p for p in (body[:half], body[half:]) if p]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


@st.composite
def captures(draw):
    """What a file holds, tool-agnostic: ``(kind, url, date, body, extra)``."""
    out = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["response", "response", "chunked", "resource", "revisit"]))
        url, date, body = draw(st.sampled_from(URLS)), draw(st.sampled_from(DATES)), draw(st.sampled_from(BODIES))
        held = [c for c in out if c[0] in ("response", "chunked", "resource")]
        if kind == "revisit":
            if not held:
                continue
            original = draw(st.sampled_from(held))
            refers = draw(st.booleans())
            if not refers:  # a revisit that names no original is one of its own URL (either scheme)
                url = draw(st.sampled_from([original[1], original[1].replace("http:", "https:", 1)]))
            out.append(("revisit", url, date, original[3], {"of": original, "refers": refers}))
        else:
            out.append((kind, url, date, body, {"status": draw(st.sampled_from(["200 OK", "404 Not Found"]))}))
    return out


def _warc_record(version: str, kind: str, url: str, date: str, body: bytes, extra: dict) -> bytes:
    headers = {"WARC-Type": kind, "WARC-Record-ID": f"<urn:uuid:{uuid.uuid4()}>", "WARC-Date": date}
    headers["WARC-Target-URI"] = url
    if kind == "resource":
        block, payload = body, body
        headers["Content-Type"] = "text/plain"
    elif kind == "revisit":
        original = extra["of"]
        http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
        block, payload = http, _chunked(original[3]) if original[0] == "chunked" else original[3]
        headers["WARC-Profile"] = f"http://netpreserve.org/warc/{version[5:]}/revisit/identical-payload-digest"
        headers["WARC-Truncated"] = "length"
        if extra["refers"]:
            headers["WARC-Refers-To-Target-URI"] = original[1]
            headers["WARC-Refers-To-Date"] = original[2]
        headers["Content-Type"] = "application/http; msgtype=response"
    else:
        stored = _chunked(body) if kind == "chunked" else body
        framing = "Transfer-Encoding: chunked" if kind == "chunked" else f"Content-Length: {len(body)}"
        http = f"HTTP/1.1 {extra['status']}\r\nContent-Type: text/html\r\n{framing}\r\n\r\n".encode()
        block, payload = http + stored, stored  # the digest of the payload as stored, as writers do
        headers["WARC-Type"] = "response"
        headers["Content-Type"] = "application/http; msgtype=response"
    headers["WARC-Payload-Digest"] = _sha1(payload)
    headers["WARC-Block-Digest"] = _sha1(block)
    headers["Content-Length"] = str(len(block))
    head = version + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return head.encode() + block


def _arc_record(url: str, date: str, body: bytes) -> bytes:
    content = b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n" + body
    ts = "".join(ch for ch in date if ch.isdigit())[:14]
    return f"{url} 192.0.2.1 {ts} text/html {len(content)}\n".encode() + content + b"\n"


@st.composite
def files(draw):
    """``(name, bytes, whole)``: a file as some tool writes it; ``whole`` says every reader reads
    all of it (else the import is expected to refuse it)."""
    caps = draw(captures())
    if draw(st.integers(0, 5)) == 0:  # an ARC file, uncompressed or a gzip member per record
        body = b"1 0 test\nURL IP-address Archive-date Content-type Archive-length\n"
        records = [b"filedesc://t.arc 0.0.0.0 20200301000000 text/plain %d\n%s\n" % (len(body), body)]
        records += [_arc_record(c[1], c[2], c[3]) for c in caps if c[0] == "response"]
        if draw(st.booleans()):
            return "t.arc.gz", b"".join(gzip.compress(r, mtime=0) for r in records), True
        return "t.arc", b"".join(records), True
    version = draw(st.sampled_from(["WARC/1.0", "WARC/1.1"]))
    records = [_warc_record(version, *c) for c in caps]
    if not records:
        return "t.warc", b"", False  # an empty file: nothing to import
    if draw(st.booleans()):
        records = records + [draw(st.sampled_from(records))]  # a record written twice
    records = draw(st.permutations(records)) if draw(st.booleans()) else records  # originals after revisits
    ending = draw(st.sampled_from([b"\r\n\r\n", b"\r\n\r\n", b"\r\n", b""]))
    layout = draw(st.sampled_from(["plain", "members", "members", "one stream"]))
    if layout == "members":  # nothing after a block is tolerated too: the member ends the record
        return "t.warc.gz", b"".join(gzip.compress(r + ending, mtime=0) for r in records), True
    data = b"".join(r + ending for r in records)
    if layout == "one stream":  # the whole file one gzip member: replay cannot reach record 2 on
        return "t.warc.gz", gzip.compress(data, mtime=0), len(records) == 1
    # uncompressed: nothing between two records leaves no line end to tell them apart
    return "t.warc", data, ending != b"" or len(records) == 1


def _state(coll: Collection) -> tuple:
    with HarvestState(coll.db_path) as state:
        runs = [{k: v for k, v in r.items() if k != "pid"} for r in state.runs()]
        captures = state.conn.execute(
            "SELECT url, timestamp, record_type, class, status, digest, warc, offset, length FROM captures ORDER BY id"
        ).fetchall()
    return runs, [tuple(c) for c in captures]


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,  # the same examples every run: a failure is never a matter of luck
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(files())
def test_an_import_is_refused_whole_or_gives_pywb_s_index_verifies_and_rebuilds_the_same(made):
    name, data, whole = made
    work = Path(tempfile.mkdtemp(prefix="strata-prop-"))
    try:
        source = work / name
        source.write_bytes(data)
        root = work / "collections"
        root.mkdir()
        report = import_files(root, "c", [source], fulltext=False)
        event(f"{name}: {'refused' if report.refused else 'imported'}")
        if report.refused:
            (refused,) = report.refused
            assert refused.reason and not whole, refused
            assert not (root / "c").exists()  # the collection it would have created: nothing of it
            return
        assert [i.name for i in report.imported] == [name], report.refused
        coll = Collection.open(root, "c")
        lines = sorted(line.decode() for line in coll.cdxj_path.read_bytes().splitlines())
        assert lines == sorted(line.decode().rstrip("\n") for line in cdxj.index_warc(source, name))
        checked = verify(coll, strict=False)
        assert checked.intact, [(p.kind, p.detail) for p in checked.problems]
        before = (coll.cdxj_path.read_bytes(), _state(coll))
        rebuild_state(coll)
        assert (coll.cdxj_path.read_bytes(), _state(coll)) == before
    finally:
        shutil.rmtree(work, ignore_errors=True)
