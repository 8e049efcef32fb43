"""Search export: every hit of a query with more than 1,000 hits, the same set as paging through
``strata search --json``, and the ground truth (the documents written with the word); the search
page's download link, streamed and bounded."""

from __future__ import annotations

import csv
import io
import json
import random
import subprocess

import pytest
from click.testing import CliRunner

from cli import cli
from index.collection import Collection
from index.fulltext import rebuild as fulltext
from index.fulltext.documents import Payload
from replay import create_app
from strata.errors import ConfigError
from tests.conftest import VENV_BIN

WORD = "quokka"
FILLER = "harbour lantern meadow copper violet orchard signal granite willow ember".split()


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """1,400 documents on 1,300 URLs (100 URLs hold two versions); 1,150 URLs say the word."""
    root = tmp_path_factory.mktemp("export") / "collections"
    coll = Collection.open(root, "many", create=True)
    rng = random.Random(11)
    truth: dict[str, set[str]] = {}
    docs = []
    for n in range(1400):
        url_n = n if n < 1300 else n - 1300  # the last 100 are second versions of the first 100
        url = f"http://www{url_n % 7}.example.org/p/{url_n}.html"
        says = url_n % 26 not in (0, 1, 2, 3)  # 1,150 of 1,300 URLs
        words = rng.choices(FILLER, k=60) + ([WORD] if says else [])
        rng.shuffle(words)
        day = 1 + (n % 28)
        stamps = {f"2024{1 + n % 12:02d}{day:02d}120000", f"2025{1 + n % 12:02d}{day:02d}080000"}
        if says:
            truth.setdefault(url, set()).update(stamps)
        payload = Payload(
            mime="text/html", status=200, size=500, title=f"Page {url_n}", text=" ".join(words), lang="en"
        )
        docs.append((url, f"sha1:{n:032d}", payload, stamps))
    fulltext.create(coll, docs)
    return root, truth


