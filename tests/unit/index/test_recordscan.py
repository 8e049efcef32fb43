"""``index.integrity.recordscan`` on WARCs nobody here wrote (Debian's wget, gzipped and not; warcio), against
warcio's own reading of the same files: same records at the same offsets, every digest accepted;
and each kind of damage found where it is."""

from __future__ import annotations

import base64
import gzip
import hashlib
import subprocess
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from demo.sample_site import serve_sample_site
from index.integrity import recordscan
from index.integrity.recordscan import Damage, Record, _DigestCheck, check_record_at, scan


def warcio_records(path: Path) -> list[tuple[str, int, int]]:
    out = []
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        for record in it:
            record.content_stream().read()
            out.append((record.rec_type, it.get_record_offset(), it.get_record_length()))
    return out


@pytest.fixture(scope="module")
def wget_warcs(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("wget")
    with serve_sample_site(version=1) as site:
        for name, extra in (("gz", []), ("plain", ["--no-warc-compression"])):
            subprocess.run(
                [
                    "wget",
                    "-q",
                    "-r",
                    "-l",
                    "2",
                    "-e",
                    "robots=off",
                    "--no-proxy",
                    "--tries=1",
                    "--timeout=10",
                    f"--warc-file={out / name}",
                    *extra,
                    "-P",
                    str(out / f"{name}-files"),
                    site.base_url + "/",
                ],
                check=False,
                timeout=120,
            )
    return {"gz": out / "gz.warc.gz", "plain": out / "plain.warc"}


@pytest.mark.parametrize("kind", ["gz", "plain"])
def test_wget_warcs_read_as_warcio_reads_them(wget_warcs, kind):
    path = wget_warcs[kind]
    sha = hashlib.sha256()
    items = list(scan(path, sha))
    assert sha.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
    assert not [i for i in items if isinstance(i, Damage) or i.problem]
    assert [(r.rec_type, r.offset, r.length) for r in items] == warcio_records(path)
    responses = [r for r in items if r.rec_type == "response"]
    assert len(responses) > 5 and all(r.http_status == "200" for r in responses[:3])
    for r in items:
        assert check_record_at(path, r.offset, r.length) == ""


@pytest.mark.parametrize("kind", ["gz", "plain"])
def test_every_read_and_inflate_boundary_gives_the_same_records(wget_warcs, kind, monkeypatch):
    """Reads of 7 bytes and inflated slices of 5: headers, blocks and trailers split everywhere."""
    path = wget_warcs[kind]
    expected = list(scan(path))
    monkeypatch.setattr(recordscan, "READ_SIZE", 7)
    monkeypatch.setattr(recordscan, "OUT_SLICE", 5)
    sha = hashlib.sha256()
    assert list(scan(path, sha)) == expected
    assert sha.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
    for r in expected[:20]:
        assert check_record_at(path, r.offset, r.length) == ""


def test_damage_in_a_plain_warc_is_the_record_whose_digest_fails(wget_warcs, tmp_path):
    data = bytearray(wget_warcs["plain"].read_bytes())
    records = [r for r in scan(wget_warcs["plain"]) if isinstance(r, Record)]
    target = next(r for r in records if r.rec_type == "response" and r.length > 600)
    data[target.offset + target.length - 100] ^= 0x20  # a payload byte
    path = tmp_path / "bad.warc"
    path.write_bytes(bytes(data))
    bad = [r for r in scan(path) if isinstance(r, Damage) or r.problem]
    assert [(r.offset, r.problem) for r in bad] == [(target.offset, "block digest does not match WARC-Block-Digest")]
    assert check_record_at(path, target.offset, target.length) == "block digest does not match WARC-Block-Digest"


def test_a_flipped_gzip_member_and_a_truncated_end(wget_warcs, tmp_path):
    src = wget_warcs["gz"]
    records = [r for r in scan(src) if isinstance(r, Record)]
    target = records[len(records) // 2]
    data = bytearray(src.read_bytes())
    data[target.offset + target.length // 2] ^= 0xFF
    path = tmp_path / "flip.warc.gz"
    path.write_bytes(bytes(data))
    items = list(scan(path))
    damage = [i for i in items if isinstance(i, Damage)]
    assert len(damage) == 1 and damage[0].offset == target.offset
    assert damage[0].end == target.offset + target.length  # reading went on at the next member
    assert len([i for i in items if isinstance(i, Record)]) == len(records) - 1
    assert check_record_at(path, target.offset, target.length) != ""
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(src.read_bytes()[: target.offset + 50])
    items = list(scan(cut))
    assert isinstance(items[-1], Damage) and items[-1].offset == target.offset and "truncated" in items[-1].reason
    # zero padding after the last member is not damage
    padded = tmp_path / "padded.warc.gz"
    padded.write_bytes(src.read_bytes() + b"\0" * 5000)
    assert not [i for i in scan(padded) if isinstance(i, Damage)]


def _b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def _chunked_record(payload_digest: str) -> bytes:
    block = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\ne\r\n chunked world\r\n0\r\n\r\n"
    head = (
        "WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: http://example.org/\r\n"
        "WARC-Date: 2014-01-01T00:00:00Z\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000001>\r\n"
        f"Content-Type: application/http; msgtype=response\r\nWARC-Block-Digest: {_b32(block)}\r\n"
        f"WARC-Payload-Digest: {payload_digest}\r\nContent-Length: {len(block)}\r\n\r\n"
    )
    return gzip.compress(head.encode() + block + b"\r\n\r\n")


def test_a_chunked_payload_is_checked_de_chunked(tmp_path):
    # the payload digest of a chunked body stored as sent covers the de-chunked entity (WARC 1.1)
    path = tmp_path / "chunked.warc.gz"
    path.write_bytes(_chunked_record(_b32(b"hello chunked world")))
    [record] = list(scan(path))
    assert record.problem == "" and record.http_status == "200"
    path.write_bytes(_chunked_record(_b32(b"hello chunked world!")))
    [record] = list(scan(path))
    assert record.problem == "payload digest does not match WARC-Payload-Digest"


@pytest.mark.parametrize(
    "encode",
    [
        lambda d: base64.b32encode(d).decode(),
        lambda d: base64.b32encode(d).decode().rstrip("="),
        lambda d: d.hex(),
        lambda d: d.hex().upper(),
    ],
)
@pytest.mark.parametrize("alg", ["sha1", "sha256", "md5"])
def test_digest_labels_in_base32_or_hex(alg, encode):
    data = b"archive" * 99
    good = hashlib.new(alg, data).digest()
    check = _DigestCheck(f"{alg}:{encode(good)}")
    check.hash.update(data)
    assert check.matches() is True
    bad = bytes([good[0] ^ 1]) + good[1:]
    check = _DigestCheck(f"{alg}:{encode(bad)}")
    check.hash.update(data)
    assert check.matches() is False


def test_a_checked_read_in_one_go_judges_as_check_record_at_and_returns_the_member(wget_warcs, tmp_path):
    """``read_checked_record``: for every record of wget's gzipped WARC, whole, with a byte of its
    block flipped, with a byte of its gzip stream flipped, and cut short, the same verdict as
    ``check_record_at``; for a sound one, its member inflated (what warcio reads from the file)."""
    src = wget_warcs["gz"]
    data = src.read_bytes()
    records = [r for r in scan(src) if isinstance(r, Record)]
    assert len(records) > 10
    for r in records:
        member = data[r.offset : r.offset + r.length]
        assert recordscan.read_checked_record(src, r.offset, r.length) == ("", member, gzip.decompress(member))
    flipped = tmp_path / "flipped.warc.gz"
    cuts = []
    for r in records:
        member = bytearray(gzip.decompress(data[r.offset : r.offset + r.length]))
        if len(member) > 40:
            member[-20] ^= 0x20  # inside the block, before the trailer
        cuts.append((r, gzip.compress(bytes(member), mtime=0)))
    # each damaged member in a file of its own at the same offset as in the original
    for r, member in cuts[:15]:
        path = tmp_path / f"{r.offset}.warc.gz"
        path.write_bytes(data[: r.offset] + member)
        want = check_record_at(path, r.offset, len(member))
        assert want != ""
        assert recordscan.read_checked_record(path, r.offset, len(member)) == (want, None, None)
    for r in records[:15]:
        raw = bytearray(data)
        raw[r.offset + r.length // 2] ^= 0xFF
        flipped.write_bytes(bytes(raw))
        want = check_record_at(flipped, r.offset, r.length)
        assert want != "" and recordscan.read_checked_record(flipped, r.offset, r.length) == (want, None, None)
        cut = tmp_path / "cut.warc.gz"
        cut.write_bytes(data[: r.offset + r.length - 5])
        want = check_record_at(cut, r.offset, r.length)
        assert "truncated" in want and recordscan.read_checked_record(cut, r.offset, r.length) == (want, None, None)


def test_a_record_too_large_to_read_in_one_go_is_left_to_check_record_at(wget_warcs, monkeypatch):
    src = wget_warcs["gz"]
    r = next(r for r in scan(src) if isinstance(r, Record) and r.rec_type == "response" and r.length > 600)
    monkeypatch.setattr(recordscan, "WHOLE_READ_LIMIT", r.length - 1)
    assert recordscan.read_checked_record(src, r.offset, r.length) == ("", None, None)
    monkeypatch.setattr(recordscan, "WHOLE_READ_LIMIT", r.length)
    monkeypatch.setattr(recordscan, "WHOLE_INFLATED_LIMIT", 500)
    assert recordscan.read_checked_record(src, r.offset, r.length) == ("", None, None)
    plain = wget_warcs["plain"]
    p = next(r for r in scan(plain) if isinstance(r, Record))
    assert recordscan.read_checked_record(plain, p.offset, p.length) == ("", None, None)  # not gzip


# -- what every reader tolerates, and what none can read ---------------------------------------


def _record(uri: str, body: bytes, rid: int, rec_type: str = "resource") -> bytes:
    digest = "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
    head = (
        f"WARC/1.1\r\nWARC-Type: {rec_type}\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{rid:012d}>\r\n"
        f"WARC-Date: 2020-01-01T00:00:00Z\r\nWARC-Target-URI: {uri}\r\nWARC-Block-Digest: {digest}\r\n"
        f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


@pytest.mark.parametrize(
    ("separator", "note"),
    [(b"\r\n\r\n", ""), (b"\r\n", "\\r\\n instead"), (b"\n\n", "\\n\\n instead"), (b"\n", "\\n instead")],
)
def test_records_followed_by_other_blank_lines_are_read_and_noted(tmp_path, separator, note):
    """node-warc writes one CRLF between records; warcio and pywb read them, so do we (with a note)."""
    records = [_record(f"http://example.org/{n}", b"payload %d" % n, n) for n in range(3)]
    path = tmp_path / "sep.warc"
    path.write_bytes(separator.join(records) + separator)
    items = list(scan(path))
    assert [type(i) for i in items] == [Record] * 3 and not any(i.problem for i in items)
    assert [(i.offset, i.length) for i in items] == [(i.offset, i.length) for i in scan_offsets(records, separator)]
    assert all((note in i.note) if note else not i.note for i in items)
    for i in items:
        assert check_record_at(path, i.offset, i.length) == ""


def scan_offsets(records: list[bytes], separator: bytes) -> list[Record]:
    out, at = [], 0
    for raw in records:
        out.append(Record(at, len(raw), "", "", "", "", ""))
        at += len(raw) + len(separator)
    return out


def test_a_gzip_member_without_the_final_crlf_pair_is_whole_and_noted(tmp_path):
    """pywb's example-url-agnostic-*.warc.gz: a warcinfo whose member ends right after its block."""
    members = [gzip.compress(_record("http://example.org/a", b"one", 1), mtime=0)]
    members.append(gzip.compress(_record("http://example.org/b", b"two", 2) + b"\r\n\r\n", mtime=0))
    path = tmp_path / "nocrlf.warc.gz"
    path.write_bytes(b"".join(members))
    items = list(scan(path))
    assert [(type(i), i.offset, i.length) for i in items] == [
        (Record, 0, len(members[0])),
        (Record, len(members[0]), len(members[1])),
    ]
    assert "nothing instead" in items[0].note and not items[1].note
    assert check_record_at(path, 0, len(members[0])) == ""


def test_what_no_reader_can_read_is_damage(tmp_path):
    one, two = _record("http://example.org/a", b"one", 1), _record("http://example.org/b", b"two", 2)
    cases = {
        # two records in one member: replay seeks members, the second cannot be reached
        "several.warc.gz": (gzip.compress(one + b"\r\n\r\n" + two + b"\r\n\r\n", mtime=0), 0, "several records"),
        # one record in two members
        "split.warc.gz": (gzip.compress(one[:40], mtime=0) + gzip.compress(one[40:] + b"\r\n\r\n"), 0, "goes on past"),
        # bytes that are no blank line after a block (a Content-Length 3 bytes short)
        "garbage.warc": (one + b"xyz\r\n\r\n" + two + b"\r\n\r\n", 0, "does not end where"),
        "no-line-end.warc": (one + two + b"\r\n\r\n", 0, "does not end where"),
    }
    for name, (data, offset, reason) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        damage = [i for i in scan(path) if isinstance(i, Damage)]
        assert damage and damage[0].offset == offset and reason in damage[0].reason, (name, damage)
