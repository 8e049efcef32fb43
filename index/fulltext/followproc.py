"""The harvest's side of the indexer that follows its run (``index.fulltext.follow``).

``RunIndexer.start_when(count)`` starts the process once ``count()`` (URLs fetched) reaches
``START_AFTER``: a short run is indexed at its end as before, which costs less than starting a
process with Whoosh in it (about 0.2 s of CPU). ``stop()``, once the run's files are sealed, asks
the process to index what is left of the run and commit, and waits for its figures; it is killed
if it stays silent for ``FINISH_WAIT`` (it says something after each batch; a kill costs only work,
``index.fulltext.follow`` says why). Then ``finish_run()`` is ``index_run`` as ever, which indexes
whatever the process did not (all of the run, if it died), adds every capture of the run and marks
it indexed; its figures count the process's work in (``added``, ``parsed``, ``copied`` and
``captures`` are the run's totals; ``indexed_during_run`` is what the process had added when the
run ended; ``seconds`` is what the run waited for at its end).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import sys
import time
from collections.abc import Callable

from index.collection import Collection
from index.fulltext.captures import FILENAME, CaptureStore

START_AFTER = 100  # URLs fetched before a run starts its indexer
FINISH_WAIT = 120.0  # seconds the run waits for a sign of life from its indexer at the end before killing it
_WATCH_EVERY = 0.25


class RunIndexer:
    def __init__(self, collection: Collection, run_id: str):
        self.collection = collection
        self.run_id = run_id
        self.proc: asyncio.subprocess.Process | None = None
        self._watch: asyncio.Task | None = None
        self._ending = False
        self._stopped_at: float | None = None
        self.figures: dict = {}  # the process's own, once stopped
        self.first_docnum = 0  # documents in the index when the process started

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start_when(self, count: Callable[[], int], after: int | None = None) -> None:
        """Start the process as soon as ``count()`` reaches ``after`` (default ``START_AFTER``)."""
        threshold = START_AFTER if after is None else after
        self._watch = asyncio.create_task(self._start_when(count, threshold))

    async def _start_when(self, count: Callable[[], int], threshold: int) -> None:
        while not self._ending and count() < threshold:
            await asyncio.sleep(_WATCH_EVERY)
        if not self._ending:
            try:
                await self.start()
            except OSError as exc:  # the run goes on; index_run indexes it at its end
                self.figures = {"error": f"the indexer did not start ({exc})"}

    async def start(self) -> RunIndexer:
        self.first_docnum = documents_in(self.collection)
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "index.fulltext.follow",
            str(self.collection.root),
            self.collection.name,
            self.run_id,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        return self

    async def stop(self, finish: bool = True, wait: float = FINISH_WAIT) -> dict:
        """Ask the process to index the rest of the run (``finish``; else only to commit what it
        holds, the run having failed), commit and stop; its figures ({} when it never started)."""
        self._ending = True
        self._stopped_at = time.monotonic()
        if self._watch is not None:
            await self._watch
        proc = self.proc
        if proc is None:
            return {}
        assert proc.stdin is not None and proc.stdout is not None  # started with pipes
        with contextlib.suppress(ConnectionError, RuntimeError):
            if finish:
                proc.stdin.write(b"finish\n")
                await proc.stdin.drain()
            else:
                proc.stdin.close()
        said = b""
        try:
            while line := await asyncio.wait_for(proc.stdout.readline(), wait):  # "." a batch, then figures
                said = line
        except TimeoutError:
            said = b""
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        with contextlib.suppress(ConnectionError, RuntimeError):
            proc.stdin.close()
        code = await proc.wait()
        try:
            self.figures = json.loads(said) if said.startswith(b"{") else {}
        except ValueError:
            self.figures = {}
        if not self.figures:
            self.figures = {"error": f"the indexer exited with {code} before it said what it had done"}
        return self.figures

    def finish_run(self) -> dict:
        """``index_run`` for the run, its figures with the process's work counted in."""
        # Whoosh: imported by a run that indexes, when it does
        from index.fulltext.update import Followed, index_run

        followed = Followed(self.first_docnum) if self.proc is not None else None
        figures = index_run(self.collection, self.run_id, followed=followed)
        return merge_figures(figures, self.figures, self._stopped_at)


def documents_in(collection: Collection) -> int:
    """Documents in the collection's index that have rows (SQLite only: no Whoosh in the harvest)."""
    path = collection.fulltext_dir / FILENAME
    if not path.is_file():
        return 0
    try:
        with CaptureStore(collection.fulltext_dir, readonly=True) as store:
            return store.doc_count()
    except sqlite3.Error:
        return 0


def merge_figures(final: dict, during: dict, stopped_at: float | None = None) -> dict:
    """The run's full-text figures: ``final`` (index_run's) with the indexer's work counted in."""
    out = dict(final)
    if stopped_at is not None:
        out["seconds"] = round(time.monotonic() - stopped_at, 3)  # what the run waited for at its end
    if not during:
        return out
    if not final.get("rebuilt"):
        for name in ("parsed", "copied", "captures"):
            out[name] = final.get(name, 0) + during.get(name, 0)
    out["indexed_during_run"] = during.get("during_run", during.get("added", 0))
    out["indexer"] = during
    return out
