"""A WACZ exported by Strata, opened by another replayer: ReplayWeb.page (npm ``replaywebpage``,
its prebuilt ``ui.js`` and ``sw.js``, installed by ``.ci/run`` from the committed package.json),
served on 127.0.0.1 and run in headless Chromium. Its page list shows every page of the package
with its title, and its search finds a page by a word of its text alone."""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import threading
import time

import pytest
from click.testing import CliRunner

from cli import cli
from demo.history import page_key
from index.fulltext.rebuild import rebuild
from tests.conftest import REPO
from tests.support.chromium import launched
from tests.support.history_fixtures import KNOWN_KINDS, SITE, write_known

pytestmark = pytest.mark.browser
PACKAGE = REPO / "node_modules" / "replaywebpage"
ARTIFACTS = REPO / "tests" / "artifacts"


@pytest.fixture
def served(tmp_path):
    """The ReplayWeb.page app and an exported package, on a static server of its own."""
    if not (PACKAGE / "ui.js").is_file():
        pytest.fail("node_modules/replaywebpage is missing: run npm ci (.ci/run does)")
    root = tmp_path / "collections"
    root.mkdir()
    rebuild(write_known(root))
    site = tmp_path / "site"
    (site / "replay").mkdir(parents=True)
    for name in ("index.html", "ui.js", "sw.js"):
        shutil.copy(PACKAGE / name, site / name)
    shutil.copy(PACKAGE / "sw.js", site / "replay" / "sw.js")
    out = CliRunner().invoke(cli, ["export", "wacz", "known", "--root", str(root), "--out", str(site / "known.wacz")])
    assert out.exit_code == 0, out.output

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(10)


TITLE = re.compile(r"^(home|[a-z]+\.html) v\d+$")
# Every text of the app, shadow roots included: its page entries are several shadow roots deep
TEXTS = """() => { const out = [];
  function walk(node) { for (const c of node.childNodes || []) {
    if (c.nodeType === 3 && c.parentNode.tagName === 'KEYWORD-MARK') out.push(c.textContent.trim());
    if (c.nodeType === 1) { if (c.shadowRoot) walk(c.shadowRoot); walk(c); } } }
  walk(document); return out; }"""


def _rows(tab) -> list[str]:
    """The titles in the app's page list, in order."""
    return [t for t in tab.evaluate(TEXTS) if TITLE.match(t)]


def test_replaywebpage_lists_every_page_and_finds_one_by_a_word(served):
    pages = sorted((url, ts) for (url, ts), kind in KNOWN_KINDS.items() if kind != "deleted")
    with launched() as browser:
        tab = browser.new_page(viewport={"width": 1280, "height": 2400})
        tab.goto(f"{served}/?source={served}/known.wacz", wait_until="load")
        total = tab.get_by_text(f"{len(pages)} pages")
        total.wait_for(timeout=60_000)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(_rows(tab)) < len(pages):
            tab.wait_for_timeout(250)
        titles = _rows(tab)
        assert len(titles) == len(pages)
        assert titles.count("home v2") == 2  # the changed home page, then its revisit
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(ARTIFACTS / "replaywebpage-pages.png"))
        # a word of the text only (not in any title or URL): the second version of news/b.html
        word = page_key(SITE + "/news/b.html", 2)
        tab.get_by_placeholder("Search by Page URL, Title, or Text").fill(word)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(_rows(tab)) != 1:
            tab.wait_for_timeout(250)
        assert _rows(tab) == ["b.html v2"]
        tab.screenshot(path=str(ARTIFACTS / "replaywebpage-search.png"))
