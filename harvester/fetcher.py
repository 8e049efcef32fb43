"""The seam a harvest fetches through: one request in, one ``FetchResult`` out.

    class Fetcher(Protocol):
        async def fetch(self, url: str, headers: dict[str, str], interval: float = 0.0) -> FetchResult
        async def close(self) -> None

A ``Fetcher`` sends one GET with the headers the harvest chose (``Referer``, the validators of a
conditional request) and never raises for network trouble: ``FetchResult.error`` says what
happened. It knows nothing of scope, robots.txt or the decision; those are the visit's
(``harvester.visit``), so that every request, whoever asks for it, goes the same way. Of
politeness it keeps the one part only the sender can: ``interval``, the seconds the visit asks
between this host's requests, counted where the request leaves from the previous one actually sent
there (``harvester.hostgate``), not from when it was planned.

``HttpFetcher`` is Strata's HTTP: in a second process when the job allows it and the machine has a
core for it (``harvester.fetchproc``), else, and whenever that process has died, in this process
through httpx (``harvester.fetch``) with the job's login cookies, proxies and network guard
(``harvester.login``). ``open_fetcher(job, transport, notes)`` makes the fetcher a job asks for.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Protocol

from harvester.fetchproc import FetchProcess
from harvester.fetchresult import FetchResult
from harvester.hostgate import HostGate
from harvester.job import JobSettings
from strata.urls import url_host

if TYPE_CHECKING:  # httpx is imported where a fetch runs in this process (none, with a fetch process)
    import httpx

    from harvester.proxies import ProxyPool

ACCEPT_ENCODING = "gzip, deflate"  # no br: only capped decoders touch stored bodies


class Fetcher(Protocol):
    async def fetch(self, url: str, headers: dict[str, str], interval: float = 0.0) -> FetchResult: ...

    async def close(self) -> None: ...


class HttpFetcher:
    """GET over HTTP(S): through the fetch process while it lives, else in this process."""

    def __init__(self, job: JobSettings, transport: httpx.AsyncBaseTransport | None = None):
        self.job = job
        self.transport = transport  # login cookies, proxies, the network guard; None: plain connections
        #: The second process that fetches, when there is one (None: every fetch runs here).
        self.process: FetchProcess | None = None
        self._client: httpx.AsyncClient | None = None  # made when first needed: see _in_process_client
        self._slots = asyncio.Semaphore(job.concurrency)
        self._gate = HostGate()  # when this process fetches itself (the fetch process has its own)

    @property
    def proxy_pool(self) -> ProxyPool | None:
        """The transport's proxies, when the job has some (their failures are the run's to report)."""
        return getattr(self.transport, "proxy_pool", None)

    async def start(self, notes: list[str]) -> HttpFetcher:
        """Start the fetch process when the job allows it, the machine has a core for it, and the
        client needs nothing the child cannot build itself (a login's cookies, the network guard)."""
        job = self.job
        if not job.fetch_process or self.transport is not None or (os.cpu_count() or 1) < 2:
            return self
        try:
            self.process = await FetchProcess(job.concurrency, job.connect_timeout, job.timeout, job.user_agent).start()
        except OSError as exc:
            notes.append(f"fetching in-process: the fetch process did not start ({exc})")
        return self

    async def fetch(self, url: str, headers: dict[str, str], interval: float = 0.0) -> FetchResult:
        headers = {"Accept-Encoding": ACCEPT_ENCODING, **headers}
        job = self.job
        if self.process is not None and self.process.alive:
            return await self.process.fetch(url, headers, job.timeout, job.max_resource_size, interval)
        from harvester.fetch import fetch

        async with self._slots, self._gate.turn(url_host(url), interval) as sent:
            # a request waits for a connection, then for its host's turn, before its deadline starts
            client = self._in_process_client()
            return await fetch(client, url, headers, job.timeout, job.max_resource_size, sent)

    def _in_process_client(self) -> httpx.AsyncClient:
        """The client for fetching in this process (no fetch process, or it died), made at the first
        such fetch: making one loads the CA bundle (0.2 s of CPU), which a run whose fetch process
        does every fetch never needs here."""
        if self._client is None:
            from harvester.fetch import make_client

            job = self.job
            self._client = make_client(
                job.concurrency, job.connect_timeout, job.timeout, job.user_agent, transport=self.transport
            )
        return self._client

    async def close(self) -> None:
        if self.process is not None:
            await self.process.close()
        if self._client is not None:
            await self._client.aclose()


async def open_fetcher(job: JobSettings, transport: httpx.AsyncBaseTransport | None, notes: list[str]) -> HttpFetcher:
    """The job's fetcher, started: its login done first (the form's cookies go with every request)."""
    if transport is None and job.shapes_transport:  # else there is none to make
        from harvester.login import harvest_transport

        transport = harvest_transport(job)  # login cookies and proxies; None when the job has neither
    if job.login_form_url:
        from harvester.login import form_login, with_cookies

        transport = with_cookies(job, transport, await form_login(job, transport))
    return await HttpFetcher(job, transport).start(notes)
