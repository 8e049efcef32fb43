"""Bad input and hostile servers: clear messages, bounded work, archived data intact."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time

import httpx
import pytest
from warcio.archiveiterator import ArchiveIterator

from harvester.job import validate_job
from harvester.run import Harvest
from index.collection import Collection
from index.storage.state import HarvestState
from tests.conftest import VENV_BIN, free_port, harvest

STRATA = str(VENV_BIN / "strata")


def run_cli(*args, root, timeout=60):
    return subprocess.run([STRATA, *args, "--root", str(root)], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(
    "text, field",
    [
        ("seeds = [", "not valid TOML"),
        ('seeds = ["http://127.0.0.1:1/"]\ncolour = "red"\n', "unknown field 'colour'"),
        ('seeds = ["http://127.0.0.1:1/"]\ndepth = "deep"\n', "field 'depth'"),
        ('seeds = ["http://127.0.0.1:1/"]\ndelay = -1\n', "field 'delay'"),
        ('seeds = ["ftp://example.org/"]\n', "field 'seeds'"),
        ("seeds = []\n", "field 'seeds'"),
        ('seeds = ["http://127.0.0.1:1/"]\nexclude = ["("]\n', "field 'exclude'"),
        ('seeds = ["http://127.0.0.1:1/"]\nmax_resource_size = "lots"\n', "field 'max_resource_size'"),
    ],
)
def test_bad_job_files_are_rejected_with_the_field_and_exit_2(root, text, field):
    jobs = root / "c" / "jobs"
    jobs.mkdir(parents=True)
    (jobs / "bad.toml").write_text(text)
    out = run_cli("harvest", "c", "--job", "bad", root=root)
    assert out.returncode == 2, out.stderr
    assert field in out.stderr
    assert "Traceback" not in out.stderr + out.stdout


def test_missing_job_and_bad_arguments(root):
    out = run_cli("harvest", "c", "--job", "nope", root=root)
    assert out.returncode == 2 and "does not exist" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("harvest", "c", root=root)
    assert out.returncode == 2 and "--seed" in out.stderr
    out = run_cli("harvest", "bad/name", "--seed", "http://127.0.0.1:1/", root=root)
    assert out.returncode == 2 and "collection name" in out.stderr
    out = run_cli("harvest", "c", "--seed", "not a url", root=root)
    assert out.returncode == 2 and "field 'seeds'" in out.stderr
    out = run_cli("runs", "unknown", root=root)
    assert out.returncode == 2 and "no collection 'unknown'" in out.stderr


def test_a_good_job_file_runs(root, site):
    jobs = root / "c" / "jobs"
    jobs.mkdir(parents=True)
    (jobs / "site.toml").write_text(f'seeds = ["{site.base_url}/about.html"]\ndepth = 0\ndelay = 0\n')
    out = run_cli("harvest", "c", "--job", "site", "--json", root=root)
    assert out.returncode == 0, out.stderr
    assert '"job": "site"' in out.stdout
    # command-line options override the file's values
    out = run_cli("harvest", "c", "--job", "site", "--depth", "1", "--concurrency", "2", "--json", root=root)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["connections_per_host"] == 2 and json.loads(out.stdout)["urls_fetched"] > 3


def test_unreachable_host_is_an_error_not_a_traceback(root):
    port = free_port()  # nothing listens there
    out = run_cli("harvest", "c", "--seed", f"http://127.0.0.1:{port}/", "--delay", "0", root=root)
    assert out.returncode == 1
    assert "connection failed" in out.stdout + out.stderr
    assert "Traceback" not in out.stderr


def test_dns_failure_is_reported(root):
    def refuse(request):
        raise httpx.ConnectError("[Errno -2] Name or service not known", request=request)

    coll = Collection.open(root, "c", create=True)
    job = validate_job("t", {"seeds": ["http://no-such-host.invalid/"], "delay": 0.0, "robots": "ignore"})
    summary = asyncio.run(Harvest(coll, job, transport=httpx.MockTransport(refuse)).run())
    assert summary["errors"] == 1 and summary["urls_fetched"] == 0
    with HarvestState(coll.db_path) as state:
        checks = state.checks(summary["run_id"])
    assert checks[0]["reason"].startswith("DNS lookup failed")


def _records(root, name="c"):
    archive = root / name / "archive"
    out = {}
    for path in sorted(archive.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type in ("response", "revisit"):
                    out[record.rec_headers.get_header("WARC-Target-URI")] = (
                        dict(record.rec_headers.headers),
                        record.content_stream().read(),
                    )
    return out


def test_slow_trickle_is_cut_at_the_deadline(root, site):
    started = time.monotonic()
    summary = harvest(root, site, name="c", seeds=[site.base_url + "/hostile/trickle"], timeout=1.5, robots="ignore")
    assert time.monotonic() - started < 8
    assert summary["urls_fetched"] == 1
    headers, body = _records(root)[site.base_url + "/hostile/trickle"]
    assert headers["WARC-Truncated"] == "time"
    assert 0 < len(body) < 20


def test_oversized_body_is_truncated_at_the_cap(root, site):
    summary = harvest(
        root, site, name="c", seeds=[site.base_url + "/hostile/huge"], max_resource_size="1MB", robots="ignore"
    )
    headers, _ = _records(root)[site.base_url + "/hostile/huge"]
    assert headers["WARC-Truncated"] == "length"
    assert summary["bytes_stored"] < 2_000_000


@pytest.mark.slow
def test_decompression_bomb_is_stored_raw_and_not_inflated(root, site):
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    harvest(root, site, name="c", seeds=[site.base_url + "/hostile/bomb"], robots="ignore")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 150  # the bomb inflates to 200 MiB; only a capped 20 MiB may ever be decoded
    archive = root / "c" / "archive"
    with open(next(archive.glob("*.warc.gz")), "rb") as fh:
        for record in ArchiveIterator(fh):
            if record.rec_type == "response":
                assert record.http_headers.get_header("Content-Encoding") == "gzip"
                assert len(record.raw_stream.read()) < 1_000_000


def test_deep_nesting_redirect_loops_and_link_floods_terminate(root, site):
    summary = harvest(
        root,
        site,
        name="c",
        robots="ignore",
        max_urls=300,
        seeds=[
            site.base_url + "/hostile/deep.html",
            site.base_url + "/hostile/redirect-loop",
            site.base_url + "/hostile/badcharset.html",
            site.base_url + "/hostile/empty.html",
            site.base_url + "/hostile/manylinks.html",
        ],
    )
    assert summary["status"] == "finished"
    records = _records(root)
    assert site.base_url + "/hostile/empty.html" in records  # linked from the bottom of 5,000 divs
    assert site.base_url + "/hostile/redirect-loop" in records  # one capture; the loop ends
    assert summary["urls_fetched"] <= 300


def test_header_bytes_beyond_ascii_are_stored_escaped_not_fatal(root, site):
    url = site.base_url + "/hostile/latin1-head"
    summary = harvest(root, site, name="c", seeds=[url], robots="ignore")
    assert summary["errors"] == 0 and summary["new"] == 1
    archive = root / "c" / "archive"
    (path,) = archive.glob("*.warc.gz")
    with open(path, "rb") as fh:
        responses = [
            (r.http_headers, r.content_stream().read()) for r in ArchiveIterator(fh) if r.rec_type == "response"
        ]
    ((http, body),) = responses
    assert http.get_header("Content-Type") == "text/h%E9ml; x=%E9"
    assert http.get_header("X-Odd") == "%FF%FE"
    assert body == b"<p>odd head</p>"
    check = subprocess.run([str(VENV_BIN / "warcio"), "check", str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert http.statusline == "200 %D6kay"


def test_concurrent_harvests_of_one_collection_are_refused(root, site):
    coll = Collection.open(root, "c", create=True)
    with coll.harvest_lock():
        out = run_cli("harvest", "c", "--seed", site.base_url + "/", root=root)
    assert out.returncode == 1 and "being harvested by another process" in out.stderr


def test_sigterm_stops_cleanly(root, site):
    site.latency = 0.05
    proc = subprocess.Popen(
        [STRATA, "harvest", "c", "--seed", site.base_url + "/", "--delay", "0.05", "--root", str(root), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_records(root / "c" / "archive", proc)
    proc.terminate()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert not list((root / "c" / "archive").glob("*.open"))
    coll = Collection.open(root, "c")
    with HarvestState(coll.db_path) as state:
        runs = state.runs()
        assert runs[-1]["status"] == "cancelled"
        assert all(w["state"] == "indexed" for w in state.warcs())
        assert runs[-1]["figures"]["urls_fetched"] > 0


def _wait_for_records(archive, proc, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = list(archive.glob("*.open")) if archive.exists() else []
        if files and os.path.getsize(files[0]) > 4000:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("harvest wrote nothing")
