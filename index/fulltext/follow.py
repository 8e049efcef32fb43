"""Indexing a harvest run while it runs: ``python -m index.fulltext.follow ROOT COLLECTION RUN_ID MODE``.

The harvest starts this process (``index.fulltext.followproc``) and goes on harvesting; the
process follows the run through the harvest state, so that little is left for ``index_run`` at the
run's end. For a run that waits for it at its end it runs at the harvest's own priority: what it
has not done when the run ends is done then, so a lower one only moves work into that wait
(measured on the quick preset under load 7: at nice 10 it indexed 27 to 72 of 708 documents during
the run, at nice 0 231 to 239). For a run that leaves the rest to the background (``strata
harvest``'s default; MODE ``background``, else ``waited``) the harvest comes first: the process
runs at nice ``BACKGROUND_NICE`` and idle scheduling, and on a machine of two cores or fewer takes
at most half a core while the run goes on (``background_share``).

- **What it reads.** The run's capture rows, by row id (``HarvestState.captures_since``): a row is
  committed after its record was written and flushed, so each payload it names can be read back,
  even from the run's ``.open`` file. A payload read from an open file is used only when its SHA-1
  equals the capture's payload digest; one that does not (bytes not flushed yet) is tried again
  later and, failing that, left to ``index_run``.
- **What it writes.** Documents, exactly as ``index_run`` makes them (new (url, digest) keys only;
  a payload already indexed under another URL is copied), pooled in a ``BulkWriter`` and committed
  when the pool passes ``POOL_BYTES``, every ``COMMIT_SECONDS``, when one of the run's files is
  sealed (its captures may then show), and at the end; each commit adds the documents' rows to the
  capture store after Whoosh, as ``index_run`` does. Commits are rare on purpose: a document shows
  only once its file is sealed, so an earlier commit would show nothing, and each one is a segment
  to merge and makes a search server open the index again. It holds the index's write lock from a
  pool's first document to its commit.
- **What it shows.** A document without capture rows is never a hit (``index.fulltext.query``
  shows documents through their captures). Capture rows are added only for captures whose WARC file
  the harvest has sealed and indexed (state ``indexed``: its CDXJ lines are merged, so pywb replays
  them): search never shows a capture that replay cannot open yet. Files roll over at
  ``warc_max_size``; the run's last file is sealed at its end, where ``index_run`` adds the rest.
- **What it never does.** It never marks the run indexed (``captures.runs``): ``index_run``, at the
  run's end or after a crash, does, after reading the whole run again. Killed at any point, this
  process costs only work: documents past the capture store's rows are caught up, keys that have a
  document are not parsed again, and the run's captures are all added by ``index_run``.

Protocol: the harvest writes ``finish`` on stdin once the run's files are sealed; the process
indexes what is left of the run (a line ``.`` on stdout after each batch: it is alive), commits,
prints its figures as one JSON line and exits. Or the harvest writes ``detach N`` (N: the index's
documents when the process started) and goes: the process answers at once with one JSON line
(``indexed_during_run``), leaves its stdout, ignores SIGHUP and the end of stdin, indexes the rest,
and then does what ``index_run`` does at a run's end (``index_rest``): the run is searchable when its
figures are in the capture store (``CaptureStore.run_figures``). At the end of stdin without either
(the harvest has gone, SIGKILL included) it commits what it holds and exits. It ignores SIGINT (the
harvest decides how to stop).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import resource
import select
import signal
import sqlite3
import sys
import time
from pathlib import Path

from index.collection import Collection
from index.fulltext.captures import CaptureStore
from index.fulltext.documents import LOCK_WAIT, POOL_BYTES, IndexUnusable, Payload, indexable, make_document
from index.fulltext.followproc import merge_figures
from index.fulltext.payloads import MISSING, PayloadCache, read_payload
from index.fulltext.postings import BulkWriter
from index.fulltext.rebuild import create
from index.fulltext.store import fsync_tree, open_index, write_lock
from index.fulltext.update import Followed, catch_up_rows, group_capture, index_run, original_location
from index.payload import read_record
from index.storage.state import HarvestState
from strata.errors import StrataError

BATCH = 500  # capture rows read at a time
POLL_SECONDS = 0.5  # between looks at the harvest state when the last one found nothing new
COMMIT_SECONDS = 300.0  # a pool is committed at this age: at most what a killed indexer loses
BACKGROUND_NICE = 10  # the niceness of an indexer whose run does not wait for it
RETRIES = 5  # looks at a payload not all in its open file yet, before it is left to index_run
_NOT_YET = object()  # a payload whose bytes are not all in its open file yet
_FAILURES = (OSError, EOFError, ValueError, KeyError, IndexError, sqlite3.DatabaseError, StrataError)


class RunFollower:
    """Indexes one running run's new payloads in pools; see the module's docstring."""

    def __init__(self, collection: Collection, run_id: str, state: HarvestState):
        self.collection = collection
        self.run_id = run_id
        self.state = state
        self.cursor = 0  # the last capture row id read
        self.figures = {"parsed": 0, "copied": 0, "added": 0, "captures": 0, "commits": 0, "busy_seconds": 0.0}
        self.given_up = ""  # why it stopped indexing (index_run then does the whole run)
        self.cache = PayloadCache()
        self.retry: dict[tuple[str, str], dict] = {}  # keys whose payload was not readable yet
        self.published: set[str] = set()  # the run's indexed files, whose captures got rows
        self.pending: list[tuple[str, str]] = []  # (key, ts) of captures in published files, for the next commit
        self.publishing = True  # off at the run's end: index_run adds the captures of its last files
        # the pool, from its first document to its commit
        self._lock: contextlib.ExitStack | None = None
        self._ix = None
        self._writer: BulkWriter | None = None
        self._base = 0
        self._rows: list[tuple[int, str]] = []
        self._pooled: dict[str, int] = {}  # key -> document number, in the pool
        self._opened = 0.0
        self._last_pool = 0  # documents in the last pool committed: how much the next may merge
        self._expected = 0  # new keys in the step that opens a pool

    # -- one look at the harvest state -------------------------------------------------------------
    def step(self, stop=lambda: False) -> bool:
        """Read and index the captures committed since the last step; commit when due. True when
        there may be more right away (a full batch was read)."""
        started = time.monotonic()
        rows = self.state.captures_since(self.run_id, self.cursor, BATCH)
        groups: dict[tuple[str, str], dict] = {}
        for key in list(self.retry):  # older first
            groups[key] = self.retry.pop(key)
        for cap in rows:
            group = group_capture(groups, cap)
            if group is not None:
                group.setdefault("at", []).append((cap["timestamp"], cap["warc"]))
        if rows:
            self.cursor = rows[-1]["id"]
        if groups:
            self._index(groups, stop)
        if self._due():
            self.commit()
        if rows or groups:
            self.figures["busy_seconds"] += time.monotonic() - started
        return len(rows) == BATCH

    def _index(self, groups: dict[tuple[str, str], dict], stop) -> None:
        if not self._hold():
            return
        assert self._ix is not None
        with CaptureStore(self.collection.fulltext_dir) as store:
            known = store.docnums(f"{u} {d}" for u, d in groups if f"{u} {d}" not in self._pooled)
        known.update(self._pooled)
        # responses first, so that a revisit of another URL's new payload finds it in the cache
        ordered = sorted(groups.items(), key=lambda kv: kv[1]["response"] is None)
        self._expected = sum(f"{u} {d}" not in known for u, d in groups)
        with self._ix.searcher() as searcher:
            for number, ((url, digest), group) in enumerate(ordered):
                key = f"{url} {digest}"
                if key not in known:
                    if stop():  # the run has ended: these are for the last pass (or index_run)
                        self.retry.update(ordered[number:])
                        return
                    payload = self._payload(searcher, digest, group)
                    if payload is _NOT_YET:
                        group["tries"] = group.get("tries", 0) + 1
                        if group["tries"] < RETRIES:
                            self.retry[(url, digest)] = group
                        continue
                    if payload is None or not indexable(url, payload.status):
                        continue  # left to index_run, which decides as always
                    assert isinstance(payload, Payload)
                    known[key] = self._add(key, url, digest, payload)
                self.pending.extend((key, ts) for ts, warc in group.get("at", ()) if warc in self.published)

    def _add(self, key: str, url: str, digest: str, payload: Payload) -> int:
        if self._writer is None:
            # what it may merge into the new segment: segments no larger than the documents about to
            # be added (this step's new keys; the last pool's, within a run), as index_run does
            self._writer = BulkWriter(self._ix, expected=max(self._expected, self._last_pool))
        docnum = self._pooled[key] = self._base + len(self._rows)
        self._writer.add_document(**make_document(url, digest, payload))
        self._rows.append((docnum, key))
        return docnum

    def _payload(self, searcher, digest: str, group: dict):
        payload = self.cache.get(digest)
        if payload is not MISSING:
            self.figures["copied"] += 1
            return payload
        location = group["response"]
        if location is None:
            docnum = searcher.document_number(digest=digest)
            if docnum is not None:
                self.figures["copied"] += 1
                stored = searcher.stored_fields(docnum)
                payload = Payload.from_stored(stored, searcher.reader().column_reader("parts")[docnum])
                self.cache.put(digest, payload)
                return payload
            location = original_location(self.state, digest, group["refers"])
        if location is None:
            return None
        payload = self._read(location[0], location[1], digest)
        if isinstance(payload, Payload):
            self.figures["parsed"] += 1
            self.cache.put(digest, payload)
        return payload

    def _read(self, warc: str, offset: int, digest: str):
        """The payload at a location; from a file still open, only when all its bytes are there."""
        archive = self.collection.archive_dir
        if (archive / warc).exists():
            return read_payload(self.collection, warc, offset)
        try:
            _, http_headers, raw = read_record(archive / (warc + ".open"), offset)
        except (OSError, ValueError, EOFError):
            return _NOT_YET if (archive / (warc + ".open")).exists() else read_payload(self.collection, warc, offset)
        if "sha1:" + base64.b32encode(hashlib.sha1(raw).digest()).decode("ascii") != digest:
            return _NOT_YET
        return Payload.from_record(http_headers, raw)

    # -- the pool --------------------------------------------------------------------------------------
    def _hold(self) -> bool:
        """The write lock held and the index open, from the first document of a pool to its commit;
        False when indexing must be left to index_run (no usable index, or one only a rebuild makes)."""
        if self._lock is not None:
            return True
        for _ in range(2):
            if self.given_up:
                return False
            lock = contextlib.ExitStack()
            lock.enter_context(write_lock(self.collection, wait=LOCK_WAIT))
            try:
                ix = self._index_to_write()
                if ix is not None:
                    with CaptureStore(self.collection.fulltext_dir) as store:
                        catch_up_rows(ix, store)
                    self._lock, self._ix, self._base, self._opened = lock, ix, ix.doc_count_all(), time.monotonic()
                    return True
            except BaseException:
                lock.close()
                raise
            lock.close()
            if not self.given_up:
                create(self.collection, [])  # (takes the lock itself)
        return False

    def _index_to_write(self):
        """The index, or None: to be created (``given_up`` empty) or left to index_run."""
        try:
            ix = open_index(self.collection, check=True)
        except IndexUnusable:
            self.given_up = "the full-text index must be rebuilt: index_run does it at the end of the run"
            return None
        if ix is None:
            own = {w["filename"] for w in self.state.warcs() if w["run_id"] == self.run_id}
            if not set(self.collection.warc_files()) <= own:
                # WARCs without an index (indexing was off, or a crash between the two renames): a
                # rebuild reads them all, and reading this run's sealed files would mark it indexed
                self.given_up = "no full-text index yet: index_run builds it at the end of the run"
        return ix

    def _due(self) -> bool:
        if self._lock is not None and (
            (self._writer is not None and self._writer.pooled_bytes() > POOL_BYTES)
            or time.monotonic() - self._opened > COMMIT_SECONDS
        ):
            return True
        return self.publishing and bool(self._newly_indexed())

    def _newly_indexed(self) -> set[str]:
        """The run's files indexed since the last commit, while it runs: the last ones, sealed at its
        end, are index_run's (publishing them here cost a commit, and a merge, in every run)."""
        files = {w["filename"] for w in self.state.warcs("indexed") if w["run_id"] == self.run_id} - self.published
        if not files:
            return files
        run = self.state.run(self.run_id)
        return files if run is not None and run["status"] == "running" else set()

    def commit(self) -> None:
        """Commit the pool, then the rows of its documents and the captures that may show (while
        ``publishing``, those of the files indexed since the last commit too)."""
        newly = self._newly_indexed() if self.publishing else set()
        if self._lock is None and not self.pending and not newly:
            return
        if not self._hold():
            self.pending = []
            return
        assert self._ix is not None
        try:
            if self._writer is not None:
                self._writer.commit()
                fsync_tree(self.collection.fulltext_dir)
            expected, found = self._base + len(self._rows), self._ix.doc_count_all()
            if found != expected:  # BulkWriter keeps numbers: this would be a bug
                raise IndexUnusable(f"expected {expected} documents after the commit, found {found}")
            for filename in sorted(newly):  # a file's captures are all committed before it is sealed
                for cap in self.state.captures_in_file(filename):
                    if group_capture({}, cap) is not None:
                        self.pending.append((f"{cap['url']} {cap['digest']}", cap["timestamp"]))
            with CaptureStore(self.collection.fulltext_dir) as store:
                known = store.docnums({key for key, _ in self.pending if key not in self._pooled})
                known.update(self._pooled)
                captures = [(known[key], ts) for key, ts in self.pending if key in known]
                self.figures["captures"] += store.add(self._rows, captures, [])
            self.published |= newly
            self.figures["added"] += len(self._rows)
            self.figures["commits"] += 1
            self._last_pool = len(self._rows)
        finally:
            self.close()

    def run_ended(self) -> None:
        """The harvest has sealed the run's files: what it indexes from now on is no longer during
        the run, and the captures of those files are index_run's to add."""
        self.publishing = False
        self.figures["during_run"] = self.figures["added"] + len(self._rows)

    def close(self) -> None:
        """Leave the pool (committed, or given up after a failure) and the write lock."""
        if self._writer is not None and not self._writer.is_closed:
            self._writer.cancel()
        if self._lock is not None:
            self._lock.close()
        self._writer, self._ix, self._lock, self._rows, self._pooled, self.pending = None, None, None, [], {}, []

    def report(self, error: str = "") -> dict:
        return {
            **self.figures,
            "busy_seconds": round(self.figures["busy_seconds"], 3),
            "cpu_seconds": round(sum(resource.getrusage(resource.RUSAGE_SELF)[:2]), 3),
            "given_up": self.given_up,
            **({"error": error} if error else {}),
        }


