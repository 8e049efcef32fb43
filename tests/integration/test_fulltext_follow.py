"""Full-text indexing while a harvest runs (``index.fulltext.follow``), over real harvests, WARCs,
Whoosh and pywb's CDXJ.

The site holds its run open: ``/gate.html`` trickles until the test opens the gate, so the test
looks at the index while the run is still going. Documents are in the index before the run ends;
search shows only captures whose WARC file is sealed and in the CDXJ index (replayable); the
indexer killed (SIGKILL) mid-run, or the harvest itself, costs no document and adds none twice:
the result equals a rebuild from the WARCs."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from demo.site_server import Resource, SiteServer
from harvester.job import validate_job
from harvester.run import Harvest
from index.cdx import cdxj
from index.collection import Collection
from index.fulltext import follow, followproc
from index.fulltext import store as fulltext
from index.fulltext.captures import CaptureStore, read_existing
from index.fulltext.query import SearchParams, search
from index.fulltext.rebuild import rebuild
from index.fulltext.store import open_index
from index.fulltext.update import index_run
from index.state import HarvestState
from tests.conftest import VENV_BIN

PAGES = followproc.START_AFTER + 40  # enough for the run to start its indexer
WORD = "gatedsiteword"  # on every page
HTML = (("Content-Type", "text/html; charset=utf-8"),)


def _letters(n: int) -> str:
    out = ""
    for _ in range(3):
        n, r = divmod(n, 26)
        out += chr(97 + r)
    return out


class GatedSite:
    """``/`` links to PAGES pages, each with words of its own, and to ``/gate.html``, which sends a
    space every 50 ms until ``gate`` is set: the run cannot end before."""

    def __init__(self) -> None:
        self.gate = threading.Event()

    def resolve(self, version, path, headers=None):
        if path == "/":
            links = "".join(f'<a href="/p/{i}.html">{i}</a> ' for i in range(PAGES))
            return Resource(200, HTML, f'<html><body>{links}<a href="/gate.html">gate</a></body></html>'.encode())
        if path.startswith("/p/") and path.endswith(".html"):
            i = int(path[3:-5])
            words = " ".join(f"word{_letters(i)}{k} text{_letters(i * 7 + k)}" for k in range(40))
            body = f"<html><head><title>Page {_letters(i)}</title></head><body><p>{WORD} {words}</p></body></html>"
            return Resource(200, HTML, body.encode())
        if path == "/gate.html":

            def trickle(stop: threading.Event):
                yield f"<html><body><p>{WORD} gate</p>".encode()
                while not self.gate.wait(0.05) and not stop.is_set():
                    yield b" "
                yield b"</body></html>"

            return Resource(200, HTML, stream=trickle)
        return None


def _job(server: SiteServer, **settings):
    values = {"seeds": [server.base_url + "/"], "delay": 0.0, "depth": 2, "timeout": 60.0, **settings}
    return validate_job("gated", values)


class Running:
    """A harvest in a thread of its own (its own event loop), the test looking on."""

    def __init__(self, coll: Collection, job, index_in_background: bool = False) -> None:
        self.harvest = Harvest(coll, job, index_in_background=index_in_background)
        self.summary: dict | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.summary = asyncio.run(self.harvest.run())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc

    def join(self) -> dict:
        self.thread.join(60)
        assert not self.thread.is_alive(), "the harvest did not end"
        if self.error is not None:
            raise self.error
        assert self.summary is not None
        return self.summary


def _wait(condition, what: str, seconds: float = 40.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _doc_count(coll: Collection) -> int:
    try:
        ix = open_index(coll)
    except Exception:  # noqa: BLE001 - being written: look again
        return 0
    return ix.doc_count_all() if ix is not None else 0


def _run_status(coll: Collection, run_id: str) -> str | None:
    with HarvestState(coll.db_path) as state:
        run = state.run(run_id)
    return run["status"] if run else None


def _hits(root: Path) -> list[dict]:
    """Every hit for the word all pages carry, page by page."""
    hits: list[dict] = []
    for page in range(1, 10):
        found = search(root, SearchParams(q=WORD, collections=["c"], per_page=100, page=page))
        hits += found["hits"]
        if page >= found["pages"]:
            return hits
    raise AssertionError("more hits than pages")


def _equals_rebuild(coll: Collection) -> dict:
    """The index's documents, each with captures, equal to those a rebuild from the WARCs makes."""
    followed = fulltext.documents(coll)
    assert followed and all(doc["captures"] for doc in followed.values())
    rebuild(coll)
    assert fulltext.documents(coll) == followed
    return followed


