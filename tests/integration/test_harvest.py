"""Harvest v1 then v2 of the sample site and check, URL by URL, what was written and how it replays."""

from __future__ import annotations

import gzip
import json
import subprocess
from urllib.parse import urlsplit

import httpx
import pytest
from warcio.archiveiterator import ArchiveIterator

from demo.sample_site import SampleSite
from index.cdx import cdxj
from index.collection import Collection
from index.state import HarvestState
from tests.conftest import VENV_BIN, harvest


def captures_by_path(root, run_id, name="sample"):
    coll = Collection.open(root, name)
    with HarvestState(coll.db_path) as state:
        rows = state.captures(run_id=run_id)
    return {urlsplit(r["url"]).path or "/": r for r in rows}


def expected_paths(version):
    return SampleSite.paths(version, obey_robots=True)


@pytest.fixture
def two_runs(site, root):
    run1 = harvest(root, site)
    site.version = 2
    run2 = harvest(root, site)
    return run1, run2


def test_first_run_is_full_and_complete(two_runs, root):
    run1, _ = two_runs
    assert run1["mode"] == "full" and run1["status"] == "finished"
    caps = captures_by_path(root, run1["run_id"])
    assert set(caps) == expected_paths(1)
    for path, cap in caps.items():
        assert cap["record_type"] == "response", path
        redirect = 300 <= SampleSite.resource(1, path).status < 400
        assert cap["class"] == ("redirect" if redirect else "new"), path
    assert "/private/secret.html" not in caps  # robots.txt obeyed
    assert run1["redirect"] == sum(1 for c in caps.values() if c["class"] == "redirect") > 0
    assert run1["new"] + run1["redirect"] == len(caps) and run1["revisits"] == 0


def test_second_run_writes_revisits_for_unchanged_payloads(two_runs, root, site):
    _, run2 = two_runs
    assert run2["mode"] == "incremental"
    caps = captures_by_path(root, run2["run_id"])
    assert set(caps) == expected_paths(1) | expected_paths(2)
    for path, cap in caps.items():
        kind = SampleSite.change_kind(1, 2, path)
        resource = SampleSite.resource(2, path)
        if kind == "unchanged":
            validated = bool(resource.etag or resource.last_modified)
            if validated:
                assert (cap["record_type"], cap["class"], cap["status"]) == ("revisit", "not_modified", 304), path
            elif resource.body and resource.status < 300:
                assert (cap["record_type"], cap["class"]) == ("revisit", "unchanged"), path
            elif resource.status >= 300:  # a redirect is always written in full
                assert (cap["record_type"], cap["class"]) == ("response", "redirect"), path
            else:  # so is an empty payload
                assert (cap["record_type"], cap["class"]) == ("response", "unchanged"), path
        elif kind in ("changed", "soft"):
            assert (cap["record_type"], cap["class"]) == ("response", "changed"), (path, kind)
        elif kind == "new":
            assert (cap["record_type"], cap["class"]) == ("response", "new"), path
        elif kind == "deleted":
            assert cap["record_type"] == "response" and cap["class"] == "deleted", path
            assert cap["status"] in (404, 410)
        else:
            pytest.fail(f"{path}: unexpected change kind {kind}")
    counts = {
        c: sum(1 for cap in caps.values() if cap["class"] == c)
        for c in ("new", "changed", "unchanged", "not_modified", "deleted", "redirect")
    }
    for cls, count in counts.items():
        assert run2[cls] == count, cls
    assert run2["bytes_saved"] > 0
    assert run2["bytes_stored"] == sum((root / "sample" / "archive" / f).stat().st_size for f in run2["warc_files"])


