"""``index.integrity.recordscan``'s whole-prefix view (``scan_prefix``): every record of a WARC or ARC
file checked, and the first damage found with its offset, on files written by warcio (WARC 1.0 and
1.1, gzipped and not) and the committed ARCs. A WARC's reasons are the record scanner's own (those
``strata verify`` and ``strata import`` give); an ARC's are warcio's reader's."""

from __future__ import annotations

import gzip

import pytest
from warcio.archiveiterator import ArchiveIterator

from index.integrity.recordscan import open_prefix, scan_prefix
from tests.support.warc_makers import DATA, Cap, flip_bytes, gzip_records, raw_record, sha1_digest, write_warc

FORMATS = [("1.0", True), ("1.0", False), ("1.1", True), ("1.1", False)]


def _file(tmp_path, version, gz):
    caps = [
        Cap(f"http://example.test/p{i}", f"2020-01-0{i + 1}T00:00:00Z", b"<html>" + b"x" * 3000 + b"</html>")
        for i in range(5)
    ]
    name = f"w{version}.warc" + (".gz" if gz else "")
    return write_warc(tmp_path / name, caps, gzip=gz, version=version, warcinfo={"software": "warcio"})


def _offsets(path):
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        out = []
        for record in it:
            it.read_to_end(record)
            out.append((record.rec_type, it.get_record_offset(), it.get_record_length()))
        return out


@pytest.mark.parametrize(("version", "gz"), FORMATS)
def test_whole_file_passes(tmp_path, version, gz):
    path = _file(tmp_path, version, gz)
    scan = scan_prefix(path)
    assert scan.damage is None and scan.whole
    assert scan.records == 11 and scan.versions == {f"WARC/{version}"} and scan.gzipped == gz
    last = _offsets(path)[-1]
    assert scan.good_end == last[1] + last[2]


