"""The browser layer on its own (``harvester.browser``): Debian's Chromium owned by the test, every
request a page makes answered by ``resolve``, the behaviours, what a page yields, the bounds, and no
Chromium process left behind when the owner is SIGKILLed.

Pages here are made up by ``resolve`` itself (no server): whatever reached a socket would have come
from the browser's own network stack, which interception must never use.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from harvester.browser.contract import FULFILLED, REFUSED, BrowserRequest, BrowserResponse
from harvester.browser.keeper import naming
from harvester.browser.session import BrowserSession
from harvester.browser.settings import BrowserSettings
from tests.conftest import REPO
from tests.support.chromium import left_behind

pytestmark = pytest.mark.browser

ORIGIN = "http://portal.example"  # never resolved: every answer is resolve's
HTML = [("Content-Type", "text/html; charset=utf-8")]
FAST = BrowserSettings(page_deadline=20, quiet=0.2, scroll_steps=3, media_time=0.2)


def run(coroutine):
    return asyncio.run(coroutine)


class Pages:
    """A resolve over a dict of path -> (status, headers, body); anything else: refused. Keeps
    every request it was asked."""

    def __init__(self, pages: dict, delay: dict | None = None):
        self.pages = pages
        self.delay = delay or {}
        self.asked: list[BrowserRequest] = []

    async def __call__(self, request: BrowserRequest) -> BrowserResponse | None:
        self.asked.append(request)
        path = request.url[len(ORIGIN) :] if request.url.startswith(ORIGIN) else request.url
        await asyncio.sleep(self.delay.get(path, 0))
        found = self.pages.get(path or "/")
        return None if found is None else BrowserResponse(*found)


async def load(resolve, path="/", settings: BrowserSettings = FAST, **session_args):
    async with BrowserSession(settings, **session_args) as session:
        return await session.load(ORIGIN + path, resolve)


def test_a_page_built_by_script_yields_links_text_title_and_a_screenshot():
    page = b"""<!DOCTYPE html><title>shell</title><body><p>static</p><div id=made></div>
    <script>
      fetch('/data.json').then(r => r.json()).then(d => {
        document.title = d.title;
        const a = document.createElement('a'); a.href = '/only-by-script.html'; a.textContent = d.word;
        document.getElementById('made').appendChild(a);
      });
    </script>"""
    resolve = Pages(
        {
            "/": (200, HTML, page),
            "/data.json": (200, [("Content-Type", "application/json")], b'{"title": "Built", "word": "zymurgy"}'),
        }
    )
    capture = run(load(resolve))
    assert capture.error is None and capture.status == 200
    assert capture.title == "Built"
    assert "zymurgy" in capture.text and "static" in capture.text
    assert capture.links == [ORIGIN + "/only-by-script.html"]
    assert capture.screenshot[:8] == b"\x89PNG\r\n\x1a\n"
    assert [(r.url, r.resource_type, r.outcome) for r in capture.requests] == [
        (ORIGIN + "/", "document", FULFILLED),
        (ORIGIN + "/data.json", "xhr", FULFILLED),  # fetch() and XMLHttpRequest alike
        (ORIGIN + "/favicon.ico", "other", REFUSED),  # Chromium asks for it as a reader's would
    ]
    assert capture.navigation.url == ORIGIN + "/"


def test_a_refused_request_fails_in_the_browser_and_the_page_goes_on():
    page = b"<title>t</title><img src='/out-of-scope.png' onerror=\"document.body.append('img failed')\">"
    capture = run(load(Pages({"/": (200, HTML, page)})))
    assert "img failed" in capture.text
    refused = [r for r in capture.requests if r.outcome == REFUSED and not r.url.endswith("/favicon.ico")]
    assert [r.url for r in refused] == [ORIGIN + "/out-of-scope.png"]


def test_a_refused_navigation_is_the_pages_error():
    capture = run(load(Pages({})))
    assert capture.error and "ERR_BLOCKED_BY_CLIENT" in capture.error
    assert capture.requests[0].outcome == REFUSED


def test_stored_bytes_are_decoded_redirects_followed_posts_passed_on():
    page = b"""<title>t</title><p id=p></p><script>
      fetch('/api', {method: 'POST', body: 'q=1', headers: {'Content-Type': 'application/x-www-form-urlencoded'}})
        .then(r => r.text()).then(t => document.getElementById('p').textContent = t);
    </script>"""
    resolve = Pages(
        {
            "/old": (301, [("Location", ORIGIN + "/")], b""),
            "/": (200, [*HTML, ("Content-Encoding", "gzip")], gzip.compress(page)),
            "/api": (200, [("Content-Type", "text/plain")], b"posted"),
        }
    )
    capture = run(load(resolve, "/old"))
    assert capture.final_url == ORIGIN + "/"
    assert "posted" in capture.text
    hops = [(r.url, r.status) for r in capture.requests if r.navigation]
    assert hops == [(ORIGIN + "/old", 301), (ORIGIN + "/", 200)]
    post = next(r for r in resolve.asked if r.method == "POST")
    assert post.body == b"q=1" and post.header("Content-Type") == "application/x-www-form-urlencoded"


def test_frames_and_workers_go_through_resolve_and_websockets_reach_no_socket():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    page = f"""<title>t</title><iframe src="http://other.example/frame.html"></iframe><script>
      new WebSocket('ws://127.0.0.1:{port}/feed');
      const w = new Worker('/worker.js'); w.onmessage = e => document.body.append(' worker said ' + e.data);
    </script>""".encode()
    js = [("Content-Type", "application/javascript")]
    resolve = Pages(
        {
            "/": (200, HTML, page),
            "/worker.js": (200, js, b"fetch('/data.json').then(r => r.text()).then(t => postMessage(t))"),
            "/data.json": (200, [("Content-Type", "application/json")], b'"fromworker"'),
        }
    )
    resolve.pages["http://other.example/frame.html"] = (200, HTML, b"<p>framed text</p>")
    try:
        capture = run(load(resolve))
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()
    assert 'worker said "fromworker"' in capture.text
    assert "framed text" in capture.text
    asked = {(r.url, r.resource_type, r.top_level) for r in resolve.asked}
    assert {
        (ORIGIN + "/", "document", True),
        ("http://other.example/frame.html", "document", False),
        (ORIGIN + "/worker.js", "other", False),
        (ORIGIN + "/data.json", "xhr", False),
    } <= asked
    assert not any(r.url.startswith("ws:") for r in resolve.asked)


def test_the_page_deadline_bounds_a_page_that_never_finishes():
    page = b"<title>slow</title><p>shown</p><script src='/slow.js'></script>"
    resolve = Pages({"/": (200, HTML, page), "/slow.js": (200, [], b"")}, delay={"/slow.js": 4.0})
    settings = BrowserSettings(page_deadline=1.5, extract_grace=2, quiet=0.2)
    started = time.monotonic()
    capture = run(load(resolve, settings=settings))
    took = time.monotonic() - started
    assert capture.timed_out and capture.error is None
    assert capture.status == 200 and "shown" in capture.text  # what it showed is still read
    # the resolve call is never cancelled: the load returns once it has finished (4 s), not before
    assert 4.0 <= took < 15
    assert [r.outcome for r in capture.requests if r.url.endswith("/slow.js")] == ["error"]


def test_no_more_pages_load_at_once_than_the_setting_allows():
    at_once, most = set(), [0]

    async def resolve(request: BrowserRequest):
        at_once.add(request.page.id)
        most[0] = max(most[0], len(at_once))
        await asyncio.sleep(0.3)
        at_once.discard(request.page.id)
        return BrowserResponse(200, HTML, b"<title>p</title>")

    async def four():
        async with BrowserSession(BrowserSettings(pages=2, quiet=0.1, scroll_steps=1)) as session:
            return await asyncio.gather(*(session.load(f"{ORIGIN}/{n}", resolve) for n in range(4)))

    captures = run(four())
    assert [c.status for c in captures] == [200] * 4
    assert most[0] == 2


OWNER = textwrap.dedent(
    """
    import asyncio, sys
    from harvester.browser.contract import BrowserResponse
    from harvester.browser.session import BrowserSession
    from harvester.browser.settings import BrowserSettings

    async def resolve(request):
        print("loading", flush=True)
        return BrowserResponse(200, [("Content-Type", "text/html")], b"<script>setInterval(() => 0, 10)</script>")

    async def main():
        async with BrowserSession(BrowserSettings(page_deadline=120)) as session:
            print(session.chromium.workdir, session.chromium.pid, flush=True)
            await session.load("http://portal.example/", resolve)

    asyncio.run(main())
    """
)


@pytest.mark.slow
def test_a_sigkilled_owner_leaves_no_chromium_process_and_no_profile(tmp_path):
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO
    )
    try:
        workdir, pid = owner.stdout.readline().split()
        assert owner.stdout.readline().strip() == "loading"  # a page is loading: renderers are up
        assert len(naming(workdir)) >= 3  # browser, zygote, renderer, crash handler ... all name it
        assert os.getpgid(int(pid)) == int(pid)
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    assert left_behind(workdir, 20) == []
    with pytest.raises(ProcessLookupError):
        os.killpg(int(pid), 0)


def test_page_info_is_json_of_what_happened():
    capture = run(load(Pages({"/": (200, HTML, b"<title>t</title><img src='/x.png'>")})))
    info = json.loads(json.dumps(capture.info()))
    assert info["url"] == ORIGIN + "/" and info["status"] == 200 and info["title"] == "t"
    outcomes = [(r["url"], r["outcome"]) for r in info["requests"]]
    assert outcomes[:2] == [(ORIGIN + "/", FULFILLED), (ORIGIN + "/x.png", REFUSED)]
