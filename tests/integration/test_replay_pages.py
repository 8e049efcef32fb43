"""Strata's own pages (home, collection, calendar, lookups) and its error pages, checked through
selectors on the parsed HTML, over the same real harvests as ``test_replay``."""

from __future__ import annotations

import lxml.html
import pytest
from click.testing import CliRunner

from cli import cli
from demo.site_server import Resource, SiteServer
from replay import create_app
from replay.config import REPLAY_SETTINGS
from strata.errors import ConfigError
from tests.conftest import harvest


def page(response):
    return lxml.html.fromstring(response.get_data())


def test_home_lists_collections_with_counts_and_latest_harvest(client, archives):
    r = client.get("/")
    assert r.status_code == 200
    doc = page(r)
    for name, archive in archives.items():
        row = doc.xpath(f'//tr[@data-collection="{name}"]')[0]
        cells = [c.text_content().strip() for c in row.xpath("td")]
        assert cells[1] == str(len(archive.captures()))
        assert cells[2] == str(len(archive.urls()))
        assert cells[3] == str(len(archive.snapshots))
        snapshot = row.xpath('.//a[@class="snapshot"]/@href')[0]
        assert snapshot == f"/{name}/{archive.snapshots[-1]}/{archive.url('/')}"
    assert "set-cookie" not in {k.lower() for k in r.headers.keys()}


def test_collection_page_sites_and_snapshots(client, archives):
    three = archives["three"]
    doc = page(client.get("/three/"))
    host = three.base_url.split("://", 1)[1].split(":")[0]  # sites are host names, as the harvester scopes them
    site = doc.xpath(f'//table[@id="sites"]//tr[@data-host="{host}"]')[0]
    cells = [c.text_content().strip() for c in site.xpath("td")]
    first, last = three.captures()[0]["timestamp"], three.captures()[-1]["timestamp"]
    assert cells[1].replace("-", "").replace(":", "").replace(" ", "").startswith(first)
    assert cells[2].replace("-", "").replace(":", "").replace(" ", "").startswith(last)
    assert cells[3] == "3"
    rows = doc.xpath('//table[@id="runs"]/tbody/tr')
    assert sorted(r.get("data-snapshot") for r in rows) == three.snapshots
    for row in rows:
        snapshot = row.get("data-snapshot")
        href = row.xpath('.//a[@class="snapshot"]/@href')[0]
        assert href == f"/three/{snapshot}/{three.url('/')}"
        replayed = client.get(href)
        assert replayed.status_code == 200
        assert replayed.headers["Memento-Datetime"]
        assert row.xpath("td")[3].text_content().strip().isdigit()  # figures: URLs fetched


def test_lookup_box_exact_and_prefix(client, archives):
    three = archives["three"]
    url = three.url("/about.html")
    r = client.get("/three/", query_string={"url": url, "match": "exact"})
    assert r.status_code == 303 and r.headers["Location"] == f"/three/*/{url}"
    r = client.get("/three/", query_string={"url": three.url("/news/"), "match": "prefix"})
    assert r.headers["Location"] == f"/three/*/{three.url('/news/')}*"
    listing = client.get(r.headers["Location"])
    urls = page(listing).xpath('//table[@id="urls"]//td[@class="url"]/a/text()')
    assert three.url("/news/article-0001.html") in urls and all(u.startswith(three.url("/news/")) for u in urls)


def test_calendar_marks_each_capture_with_kind_and_status(client, archives):
    three = archives["three"]
    for path in ("/about.html", "/news/article-0002.html", "/img/photo.png", "/news/article-0004.html"):
        url = three.url(path)
        captures = three.captures(url)
        doc = page(client.get(f"/three/*/{url}"))
        rows = doc.xpath('//tr[contains(@class, "capture")]')
        assert [(r.get("data-timestamp"), r.get("data-kind"), r.get("data-status")) for r in rows] == [
            (c["timestamp"], c["class"], str(c["status"])) for c in captures
        ]
        for row in rows:
            assert row.xpath('.//span[contains(@class, "kind")]')[0].text.strip()
            assert row.xpath('.//span[contains(@class, "st-")]/@class')[0].split()[-1] in (
                "st-2xx",
                "st-3xx",
                "st-4xx",
                "st-5xx",
            )
    # as of run 2, the capture in force is outlined
    url = three.url("/about.html")
    doc = page(client.get(f"/three/{three.snapshots[1]}*/{url}"))
    current = doc.xpath('//tr[contains(@class, "current")]')
    assert len(current) == 1 and current[0].get("data-timestamp") <= three.snapshots[1]


