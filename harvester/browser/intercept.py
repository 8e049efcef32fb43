"""Interception: every request of a page goes to ``resolve`` and is answered with what it returns.
Nothing is passed on to the browser's network stack (no ``Fetch.continueRequest``).

The DevTools protocol's Fetch domain on the page's own session (``Fetch.enable``,
``Fetch.requestPaused``, then ``Fetch.fulfillRequest`` or ``Fetch.failRequest``), at the request
stage. With site isolation off (``harvester.browser.chromium``) the page's frames, cross-site ones
included, and its dedicated workers share that session, so their requests are paused there too;
a redirect answered here is followed by Chromium and its next hop paused again, so every hop goes
through ``resolve`` (Playwright's ``route`` lets the next hop of a fulfilled redirect go to the
network unasked, which is why it is not used). Service workers are blocked by the browser context
(``service_workers="block"``: nothing they would answer is seen here).

A recording proxy with a per-run CA was the other way: it sees what the network stack sends, but
every fetch would then be the browser's, not Strata's client with its guard, proxies, cookies and
validators, and a CA trusted by a browser is one more secret to keep. What interception cannot
see (a WebSocket, a popup window's requests, the rare request past it) meets the closed proxy
``harvester.browser.chromium`` gives the browser and fails: it never reaches the network, and it
is not archived.

``resolve`` calls are never cancelled: a call the harvest is recording finishes even when the page
is closed under it (``drain`` waits for them); requests that come after the page's deadline or
while it closes fail unasked (``LATE``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time

from harvester.browser.contract import (
    ERROR,
    FULFILLED,
    LATE,
    REFUSED,
    BrowserRequest,
    BrowserResponse,
    PageRef,
    RequestOutcome,
    Resolve,
)
from index.payload import DecodeError, decode_content

# Headers that describe the bytes on the wire, not the decoded body the browser is given
_WIRE_HEADERS = {"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"}


class Interceptor:
    def __init__(self, page: PageRef, resolve: Resolve, deadline: float, max_body: int):
        self.page = page
        self.resolve = resolve
        self.deadline = deadline  # monotonic; later requests fail unasked
        self.max_body = max_body
        self.outcomes: list[RequestOutcome] = []
        self.closing = False
        self._cdp = None
        self._main_frame = ""
        self._in_flight = 0
        self._last_change = time.monotonic()
        self._changed = asyncio.Event()
        self._tasks: set[asyncio.Task] = set()

    async def attach(self, context, page) -> None:
        """Pause every request of ``page`` (before it navigates)."""
        self._cdp = cdp = await context.new_cdp_session(page)
        tree = await cdp.send("Page.getFrameTree")
        self._main_frame = tree["frameTree"]["frame"]["id"]
        cdp.on("Fetch.requestPaused", self._paused)
        await cdp.send("Fetch.enable", {"patterns": [{"urlPattern": "*", "requestStage": "Request"}]})

    # -- waiting ------------------------------------------------------------------------------------
    async def wait_quiet(self, idle: float, timeout: float) -> bool:
        """Wait until no request has been in flight for ``idle`` seconds since the call, at most
        ``timeout``. True when quiet was reached."""
        called = time.monotonic()
        until = called + timeout
        while True:
            now = time.monotonic()
            # quiet counts from the call at the earliest: what the caller just did (a scroll, a
            # click) may not have asked for anything yet
            since = max(self._last_change, called)
            if self._in_flight == 0 and now - since >= idle:
                return True
            if now >= until:
                return False
            self._changed.clear()
            wait = until - now if self._in_flight else min(until - now, idle - (now - since))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), max(0.01, wait))

    async def drain(self, timeout: float) -> bool:
        """Stop asking ``resolve``; wait for the calls still running (never cancelled). True when
        none is left."""
        self.closing = True
        if not self._tasks:
            return True
        _done, pending = await asyncio.wait(set(self._tasks), timeout=timeout)
        return not pending

    # -- one paused request -------------------------------------------------------------------------
    def _paused(self, event: dict) -> None:
        self._begin()
        task = asyncio.ensure_future(self._handle(event))
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self._tasks.discard(task)
        self._end()

    async def _handle(self, event: dict) -> None:
        asked = self._request(event)
        outcome = RequestOutcome(
            asked.url, asked.method, asked.resource_type, asked.navigation, REFUSED, top_level=asked.top_level
        )
        self.outcomes.append(outcome)
        if self.closing or time.monotonic() > self.deadline:
            outcome.outcome, outcome.error = LATE, "page closing" if self.closing else "after the page's deadline"
            await self._fail(event, "Failed")
            return
        try:
            response = await self.resolve(asked)
        except Exception as exc:  # the harvest's failure is this request's, not the page's
            outcome.outcome, outcome.error = ERROR, f"{type(exc).__name__}: {exc}"[:300]
            await self._fail(event, "Failed")
            return
        if response is not None:
            outcome.status = response.status
            outcome.mime = (response.header("Content-Type") or "").split(";")[0].strip().lower()
        if response is None or response.body is None:
            await self._fail(event, "BlockedByClient")
            return
        await self._fulfil(event, outcome, response)

    def _request(self, event: dict) -> BrowserRequest:
        request = event["request"]
        kind = str(event.get("resourceType") or "Other").lower()
        body = None
        if request.get("postDataEntries"):
            body = b"".join(base64.b64decode(e.get("bytes") or "") for e in request["postDataEntries"])
        elif request.get("postData") is not None:
            body = request["postData"].encode("utf-8")
        url = request["url"] + (request.get("urlFragment") or "")
        return BrowserRequest(
            url=url.split("#", 1)[0],
            method=request.get("method") or "GET",
            headers=list((request.get("headers") or {}).items()),
            body=body,
            resource_type=kind,
            navigation=kind == "document",
            top_level=kind == "document" and event.get("frameId") == self._main_frame,
            page=self.page,
        )

    async def _fulfil(self, event: dict, outcome: RequestOutcome, response: BrowserResponse) -> None:
        try:
            body = decode_content(response.body or b"", response.header("Content-Encoding"), self.max_body + 1)
        except DecodeError as exc:
            outcome.outcome, outcome.error = ERROR, f"undecodable body: {exc}"
            await self._fail(event, "Failed")
            return
        if len(body) > self.max_body:
            outcome.outcome, outcome.error = ERROR, f"body over {self.max_body} bytes decoded"
            await self._fail(event, "Failed")
            return
        headers = [{"name": k, "value": v} for k, v in response.headers if k.lower() not in _WIRE_HEADERS]
        try:
            assert self._cdp is not None
            await self._cdp.send(
                "Fetch.fulfillRequest",
                {
                    "requestId": event["requestId"],
                    "responseCode": response.status,
                    "responseHeaders": headers,
                    "body": base64.b64encode(body).decode("ascii"),
                },
            )
        except Exception as exc:  # the page closed meanwhile, or the request was cancelled
            outcome.outcome, outcome.error = ERROR, f"not delivered: {str(exc)[:200]}"
            return
        outcome.outcome, outcome.size = FULFILLED, len(body)

    async def _fail(self, event: dict, reason: str) -> None:
        with contextlib.suppress(Exception):
            assert self._cdp is not None
            await self._cdp.send("Fetch.failRequest", {"requestId": event["requestId"], "errorReason": reason})

    # -- in flight ----------------------------------------------------------------------------------
    def _begin(self) -> None:
        self._in_flight += 1
        self._touch()

    def _end(self) -> None:
        self._in_flight -= 1
        self._touch()

    def _touch(self) -> None:
        self._last_change = time.monotonic()
        self._changed.set()
