"""QA of a run: each of its pages loaded from replay in Chromium, compared with what was captured.

Anchored on Browsertrix's QA (its replay crawl: a screenshot, text and resource comparison per
page, and a review status staff set), with what it lacks: the resources that failed in replay are
named, by kind, and can be queued for a patch capture of the run (``replay.qa.store``).

Each page is loaded at its capture's timestamp in the ``mp_`` mode (the page without the banner)
through ``harvester.browser``, with the job's behaviours (scrolling, ``click_selectors``, media),
so that replay is asked for what the capture was asked for. Every request goes through
``ReplayResolve``: those to the replay application are fetched from it (``replay.qa.server``, a
child process serving the collections root); any other is an attempt to leave the archive, which
fails and is reported, and nothing reaches any other address (the browser has no network of its
own, ``harvester.browser.chromium``).

Per page: the archived resources the page asked for and which of them failed in replay (missing:
404, the replay's "not archived"; error: any other 4xx or 5xx; left: outside the archive), how
close its screenshot and rendered text came to the capture's (``replay.qa.compare``; only for a
page captured by a browser, which kept them), what the capture recorded of its own requests, and a
score. The run's summary: pages checked, pages with problems, missing resources by kind.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Callable

import httpx

from harvester.browser.contract import FULFILLED, BrowserRequest, BrowserResponse
from harvester.browser.page import PageCapture
from harvester.browser.session import BrowserSession
from harvester.browser.settings import BrowserSettings
from index.collection import Collection
from replay.qa import compare, store
from replay.qa.pages import Page, captured_requests, captured_screenshot, captured_text, run_pages
from replay.qa.server import QaReplayServer
from strata import eventloop
from strata.times import iso, utc_now

# /<coll>/<timestamp><modifier>/<archived URL>, as replay addresses a capture
_REPLAY_PATH = re.compile(r"^/(?P<coll>[^/]+)/(?P<ts>\d{1,14})(?P<mod>[a-z]{2}_)?/(?P<url>.+)$")
_NOT_SENT = {"host", "accept-encoding", "connection", "content-length"}
_WIRE = {"content-encoding", "content-length", "transfer-encoding", "connection"}
MISSING, ERROR, LEFT = "missing", "error", "left"


class ReplayResolve:
    """Requests to the replay application are fetched from it; anything else is refused and kept
    as an attempt to leave the archive."""

    def __init__(self, client: httpx.AsyncClient, base_url: str):
        self.client = client
        self.base_url = base_url
        self.archived: set[str] = set()  # replay URLs answered with a capture (Memento-Datetime)

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | None:
        if not request.url.startswith(self.base_url + "/"):
            return None
        headers = [(k, v) for k, v in request.headers if k.lower() not in _NOT_SENT]
        try:
            answer = await self.client.request(request.method, request.url, headers=headers, content=request.body)
        except httpx.HTTPError:
            return None
        pairs = [(k, v) for k, v in answer.headers.multi_items() if k.lower() not in _WIRE]
        if "memento-datetime" in answer.headers:
            self.archived.add(request.url)
        return BrowserResponse(answer.status_code, pairs, answer.content)


def check_run(
    collection: Collection,
    run_id: str,
    *,
    settings: BrowserSettings | None = None,
    limit: int | None = None,
    progress: Callable[[dict], None] | None = None,
) -> dict:
    """Check the run's pages in replay; write and return the report (``replay.qa.store``)."""
    started = time.monotonic()
    pages = run_pages(collection, run_id, limit)
    settings = settings or BrowserSettings()
    with QaReplayServer(collection.root) as server:
        results = eventloop.run(_check_pages(collection, pages, server.base_url, settings, progress))
    seconds = time.monotonic() - started
    report = {
        "collection": collection.name,
        "run": run_id,
        "checked": iso(utc_now()),
        "settings": {"click_selectors": list(settings.click_selectors), "pages_at_once": settings.pages},
        "pages": results,
        "summary": summarize(results, seconds),
    }
    store.write_report(collection, run_id, report)
    return report


async def _check_pages(
    collection: Collection, pages: list[Page], base_url: str, settings: BrowserSettings, progress
) -> list[dict]:
    results: list[dict] = []
    async with httpx.AsyncClient(trust_env=False, timeout=settings.page_deadline, follow_redirects=False) as client:
        resolve = ReplayResolve(client, base_url)
        async with BrowserSession(settings) as session:

            async def one(page: Page) -> dict:
                url = f"{base_url}/{collection.name}/{page.timestamp}mp_/{page.url}"
                capture = await session.load(url, resolve)
                result = page_result(collection, page, capture, base_url, resolve.archived)
                results.append(result)
                if progress:
                    progress({"done": len(results), "pages": len(pages), "url": page.url})
                return result

            ordered = await asyncio.gather(*(one(p) for p in pages))
    return list(ordered)


