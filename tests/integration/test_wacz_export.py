"""``strata export wacz``: one run of a collection whose revisits point into an earlier run.

The package is checked by tools nobody here wrote: PyPI's ``wacz validate`` (in its own venv,
``.venv-wacz``, made by ``scripts/dev-setup``), and an unmodified pywb that loads it with
``wb-manager add --unpack-wacz`` into a fresh collection and replays every URL in it, revisits
included, with the original's bytes. The expected bytes are read from the source collection's
WARC files with warcio, not through the exporter.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import zipfile
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from warcio.archiveiterator import ArchiveIterator

from cli import cli
from index.collection import Collection
from index.storage.state import HarvestState
from tests.conftest import REPO, VENV_BIN

WACZ_TOOL = REPO / ".venv-wacz" / "bin" / "wacz"


def _run_ids(archive) -> list[str]:
    with HarvestState(Collection(archive.root, archive.name).db_path) as state:
        return [r["run_id"] for r in sorted(state.runs(), key=lambda r: r["started"])]


def _payloads(warc_paths) -> tuple[dict[str, bytes], list[dict]]:
    """record ID -> payload of every response; and the package's own records, in order."""
    by_id: dict[str, bytes] = {}
    records: list[dict] = []
    for path in warc_paths:
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                headers = record.rec_headers
                entry = {
                    "type": record.rec_type,
                    "id": headers.get_header("WARC-Record-ID"),
                    "url": headers.get_header("WARC-Target-URI"),
                    "date": headers.get_header("WARC-Date"),
                    "refers_to": headers.get_header("WARC-Refers-To"),
                    "status": record.http_headers.get_statuscode() if record.http_headers else "",
                    "body": record.content_stream().read(),
                }
                if record.rec_type == "response":
                    by_id[entry["id"]] = entry["body"]
                    by_id[entry["id"] + " status"] = entry["status"].encode()
                records.append(entry)
    return by_id, records