def test_documents_are_indexed_while_the_run_goes_on(root):
    """Fails without the indexer that follows the run: the index then gets its documents only
    after the run. Files roll over at 64 KB: the captures of sealed files (in the CDXJ index,
    replayable) are found during the run, none of the open file's."""
    site = GatedSite()
    with SiteServer(site) as server:
        coll = Collection.open(root, "c", create=True)
        running = Running(coll, _job(server, warc_max_size="64KB"))
        _wait(lambda: running.harvest.run_id and _doc_count(coll) > 0, "documents in the index")
        assert _run_status(coll, running.harvest.run_id) == "running"
        _wait(lambda: _hits(root), "hits from the sealed files")
        hits = _hits(root)
        replayable = {(line["url"], line["timestamp"]) for line in cdxj.iter_index(coll.cdxj_path)}
        with HarvestState(coll.db_path) as state:
            open_files = {w["filename"] for w in state.warcs("open")}
            in_open = {(c["url"], c["timestamp"]) for c in state.captures() if c["warc"] in open_files}
        assert open_files and in_open
        for hit in hits:
            assert {(hit["url"], ts) for ts in hit["captures"]} <= replayable
            assert not {(hit["url"], ts) for ts in hit["captures"]} & in_open
        assert _run_status(coll, running.harvest.run_id) == "running"
        site.gate.set()
        summary = running.join()
    figures = summary["fulltext"]
    assert summary["status"] == "finished" and "error" not in figures, figures
    assert 0 < figures["indexed_during_run"] <= figures["added"] == PAGES + 2  # the home, the pages, the gate
    assert figures["parsed"] == figures["added"] and figures["updated"] == figures["unchanged"] == 0
    assert figures["captures"] == PAGES + 2
    assert len(_hits(root)) == PAGES + 1
    assert fulltext.indexed_runs(open_index(coll)) == {summary["run_id"]}
    _equals_rebuild(coll)


@pytest.mark.parametrize("when", ["early", "after a commit"])
def test_indexer_killed_mid_run_is_caught_up(root, when):
    site = GatedSite()
    with SiteServer(site) as server:
        coll = Collection.open(root, "c", create=True)
        running = Running(coll, _job(server, warc_max_size="64KB"))  # sealed files: commits during the run
        indexer = _wait(lambda: running.harvest.fulltext_indexer and running.harvest.fulltext_indexer.pid, "indexer")
        if when == "early":
            time.sleep(0.7)
        else:
            _wait(lambda: _doc_count(coll) > 0, "documents in the index")
        os.kill(indexer, signal.SIGKILL)
        site.gate.set()
        summary = running.join()
    figures = summary["fulltext"]
    assert summary["status"] == "finished"
    assert figures["added"] == PAGES + 2 and "exited with -9" in figures["indexer"]["error"]
    assert len(_hits(root)) == PAGES + 1
    assert fulltext.indexed_runs(open_index(coll)) == {summary["run_id"]}
    _equals_rebuild(coll)


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _indexer_of(pid: int) -> int | None:
    for child in _children(pid):
        try:
            if b"index.fulltext.follow" in Path(f"/proc/{child}/cmdline").read_bytes():
                return child
        except OSError:
            continue
    return None


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith(("Z", "X"))
    except OSError:
        return True


