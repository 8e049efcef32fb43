"""Fetching in a second process.

A harvest's event loop does two kinds of CPU work: HTTP (httpx, h11, the sockets: about 40% of it)
and everything that follows a response (decide, WARC records, CDXJ lines, SQLite, links). On a
machine with a core to spare, ``FetchProcess`` moves the first kind into a child process running
its own event loop with the same client settings; there ``harvester.directfetch`` fetches, giving
what ``harvester.fetch.fetch`` gives with less of httpx around h11. (Link extraction stays in the
harvest: moved here, it made the child, whose loop every answer waits on, the slower side, and
crawl 2 of the issue-2 bench 6% slower.) The harvest sends it ``(url, headers, deadline, size
cap)`` and gets a ``FetchResult`` back, body included: bodies up to ``INLINE_MAX`` travel in the
message, larger ones are left in a temporary file that the harvest opens and unlinks, so memory
stays bounded as with in-process fetching. Politeness, scope and every decision stay in the
harvest: the child only fetches what it is sent, when it is sent.

Messages are length-prefixed pickles over the child's stdin and stdout (the child's own prints go
to stderr); the messages of one turn of the event loop go in one write (``_Outbox``). The child
ignores SIGINT (the harvest decides how to stop) and exits when its stdin closes: when the harvest
closes it, or dies (SIGKILL included). If the child dies, fetches in flight come back as errors and
later ones run in the harvest's own process.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import itertools
import os
import pickle
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable

from harvester.fetchresult import FetchResult
from harvester.hostgate import HostGate
from strata import eventloop
from strata.urls import url_host

INLINE_MAX = 2 * 1024 * 1024  # bodies larger than this travel as a temporary file
ANSWER_GRACE = 15.0  # seconds past a fetch's deadline before the child is given up on
_LENGTH = 4
_FIELDS = [f.name for f in dataclasses.fields(FetchResult) if f.name != "body"]


def _frame(message) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return len(data).to_bytes(_LENGTH, "big") + data


async def _read_frame(reader: asyncio.StreamReader):
    """The next message, or None at the end of the stream."""
    try:
        size = int.from_bytes(await reader.readexactly(_LENGTH), "big")
        return pickle.loads(await reader.readexactly(size))
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


class FetchProcess:
    """The harvest's side: start the child, send fetches, match answers to waiting fetches."""

    def __init__(self, concurrency: int, connect_timeout: float, timeout: float, user_agent: str):
        self.settings = {
            "concurrency": concurrency,
            "connect_timeout": connect_timeout,
            "timeout": timeout,
            "user_agent": user_agent,
        }
        self.alive = False
        self._proc: asyncio.subprocess.Process | None = None
        self._pending: dict[int, tuple[asyncio.Future, str]] = {}
        self._ids = itertools.count(1)
        self._reader: asyncio.Task | None = None
        self._outbox = _Outbox(self._stdin, self._lost)

    async def start(self) -> FetchProcess:
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-P",  # not the working directory first on the path: Strata's own module, wherever it runs
            "-m",
            "harvester.fetchproc",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=INLINE_MAX + (1 << 20),
        )
        self._stdin().write(_frame(("config", self.settings)))
        self.alive = True
        self._reader = asyncio.create_task(self._read_answers())
        return self

    def _stdin(self) -> asyncio.StreamWriter:
        assert self._proc is not None and self._proc.stdin is not None  # started, with a pipe
        return self._proc.stdin

    def _stdout(self) -> asyncio.StreamReader:
        assert self._proc is not None and self._proc.stdout is not None  # started, with a pipe
        return self._proc.stdout

    async def fetch(
        self, url: str, headers: dict[str, str], deadline: float, max_size: int, interval: float = 0.0
    ) -> FetchResult:
        """``interval``: seconds between this host's requests, counted there from the moment the last
        one was written (``harvester.hostgate``)."""
        if not self.alive:
            return FetchResult(url=url, error="the fetch process has exited")
        fetch_id = next(self._ids)
        answer = asyncio.get_running_loop().create_future()
        self._pending[fetch_id] = (answer, url)
        try:
            self._outbox.put(_frame(("fetch", fetch_id, url, headers, deadline, max_size, interval)))
            # The child may hold it until a connection is free (at most one fetch's deadline), then fetches.
            async with asyncio.timeout(2 * deadline + ANSWER_GRACE):
                return await answer
        except TimeoutError:
            return FetchResult(url=url, error="the fetch process did not answer")
        finally:
            self._pending.pop(fetch_id, None)

    def _lost(self) -> None:
        """Its stdin is closed: it has gone, and what was sent to it will not be answered."""
        self.alive = False
        for answer, url in list(self._pending.values()):
            if not answer.done():
                answer.set_result(FetchResult(url=url, error="the fetch process has exited"))

    async def _read_answers(self) -> None:
        while True:
            message = await _read_frame(self._stdout())
            if message is None:
                break
            _, fetch_id, fields, body, body_path = message
            answer, _ = self._pending.get(fetch_id, (None, ""))
            result = FetchResult(**fields)
            if body is not None:
                result.body = io.BytesIO(body)
            elif body_path is not None:
                with contextlib.suppress(OSError):
                    result.body = open(body_path, "rb")  # noqa: SIM115 - FetchResult.close() closes it
                with contextlib.suppress(OSError):
                    os.unlink(body_path)
            if answer is None or answer.done():
                result.close()  # cancelled meanwhile (the run is stopping)
                continue
            answer.set_result(result)
        self.alive = False
        for answer, url in list(self._pending.values()):
            if not answer.done():
                answer.set_result(FetchResult(url=url, error="the fetch process has exited"))

    async def close(self) -> None:
        self.alive = False
        if self._proc is None:
            return
        with contextlib.suppress(OSError, RuntimeError):
            self._stdin().close()
        try:
            await asyncio.wait_for(self._proc.wait(), 5.0)
        except TimeoutError:
            self._proc.kill()
            await self._proc.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader


