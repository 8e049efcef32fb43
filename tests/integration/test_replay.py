"""Snapshot replay over real HTTP: ``strata serve`` on real harvests of the sample site (2 and 3 runs).

For every URL and every run, the archived bytes (``id_``) are the version the site served in that
run, and no response carries a capture from a later run. The live site is stopped before any of
this (``replay_fixtures``), so nothing here can come from it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import lxml.html
import pytest
from warcio.timeutils import http_date_to_timestamp, timestamp_to_http_date

from demo.sample_site import MARKERS, SampleSite
from demo.site_server import _NOT_FOUND

COLLECTIONS = ("two", "three")


@pytest.fixture(scope="module")
def http(strata_server):
    with httpx.Client(base_url=strata_server.base_url, timeout=10.0) as c:
        yield c


def latest_at_or_before(captures: list[dict], ts: str) -> dict | None:
    before = [c for c in captures if c["timestamp"] <= ts]
    return before[-1] if before else None


def memento_ts(r: httpx.Response) -> str | None:
    value = r.headers.get("Memento-Datetime")
    return http_date_to_timestamp(value) if value else None


@pytest.mark.parametrize("name", COLLECTIONS)
def test_raw_bytes_are_the_version_served_in_each_run(archives, http, name):
    archive = archives[name]
    mismatches, checked = [], 0
    for snapshot in archive.snapshots:
        version = archive.version_at(snapshot)
        for url in archive.urls():
            path = archive.path(url)
            expected = SampleSite.resource(version, path)
            r = http.get(f"/{name}/{snapshot}id_/{url}")
            checked += 1
            got = (r.status_code, r.content)
            if expected is None:
                captured = latest_at_or_before(archive.captures(url), snapshot)
                want = (404, _NOT_FOUND.body) if captured else (404, None)
                ok = r.status_code == 404 and (want[1] is None or r.content == want[1])
            else:
                want = (expected.status, expected.body)
                ok = got == want
            if not ok:
                mismatches.append((version, path, got[0], want[0]))
            stamp = memento_ts(r)
            if stamp is not None and stamp > snapshot:
                mismatches.append((version, path, "later capture", stamp))
    assert checked == len(archive.snapshots) * len(archive.urls())
    assert not mismatches


def test_revisits_not_modified_and_unfetched_urls_are_covered(archives):
    """The byte test above meets every kind of capture the issue names."""
    three = archives["three"]
    rows = three.captures()
    kinds = {r["class"] for r in rows}
    assert {"new", "changed", "unchanged", "not_modified", "deleted"} <= kinds
    assert any(r["record_type"] == "revisit" for r in rows)
    # article 15 exists only in v3: at runs 1 and 2 it was never fetched and must not be served
    assert SampleSite.change_kind(2, 3, "/news/article-0015.html") == "new"


@pytest.mark.parametrize("name", COLLECTIONS)
def test_rewritten_pages_show_the_capture_as_of_the_snapshot(archives, http, name):
    archive = archives[name]
    problems = []
    for snapshot in archive.snapshots:
        version = archive.version_at(snapshot)
        for url in archive.urls():
            path = archive.path(url)
            captures = archive.captures(url)
            current = latest_at_or_before(captures, snapshot)
            r = http.get(f"/{name}/{snapshot}/{url}", follow_redirects=False)
            stamp = memento_ts(r)
            if current is None:
                # never captured at or before: the earliest later capture, announced by the banner
                if r.status_code == 200 and "text/html" in r.headers.get("content-type", "") and path in MARKERS:
                    banner = banner_of(r.text)
                    if banner is None or banner.get("data-fallback") != "later":
                        problems.append((version, path, "no fallback notice"))
                continue
            if current["class"] == "deleted" or (current["status"] in (404, 410) and r.status_code == 404):
                if r.status_code != 404:
                    problems.append((version, path, r.status_code, "deleted page expected"))
                continue
            if stamp is None or stamp > snapshot:
                problems.append((version, path, "memento", stamp))
            if path in MARKERS and r.status_code == 200 and SampleSite.resource(version, path):
                if MARKERS[path] not in r.text:
                    problems.append((version, path, "marker missing"))
                banner = banner_of(r.text)
                if banner is None or banner.get("data-capture") > snapshot or banner.get("data-fallback") != "as-of":
                    problems.append((version, path, "banner", banner and dict(banner.attrib)))
    assert not problems


def banner_of(html: str):
    doc = lxml.html.fromstring(html)
    template = doc.xpath('//template[@id="strata-banner-content"]')
    if not template:
        return None
    inner = lxml.html.fromstring(lxml.html.tostring(template[0]))
    found = inner.xpath('//*[@id="strata-banner"]')
    return found[0] if found else None


def test_later_fallback_is_announced(archives, http):
    three = archives["three"]
    url = three.url("/news/article-0015.html")  # first captured in run 3
    r = http.get(f"/three/{three.snapshots[0]}/{url}")
    assert r.status_code == 200
    banner = banner_of(r.text)
    assert banner.get("data-fallback") == "later"
    assert "Nothing was archived at or before" in banner.text_content()
    assert memento_ts(r) > three.snapshots[1]
    # the raw bytes never fall back: a 404 that points at the first capture
    raw = http.get(f"/three/{three.snapshots[0]}id_/{url}")
    assert raw.status_code == 404
    first = lxml.html.fromstring(raw.text).get_element_by_id("first-later")
    assert first.get("href").startswith(f"/three/{memento_ts(r)}/")


def test_links_and_embeds_keep_the_requested_timestamp(archives, http):
    three = archives["three"]
    snapshot = three.snapshots[1]
    r = http.get(f"/three/{snapshot}/{three.url('/')}")
    doc = lxml.html.fromstring(r.content)
    links = "//a/@href | //img/@src | //link/@href | //script/@src"
    page = "[not(ancestor::template)]"  # the banner's own links go to other captures on purpose
    refs = [v for v in doc.xpath(links.replace("/@", page + "/@")) if three.base_url in v]
    assert refs
    for ref in refs:
        assert f"/three/{snapshot}" in ref, ref


def test_partial_timestamp_means_the_end_of_its_period(archives, http):
    three = archives["three"]
    year = three.snapshots[-1][:4]
    r = http.get(f"/three/{year}id_/{three.url('/')}")
    assert memento_ts(r) == latest_at_or_before(three.captures(three.url("/")), three.snapshots[-1])["timestamp"]


@pytest.mark.parametrize("name", COLLECTIONS)
def test_redirects_replay_as_redirects(archives, http, name):
    archive = archives[name]
    for snapshot in archive.snapshots:
        for path, (status, target) in {"/old-about": (301, "/about.html"), "/go": (302, "/old-about")}.items():
            url = archive.url(path)
            r = http.get(f"/{name}/{snapshot}/{url}", follow_redirects=False)
            assert r.status_code == status, (snapshot, path)
            assert r.headers["location"].endswith(f"/{name}/{snapshot}/{archive.url(target)}")
            raw = http.get(f"/{name}/{snapshot}id_/{url}", follow_redirects=False)
            assert (raw.status_code, raw.headers["location"]) == (status, target)
    # followed through the archive, /go ends at the about page of that snapshot
    final = http.get(f"/{name}/{archive.snapshots[-1]}/{archive.url('/go')}", follow_redirects=True)
    assert final.status_code == 200 and MARKERS["/about.html"] in final.text
    assert urlsplit(str(final.url)).path.startswith(f"/{name}/{archive.snapshots[-1]}/")


def test_memento_headers(archives, http):
    three = archives["three"]
    url = three.url("/about.html")
    captures = three.captures(url)
    first = captures[0]["timestamp"]
    r = http.get(f"/three/{first}/{url}")
    assert memento_ts(r) == first
    link = r.headers["link"]
    for rel in ('rel="original"', 'rel="timegate"', 'rel="timemap"', 'rel="memento"'):
        assert rel in link
    assert f"<{url}>" in link

    # TimeGate: Accept-Datetime between run 1 and run 2 selects run 1's capture (as of, not closest)
    between = three.snapshots[0]
    gate = http.get(f"/three/{url}", headers={"Accept-Datetime": timestamp_to_http_date(between)})
    assert gate.status_code == 200
    assert memento_ts(gate) == latest_at_or_before(captures, between)["timestamp"]
    assert "accept-datetime" in gate.headers.get("vary", "").lower()
    latest = http.get(f"/three/{url}")
    assert memento_ts(latest) == captures[-1]["timestamp"]

    # TimeMap: every capture, in link format
    tm = http.get(f"/three/timemap/link/{url}")
    assert tm.status_code == 200 and tm.headers["content-type"].startswith("application/link-format")
    assert tm.text.count('rel="memento"') + tm.text.count('rel="first memento"') + tm.text.count(
        'rel="last memento"'
    ) + tm.text.count('rel="first last memento"') >= len(captures)
    for cap in captures:
        assert f"/three/{cap['timestamp']}/{url}" in tm.text


@pytest.mark.parametrize(
    ("name", "path", "deleted_in", "status"),
    [
        ("three", "/news/article-0002.html", 3, 404),
        ("three", "/news/article-0004.html", 2, 404),
        ("three", "/news/article-0007.html", 2, 410),
        ("two", "/news/article-0004.html", 2, 404),
    ],
)
def test_deleted_pages(archives, http, name, path, deleted_in, status):
    archive = archives[name]
    url = archive.url(path)
    captures = archive.captures(url)
    gone = next(c for c in captures if c["class"] == "deleted")
    last_ok = latest_at_or_before([c for c in captures if c["status"] in (200, 304)], gone["timestamp"])
    for snapshot in archive.snapshots:
        r = http.get(f"/{name}/{snapshot}/{url}")
        if archive.version_at(snapshot) < deleted_in:
            assert r.status_code == 200 and MARKERS[path] in r.text
            continue
        assert r.status_code == 404
        notice = lxml.html.fromstring(r.text).get_element_by_id("deleted")
        text = " ".join(notice.text_content().split())
        assert "removed from the live site before" in text and f"answered {status}" in text
        link = notice.get_element_by_id("last-archived")
        assert link.get("href") == f"/{name}/{last_ok['timestamp']}/{url}"
        assert http.get(link.get("href")).status_code == 200
        assert "Set-Cookie" not in r.headers


@pytest.mark.slow
def test_unmodified_wayback_serves_the_same_bytes_at_each_capture(archives, http, wayback_server):
    # one connection per request: pywb's server stalls ~40 ms per response on a kept-alive one
    with httpx.Client(base_url=wayback_server.base_url, timeout=20.0, headers={"Connection": "close"}) as pywb:
        compared = 0
        for name in COLLECTIONS:
            for line in archives[name].cdx():
                if line["url"].startswith("urn:strata:run:"):
                    # a run's report: indexed as pywb indexes it, never replayed by Strata (404)
                    assert http.get(f"/{name}/{line['timestamp']}id_/{line['url']}").status_code == 404
                    compared += 1
                    continue
                address = f"/{name}/{line['timestamp']}id_/{line['url']}"
                ours = http.get(address, follow_redirects=False)
                theirs = pywb.get(address, follow_redirects=False)
                assert ours.status_code == theirs.status_code, address
                assert memento_ts(ours) == memento_ts(theirs) == line["timestamp"], address
                if line.get("mime") == "warc/revisit" and 300 <= ours.status_code < 400:
                    # pywb sends a revisited redirect with an empty body; Strata sends the archived one
                    assert theirs.content == b"" and ours.headers["location"] == theirs.headers["location"]
                else:
                    assert ours.content == theirs.content, address
                compared += 1
    assert compared == sum(len(archives[n].cdx()) for n in COLLECTIONS)


def test_isolation_headers_on_replay_responses(archives, http):
    three = archives["three"]
    for mod in ("", "id_", "im_"):
        r = http.get(f"/three/{three.snapshots[-1]}{mod}/{three.url('/')}")
        assert "set-cookie" not in r.headers
    raw = http.get(f"/three/{three.snapshots[-1]}id_/{three.url('/')}")
    assert raw.headers["content-security-policy"].startswith("sandbox")
    page = http.get(f"/three/{three.snapshots[-1]}/{three.url('/')}")
    assert "default-src" in page.headers["content-security-policy"]
    image = http.get(f"/three/{three.snapshots[-1]}id_/{three.url('/img/photo.png')}")
    # archived bytes of any type are sandboxed (an <img> ignores its own response's policy)
    assert image.headers["content-security-policy"].startswith("sandbox;")
    assert image.headers["x-content-type-options"] == "nosniff"