class _Commands:
    """What the harvest has said on the descriptor: nothing yet, ``finish``, ``detach N`` or its end
    (gone)."""

    def __init__(self, fd: int):
        self.fd = fd
        self.said = b""
        self.gone = False

    @property
    def detached(self) -> int | None:
        """``detach N``'s N (the index's documents when the indexer started), once said."""
        found = re.search(rb"(?m)^detach (\d+)$", self.said)
        return int(found.group(1)) if found else None

    def _ended(self) -> bool:
        return b"finish" in self.said or self.detached is not None

    def told(self) -> bool:
        while not self.gone and not self._ended() and select.select([self.fd], [], [], 0)[0]:
            data = os.read(self.fd, 4096)
            self.said += data
            self.gone = not data  # the end of stdin: the harvest has gone (SIGKILL included)
        return self.gone or self._ended()

    def wait(self, seconds: float | None) -> None:
        select.select([self.fd], [], [], seconds)


def follow(
    collection: Collection, run_id: str, commands: int, heartbeat=lambda: None, answer=None, share: float = 1.0
) -> dict:
    """Follow the run until ``finish`` or ``detach N`` arrives on the file descriptor ``commands``;
    then index what is left of it (``heartbeat()`` after each batch) and commit. At the end of
    ``commands`` (the harvest has gone) only commit what is pooled, unless detached: ``answer(indexed
    during the run, N)`` is then called once the run has ended, and the rest of the run is indexed
    whatever the harvest does from then on. While the run goes on, the process takes at most ``share``
    of a core (it rests after each step in proportion to it); afterwards, all it can."""
    said = _Commands(commands)
    with HarvestState(collection.db_path) as state:
        follower = RunFollower(collection, run_id, state)
        more = False
        try:
            while not said.told():
                if follower.given_up:  # nothing to do but wait for the end
                    said.wait(None)
                    continue
                if not more:
                    said.wait(POLL_SECONDS)
                    if said.told():
                        break
                stepped = time.monotonic()
                more = follower.step(said.told) and not follower.given_up
                if share < 1:  # rest in proportion to the work: at most ``share`` of a core
                    said.wait((time.monotonic() - stepped) * (1 / share - 1))
            # The run is over: its rows are all committed, its files sealed. What is left is indexed
            # here, at once (one pool, one commit), rather than by index_run after a commit.
            follower.run_ended()
            if said.detached is not None and answer is not None:
                answer(follower.figures["during_run"], said.detached)
                gone = lambda: False  # noqa: E731 (it goes on without the harvest)
            else:
                gone = lambda: said.gone  # noqa: E731
            while not gone() and not follower.given_up and (follower.step(gone) or follower.retry):
                heartbeat()
            follower.commit()
        except _FAILURES as exc:
            follower.close()
            return follower.report(f"{type(exc).__name__}: {exc}")
        return follower.report()