class _Outbox:
    """Frames for a pipe, written together once per turn of the event loop: the workers that send
    fetches (or the answers that are ready) in one turn cost one write, not a write each."""

    def __init__(self, writer: Callable[[], asyncio.StreamWriter], lost: Callable[[], None] | None = None):
        self.writer = writer
        self.lost = lost
        self.frames: list[bytes] = []

    def put(self, frame: bytes) -> None:
        if not self.frames:
            asyncio.get_running_loop().call_soon(self.flush)
        self.frames.append(frame)

    def flush(self) -> None:
        data, self.frames = b"".join(self.frames), []
        if not data:
            return
        try:
            self.writer().write(data)
        except (ConnectionError, RuntimeError):  # the other side has gone
            if self.lost is not None:
                self.lost()


# -- the child ----------------------------------------------------------------------------------------


async def _answer(
    fetch: Callable,
    slots: asyncio.Semaphore,
    gate: HostGate,
    outbox: _Outbox,
    fetch_id: int,
    url: str,
    headers: dict,
    deadline: float,
    max_size: int,
    interval: float = 0.0,
) -> None:
    async with slots:  # one request per connection: a fetch waits for one before its deadline starts
        # this host's last request here was written interval ago; this one's turn lasts until it is
        async with gate.turn(url_host(url), interval) as sent:
            result = await fetch(url, headers, deadline, max_size, sent)
    body = body_path = None
    try:
        if result.body is not None:
            if result.body_length <= INLINE_MAX:
                body = result.read_body()
            else:
                with tempfile.NamedTemporaryFile(prefix="strata-body-", delete=False) as spool:
                    result.body.seek(0)
                    shutil.copyfileobj(result.body, spool, 1 << 20)
                    body_path = spool.name
    finally:
        result.close()
    fields = {name: getattr(result, name) for name in _FIELDS}
    outbox.put(_frame(("result", fetch_id, fields, body, body_path)))


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    config = await _read_frame(reader)
    if config is None:
        return
    # The HTTP client is the child's alone: the harvest's own process reads FetchResults only.
    from harvester.directfetch import DirectFetcher
    from harvester.fetch import make_client
    from harvester.h11transport import H11Transport

    settings = config[1]
    transport = H11Transport(settings["concurrency"])
    client = make_client(
        settings["concurrency"],
        settings["connect_timeout"],
        settings["timeout"],
        settings["user_agent"],
        transport=transport,
    )
    fetch = DirectFetcher(client, transport).fetch
    slots = asyncio.Semaphore(settings["concurrency"])
    gate = HostGate()
    outbox = _Outbox(lambda: writer)
    tasks: set[asyncio.Task] = set()
    try:
        while True:
            message = await _read_frame(reader)
            if message is None:
                break
            task = asyncio.create_task(_answer(fetch, slots, gate, outbox, *message[1:]))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        outbox.flush()
        await client.aclose()


async def _child_main() -> None:
    loop = asyncio.get_running_loop()
    # The answers get their own descriptor; anything printed goes to stderr, not into the stream.
    answers = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, answers)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    await _serve(reader, writer)
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    transport.close()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    eventloop.run(_child_main())