def _cli(root, *args):
    result = CliRunner().invoke(cli, ["search", "many", WORD, "--root", str(root), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_export_is_every_hit_and_paging_agrees(many):
    root, truth = many
    assert len(truth) > 1000
    exported = [json.loads(line) for line in _cli(root, "--all", "--format", "jsonl").splitlines()]
    assert {h["url"] for h in exported} == set(truth) and len(exported) == len(truth)
    for hit in exported[:50]:
        assert hit["captures"] == sorted(truth[hit["url"]])
        assert (hit["first"], hit["last"]) == (hit["captures"][0], hit["captures"][-1])
        assert hit["title"].startswith("Page ") and hit["type"] == "html" and hit["host"] in hit["url"]
        assert hit["replay"] == f"/many/{hit['last']}/{hit['url']}"
    first = json.loads(_cli(root, "--json", "--per-page", "100"))
    assert first["total"] == len(truth) and first["pages"] == -(-len(truth) // 100) and first["page"] == 1
    paged = list(first["hits"])
    for page in range(2, first["pages"] + 1):
        answer = json.loads(_cli(root, "--json", "--per-page", "100", "--page", str(page)))
        assert answer["page"] == page and answer["total"] == first["total"]
        paged += answer["hits"]
    assert [h["url"] for h in paged] == [h["url"] for h in exported]  # the same hits, in the same order

    rows = list(csv.DictReader(io.StringIO(_cli(root, "--all", "--format", "csv"))))
    assert [r["url"] for r in rows] == [h["url"] for h in exported]
    assert rows[0]["captures"].split(" ") == exported[0]["captures"]


def test_export_keeps_only_captures_in_the_date_range(many):
    root, truth = many
    hits = [json.loads(line) for line in _cli(root, "--all", "--from", "2025", "--to", "2025-06").splitlines()]
    expected = {u: sorted(s for s in stamps if "20250101" <= s[:8] <= "20250630") for u, stamps in truth.items()}
    expected = {u: s for u, s in expected.items() if s}
    assert {h["url"]: h["captures"] for h in hits} == expected


def test_cli_export_gives_absolute_addresses_under_the_archive_url(many, monkeypatch):
    """``--archive-url`` (or ``STRATA_ARCHIVE_URL``): the file leaves the archive, so its replay
    addresses are absolute, as the web export's are; a bad address is refused with a message."""
    root, _ = many
    hits = [
        json.loads(line)
        for line in _cli(root, "--all", "--archive-url", "https://archive.example.org/wb/").splitlines()
    ]
    assert hits and all(h["replay"] == f"https://archive.example.org/wb/many/{h['last']}/{h['url']}" for h in hits)
    rows = list(
        csv.DictReader(io.StringIO(_cli(root, "--all", "--format", "csv", "--archive-url", "http://a.test:8080")))
    )
    assert rows[0]["replay"].startswith("http://a.test:8080/many/")
    monkeypatch.setenv("STRATA_ARCHIVE_URL", "https://env.example.org")
    page = json.loads(_cli(root, "--json", "--per-page", "5"))
    assert all(h["replay"].startswith("https://env.example.org/many/") for h in page["hits"])
    for bad in ("ftp://x.test", "archive.example.org", "https://x.test/?q=1", "https://x.test:port"):
        result = CliRunner().invoke(cli, ["search", "many", WORD, "--root", str(root), "--all", "--archive-url", bad])
        assert isinstance(result.exception, ConfigError) and "--archive-url" in result.exception.message, bad
    ran = subprocess.run(  # the installed command: the message, a non-zero exit, no traceback
        [str(VENV_BIN / "strata"), "search", "many", WORD, "--root", str(root), "--archive-url", "x.test", "--all"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode != 0 and "--archive-url 'x.test'" in ran.stderr and "Traceback" not in ran.stderr


def test_download_link_streams_and_says_when_cut(many):
    root, truth = many
    client = create_app(root, {"search_export_limit": 500}).test_client()
    page = client.get("/search", query_string={"q": WORD, "site": "www3.example.org"})
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "Download these results" in html and "/search/export.csv?q=quokka&amp;site=www3.example.org" in html
    in_site = {u for u in truth if "//www3." in u}
    response = client.get("/search/export.jsonl", query_string={"q": WORD, "site": "www3.example.org"})
    assert response.is_streamed and response.headers["Content-Disposition"].endswith('.jsonl"')
    assert {json.loads(line)["url"] for line in response.get_data(as_text=True).splitlines()} == in_site
    cut = client.get("/search/export.jsonl", query_string={"q": WORD})
    lines = [json.loads(line) for line in cut.get_data(as_text=True).splitlines()]
    assert len(lines) == 501 and lines[-1] == {"truncated": True, "shown": 500, "total": len(truth)}
    assert "500 of" in cut.headers["X-Strata-Export-Truncated"]
    cut_csv = client.get("/search/export.csv", query_string={"q": WORD}).get_data(as_text=True).splitlines()
    assert len(cut_csv) == 502 and cut_csv[-1].startswith("# truncated: the first 500 of")
    assert client.get("/search/export.jsonl", query_string={"q": "a AND"}).status_code == 400
    assert client.get("/search/export.xml", query_string={"q": WORD}).status_code == 404
    assert client.get("/search/export.csv").status_code == 400


@pytest.mark.slow
@pytest.mark.browser
def test_browser_downloads_the_results_at_1280_and_390(many, tmp_path):
    from tests.conftest import REPO
    from tests.support.chromium import launched
    from tests.support.replay_fixtures import StrataServer

    root, truth = many
    artifacts = REPO / "tests" / "artifacts"
    artifacts.mkdir(exist_ok=True)
    server = StrataServer(root, tmp_path / "serve.log")
    try:
        with launched() as browser:
            for width in (1280, 390):
                page = browser.new_page(viewport={"width": width, "height": 900}, accept_downloads=True)
                page.goto(f"{server.base_url}/search?q={WORD}&site=www2.example.org")
                page.wait_for_selector("#download")
                link = page.locator("#download a", has_text="JSON Lines")
                assert link.is_visible()
                page.screenshot(path=str(artifacts / f"search-download-{width}.png"))
                with page.expect_download() as info:
                    link.click()
                path = info.value.path()
                got = {json.loads(line)["url"] for line in open(path, encoding="utf-8")}
                assert got == {u for u in truth if "//www2." in u}
                page.close()
    finally:
        server.stop()
