"""The harvest's side of the indexer that follows its run (``index.fulltext.follow``).

``RunIndexer.start_when(count)`` starts the process once ``count()`` (URLs fetched) reaches
``START_AFTER``: a short run is indexed at its end as before, which costs less than starting a
process with Whoosh in it (about 0.2 s of CPU). Once the run's files are sealed, the run ends its
indexer one of two ways:

- ``detach()`` (``strata harvest``'s default): the process is told to index the rest of the run in
  the background and answers at once with what it indexed during the run; the run returns without
  waiting. The process, in a session of its own (a closed terminal does not stop it), then does
  what ``index_run`` does at a run's end (adds every capture of the run and marks it indexed) and
  records its figures in the capture store (``CaptureStore.run_figures``): the run is searchable
  from then on. Killed before, it costs only work: the next run's ``index_run``, or ``strata index
  rebuild``, indexes the run. Its error output goes to ``LOG_NAME`` in the collection's state
  directory, never to the harvest's own (a caller reading that to its end would wait for it).
- ``stop()``, then ``finish_run()`` (``Harvest(index_in_background=False)``, ``strata harvest
  --wait-for-index``): the process is asked to index the rest and commit, and the run waits for its
  figures; it is killed if it stays silent for ``FINISH_WAIT`` (it says something after each batch).
  Then ``finish_run()`` is ``index_run`` as ever, which indexes whatever the process did not (all
  of the run, if it died), adds every capture of the run and marks it indexed; its figures count
  the process's work in (``added``, ``parsed``, ``copied`` and ``captures`` are the run's totals;
  ``indexed_during_run`` is what the process had added when the run ended; ``seconds`` is what the
  run waited for at its end).

It is a plain ``subprocess.Popen``: an asyncio subprocess transport kills its process when it is
closed, which a process meant to outlive the run cannot have.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable

from index.collection import Collection
from index.fulltext.captures import CaptureStore, read_existing

START_AFTER = 100  # URLs fetched before a run starts its indexer
FINISH_WAIT = 120.0  # seconds the run waits for a sign of life from its indexer at the end before killing it
# seconds the run waits for the indexer's answer to ``detach``, then leaves it be: it answers once the
# document in hand is done, but not while it waits for the index's write lock (the background
# indexer of the run before, still at work), and the run need not wait for that
DETACH_WAIT = 5.0
LOG_NAME = "fulltext-indexer.log"  # in the collection's state directory: the indexer's error output
_WATCH_EVERY = 0.25


class RunIndexer:
    def __init__(self, collection: Collection, run_id: str, background: bool = False):
        self.collection = collection
        self.run_id = run_id
        self.background = background  # the run will detach(): the process runs as background work
        self.proc: subprocess.Popen | None = None
        self._lines: asyncio.StreamReader | None = None
        self._pipe: asyncio.ReadTransport | None = None
        self._watch: asyncio.Task | None = None
        self._ending = False
        self._stopped_at: float | None = None
        self.figures: dict = {}  # the process's own, once stopped (or its answer to detach)
        self.first_docnum = 0  # documents in the index when the process started
        self.detached = False  # indexing the rest of the run in the background

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
        self.collection.state_dir.mkdir(parents=True, exist_ok=True)
        with open(self.collection.state_dir / LOG_NAME, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "index.fulltext.follow", str(self.collection.root), self.collection.name]
                + [self.run_id, "background" if self.background else "waited"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        assert self.proc.stdout is not None  # started with pipes
        self._lines = asyncio.StreamReader()
        lines = self._lines
        self._pipe, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(lines), self.proc.stdout
        )
        return self

    def _say(self, command: bytes | None) -> None:
        """Write ``command`` to the process (None: nothing), then, unless it is a finish, close its
        standard input: the end of it tells the process that the harvest has gone."""
        assert self.proc is not None and self.proc.stdin is not None  # started with pipes
        with contextlib.suppress(OSError):
            if command:
                self.proc.stdin.write(command)
                self.proc.stdin.flush()
            if command != b"finish\n":
                self.proc.stdin.close()

    async def _stopping(self) -> bool:
        """The start watch ended; True when there is a process to stop."""
        self._ending = True
        self._stopped_at = time.monotonic()
        if self._watch is not None:
            await self._watch
        return self.proc is not None

    async def detach(self, wait: float | None = None) -> dict:
        """Leave the rest of the run to the process, in the background (see the module's docstring);
        its answer: ``{"background": True, "pid": ..., "indexed_during_run": ...}`` ({} when it
        never started; ``{"error": ...}`` when it died first: ``finish_run()`` then indexes the run)."""
        if not await self._stopping():
            return {}
        assert self.proc is not None and self._lines is not None
        self._say(f"detach {self.first_docnum}\n".encode())
        answer: dict = {}
        try:
            line = await asyncio.wait_for(self._lines.readline(), DETACH_WAIT if wait is None else wait)
            answer = json.loads(line) if line.startswith(b"{") else {}
        except (TimeoutError, ValueError):  # busy past the wait: it reads the command when it can
            answer = {"indexed_during_run": None} if self.proc.poll() is None else {}
        self._close_pipe()
        if not answer and self.proc.poll() is not None:
            self.figures = {"error": f"the indexer exited with {self.proc.returncode} before the run ended"}
            return self.figures
        self.detached = True
        self.figures = {"background": True, "pid": self.proc.pid, **answer}
        return self.figures

    async def stop(self, finish: bool = True, wait: float = FINISH_WAIT) -> dict:
        """Ask the process to index the rest of the run (``finish``; else only to commit what it
        holds, the run having failed), commit and stop; its figures ({} when it never started)."""
        if not await self._stopping():
            return {}
        proc, lines = self.proc, self._lines
        assert proc is not None and lines is not None
        self._say(b"finish\n" if finish else None)
        said = b""
        try:
            while line := await asyncio.wait_for(lines.readline(), wait):  # "." a batch, then figures
                said = line
        except TimeoutError:
            said = b""
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        self._say(None)
        self._close_pipe()
        code = await asyncio.to_thread(proc.wait)
        try:
            self.figures = json.loads(said) if said.startswith(b"{") else {}
        except ValueError:
            self.figures = {}
        if not self.figures:
            self.figures = {"error": f"the indexer exited with {code} before it said what it had done"}
        return self.figures

    def _close_pipe(self) -> None:
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None

    def finish_run(self) -> dict:
        """``index_run`` for the run, its figures with the process's work counted in."""
        # Whoosh: imported by a run that indexes, when it does
        from index.fulltext.update import Followed, index_run

        followed = Followed(self.first_docnum) if self.proc is not None else None
        figures = index_run(self.collection, self.run_id, followed=followed)
        return merge_figures(figures, self.figures, self._stopped_at)


def documents_in(collection: Collection) -> int:
    """Documents in the collection's index that have rows (SQLite only: no Whoosh in the harvest)."""
    return read_existing(collection.fulltext_dir, CaptureStore.doc_count, 0)


def searchable_runs(collection: Collection) -> set[str]:
    """The runs whose captures are in the collection's index (SQLite only: no Whoosh)."""
    return read_existing(collection.fulltext_dir, CaptureStore.runs, set())


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
