"""``strata verify`` through the real command, on WARCs from real harvests of the sample site (three
runs: the later two are mostly revisits of the first), each damaged one way."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
from io import BytesIO
from pathlib import Path

import pytest
from click.testing import CliRunner
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from cli import cli
from index.cdx import cdxj
from index.collection import Collection
from index.integrity.fixity import Fixity
from tests.conftest import VENV_BIN
from tests.support.replay_fixtures import harvest_versions

NAME = "c"


@pytest.fixture(scope="module")
def harvested(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("verify") / "collections"
    root.mkdir()
    harvest_versions(root, NAME, (1, 2, 3))
    return root


@pytest.fixture
def coll(harvested, tmp_path) -> Collection:
    root = tmp_path / "collections"
    shutil.copytree(harvested, root, symlinks=True)
    return Collection(root, NAME)


def run_verify(coll: Collection, *args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(cli, ["verify", NAME, "--root", str(coll.root), "--json", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.output)


def kinds(report: dict) -> list[str]:
    return sorted(p["kind"] for p in report["problems"])


def warcs(coll: Collection) -> list[str]:
    return coll.warc_files()


def cdx_lines(coll: Collection, filename: str) -> list[dict]:
    return [line for line in cdxj.iter_index(coll.cdxj_path) if line["filename"] == filename]


def flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x55
    path.write_bytes(bytes(data))


def test_an_intact_collection_passes_and_the_check_is_logged(coll):
    code, report = run_verify(coll)
    assert code == 0, report["problems"]
    assert report["intact"] and report["files"] == 3
    assert report["records"] > 200 and report["revisits"] > 50 and report["cdxj_lines"] > 100
    last = Fixity(coll.fixity_dir).last_verification()
    assert last["outcome"] == "intact" and last["mode"] == "full"
    events = [json.loads(line) for line in Fixity(coll.fixity_dir).events_path.read_text().splitlines()]
    checks = [e for e in events if e["type"] == "fixity-check"]
    assert {e["file"] for e in checks} == {f"archive/{n}" for n in warcs(coll)}
    assert all(e["algorithm"] == "sha256" and e["outcome"] == "pass" and e["time"] for e in checks)
    assert run_verify(coll, "--quick")[0] == 0
    assert run_verify(coll, "--fixity-only")[0] == 0


def test_the_manifest_is_bagit_sha256sum_checks_it(coll):
    manifest = (coll.fixity_dir / "manifest-sha256.txt").read_text().splitlines()
    assert sorted(line.split("  ", 1)[1] for line in manifest) == [f"archive/{n}" for n in warcs(coll)]
    done = subprocess.run(
        ["sha256sum", "--strict", "-c", "fixity/manifest-sha256.txt"], cwd=coll.path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sizes = Fixity(coll.fixity_dir).sizes()
    assert sizes == {n: (coll.archive_dir / n).stat().st_size for n in warcs(coll)}


def test_one_flipped_byte_in_a_record_body(coll):
    name = warcs(coll)[0]
    revisited = {(x["url"], x["digest"]) for x in cdxj.iter_index(coll.cdxj_path) if x["mime"] == "warc/revisit"}
    line = max(
        (x for x in cdx_lines(coll, name) if (x["url"], x["digest"]) in revisited), key=lambda x: int(x["length"])
    )
    offset, length = int(line["offset"]), int(line["length"])
    flip_byte(coll.archive_dir / name, offset + length - 30)  # inside the deflated body
    code, report = run_verify(coll)
    assert code == 1
    assert "checksum-mismatch" in kinds(report)
    damaged = [p for p in report["problems"] if p["kind"] in ("damaged-region", "damaged-record")]
    assert len(damaged) == 1
    assert damaged[0]["file"] == f"archive/{name}" and damaged[0]["offset"] == offset
    assert damaged[0]["url"] == line["url"]
    # the next runs' revisits of that page now depend on a damaged original
    assert {d["url"] for d in damaged[0]["dependents"]} == {line["url"]}
    assert len(damaged[0]["dependents"]) == 2
    # --quick does not read files: sizes are unchanged, so it cannot see this
    assert run_verify(coll, "--quick")[0] == 0
    assert kinds(run_verify(coll, "--fixity-only")[1]) == ["checksum-mismatch"]
    assert Fixity(coll.fixity_dir).last_verification()["outcome"] == "problems"


def test_a_truncated_file(coll):
    name = warcs(coll)[-1]
    path = coll.archive_dir / name
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.truncate(size - 3000)
    code, report = run_verify(coll)
    assert code == 1
    assert {"checksum-mismatch", "size-mismatch", "truncated"} <= set(kinds(report))
    assert "cdxj-dangling" not in kinds(report)  # lines past the cut are counted with the cut
    trunc = next(p for p in report["problems"] if p["kind"] == "truncated")
    assert trunc["file"] == f"archive/{name}" and 0 < trunc["offset"] < size - 3000 and trunc["url"]
    code, quick = run_verify(coll, "--quick")
    assert code == 1 and kinds(quick) == ["size-mismatch"]
    assert f"{size - 3000} bytes, shorter than the {size}" in quick["problems"][0]["detail"]


def test_a_deleted_warc_lists_the_revisits_that_depended_on_it(coll):
    first = warcs(coll)[0]
    (coll.archive_dir / first).unlink()
    code, report = run_verify(coll)
    assert code == 1
    assert kinds(report) == ["missing-file"]
    missing = report["problems"][0]
    assert missing["file"] == f"archive/{first}"
    assert f"{len(cdx_lines(coll, first))} CDXJ line(s) point into it" in missing["detail"]
    later = [x for x in cdxj.iter_index(coll.cdxj_path) if x["filename"] != first and x["mime"] == "warc/revisit"]
    originals_in_first = {(x["url"], x["digest"]) for x in cdx_lines(coll, first)}
    expected = {(x["filename"], int(x["offset"])) for x in later if (x["url"], x["digest"]) in originals_in_first}
    assert expected
    assert {(d["file"].removeprefix("archive/"), d["offset"]) for d in missing["dependents"]} == expected
    code, quick = run_verify(coll, "--quick")
    assert code == 1 and kinds(quick) == ["missing-file"]


def test_an_unknown_extra_file(coll):
    (coll.archive_dir / "notes.txt").write_text("not a WARC\n")
    code, report = run_verify(coll)
    assert code == 1 and kinds(report) == ["not-in-manifest"]
    assert report["problems"][0]["file"] == "archive/notes.txt"
    assert kinds(run_verify(coll, "--quick")[1]) == ["not-in-manifest"]
    # --adopt takes in WARCs only
    code, report = run_verify(coll, "--adopt")
    assert code == 1 and report["adopted"] == []


def test_a_cdxj_line_pointing_nowhere(coll):
    lines = coll.cdxj_path.read_bytes().splitlines(keepends=True)
    entry = cdxj.parse_line(lines[5])
    lines[5] = lines[5].replace(
        f'"offset": "{entry["offset"]}"'.encode(), f'"offset": "{int(entry["offset"]) + 7}"'.encode()
    )
    coll.cdxj_path.write_bytes(b"".join(lines))
    code, report = run_verify(coll)
    assert code == 1
    assert kinds(report) == ["cdxj-dangling", "not-in-cdxj"]
    dangling = next(p for p in report["problems"] if p["kind"] == "cdxj-dangling")
    assert dangling["offset"] == int(entry["offset"]) + 7 and dangling["url"] == entry["url"]
    assert "line 6" in dangling["detail"]
    unindexed = next(p for p in report["problems"] if p["kind"] == "not-in-cdxj")
    assert unindexed["offset"] == int(entry["offset"]) and unindexed["url"] == entry["url"]


def test_a_manifest_entry_changed(coll):
    manifest = coll.fixity_dir / "manifest-sha256.txt"
    lines = manifest.read_text().splitlines(keepends=True)
    digest, _, path = lines[1].partition("  ")
    lines[1] = ("f" if digest[0] != "f" else "e") + digest[1:] + "  " + path
    manifest.write_text("".join(lines))
    code, report = run_verify(coll)
    assert code == 1 and kinds(report) == ["checksum-mismatch"]
    assert report["problems"][0]["file"] == path.strip()
    assert "the manifest says" in report["problems"][0]["detail"]


def test_a_warc_from_before_the_manifest_is_adopted_only_when_its_records_check_out(coll, tmp_path):
    # a WARC written by warcio itself: nothing Strata wrote
    name = "other-20200101000000.warc.gz"
    path = coll.archive_dir / name
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/plain")], protocol="HTTP/1.1")
        writer.write_record(
            writer.create_warc_record("http://example.org/", "response", payload=BytesIO(b"hello"), http_headers=http)
        )
    code, report = run_verify(coll)
    assert code == 1 and kinds(report) == ["not-in-cdxj", "not-in-manifest"]
    code, report = run_verify(coll, "--adopt")  # not indexed yet: its bytes are what adoption asks about
    assert report["adopted"] == [name] and kinds(report) == ["not-in-cdxj"]
    Fixity(coll.fixity_dir).manifest_path.write_text(
        "".join(x for x in Fixity(coll.fixity_dir).manifest_path.read_text().splitlines(True) if name not in x)
    )
    cdxj.merge_lines(coll.cdxj_path, cdxj.index_warc(path, name))
    code, report = run_verify(coll)
    assert code == 1 and kinds(report) == ["not-in-manifest"]
    assert "--adopt" in report["problems"][0]["detail"]
    broken = coll.archive_dir / "broken-20200101000000.warc.gz"
    broken.write_bytes(path.read_bytes()[:-10])
    code, report = run_verify(coll, "--adopt")
    assert report["adopted"] == [name]
    assert kinds(report) == ["not-in-manifest", "truncated"]
    assert all(p["file"] == f"archive/{broken.name}" for p in report["problems"])
    broken.unlink()
    assert run_verify(coll)[0] == 0
    done = subprocess.run(["sha256sum", "-c", "fixity/manifest-sha256.txt"], cwd=coll.path, capture_output=True)
    assert done.returncode == 0


def test_it_cannot_run_exit_2_one_line_no_traceback(coll):
    strata = str(VENV_BIN / "strata")
    done = subprocess.run([strata, "verify", "nosuch", "--root", str(coll.root)], capture_output=True, text=True)
    assert done.returncode == 2 and "no collection 'nosuch'" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = subprocess.run(
        [strata, "verify", NAME, "--quick", "--adopt", "--root", str(coll.root)], capture_output=True, text=True
    )
    assert done.returncode == 2 and "--adopt needs the full check" in done.stderr
    done = subprocess.run([strata, "verify", NAME, "--root", str(coll.root)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith(f"{NAME}: intact") and done.stderr == ""


def test_a_lost_cdxj_index_is_one_problem_per_file_with_the_command_that_rebuilds_it(coll):
    coll.cdxj_path.unlink()
    code, report = run_verify(coll)
    assert code == 1 and kinds(report) == ["file-not-indexed"] * 3
    assert all(f"strata index rebuild {NAME}" in p["detail"] for p in report["problems"])
    rebuilt = CliRunner().invoke(cli, ["index", "rebuild", NAME, "--only", "state", "--root", str(coll.root)])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert run_verify(coll)[0] == 0


def test_a_fixity_directory_that_cannot_be_read_is_exit_2(coll):
    manifest = coll.fixity_dir / "manifest-sha256.txt"
    manifest.unlink()
    manifest.mkdir()  # reading it fails whatever the user's rights
    done = subprocess.run(
        [str(VENV_BIN / "strata"), "verify", NAME, "--root", str(coll.root)], capture_output=True, text=True
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"Error: cannot verify {NAME}: ") and "Traceback" not in done.stderr


def test_progress_is_shown_on_a_terminal_only(coll):
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [str(VENV_BIN / "strata"), "verify", NAME, "--root", str(coll.root)],
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=120,
        )
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0
    assert b"verifying: file " in seen and b"\r\x1b[K" in seen
    assert b"verifying" not in done.stdout


def test_a_revisit_found_by_target_uri_and_date_is_matched_to_the_response_not_its_request(tmp_path):
    # as warcio (and wget before it) write them: no WARC-Refers-To, the request record first
    root = tmp_path / "collections"
    coll = Collection.open(root, "w", create=True)
    name = "w-20140101000000.warc.gz"
    path = coll.archive_dir / name
    date = "2014-01-01T00:00:00Z"
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        req = StatusAndHeaders("GET / HTTP/1.1", [("Host", "example.org")], is_http_request=True)
        writer.write_record(
            writer.create_warc_record(
                "http://example.org/", "request", http_headers=req, warc_headers_dict={"WARC-Date": date}
            )
        )
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/plain")], protocol="HTTP/1.1")
        response = writer.create_warc_record(
            "http://example.org/",
            "response",
            payload=BytesIO(b"same bytes"),
            http_headers=http,
            warc_headers_dict={"WARC-Date": date},
        )
        writer.write_record(response)
        digest = response.rec_headers.get_header("WARC-Payload-Digest")
        writer.write_record(
            writer.create_revisit_record(
                "http://example.org/",
                digest,
                "http://example.org/",
                date,
                http_headers=http,
                warc_headers_dict={"WARC-Date": "2014-02-01T00:00:00Z"},
            )
        )
    cdxj.merge_lines(coll.cdxj_path, cdxj.index_warc(path, name))
    result = CliRunner().invoke(cli, ["verify", "w", "--root", str(root), "--adopt", "--json"])
    report = json.loads(result.output)
    assert result.exit_code == 0, report["problems"]
    assert report["adopted"] == [name] and report["revisits"] == 1
