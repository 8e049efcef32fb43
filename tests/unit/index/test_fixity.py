"""The fixity manifest as harvests, recovery and adoption write it (``index.integrity.fixity``), checked with
coreutils' ``sha256sum -c`` from the collection directory, as BagIt tools read a payload manifest."""

from __future__ import annotations

import json
import shutil
import subprocess

from harvester.recovery import recover
from index.collection import Collection
from index.integrity.fixity import Fixity
from index.state import HarvestState
from tests.conftest import harvest


def sha256sum_check(coll: Collection) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["sha256sum", "--strict", "-c", "fixity/manifest-sha256.txt"], cwd=coll.path, capture_output=True, text=True
    )


def test_each_sealed_warc_is_in_the_manifest_with_the_digest_of_its_bytes(root, site):
    for version in (1, 2):
        site.version = version
        assert harvest(root, site, name="c", warc_max_size=20_000)["status"] == "finished"
    coll = Collection(root, "c")
    files = coll.warc_files()
    assert len(files) > 2  # rolled over: several files per run
    fixity = Fixity(coll.fixity_dir)
    assert sorted(fixity.digests()) == files
    assert fixity.sizes() == {n: (coll.archive_dir / n).stat().st_size for n in files}
    done = sha256sum_check(coll)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(": OK") == len(files)
    ingest = [json.loads(x) for x in fixity.events_path.read_text().splitlines()]
    assert [e["file"] for e in ingest] == [f"archive/{n}" for n in files]
    assert {(e["type"], e["algorithm"], e["outcome"], e["agent"]) for e in ingest} == {
        ("ingest", "sha256", "recorded", "harvest")
    }
    assert oct((coll.fixity_dir / "manifest-sha256.txt").stat().st_mode & 0o777) == "0o644"


def test_recovery_seals_a_torn_file_into_the_manifest_and_adopts_one_sealed_before_its_line(root, site):
    assert harvest(root, site, name="c", warc_max_size=20_000)["status"] == "finished"
    coll = Collection(root, "c")
    first, second, *_ = coll.warc_files()
    fixity = Fixity(coll.fixity_dir)
    manifest = fixity.manifest_path.read_text().splitlines(keepends=True)
    # a kill after `second` was renamed, before its manifest line: the state still says "open"
    fixity.manifest_path.write_text("".join(x for x in manifest if second not in x))
    # and `first` torn mid-record while still being written
    torn = coll.archive_dir / (first + ".open")
    shutil.move(coll.archive_dir / first, torn)
    torn.write_bytes(torn.read_bytes()[:-700])
    fixity.manifest_path.write_text(
        "".join(x for x in fixity.manifest_path.read_text().splitlines(True) if first not in x)
    )
    with HarvestState(coll.db_path) as state:
        state.warc_state(first, "open")
        state.warc_state(second, "open")
        report = recover(coll, state)
    assert [r[0] for r in report.repaired] == [first]
    digests = fixity.digests()
    assert first in digests and second in digests
    done = sha256sum_check(coll)
    assert done.returncode == 0, done.stdout + done.stderr
    agents = {json.loads(x)["file"]: json.loads(x)["agent"] for x in fixity.events_path.read_text().splitlines()}
    assert agents[f"archive/{first}"] == agents[f"archive/{second}"] == "recovery"


def test_the_last_verification_is_read_from_the_end_of_a_long_log(tmp_path):
    fixity = Fixity(tmp_path / "fixity")
    assert fixity.last_verification() is None
    fixity.log([{"type": "verification", "outcome": "intact", "n": 1}])
    fixity.log([{"type": "fixity-check", "file": f"archive/f{i}.warc.gz", "outcome": "pass"} for i in range(5000)])
    fixity.log([{"type": "verification", "outcome": "problems", "n": 2}])
    fixity.log([{"type": "ingest", "file": "archive/x.warc.gz", "outcome": "recorded"}])
    assert fixity.last_verification()["n"] == 2
    events = list(fixity.events_reversed())
    assert len(events) == 5003 and events[-1]["n"] == 1 and events[1]["n"] == 2
    assert [e["file"] for e in events[2:5]] == [
        "archive/f4999.warc.gz",
        "archive/f4998.warc.gz",
        "archive/f4997.warc.gz",
    ]


def test_a_name_already_in_the_manifest_is_not_added_twice(tmp_path):
    fixity = Fixity(tmp_path / "fixity")
    assert fixity.add("a.warc.gz", 3, "ab" * 32, agent="test")
    assert not fixity.add("a.warc.gz", 4, "cd" * 32, agent="test")
    assert fixity.manifest_path.read_text() == "ab" * 32 + "  archive/a.warc.gz\n"
    assert fixity.sizes() == {"a.warc.gz": 3}


def test_a_hashing_file_counts_its_position_as_the_file_has_it(tmp_path):
    import hashlib

    from index.integrity.fixity import HashingFile

    path = tmp_path / "out.bin"
    with open(path, "xb") as raw:
        fh = HashingFile(raw)
        positions = []
        for chunk in (b"", b"abc", bytearray(b"\x00" * 70_000), memoryview(b"xyz" * 1000)[5:], b"end"):
            fh.write(chunk)
            positions.append((fh.tell(), raw.tell()))
        fh.flush()
    assert all(counted == actual for counted, actual in positions), positions
    assert fh.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
    assert positions[-1][0] == path.stat().st_size