def index_rest(collection: Collection, run_id: str, figures: dict, first_docnum: int, ended_at: float) -> dict:
    """In the background, after ``follow``: what ``index_run`` does at the end of a run (every
    capture of the run added, the run marked indexed), its figures merged with the indexer's as the
    run's would be (``seconds``: from the run's end until it was searchable) and recorded in the
    capture store (``CaptureStore.run_figures``)."""
    try:
        final = index_run(collection, run_id, followed=Followed(first_docnum))
        out = merge_figures(final, figures, ended_at)
    except _FAILURES as exc:
        out = {**figures, "error": f"{type(exc).__name__}: {exc}"}
    out["background"] = True
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_seconds"] = round(usage.ru_utime + usage.ru_stime, 3)  # the whole process, start to end
    out["peak_rss_kb"] = usage.ru_maxrss
    with contextlib.suppress(*_FAILURES), CaptureStore(collection.fulltext_dir) as store:
        store.put_run_figures(run_id, out)
    return out


def background_share() -> float:
    """The share of a core an indexer whose run does not wait for it takes while the run goes on:
    all it can where the machine has more than two cores, half of one where it has two or fewer.
    There a busy second core, even at idle priority, cost the harvest a quarter of its wall time
    (issue 2's site: 7.4 s alone, 9.6 s beside a ``chrt -i`` loop, 9.2 s beside the indexer at full
    share, 8.8 s at half; ``bench/fulltext_harvest_bench.py``)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return 1.0 if cores > 2 else 0.5


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    root, name, run_id, mode = argv
    share = 1.0
    if mode == "background":  # a run that does not wait for its index: the harvest comes first
        os.nice(BACKGROUND_NICE)
        with contextlib.suppress(AttributeError, OSError):  # Linux: run only when nothing else would
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        share = background_share()
    collection = Collection(Path(root), name)
    detached: dict[str, float] = {}  # once told to detach: when, and the documents when the indexer started

    def heartbeat() -> None:  # the harvest waits for the indexer as long as it goes on
        if not detached:
            sys.stdout.write(".\n")
            sys.stdout.flush()

    def answer(during_run: int, first_docnum: int) -> None:  # the harvest goes; so does our standard output
        detached.update(at=time.monotonic(), first_docnum=first_docnum)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        with contextlib.suppress(OSError):
            sys.stdout.write(json.dumps({"indexed_during_run": during_run}) + "\n")
            sys.stdout.flush()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)

    figures = follow(collection, run_id, sys.stdin.fileno(), heartbeat, answer, share)
    if detached:
        index_rest(collection, run_id, figures, int(detached["first_docnum"]), detached["at"])
        return 0
    sys.stdout.write(json.dumps(figures) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
