"""The incremental strategies, URL by URL: index pages re-read, content pages when due, paging that
stops at old links, soft changes told apart (and not stored when the job says so), deletions, and
recheck intervals that follow each page's history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest

from demo.sample_site import SampleSite
from demo.site_server import Resource, SiteServer
from harvester.change import NoiseRules, content_digest, main_text, similarity
from harvester.schedule import change_rate, due_at, is_ordered_listing, is_pagination_link, next_interval
from index.collection import Collection
from index.storage.state import HarvestState
from tests.conftest import harvest

STRATEGY = dict(
    index_patterns=list(SampleSite.INDEX_PATTERNS),
    content_patterns=list(SampleSite.CONTENT_PATTERNS),
    noise_selectors=list(SampleSite.NOISE_SELECTORS),
    store_soft_changes=False,
    default_page_kind="content",
)


def state_of(root, name="sample"):
    return HarvestState(Collection.open(root, name).db_path)


def by_path(rows):
    out = {}
    for row in rows:
        out.setdefault(urlsplit(row["url"]).path or "/", []).append(row)
    return out


def test_main_text_ignores_noise_but_not_edits():
    rules = NoiseRules(SampleSite.NOISE_SELECTORS)
    soft_path = "/about.html"
    assert SampleSite.change_kind(1, 2, soft_path) == "soft"
    a = main_text(SampleSite.resource(1, soft_path).body, "utf-8", rules)
    b = main_text(SampleSite.resource(2, soft_path).body, "utf-8", rules)
    assert a == b and similarity(a, b) == 1.0
    bare = NoiseRules()
    assert main_text(SampleSite.resource(1, soft_path).body, "utf-8", bare) != main_text(
        SampleSite.resource(2, soft_path).body, "utf-8", bare
    )
    edited = "/news/article-0003.html"
    assert SampleSite.change_kind(1, 2, edited) == "changed"
    c = main_text(SampleSite.resource(1, edited).body, "utf-8", rules)
    d = main_text(SampleSite.resource(2, edited).body, "utf-8", rules)
    assert c != d and similarity(c, d) < 0.98


def test_a_small_real_edit_is_never_similarity_one():
    body = "国务院办公厅关于加强数据安全管理的通知。" * 60
    edited = body + "（2024年04月14日更新）"
    assert similarity(body, edited) < 1.0
    assert similarity(body, edited) < 0.98  # a dated correction stays a real change even at 0.98
    assert content_digest(body) != content_digest(edited)


def test_poisson_estimator_and_intervals():
    day = 86400.0
    assert change_rate(10, 0, day) == 0.0
    assert change_rate(10, 10, day) > change_rate(10, 5, day) > change_rate(10, 1, day) > 0
    # changes seen at every check: the estimator stays finite (unlike X/n which says "every day exactly")
    assert change_rate(10, 10, day) == pytest.approx(-__import__("math").log(0.5 / 10.5) / day)
    assert next_interval(0.0, day, 30 * day) == 30 * day
    assert next_interval(10 / day, day, 30 * day) == day
    assert day < next_interval(0.2 / day, day, 30 * day) < 30 * day
    now = datetime(2026, 1, 31, tzinfo=UTC)
    base = {"first_seen": "2026-01-01T00:00:00Z", "last_checked": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "checks": 31}
    often, _ = due_at({**base, "changes": 30}, 3600, 90 * day)
    never, _ = due_at({**base, "changes": 0}, 3600, 90 * day)
    assert often < never
    assert now + timedelta(days=81) <= never <= now + timedelta(days=90)  # the longest interval, spread by 10%


def test_listing_order_and_pagination_links():
    assert is_ordered_listing(
        ["http://h/news/article-0014.html", "http://h/news/article-0013.html", "http://h/news/article-0012.html"]
    )
    assert not is_ordered_listing(["http://h/news/article-0001.html", "http://h/news/article-0013.html"])
    assert is_ordered_listing(["http://h/2024/05/02/a.html", "http://h/2024/05/01/b.html", "http://h/2023/12/31/c"])
    assert is_pagination_link("http://h/news/", "http://h/news/page/2.html")
    assert is_pagination_link("http://h/news/page/2.html", "http://h/news/page/3.html")
    assert not is_pagination_link("http://h/", "http://h/news/")


@pytest.fixture
def three_runs(site, root):
    """v1 full; v2 with the index/content strategy (content pages not due for an hour, vanished pages
    recorded); v3 rechecking everything (recheck_all), soft changes not stored."""
    run1 = harvest(root, site, **STRATEGY, min_interval="1h", check_deleted_links=True)
    site.version = 2
    run2 = harvest(root, site, **STRATEGY, min_interval="1h", check_deleted_links=True)
    site.version = 3
    run3 = harvest(root, site, **STRATEGY, recheck_all=True)
    return run1, run2, run3


def test_run2_reads_index_pages_follows_new_links_and_skips_content_not_due(three_runs, root):
    run1, run2, _ = three_runs
    with state_of(root) as state:
        caps = by_path(state.captures(run_id=run2["run_id"]))
        checks = by_path(state.checks(run2["run_id"]))
        known_after_run1 = {urlsplit(c["url"]).path for c in state.captures(run_id=run1["run_id"])}
    v2 = SampleSite.paths(2, obey_robots=True)
    for path in sorted(v2 | known_after_run1):
        kind = SampleSite.page_kind(path)
        outcome = [c["outcome"] for c in checks.get(path, [])]
        if path not in known_after_run1:
            assert path in caps, f"new URL {path} not captured"
            assert caps[path][0]["class"] == "new", path
        elif kind == "content":
            assert path not in caps, f"content page {path} fetched although not due"
            assert "not_due" in outcome or "deleted" in outcome, (path, outcome)
        elif kind == "index":
            assert path in caps or "not_followed" in outcome or "soft" in outcome, (path, outcome)
    assert "/" in caps and "/news/" in caps
    reasons = [c["reason"] for rows in checks.values() for c in rows if c["outcome"] == "not_due"]
    assert reasons and all(r.startswith("not due until") for r in reasons)
    assert run2["skipped"] >= len(reasons)


@pytest.mark.slow
def test_paging_stops_at_links_older_than_the_last_run(three_runs, root):
    _, run2, _ = three_runs
    with state_of(root) as state:
        fetched = {urlsplit(c["url"]).path for c in state.captures(run_id=run2["run_id"])}
        not_followed = {urlsplit(c["url"]).path for c in state.checks(run2["run_id"]) if c["outcome"] == "not_followed"}
    listing_pages = {p for p in SampleSite.index_paths(2) if p.startswith("/news/page/")}
    assert listing_pages, "the sample site has paginated listings"
    # the last listing page holds only old articles: it is not read
    last_page = max(listing_pages, key=lambda p: int(p.rsplit("/", 1)[1].split(".")[0]))
    assert last_page in not_followed and last_page not in fetched


@pytest.mark.slow
def test_vanished_and_deleted_pages_are_recorded_with_evidence(three_runs, root):
    _, run2, run3 = three_runs
    with state_of(root) as state:
        checks = by_path(state.checks(run2["run_id"]))
        deleted_v2 = {p for p in SampleSite.all_paths() if SampleSite.change_kind(1, 2, p) == "deleted"}
        for path in deleted_v2:
            evidence = [c for c in checks.get(path, []) if c["outcome"] == "deleted"]
            assert evidence and "no longer linked from any index page" in evidence[0]["reason"], path
        assert run2["deleted"] == len(deleted_v2)
        caps3 = by_path(state.captures(run_id=run3["run_id"]))
    deleted_v3 = {p for p in SampleSite.all_paths() if SampleSite.change_kind(2, 3, p) == "deleted"}
    for path in deleted_v3:
        assert caps3[path][0]["class"] == "deleted" and caps3[path][0]["status"] in (404, 410), path


@pytest.mark.slow
def test_run3_classifies_every_url_and_does_not_store_soft_changes(three_runs, root):
    run1, run2, run3 = three_runs
    with state_of(root) as state:
        caps2 = by_path(state.captures(run_id=run2["run_id"]))
        checks2 = by_path(state.checks(run2["run_id"]))
        caps3 = by_path(state.captures(run_id=run3["run_id"]))
        checks3 = by_path(state.checks(run3["run_id"]))
        known = {urlsplit(u["url"]).path for u in state.known_urls()}
    soft_seen = 0
    for path in sorted(p for p in known if SampleSite.robots_allowed(p)):
        stored = 2 if path in caps2 else 1  # the version whose payload the collection holds
        if path in checks2 and any(c["outcome"] == "soft" for c in checks2[path]):
            stored = 1
        kind = SampleSite.change_kind(stored, 3, path)
        if kind == "soft" and SampleSite.page_kind(path):
            soft_seen += 1
            assert path not in caps3, f"{path}: soft change stored"
            assert [c["outcome"] for c in checks3[path]] == ["soft"], path
            continue
        assert path in caps3, f"{path} ({kind}) not rechecked with recheck_all"
        cap = caps3[path][0]
        if kind == "unchanged":
            redirect = 300 <= (cap["status"] or 0) < 400  # redirects are always written in full
            assert cap["record_type"] == "revisit" or cap["payload_length"] == 0 or redirect, path
            three_xx = redirect and cap["status"] != 304
            assert cap["class"] == "redirect" if three_xx else cap["class"] in ("unchanged", "not_modified"), path
        elif kind in ("changed", "soft"):  # soft on a non-HTML resource is a real change
            assert (cap["record_type"], cap["class"]) == ("response", "changed"), (path, kind)
        elif kind == "deleted" or (kind == "absent" and cap["status"] in (404, 410)):
            assert cap["status"] in (404, 410), path
        elif kind == "new":
            assert cap["class"] == "new", path
    assert soft_seen >= 2
    assert run3["soft"] == soft_seen


class TwoPages:
    """/ links /often.html (changes every version) and /never.html (never changes)."""

    def resolve(self, version, path, headers=None):
        html = (("Content-Type", "text/html; charset=utf-8"),)
        if path == "/":
            return Resource(200, html, b'<a href="/often.html">o</a> <a href="/never.html">n</a>')
        if path == "/often.html":
            return Resource(200, html, f"<p>edition {version}: {'news ' * version}</p>".encode())
        if path == "/never.html":
            return Resource(200, html, b"<p>a page that never changes</p>")
        return None


@pytest.mark.slow
def test_intervals_adapt_to_each_pages_history(root):
    job = dict(index_patterns=[r"^/$"], content_patterns=[r"\.html$"], min_interval=0, max_interval="30d")
    with SiteServer(TwoPages(), version=1) as server:
        for version in (1, 2):
            server.version = version
            harvest(root, server, name="two", **job)
        with state_of(root, "two") as state:
            often = state.url(server.base_url + "/often.html")
            never = state.url(server.base_url + "/never.html")
        assert (often["checks"], often["changes"]) == (2, 1)
        assert (never["checks"], never["changes"]) == (2, 0)
        due_often, rate_often = due_at(often, 0, 30 * 86400)
        due_never, rate_never = due_at(never, 0, 30 * 86400)
        assert rate_often > rate_never == 0
        assert due_often < due_never
        server.version = 3
        run3 = harvest(root, server, name="two", **job)
        with state_of(root, "two") as state:
            skipped = {urlsplit(c["url"]).path: c["reason"] for c in state.checks(run3["run_id"])}
    assert "/never.html" in skipped and skipped["/never.html"].startswith("not due until")


def test_a_single_check_uses_the_pages_age_and_spreads_due_times():
    day = 86400.0
    checked = "2026-01-01T00:00:00Z"
    old = {
        "url": "http://h/zhengce/2020-03/15/content_1.htm",
        "last_checked": checked,
        "checks": 1,
        "changes": 0,
        "first_seen": checked,
    }
    fresh = {**old, "url": "http://h/zhengce/2025-12-28/content_2.htm"}
    undated = {**old, "url": "http://h/about.html"}
    with_header = {**undated, "last_modified": "Mon, 01 Jan 2024 00:00:00 GMT"}
    due = {
        name: due_at(row, 7 * day, 90 * day)[0]
        for name, row in (("old", old), ("fresh", fresh), ("undated", undated), ("header", with_header))
    }
    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert due["old"] - start >= timedelta(days=80)  # years old: near the longest interval
    assert due["header"] - start >= timedelta(days=80)
    assert timedelta(days=7) <= due["fresh"] - start <= timedelta(days=8.5)
    assert timedelta(days=7) <= due["undated"] - start <= timedelta(days=8.5)
    spread = {due_at({**old, "url": f"http://h/a/2020-01/01/content_{n}.htm"}, 7 * day, 90 * day)[0] for n in range(50)}
    assert len(spread) > 40 and max(spread) - min(spread) > timedelta(days=5)


class NoisyPages:
    """/ links /soft.html (only a script's counter moves) and /edited.html (its text changes)."""

    def resolve(self, version, path, headers=None):
        html = (("Content-Type", "text/html; charset=utf-8"),)
        if path == "/":
            return Resource(200, html, b'<a href="/soft.html">s</a> <a href="/edited.html">e</a>')
        if path == "/soft.html":
            return Resource(200, html, f"<p>same words</p><script>var hits = {version}</script>".encode())
        if path == "/edited.html":
            return Resource(200, html, f"<p>edition {version}</p>".encode())
        return None


def test_a_page_is_fingerprinted_when_first_parsed_so_a_change_is_told_without_reading_back(root, monkeypatch):
    from harvester.recorder import Recorder

    job = dict(store_soft_changes=False, default_page_kind="content")
    with SiteServer(NoisyPages(), version=1) as server:
        harvest(root, server, name="noisy", **job)
        with state_of(root, "noisy") as state:
            for path in ("/", "/soft.html", "/edited.html"):
                body = NoisyPages().resolve(1, path).body
                fingerprint = state.url(server.base_url + path)["fingerprint"]
                assert fingerprint == content_digest(main_text(body, "utf-8", NoiseRules())), path
        read_back = []
        stored_body = Recorder.stored_body
        monkeypatch.setattr(Recorder, "stored_body", lambda self, cap: read_back.append(cap) or stored_body(self, cap))
        server.version = 2
        run2 = harvest(root, server, name="noisy", mode="incremental", **job)
        with state_of(root, "noisy") as state:
            checks = {urlsplit(c["url"]).path: c["outcome"] for c in state.checks(run2["run_id"])}
            caps = {urlsplit(c["url"]).path: c["class"] for c in state.captures(run_id=run2["run_id"])}
    assert checks.get("/soft.html") == "soft"
    assert caps.get("/edited.html") == "changed"
    assert read_back == []  # both told by the fingerprint kept from run 1