def test_harvest_killed_mid_run_leaves_its_indexer_to_stop_and_the_next_pass_catches_up(root):
    site = GatedSite()
    with SiteServer(site) as server:
        jobs = root / "c" / "jobs"
        jobs.mkdir(parents=True)
        (jobs / "gated.toml").write_text(
            f'seeds = ["{server.base_url}/"]\ndelay = 0.0\ndepth = 2\ntimeout = 60.0\nwarc_max_size = "64KB"\n'
        )
        proc = subprocess.Popen(
            [str(VENV_BIN / "strata"), "harvest", "c", "--job", "gated", "--root", str(root), "--json"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            indexer = _wait(lambda: _indexer_of(proc.pid), "the run's indexer process")
            coll = Collection.open(root, "c")
            _wait(lambda: _doc_count(coll) > 0, "documents in the index")
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        _wait(lambda: _gone(indexer), "the indexer to stop when its harvest has gone", 20)
        shown = {hit["url"] for hit in _hits(root)}  # the captures of its sealed files, not its open one's
        assert len(shown) < PAGES
    recovered = subprocess.run([str(VENV_BIN / "strata"), "recover", "c", "--root", str(root)], capture_output=True)
    assert recovered.returncode == 0, recovered.stderr
    figures = index_run(coll)
    (run_id,) = figures["runs"]
    assert _run_status(coll, run_id) == "interrupted"
    # the home and the pages (the gate never ended); what the indexer had parsed was not parsed again
    assert not figures["rebuilt"] and figures["documents"] == PAGES + 1 and figures["parsed"] < PAGES + 1
    assert len(_hits(root)) == PAGES
    _equals_rebuild(coll)


# -- indexing left to the background (strata harvest's default) ------------------------------------


def _run_figures(coll: Collection, run_id: str) -> dict | None:
    return read_existing(coll.fulltext_dir, lambda store: store.run_figures(run_id), None)


def _searchable_runs(coll: Collection) -> set[str]:
    return read_existing(coll.fulltext_dir, CaptureStore.runs, set[str]())


@pytest.mark.parametrize("then", ["resumed", "killed"])
def test_a_run_leaves_its_indexing_to_the_background_and_returns_without_waiting(root, monkeypatch, then):
    """The indexer is stopped (SIGSTOP) before the run ends, so it cannot answer ``detach``: the run
    still returns, after ``DETACH_WAIT``, with nothing of it searchable. Resumed, the indexer indexes
    the rest of the run without the harvest and records its figures; killed, it costs only work:
    the next ``index_run`` indexes the run. Either way the index equals a rebuild. Fails if the run
    waits for its indexer, or if the indexer stops with its harvest."""
    monkeypatch.setattr(followproc, "DETACH_WAIT", 1.0)
    site = GatedSite()
    with SiteServer(site) as server:
        coll = Collection.open(root, "c", create=True)
        running = Running(coll, _job(server), index_in_background=True)
        pid = _wait(lambda: running.harvest.fulltext_indexer and running.harvest.fulltext_indexer.pid, "indexer")
        os.kill(pid, signal.SIGSTOP)
        try:
            site.gate.set()
            summary = running.join()
            assert summary["status"] == "finished"
            assert summary["fulltext"] == {"background": True, "pid": pid, "indexed_during_run": None}
            run_id = summary["run_id"]
            assert run_id not in _searchable_runs(coll) and _run_figures(coll, run_id) is None
            assert _runs_table(root)[-1].split()[-1] == "no"
        finally:
            os.kill(pid, signal.SIGCONT if then == "resumed" else signal.SIGKILL)
    if then == "resumed":
        figures = _wait(lambda: _run_figures(coll, run_id), "the run's figures from the background", 60)
        _wait(lambda: _gone(pid), "the background indexer to exit", 20)
        assert figures["background"] and "error" not in figures, figures
        assert figures["added"] == figures["parsed"] == figures["captures"] == PAGES + 2
        assert figures["cpu_seconds"] > 0 and figures["seconds"] > 0
    else:
        _wait(lambda: _gone(pid), "the killed indexer to be gone", 20)
        assert _run_figures(coll, run_id) is None and run_id not in _searchable_runs(coll)
        figures = index_run(coll)
        assert figures["runs"] == [run_id] and figures["documents"] == PAGES + 2
    assert _searchable_runs(coll) == {run_id}
    assert _runs_table(root)[-1].split()[-1] == "yes"
    assert len(_hits(root)) == PAGES + 1
    _equals_rebuild(coll)


def test_a_run_does_not_wait_for_the_index_lock_another_writer_holds(root, monkeypatch):
    """The index's write lock is held (as the background indexer of the run before holds it) from
    before the run to after it: the run's indexer waits for it and cannot answer ``detach``; the run
    returns all the same, and its indexer indexes it once the lock is free."""
    monkeypatch.setattr(followproc, "DETACH_WAIT", 1.0)
    site = GatedSite()
    with SiteServer(site) as server:
        coll = Collection.open(root, "c", create=True)
        with fulltext.write_lock(coll):
            running = Running(coll, _job(server), index_in_background=True)
            _wait(lambda: running.harvest.fulltext_indexer and running.harvest.fulltext_indexer.pid, "indexer")
            _wait(lambda: running.harvest.figures.urls_fetched > PAGES, "the pages fetched")
            time.sleep(4 * follow.POLL_SECONDS)  # the indexer has looked at them: it waits for the lock
            site.gate.set()
            summary = running.join()
            # (None: it did not answer, waiting for the lock; 0: it answered before it needed it)
            assert summary["fulltext"]["background"] and summary["fulltext"]["indexed_during_run"] in (None, 0)
            run_id = summary["run_id"]
            time.sleep(0.5)
            assert _run_figures(coll, run_id) is None
    figures = _wait(lambda: _run_figures(coll, run_id), "the run's figures from the background", 60)
    _wait(lambda: _gone(summary["fulltext"]["pid"]), "the background indexer to exit", 20)
    assert "error" not in figures and figures["added"] == PAGES + 2
    assert len(_hits(root)) == PAGES + 1
    _equals_rebuild(coll)


def _runs_table(root: Path) -> list[str]:
    """``strata runs c``'s lines; the last column says whether search has the run yet."""
    done = subprocess.run([str(VENV_BIN / "strata"), "runs", "c", "--root", str(root)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[-1] == "searchable"
    return lines


@pytest.mark.parametrize("flags", [["--json"], ["--json", "--wait-for-index"], []])
def test_strata_harvest_indexes_in_the_background_unless_told_to_wait(root, flags):
    """The command returns to a caller that reads its output to the end (the indexer keeps none of
    its pipes), says so, and the run becomes searchable; ``--wait-for-index`` returns searchable."""
    site = GatedSite()
    with SiteServer(site) as server:
        jobs = root / "c" / "jobs"
        jobs.mkdir(parents=True)
        (jobs / "gated.toml").write_text(f'seeds = ["{server.base_url}/"]\ndelay = 0.0\ndepth = 2\n')
        proc = subprocess.Popen(
            [str(VENV_BIN / "strata"), "harvest", "c", "--job", "gated", "--root", str(root), *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            indexer = _wait(lambda: _indexer_of(proc.pid), "the run's indexer process")
            # none of the caller's pipes: its error output to the log, its own pipes to the harvest
            ends = {fd: os.readlink(f"/proc/{indexer}/fd/{fd}") for fd in (0, 1, 2)}
            assert ends[2] == str(root / "c" / "strata" / followproc.LOG_NAME)
            assert {ends[0], ends[1]}.isdisjoint(os.readlink(f"/proc/{proc.pid}/fd/{fd}") for fd in (0, 1, 2))
        finally:
            site.gate.set()  # the run can end
            stdout, stderr = proc.communicate(timeout=120)  # to the end of both pipes
    assert proc.returncode == 0, stderr
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    coll = Collection.open(root, "c")
    with HarvestState(coll.db_path) as state:
        (run,) = state.runs()
    if "--json" not in flags:
        assert "the rest in the background (process " in done.stdout, done.stdout
        _wait(lambda: _run_figures(coll, run["run_id"]), "the run's figures from the background", 60)
    elif "--wait-for-index" in flags:
        figures = json.loads(done.stdout)["fulltext"]
        assert "background" not in figures and figures["added"] == PAGES + 2
        assert _searchable_runs(coll) == {run["run_id"]}
    else:
        report = json.loads(done.stdout)["fulltext"]
        assert report["background"] and report["pid"] > 0 and report["indexed_during_run"] <= PAGES + 2
        figures = _wait(lambda: _run_figures(coll, run["run_id"]), "the run's figures from the background", 60)
        assert figures["added"] == PAGES + 2 and figures["indexed_during_run"] == report["indexed_during_run"]
        _wait(lambda: _gone(report["pid"]), "the background indexer to exit", 20)
    assert len(_hits(root)) == PAGES + 1
    assert (coll.state_dir / followproc.LOG_NAME).read_text() == ""  # nothing went wrong in the indexer