def page_result(collection: Collection, page: Page, capture: PageCapture, base_url: str, archived: set[str]) -> dict:
    asked, failed = _resources(capture, base_url, collection.name, archived)
    shot = captured_screenshot(collection, page)
    text = captured_text(collection, page)
    at_capture = captured_requests(collection, page)
    screenshot_match = None
    if shot and capture.screenshot:
        try:
            screenshot_match = compare.screenshot_closeness(shot, capture.screenshot)
        except ValueError:
            screenshot_match = None
    text_match = compare.text_closeness(text, capture.text) if text is not None and capture.error is None else None
    resources_match = (len(asked) - len(failed)) / len(asked) if asked else None
    score = compare.score(resources_match, screenshot_match, text_match)
    if capture.error is not None or capture.status is None or capture.status >= 400:
        score = 0.0
    return {
        "url": page.url,
        "timestamp": page.timestamp,
        "status": capture.status,
        "error": capture.error,
        "resources": len(asked),
        "failed": failed,
        "screenshot": screenshot_match,
        "text": text_match,
        "score": score,
        "problems": bool(failed) or score < compare.GOOD,
        "captured_by": "browser" if page.records else "http",
        "capture_requests": _capture_counts(at_capture),
        "seconds": capture.elapsed,
    }


def _resources(capture: PageCapture, base_url: str, coll: str, archived: set[str]) -> tuple[set[str], list[dict]]:
    """The archived URLs the page asked replay for, and those that failed (each URL once). A capture
    of an error (the live site answered 404 too: replay says so with ``Memento-Datetime``) is replayed
    as it was, not a failure."""
    asked: set[str] = set()
    failed: dict[str, dict] = {}
    for outcome in capture.requests:
        if outcome.top_level:
            continue  # the page itself: its status is the page's
        if not outcome.url.startswith(base_url + "/"):
            if outcome.url.startswith(("http://", "https://")):
                asked.add(outcome.url)
                failed.setdefault(outcome.url, _failure(outcome, outcome.url, LEFT))
            continue
        match = _REPLAY_PATH.match(outcome.url[len(base_url) :])
        if match is None or match["coll"] != coll:
            continue  # the replay's own files (its scripts, the favicon): not archived resources
        target = match["url"]
        asked.add(target)
        if outcome.outcome == FULFILLED and outcome.status is not None and outcome.status < 400:
            continue
        if outcome.outcome == FULFILLED and outcome.url in archived:
            continue  # an archived error, replayed as it was
        reason = MISSING if outcome.status == 404 else ERROR
        failed.setdefault(target, _failure(outcome, target, reason))
    return asked, sorted(failed.values(), key=lambda f: (f["kind"], f["url"]))


def _failure(outcome, url: str, reason: str) -> dict:
    return {"url": url, "kind": outcome.resource_type, "status": outcome.status, "reason": reason}


def _capture_counts(requests: list[dict] | None) -> dict | None:
    if requests is None:
        return None
    good = sum(1 for r in requests if r.get("outcome") == FULFILLED and (r.get("status") or 0) < 400)
    return {"good": good, "bad": len(requests) - good}


def summarize(results: list[dict], seconds: float) -> dict:
    missing = Counter(f["kind"] for r in results for f in r["failed"] if f["reason"] == MISSING)
    reasons = Counter(f["reason"] for r in results for f in r["failed"])
    scores = [r["score"] for r in results]
    return {
        "pages_checked": len(results),
        "pages_with_problems": sum(1 for r in results if r["problems"]),
        "missing_by_kind": dict(sorted(missing.items())),
        "failed_by_reason": dict(sorted(reasons.items())),
        "mean_score": round(sum(scores) / len(scores), 4) if scores else None,
        "seconds": round(seconds, 3),
        "seconds_per_page": round(seconds / len(results), 3) if results else None,
    }


def patch_candidates(report: dict) -> list[dict]:
    """What a patch capture of the run could fetch: every resource that was missing in replay or
    that the page sought outside the archive, with the page that asked for it."""
    items = []
    for page in report.get("pages", []):
        for failed in page["failed"]:
            if failed["reason"] in (MISSING, LEFT):
                items.append({"url": failed["url"], "page": page["url"], "kind": failed["kind"]})
    return items
