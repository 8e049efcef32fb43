"""Run history lives in the WARCs: every run ends with its report as a WARC metadata record, and a
rebuild from the WARCs alone gives back `strata runs --json`, `strata report --json`, every check and
the harvest state exactly; a run killed before writing its report comes back as interrupted."""

from __future__ import annotations

import io
import json
import signal
import sqlite3
import subprocess
import time

import pytest
from warcio.archiveiterator import ArchiveIterator

from demo.sample_site import SampleSite
from index.capture import runhistory
from index.capture.rebuild import rebuild_state
from index.collection import Collection
from index.state import HarvestState
from tests.conftest import VENV_BIN

STRATA = str(VENV_BIN / "strata")
JOB = "news"
TABLES = {
    "captures": "id",
    "urls": "url",
    "digests": "digest",
    "warcs": "filename",
    "runs": "run_id",
    "checks": "run_id, rowid",
}
# Every column of every table but runs.pid (the process id of a run that has ended: not restored)
# and the outlink cache (a cache: refilled by the next run that parses the page).
COLUMNS = {"runs": "run_id, job, mode, status, started, finished, snapshot, figures"}


def write_job(root, site, name="c", **extra):
    """A job with the index/content strategy, vanished pages and soft changes not stored, so that
    runs leave checks, page kinds and fingerprints behind."""
    jobs = root / name / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    values = {
        "seeds": [site.base_url + "/"],
        "delay": 0.0,
        "depth": 6,
        "timeout": 10.0,
        "index_patterns": list(SampleSite.INDEX_PATTERNS),
        "content_patterns": list(SampleSite.CONTENT_PATTERNS),
        "noise_selectors": list(SampleSite.NOISE_SELECTORS),
        "store_soft_changes": False,
        "default_page_kind": "content",
        "min_interval": "1h",
        "check_deleted_links": True,
        **extra,
    }
    (jobs / f"{JOB}.toml").write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items()))
    values["recheck_all"] = True  # the job "all": every known URL again, so soft changes are seen
    (jobs / "all.toml").write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items()))


def strata(root, *args, check=True):
    out = subprocess.run([STRATA, *args, "--root", str(root)], capture_output=True, text=True, timeout=120)
    if check:
        assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out


def cli_harvest(root, name="c", job=JOB, *extra):
    return json.loads(strata(root, "harvest", name, "--job", job, "--json", *extra).stdout)


def views(root, name="c"):
    """What the commands say, and every row of every table of the harvest database, ordered."""
    out = {
        "strata runs --json": json.loads(strata(root, "runs", name, "--json").stdout),
        "strata report --json": json.loads(strata(root, "report", name, "--json").stdout),
    }
    for run in out["strata runs --json"]:
        out[f"strata report --run {run['run_id']} --json"] = json.loads(
            strata(root, "report", name, "--run", run["run_id"], "--json").stdout
        )
    conn = sqlite3.connect(Collection.open(root, name).db_path)
    try:
        for table, order in TABLES.items():
            columns = COLUMNS.get(table, "*")
            out[f"table {table}"] = [
                tuple(row) for row in conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}")
            ]
    finally:
        conn.close()
    return out


def delete_derived(root, name="c"):
    state = root / name / "strata"
    for path in state.glob("harvest.sqlite*"):
        path.unlink()
    (root / name / "indexes" / "index.cdxj").unlink()


def assert_same(before, after):
    assert before.keys() == after.keys()
    for key in before:
        if isinstance(before[key], list) and before[key] and isinstance(before[key][0], tuple):
            assert len(before[key]) == len(after[key]), key
            for old, new in zip(before[key], after[key], strict=True):
                assert old == new, (key, old, new)
        assert before[key] == after[key], key