def test_warcs_validate_with_warcio_and_a_truncation_aware_checker(two_runs, root):
    files = sorted((root / "sample" / "archive").glob("*.warc.gz"))
    assert files and not list((root / "sample" / "archive").glob("*.open"))
    for path in files:
        subprocess.run([str(VENV_BIN / "warcio"), "check", str(path)], check=True, capture_output=True)
        out = subprocess.run([str(VENV_BIN / "fastwarc"), "check", str(path)], capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        gzip.decompress(path.read_bytes())  # every member whole
        with open(path, "rb") as fh:
            records = list(_record_summaries(fh))
        assert records[0]["type"] == "warcinfo"
        assert records[0]["version"] == "WARC/1.1"
        assert all(r["version"] == "WARC/1.1" for r in records)


def _record_summaries(fh):
    for record in ArchiveIterator(fh):
        yield {
            "type": record.rec_type,
            "version": record.rec_headers.protocol,
            "headers": dict(record.rec_headers.headers),
            "http": record.http_headers,
        }


def test_revisit_records_carry_what_pywb_needs(two_runs, root):
    _, run2 = two_runs
    archive = root / "sample" / "archive"
    seen = {"identical": 0, "not_modified": 0}
    for name in run2["warc_files"]:
        with open(archive / name, "rb") as fh:
            for rec in _record_summaries(fh):
                if rec["type"] != "revisit":
                    continue
                h = rec["headers"]
                for header in (
                    "WARC-Refers-To-Target-URI",
                    "WARC-Refers-To-Date",
                    "WARC-Refers-To",
                    "WARC-Payload-Digest",
                ):
                    assert h.get(header), header
                assert h["WARC-Payload-Digest"].startswith("sha1:")
                if h["WARC-Profile"].endswith("identical-payload-digest"):
                    assert h["WARC-Profile"].startswith("http://netpreserve.org/warc/1.1/")
                    assert h["WARC-Truncated"] == "length"
                    assert rec["http"] is not None and not rec["http"].get_statuscode().startswith("304")
                    seen["identical"] += 1
                else:
                    assert h["WARC-Profile"] == "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
                    assert h["Content-Length"] == "0"
                    seen["not_modified"] += 1
    assert seen["identical"] > 0 and seen["not_modified"] > 0


def test_no_transfer_encoding_stored_and_chunked_bodies_intact(two_runs, root):
    archive = root / "sample" / "archive"
    for name in sorted(p.name for p in archive.glob("*.warc.gz")):
        with open(archive / name, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type != "response":
                    continue
                assert record.http_headers.get_header("Transfer-Encoding") is None
                path = urlsplit(record.rec_headers.get_header("WARC-Target-URI")).path
                if path == "/ja/index.html":  # served chunked
                    body = record.content_stream().read()
                    assert "国立国会図書館" in body.decode("utf-8")


def test_cdxj_equals_pywbs_own_indexer(two_runs, root, tmp_path):
    archive = root / "sample" / "archive"
    ours = (root / "sample" / "indexes" / "index.cdxj").read_bytes()
    theirs_path = tmp_path / "pywb.cdxj"
    subprocess.run(
        [str(VENV_BIN / "cdx-indexer"), "--cdxj", "--sort", "--postappend", "-o", str(theirs_path), str(archive)],
        check=True,
        capture_output=True,
    )
    theirs = theirs_path.read_bytes()
    assert ours.splitlines() == theirs.splitlines()
    assert len(ours.splitlines()) > 50


@pytest.mark.slow
def test_unmodified_pywb_replays_run2_bytes_of_every_url(two_runs, root, wayback_factory):
    _, run2 = two_runs
    ts = run2["snapshot"]
    wayback = wayback_factory(root)
    caps = captures_by_path(root, run2["run_id"])
    checked = 0
    with httpx.Client(timeout=10.0) as client:
        for path, cap in sorted(caps.items()):
            resource = SampleSite.resource(2, path)
            if resource is None or cap["status"] in (404, 410):
                continue
            resp = client.get(f"{wayback.base_url}/sample/{ts}id_/{cap['url']}")
            assert resp.status_code == resource.status, path
            if resource.status < 300:
                assert resp.content == resource.body, path
            else:
                assert urlsplit(resp.headers["location"]).path.endswith(urlsplit(resource.header("Location")).path)
            memento = resp.headers.get("Memento-Datetime")
            assert memento, path
            checked += 1
            # the capture served is run 2's own capture (revisits and 304s included)
            assert _http_date_to_ts(memento) == cap["timestamp"], path
    assert checked >= 45


def _http_date_to_ts(value: str) -> str:
    from email.utils import parsedate_to_datetime

    return parsedate_to_datetime(value).strftime("%Y%m%d%H%M%S")


def test_runs_command_lists_figures(two_runs, root):
    from click.testing import CliRunner

    from cli import cli

    result = CliRunner().invoke(cli, ["runs", "sample", "--root", str(root), "--json"])
    assert result.exit_code == 0, result.output
    runs = json.loads(result.output)
    assert [r["run_id"] for r in runs] == [two_runs[0]["run_id"], two_runs[1]["run_id"]]
    for key in (
        "run_id",
        "collection",
        "mode",
        "started",
        "finished",
        "urls_fetched",
        "new",
        "changed",
        "unchanged",
        "not_modified",
        "deleted",
        "errors",
        "bytes_downloaded",
        "bytes_stored",
        "warc_files",
    ):
        assert key in runs[1], key
    assert runs[1]["deleted"] == 2


def test_cdxj_lines_parse(two_runs, root):
    lines = list(cdxj.iter_index(root / "sample" / "indexes" / "index.cdxj"))
    assert all("digest" in line and not line["digest"].startswith("sha1:") for line in lines if "digest" in line)