def _export(archive, out: Path, *args: str) -> dict:
    result = CliRunner().invoke(
        cli, ["export", "wacz", archive.name, "--root", str(archive.root), "--out", str(out), "--json", *args]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_one_run_exports_self_contained_validates_and_replays_in_pywb(archives, tmp_path, wayback_factory):
    archive = archives["three"]
    second_run = _run_ids(archive)[1]
    out = tmp_path / "run2.wacz"
    figures = _export(archive, out, "--run", second_run)
    assert figures["revisits"] > 10 and figures["originals_added"] > 0
    assert figures["revisits_without_original"] == 0 and figures["refers_to_unresolved"] == 0

    # PyPI's validator
    assert WACZ_TOOL.exists(), "the wacz validator's venv is missing: run ./scripts/dev-setup"
    checked = subprocess.run([str(WACZ_TOOL), "validate", "-f", str(out)], capture_output=True, text=True)
    assert checked.returncode == 0 and "is valid" in checked.stdout, checked.stdout + checked.stderr

    # self-contained: every revisit's WARC-Refers-To is a record of the package
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(out) as zf:
        zf.extractall(unpacked)
        assert zf.getinfo("archive/data.warc.gz").compress_type == zipfile.ZIP_STORED
    in_package, records = _payloads(sorted((unpacked / "archive").glob("*.warc.gz")))
    revisits = [r for r in records if r["type"] == "revisit"]
    assert len(revisits) == figures["revisits"]
    assert all(r["refers_to"] in in_package for r in revisits)
    source_ids, _ = _payloads(Collection(archive.root, archive.name).archive_dir / f for f in _files(archive))
    pages = (unpacked / "pages" / "pages.jsonl").read_text().splitlines()
    assert json.loads(pages[0])["format"] == "json-pages-1.0" and len(pages) - 1 == figures["pages"] > 0

    # an unmodified pywb: wb-manager adds the WACZ to a fresh collection, wayback replays it
    peer_dir = tmp_path / "peer"
    peer_dir.mkdir()
    for cmd in (["init", "peer"], ["add", "--unpack-wacz", "peer", str(out)]):
        done = subprocess.run([str(VENV_BIN / "wb-manager"), *cmd], cwd=peer_dir, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    wayback = wayback_factory(peer_dir / "collections")
    replayed = revisits_replayed = 0
    for record in records:
        if record["type"] not in ("response", "revisit") or record["url"].startswith("urn:"):
            continue
        revisit = record["type"] == "revisit"
        expected = source_ids[record["refers_to"]] if revisit else record["body"]
        status = record["status"] or source_ids[record["refers_to"] + " status"].decode()
        ts = "".join(ch for ch in record["date"] if ch.isdigit())[:14]
        got = httpx.get(f"{wayback.base_url}/peer/{ts}id_/{record['url']}", timeout=30)
        assert str(got.status_code) == status, (record["url"], ts, got.status_code)
        if not (revisit and status.startswith("3")):  # pywb sends a redirect revisit without its body
            assert got.content == expected, (record["type"], record["url"], ts)
        replayed += 1
        revisits_replayed += revisit
    assert revisits_replayed == figures["revisits"]
    assert replayed == sum(1 for r in records if r["type"] in ("response", "revisit")) > 50
    assert figures["records"] == len(records) - 1  # and the package's own warcinfo record first
    assert records[0]["type"] == "warcinfo"


def _files(archive) -> list[str]:
    return Collection(archive.root, archive.name).warc_files()


def test_selection_by_date_and_prefix_and_bad_input(archives, tmp_path):
    archive = archives["three"]
    last_run = _run_ids(archive)[2]
    third = min(c["timestamp"] for c in archive.captures() if c["run_id"] == last_run)  # the last run's first
    runner = CliRunner()
    out = tmp_path / "news.wacz"
    figures = _export(archive, out, "--url-prefix", archive.base_url + "/news/", "--from", third)
    with zipfile.ZipFile(out) as zf:
        lines = [
            json.loads(line.split(" ", 2)[2])
            for line in gzip.decompress(zf.read("indexes/index.cdx.gz")).decode().splitlines()
        ]
    assert figures["records"] == len(lines) > 0 and figures["originals_added"] > 0
    assert all(line["url"].startswith(archive.base_url + "/news/") for line in lines if line["mime"] == "warc/revisit")
    held = {line["digest"] for line in lines if line["mime"] != "warc/revisit"}  # an original may be another URL
    revisits = [line for line in lines if line["mime"] == "warc/revisit"]
    assert revisits and all(line["digest"] in held for line in revisits)

    for args, says in (
        (["--run", "nosuch"], "has no run 'nosuch'"),
        (["--from", "2024-13"], "not a valid date"),
        (["--url-prefix", "http://elsewhere.example/"], "nothing in 'three' matches"),
    ):
        result = runner.invoke(
            cli,
            ["export", "wacz", "three", "--root", str(archive.root), "--out", str(tmp_path / "x.wacz"), *args],
            standalone_mode=False,
        )
        assert result.exception is not None and says in str(result.exception), (args, result.output)
        assert not (tmp_path / "x.wacz").exists() and not list(tmp_path.glob("x.wacz*"))


def test_out_replaces_only_a_regular_file_and_only_when_told(archives, tmp_path):
    archive = archives["three"]
    existing = tmp_path / "kept.wacz"
    existing.write_bytes(b"someone's file")
    link = tmp_path / "link.wacz"
    link.symlink_to(existing)
    for out, says in (
        (Path("/dev/null"), "not a regular file"),
        (link, "not a regular file"),
        (existing, "--force"),
    ):
        args = ["export", "wacz", archive.name, "--root", str(archive.root), "--out", str(out)]
        result = CliRunner().invoke(cli, args, standalone_mode=False)
        assert result.exception is not None and says in str(result.exception), (out, result.output)
    assert existing.read_bytes() == b"someone's file" and Path("/dev/null").is_char_device()
    forced = ["export", "wacz", archive.name, "--root", str(archive.root), "--out", "/dev/null", "--force"]
    refused = CliRunner().invoke(cli, forced, standalone_mode=False)
    assert "not a regular file" in str(refused.exception) and Path("/dev/null").is_char_device()
    figures = _export(archive, existing, "--force")
    assert figures["records"] > 0 and existing.read_bytes()[:2] == b"PK"