@pytest.mark.parametrize(
    ("address", "marker"),
    [
        ("/nosuch/", "known"),
        ("/nosuch/20240101000000/http://example.org/", "known"),
        ("/three/2024x/http://example.org/", None),
        ("/three/202401011200001/http://example.org/", None),
        ("/three/20241399000000/http://example.org/", None),
        ("/three/20240101000000/ftp://example.org/", None),
        ("/three/20240101000000/http://", None),
        ("/three/20240101000000/http://bad host/", None),
        ("/three/timemap/xml/http://example.org/", None),
        ("/three/20240101000000/http://never.example/", "not-archived"),
        ("/three/*/http://never.example/", "not-archived"),
        ("/three/*/http://never.example/*", None),
        ("/static/pywb/no-such-file.js", None),
        ("/three/%ff%fe/", None),
        ("/", None),
    ],
)
def test_error_pages_are_helpful_404s(client, address, marker):
    r = client.get(address)
    if address == "/":
        assert r.status_code == 200
        return
    assert r.status_code == 404, address
    body = r.get_data(as_text=True)
    assert "Traceback" not in body and "<h1" in body
    if marker:
        assert page(r).get_element_by_id(marker) is not None


def test_never_archived_url_lists_nearby_urls(client, archives):
    three = archives["three"]
    r = client.get(f"/three/{three.snapshots[0]}/{three.url('/news/article-9999.html')}")
    assert r.status_code == 404
    nearby = page(r).xpath('//ul[@id="nearby"]//a')
    assert nearby and all(a.text.startswith(three.url("/news/")) for a in nearby)
    assert all(a.get("href").startswith(f"/three/{three.snapshots[0]}/") for a in nearby)


def test_internal_failures_render_a_page_without_traceback(app, client, monkeypatch):
    engine = app.extensions["strata_replay"]["engine"]

    def broken(*args, **kwargs):
        raise RuntimeError("boom: secret internals")

    monkeypatch.setattr(engine, "replay", broken)
    r = client.get("/three/20240101000000/http://example.org/")
    assert r.status_code == 500
    body = r.get_data(as_text=True)
    assert "boom" not in body and "Traceback" not in body


def test_archived_headers_that_act_beyond_the_page_are_dropped(tmp_path):
    hostile = {
        "Refresh": "0; url=https://live.example/",
        "Clear-Site-Data": '"*"',
        "NEL": '{"report_to": "default", "max_age": 86400}',
        "Report-To": '{"group": "default", "max_age": 86400, "endpoints": [{"url": "https://live.example/r"}]}',
        "WWW-Authenticate": 'Basic realm="archived"',
        "Set-Cookie": "sid=archived; Path=/",
    }

    class Model:
        def resolve(self, version, path, headers):
            if path != "/":
                return None
            return Resource(
                200,
                (("Content-Type", "text/html; charset=utf-8"), *hostile.items()),
                b"<!DOCTYPE html><html><head><title>h</title></head><body><p>hostile</p></body></html>",
            )

    root = tmp_path / "collections"
    root.mkdir()
    with SiteServer(Model()) as site:
        summary = harvest(root, site, name="hostile")
        base = site.base_url
    client = create_app(root).test_client()
    for mod in ("", "id_", "mp_"):
        r = client.get(f"/hostile/{summary['snapshot']}{mod}/{base}/")
        assert r.status_code == 200 and b"hostile" in r.get_data()
        present = {k.lower() for k in r.headers.keys()}
        assert not present & {k.lower() for k in hostile}, (mod, present)
        assert r.headers.get("Memento-Datetime")


def test_replay_settings_are_documented_and_validated(tmp_path):
    for setting in REPLAY_SETTINGS:
        assert setting.help.strip(), setting.name
        assert setting.check(setting.default) == setting.default
    with pytest.raises(ConfigError, match="nearby_limit"):
        create_app(tmp_path, {"nearby_limit": "many"})
    with pytest.raises(ConfigError, match="unknown replay setting 'colour'"):
        create_app(tmp_path, {"colour": "red"})


def test_serve_refuses_a_missing_root(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--root", str(tmp_path / "nowhere"), "--port", "0"])
    assert result.exit_code != 0
    assert "no collections root" in str(result.exception or result.output)


def test_requests_that_escaped_rewriting_go_back_into_the_snapshot(client, archives):
    three = archives["three"]
    snapshot = three.snapshots[1]
    page = f"http://localhost/three/{snapshot}/{three.url('/news/')}"
    for escaped, target in [
        ("/static/site.css", "/static/site.css"),
        ("/img/logo.png?x=1", "/img/logo.png?x=1"),
        ("/about.html", "/about.html"),
    ]:
        r = client.get(escaped, headers={"Referer": page})
        assert r.status_code == 307, escaped
        assert r.headers["Location"] == f"/three/{snapshot}/{three.url(target)}"
    # not from a replayed page, or from elsewhere: the plain 404
    assert client.get("/static/site.css").status_code == 404
    assert (
        client.get("/static/site.css", headers={"Referer": "http://elsewhere/three/2024/http://x/"}).status_code == 404
    )
    assert client.get("/three", headers={"Referer": page}).status_code == 308


def test_a_broken_error_template_still_gives_a_plain_page(client, monkeypatch):
    from replay.views import errors

    def broken(*args, **kwargs):
        raise RuntimeError("template exploded")

    monkeypatch.setattr(errors, "render_template", broken)
    r = client.get("/nosuch/")
    assert r.status_code == 404 and b"<h1>Error 404</h1>" in r.get_data()
    assert b"exploded" not in r.get_data()
