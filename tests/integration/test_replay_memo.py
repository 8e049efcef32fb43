"""``replay.recordmemo``: a record is reused only while its bytes read back the same.

Real harvests of the sample site (a copy of the session's ``two`` archive), requests through the
real replay application. Bit rot is simulated as it happens on disk: bytes changed in place inside a
record's gzip member, the file's size, inode and times all kept, after the record was served (and
remembered) once. The next request must answer the damage page; putting the bytes back must serve
the capture again, byte for byte as before. Also: a record rebuilt from the memo carries what a
fresh load carries (every case of ``test_replay_loader``), and the memo stays within its bound.
"""

from __future__ import annotations

import gzip
import os
import shutil
import types
from pathlib import Path

import pytest

from index.cdx import cdxj
from index.collection import Collection
from replay import create_app
from replay.recordload import PayloadRecordLoader, RecordLoader
from replay.recordmemo import RecordMemo
from tests.integration.test_replay_damage import assert_damage_page
from tests.integration.test_replay_loader import CASES, checked_member, state


@pytest.fixture
def copy(archives, tmp_path) -> dict:
    archive = archives["two"]
    root = tmp_path / "collections"
    shutil.copytree(archive.root / archive.name, root / archive.name)
    coll = Collection(root, archive.name)
    lines = list(cdxj.iter_index(coll.cdxj_path))
    first, second = coll.warc_files()
    revisits = [x for x in lines if x["filename"] == second and x["mime"] == "warc/revisit"]
    revisit = max(revisits, key=lambda x: int(x["length"]))  # one with its own HTTP headers
    original = next(
        x for x in lines if x["filename"] == first and x["url"] == revisit["url"] and x["digest"] == revisit["digest"]
    )
    response = next(x for x in lines if x["filename"] == second and x["mime"] == "text/html")
    return {
        "app": create_app(root),
        "name": archive.name,
        "archive": coll.archive_dir,
        "revisit": revisit,
        "original": original,
        "response": response,
    }


def rot(archive: Path, line: dict, flip: bool) -> bytes:
    """XOR 10 bytes near the end of ``line``'s gzip member in place (again to undo it): same file,
    same size, its access and modification times put back. The member's bytes before."""
    path = archive / line["filename"]
    before = os.stat(path)
    start, length = int(line["offset"]), int(line["length"])
    with open(path, "r+b") as fh:
        fh.seek(start)
        member = fh.read(length)
        if flip:
            data = bytearray(member)
            for i in range(10):
                data[length - 40 + i] ^= 0xA5
            fh.seek(start)
            fh.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    return member


@pytest.mark.parametrize("rotten", ["response", "revisit", "original"])
def test_bytes_changed_in_place_after_a_capture_was_served_answer_the_damage_page(copy, reused, rotten):
    client = copy["app"].test_client()
    served = copy["revisit"] if rotten in ("revisit", "original") else copy["response"]
    address = f"/{copy['name']}/{served['timestamp']}id_/{served['url']}"
    first = client.get(address)
    assert first.status_code == 200
    reused.clear()
    again = client.get(address)
    assert (again.status_code, again.data, again.headers) == (200, first.data, first.headers)
    assert reused and all(reused)  # every record of it rebuilt from the memo

    member = rot(copy["archive"], copy[rotten], flip=True)
    reused.clear()
    # the record's own bytes as the body whose text must not show (the revisit has none)
    assert_damage_page(client.get(address), first.data if rotten == "revisit" else gzip.decompress(member))
    assert reused.count(False) == 1  # the rotten one was checked again

    rot(copy["archive"], copy[rotten], flip=True)  # the same bytes back
    restored = client.get(address)
    assert (restored.status_code, restored.data, restored.headers) == (200, first.data, first.headers)


@pytest.mark.parametrize("loader_class", [RecordLoader, PayloadRecordLoader])
@pytest.mark.parametrize("name", [name for name, case in CASES.items() if case[1]])
def test_a_record_rebuilt_from_the_memo_carries_what_a_fresh_load_does(tmp_path, name, loader_class):
    checked = checked_member(tmp_path, CASES[name][0])
    if checked is None:
        return
    _, _, _, raw, inflated = checked
    loader = loader_class()
    want = state(lambda: loader.load_member(raw, inflated))
    if want[0] == "raised":  # nothing to remember: the warcserver remembers a record once parsed
        return
    memo = RecordMemo()
    memo.remember("k", raw, inflated, loader.load_member(raw, inflated))
    rebuilt = memo.record("k", raw)
    if rebuilt is None:  # its stream is not a reader over the inflated bytes: parsed again
        assert memo.inflated("k", raw) == inflated
        return
    # what pywb does with one copy touches no later one
    rebuilt.raw_stream.read()
    rebuilt.raw_stream.close()
    if rebuilt.http_headers is not None:
        rebuilt.http_headers.replace_header("Content-Length", "0")
        rebuilt.http_headers.validate_statusline("204 No Content")
    rebuilt.rec_headers.replace_header("WARC-Date", "edited")
    assert state(lambda: memo.record("k", raw)) == want
    assert memo.record("k", bytes(raw[:-1]) + bytes([raw[-1] ^ 1])) is None  # one bit off: nothing
    assert memo.record("k", raw) is None  # and the entry is gone


def test_the_memo_keeps_within_its_bound():
    memo = RecordMemo(max_bytes=16 * 1000)
    unbuilt = types.SimpleNamespace(raw_stream=None)  # kept for its inflated bytes only
    for i in range(100):
        raw, inflated = bytes([i]) * 300, bytes([i]) * 600
        memo.remember(i, raw, inflated, unbuilt)
        assert memo.kept <= memo.max_bytes
    assert memo.inflated(99, bytes([99]) * 300) == bytes([99]) * 600
    assert memo.inflated(0, bytes([0]) * 300) is None  # the least recently used went first
    memo.remember("big", b"x" * 1000, b"y" * 1000, unbuilt)
    assert memo.inflated("big", b"x" * 1000) is None  # larger than a sixteenth of the bound: not kept