def run_records(archive):
    """(file, record index, report) of every run report in the collection's WARCs."""
    found = []
    for path in sorted(archive.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            records = list(
                (
                    r.rec_type,
                    r.rec_headers.get_header("WARC-Target-URI"),
                    r.rec_headers.get_header("Content-Type"),
                    r.content_stream().read(),
                )
                for r in ArchiveIterator(fh)
            )
        for i, (kind, uri, ctype, block) in enumerate(records):
            if kind == "metadata":
                assert uri.startswith(runhistory.RUN_URI_PREFIX) and ctype == "application/json"
                found.append((path.name, i, len(records), json.loads(block)))
    return found


@pytest.mark.slow
def test_every_run_ends_with_its_report_last_in_its_last_file(root, site):
    write_job(root, site, warc_max_size=60_000)  # several files: the report goes in the last
    summary = cli_harvest(root)
    site.version = 2
    second = cli_harvest(root)
    site.version = 3
    third = cli_harvest(root, job="all")
    archive = root / "c" / "archive"
    reports = run_records(archive)
    assert [r[3]["run"]["run_id"] for r in reports] == [summary["run_id"], second["run_id"], third["run_id"]]
    for (name, index, count, report), run in zip(reports, (summary, second, third), strict=True):
        assert name == run["warc_files"][-1] and index == count - 1
        assert {k: report["run"][k] for k in ("job", "mode", "status", "started", "finished", "snapshot")} == {
            k: run[k] for k in ("job", "mode", "status", "started", "finished", "snapshot")
        }
        figures = {k: v for k, v in run.items() if k in report["run"]["figures"] and k not in runhistory.FROM_FILES}
        assert figures == {k: v for k, v in report["run"]["figures"].items() if k not in runhistory.FROM_FILES}
    outcomes = {row[1] for report in reports for row in report[3]["checks"]["rows"]}
    assert {"not_due", "soft", "not_followed", "deleted", "skipped"} <= outcomes
    assert all(r[3]["soft"] == [] for r in reports)  # soft changes not stored: checks, not captures
    kinds = {row[7] for row in reports[0][3]["urls"]["rows"]}
    assert {"index", "content"} <= kinds
    # the report is written a row at a time: the same bytes as the whole report encoded at once
    with HarvestState(Collection(root, "c").db_path) as state:
        for _, _, _, report in reports:
            streamed = io.BytesIO()
            runhistory.write_report(state, report["run"], report["run"]["figures"], streamed)
            assert streamed.getvalue() == runhistory.encode(
                runhistory.run_report(state, report["run"], report["run"]["figures"])
            )


@pytest.mark.slow
def test_a_killed_run_comes_back_interrupted_with_the_figures_of_its_warcs(root, site):
    """SIGKILL: no report. Recovery and the rebuild both count the run from what its WARCs hold,
    and agree; what only the report holds (URLs seen but not fetched, page kinds, the run's checks)
    is lost with it. The next run is full again: an interrupted first run is no baseline. Once it
    has finished, a rebuild gives everything back."""
    write_job(root, site, delay=0.05)
    site.latency = 0.02
    proc = subprocess.Popen(
        [STRATA, "harvest", "c", "--job", JOB, "--json", "--root", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _wait_for_captures(root, proc, 10)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    strata(root, "recover", "c")
    runs = json.loads(strata(root, "runs", "c", "--json").stdout)
    assert [r["status"] for r in runs] == ["interrupted"]
    killed = runs[0]
    archive = root / "c" / "archive"
    assert killed["bytes_stored"] == sum((archive / f).stat().st_size for f in killed["warc_files"]) > 0
    conn = sqlite3.connect(Collection.open(root, "c").db_path)
    captures = conn.execute("SELECT COUNT(*) FROM captures").fetchone()[0]
    conn.close()
    assert killed["urls_fetched"] == killed["new"] == captures >= 10
    assert run_records(archive) == []
    before, after = _views_then_rebuilt(root)
    assert before["strata report --json"]["runs"] == after["strata report --json"]["runs"]

    site.latency = 0.0
    following = cli_harvest(root)
    assert following["mode"] == "full" and following["status"] == "finished"
    site.version = 2
    assert cli_harvest(root)["mode"] == "incremental"
    before = views(root)
    delete_derived(root)
    strata(root, "index", "rebuild", "c", "--only", "state")
    assert_same(before, views(root))


# A harvest that dies at its 12th commit, as SIGKILL would land between writing a turn's records and
# committing their rows: the records are in the .open file (the roller flushes each write), the
# rows are not.
_DIE_AT_COMMIT = """
import os, sys
from index.state import HarvestState
commit_now, calls = HarvestState.commit_now, [0]
def dying_commit(self):
    if self._deferred_open and not self._units_open:
        calls[0] += 1
        if calls[0] == 12:
            os._exit(9)
    commit_now(self)
HarvestState.commit_now = dying_commit
from cli import main
sys.exit(main())
"""


@pytest.mark.slow
def test_a_run_killed_between_its_records_and_their_commit_recovers_as_the_rebuild_does(root, site):
    """Records written, rows not committed: recovery derives the missing rows as the rebuild would,
    so the interrupted run's figures, captures and URL state agree with a rebuild from the WARCs."""
    write_job(root, site, delay=0.05)
    site.latency = 0.02
    done = subprocess.run(
        [str(VENV_BIN / "python"), "-c", _DIE_AT_COMMIT, "harvest", "c", "--job", JOB, "--json", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 9, done.stderr
    conn = sqlite3.connect(Collection.open(root, "c").db_path)
    committed = conn.execute("SELECT COUNT(*) FROM captures").fetchone()[0]
    conn.close()
    recovered = strata(root, "recover", "c").stdout
    runs = json.loads(strata(root, "runs", "c", "--json").stdout)
    assert [r["status"] for r in runs] == ["interrupted"]
    assert runs[0]["urls_fetched"] > committed  # the uncommitted records are counted
    assert f"added {runs[0]['urls_fetched'] - committed} capture rows" in recovered
    _views_then_rebuilt(root)


def _views_then_rebuilt(root):
    """The views of a killed run after recovery, then after a rebuild of the state from the WARCs:
    what the WARCs hold of it (runs, captures, digests, files) must agree."""
    before = views(root)
    delete_derived(root)
    strata(root, "index", "rebuild", "c", "--only", "state")
    after = views(root)
    for key in ("strata runs --json", "table runs", "table captures", "table digests", "table warcs"):
        assert before[key] == after[key], key
    return before, after


def _wait_for_captures(root, proc, count, run_index=0):
    """Until the running harvest (the run_index-th run of the collection) has written `count` captures."""
    db = root / "c" / "strata" / "harvest.sqlite"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()
        if db.exists():
            try:
                conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
                try:
                    runs = [r[0] for r in conn.execute("SELECT run_id FROM runs ORDER BY started")]
                    if (
                        len(runs) > run_index
                        and conn.execute("SELECT COUNT(*) FROM captures WHERE run_id=?", (runs[run_index],)).fetchone()[
                            0
                        ]
                        >= count
                    ):
                        return
                finally:
                    conn.close()
            except sqlite3.OperationalError:
                pass
        time.sleep(0.05)
    raise AssertionError("the harvest wrote too few captures in 60 s")


@pytest.mark.slow
def test_rebuild_in_process_restores_the_state_of_three_runs(root, site):
    """rebuild_state() itself (what `strata import` builds on): the same tables after v1, v2 (the
    paging strategy) and v3 (every URL again: soft changes)."""
    write_job(root, site)
    cli_harvest(root)
    site.version = 2
    cli_harvest(root)
    site.version = 3
    cli_harvest(root, job="all")
    before = views(root)
    delete_derived(root)
    rebuild_state(Collection.open(root, "c"))
    assert_same(before, views(root))


@pytest.mark.slow
def test_a_cancelled_first_full_run_leaves_the_next_run_full(root, site):
    """No baseline until a full run has finished: after a first run stopped by SIGTERM the next
    run is full, unless the command says otherwise."""
    write_job(root, site, delay=0.05)
    site.latency = 0.02
    proc = subprocess.Popen(
        [STRATA, "harvest", "c", "--job", JOB, "--json", "--root", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _wait_for_captures(root, proc, 5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    cancelled = json.loads(out)
    assert (cancelled["mode"], cancelled["status"]) == ("full", "cancelled")
    archive = root / "c" / "archive"
    assert cancelled["bytes_stored"] == sum((archive / f).stat().st_size for f in cancelled["warc_files"])
    conn = sqlite3.connect(Collection.open(root, "c").db_path)
    captures = conn.execute("SELECT COUNT(*) FROM captures").fetchone()[0]
    conn.close()
    assert cancelled["urls_fetched"] == cancelled["new"] == captures
    site.latency = 0.0
    assert cli_harvest(root, "c", JOB, "--mode", "incremental")["mode"] == "incremental"  # the command says so
    assert cli_harvest(root)["mode"] == "full"
    assert cli_harvest(root)["mode"] == "incremental"


@pytest.mark.slow
def test_rebuild_after_three_harvests_one_cancelled_by_sigterm_gives_everything_back(root, site):
    """v1 full, v2 incremental, then a run stopped by SIGTERM mid-run through the CLI: delete
    harvest.sqlite and the CDXJ, `strata index rebuild`, and `strata runs --json`, `strata report
    --json` (and `--run` for each run) and every row of every table are as before."""
    write_job(root, site)
    first = cli_harvest(root)
    site.version = 2
    second = cli_harvest(root)
    assert (first["mode"], second["mode"]) == ("full", "incremental")
    site.version = 3
    site.latency = 0.05  # slow enough to be stopped half way
    proc = subprocess.Popen(
        [STRATA, "harvest", "c", "--job", "all", "--json", "--root", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _wait_for_captures(root, proc, 5, run_index=2)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    third = json.loads(out)
    assert third["status"] == "cancelled" and third["urls_fetched"] < first["urls_fetched"]
    site.latency = 0.0
    before = views(root)
    runs = before["strata runs --json"]
    assert [r["status"] for r in runs] == ["finished", "finished", "cancelled"]
    assert [r["snapshot"] for r in runs] == [first["snapshot"], second["snapshot"], third["snapshot"]]
    cdxj_before = (root / "c" / "indexes" / "index.cdxj").read_bytes()
    delete_derived(root)
    rebuilt = strata(root, "index", "rebuild", "c")
    assert "rebuilt" in rebuilt.stdout
    assert_same(before, views(root))
    assert (root / "c" / "indexes" / "index.cdxj").read_bytes() == cdxj_before


def test_a_run_killed_after_writing_its_report_ends_as_the_report_says(root, site):
    """Killed between its report and the database update (sealing, indexing): recovery reads the
    report from the run's last file instead of calling the run interrupted, as the rebuild would."""
    write_job(root, site)
    cli_harvest(root)
    before = views(root)
    conn = sqlite3.connect(Collection.open(root, "c").db_path)
    conn.execute("UPDATE runs SET status='running', finished=NULL, snapshot=NULL, figures='{}'")
    conn.commit()
    conn.close()
    assert "marked interrupted" not in strata(root, "recover", "c").stdout
    assert_same(before, views(root))