@pytest.mark.parametrize(("version", "gz"), FORMATS)
def test_truncated_mid_record_names_the_record(tmp_path, version, gz):
    path = _file(tmp_path, version, gz)
    records = _offsets(path)
    _, start, length = records[5]  # the third response
    path.write_bytes(path.read_bytes()[: start + length // 2])
    scan = scan_prefix(path)
    assert scan.damage is not None and scan.damage.offset == start
    assert scan.records == 5 and scan.good_end <= start
    assert "truncated" in scan.damage.reason, scan.damage.reason


@pytest.mark.parametrize(("version", "gz"), FORMATS)
def test_flipped_bytes_inside_a_record(tmp_path, version, gz):
    path = _file(tmp_path, version, gz)
    records = _offsets(path)
    _, start, length = records[3]
    flip_bytes(path, start + length // 2)
    scan = scan_prefix(path)
    assert scan.damage is not None and scan.damage.offset == start, scan.damage
    assert scan.records == 3
    reason = scan.damage.reason
    assert ("gzip" in reason) if gz else ("block digest does not match" in reason), reason


def test_prefix_reads_only_whole_records(tmp_path):
    path = _file(tmp_path, "1.1", True)
    records = _offsets(path)
    flip_bytes(path, records[7][1] + 40)
    scan = scan_prefix(path)
    with open_prefix(path, scan.good_end) as fh:
        got = [r.rec_type for r in ArchiveIterator(fh)]
    assert got == [r[0] for r in records[:7]]


def test_bytes_after_the_last_record(tmp_path):
    path = _file(tmp_path, "1.1", False)
    size = path.stat().st_size
    path.write_bytes(path.read_bytes() + b"WARC/1.1\r\nWARC-Type: resp")
    scan = scan_prefix(path)
    assert scan.records == 11 and scan.damage.offset == size


def test_one_gzip_stream_for_the_whole_file_is_refused_with_the_fix(tmp_path):
    plain = _file(tmp_path, "1.1", False)
    whole = tmp_path / "whole.warc.gz"
    whole.write_bytes(gzip.compress(plain.read_bytes()))
    scan = scan_prefix(whole)
    assert scan.damage.offset == 0 and scan.good_end == 0 and "warcio recompress" in scan.damage.reason


@pytest.mark.parametrize(
    ("content", "reason"),
    [(b"", "empty"), (b"hello world\n", "no WARC record starts here"), (b"\x1f\x8b\x08\x00garbage", "gzip")],
)
def test_not_an_archive(tmp_path, content, reason):
    path = tmp_path / "x.warc.gz"
    path.write_bytes(content)
    scan = scan_prefix(path)
    assert scan.damage.offset == 0 and reason in scan.damage.reason and scan.records == 0
    assert "\n" not in scan.damage.reason


@pytest.mark.parametrize("name", ["legacy-1998.arc", "legacy-2001.arc.gz"])
def test_arc_files(name):
    scan = scan_prefix(DATA / name)
    assert scan.whole and scan.format == "arc" and scan.records == 3 and scan.versions == {"ARC/1.0"}


def test_cut_arc(tmp_path):
    path = tmp_path / "cut.arc"
    data = (DATA / "legacy-1998.arc").read_bytes()
    path.write_bytes(data[:-40])
    scan = scan_prefix(path)
    assert scan.records == 2 and scan.damage.offset == 434 and "cut short" in scan.damage.reason


def test_wrong_content_length_without_digest(tmp_path, capfd):
    def record(body: bytes, length: int) -> bytes:
        return (
            b"WARC/1.0\r\nWARC-Type: resource\r\nWARC-Target-URI: http://x.test/\r\n"
            b"WARC-Date: 2020-01-01T00:00:00Z\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000001>\r\n"
            b"Content-Type: text/plain\r\nContent-Length: " + str(length).encode() + b"\r\n\r\n" + body + b"\r\n\r\n"
        )

    first = record(b"0123456789", 10)
    path = tmp_path / "hand.warc"
    path.write_bytes(first + record(b"0123456789", 5) + record(b"abc", 3))
    scan = scan_prefix(path)
    assert scan.records == 1 and scan.damage.offset == len(first)
    assert "does not end where its Content-Length says" in scan.damage.reason
    assert capfd.readouterr().err == ""  # warcio's own warning is not printed


# Where warcio's reading (the old warcscan) and the record scanner's disagreed, the prefix is the
# scanner's, as import and the rebuild read it: the stricter reading, but for zero padding.


@pytest.mark.parametrize("gz", [True, False])
def test_a_payload_digest_that_fails_ends_the_prefix(tmp_path, gz):
    """warcio's reader checked block digests only: this file was whole to it."""
    first = raw_record("resource", "http://x.test/a", "2020-01-01T00:00:00Z", b"aaa", "text/plain")
    block = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nbbb"
    bad = raw_record(
        "response",
        "http://x.test/b",
        "2020-01-01T00:00:01Z",
        block,
        "application/http;msgtype=response",
        **{"WARC-Payload-Digest": sha1_digest(b"ccc")},
    )
    if gz:
        path = gzip_records(tmp_path / "bad.warc.gz", first, bad)
    else:
        path = tmp_path / "bad.warc"
        path.write_bytes(first + b"\r\n\r\n" + bad + b"\r\n\r\n")
    scan = scan_prefix(path)
    assert scan.records == 1 and scan.damage is not None
    assert scan.damage.offset == scan.good_end + (0 if gz else 4)
    assert scan.damage.reason == "response record: payload digest does not match WARC-Payload-Digest"
    with open_prefix(path, scan.damage.offset) as fh:
        assert [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(fh)] == ["http://x.test/a"]


def test_zero_padding_after_the_last_member_is_not_damage(tmp_path):
    """As ``scan`` reads it (verify): the records and good_end are those of the file without it."""
    path = _file(tmp_path, "1.1", True)
    size = path.stat().st_size
    path.write_bytes(path.read_bytes() + b"\0" * 5000)
    scan = scan_prefix(path)
    assert scan.whole and scan.records == 11 and scan.good_end == size


def test_a_lower_case_warc_version_line_ends_the_prefix(tmp_path):
    """warcio reads 'warc/1.0'; the scanner, import and verify do not (fastwarc neither)."""
    first = raw_record("resource", "http://x.test/a", "2020-01-01T00:00:00Z", b"aaa", "text/plain")
    second = raw_record("resource", "http://x.test/b", "2020-01-01T00:00:00Z", b"bbb", "text/plain", version="warc/1.0")
    path = tmp_path / "lower.warc"
    path.write_bytes(first + b"\r\n\r\n" + second + b"\r\n\r\n")
    scan = scan_prefix(path)
    assert scan.records == 1 and scan.damage.offset == len(first) + 4
    assert scan.damage.reason == "no WARC record starts here"
