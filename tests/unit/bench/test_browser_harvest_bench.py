"""The pure helpers of ``bench/browser_harvest_bench.py``: revisit profiles counted from a real WARC,
and the second run's check against the site's truth."""

from __future__ import annotations

import hashlib
import io

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from bench.browser_harvest_bench import (
    IDENTICAL,
    NOT_MODIFIED,
    record_kind,
    same_resources,
    scan_records,
    second_run_check,
)
from demo.script_site import ScriptSite


def _write(path, records) -> None:
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for rtype, url, profile in records:
            if rtype == "response":
                http = StatusAndHeaders("200 OK", [("Content-Type", "text/plain")], protocol="HTTP/1.1")
                record = writer.create_warc_record(url, "response", payload=io.BytesIO(b"body"), http_headers=http)
            elif rtype == "revisit":
                record = writer.create_revisit_record(url, "sha1:AAAA", url, "2024-03-01T00:00:00Z")
                record.rec_headers.replace_header("WARC-Profile", profile)
            else:
                record = writer.create_warc_record(
                    url, rtype, payload=io.BytesIO(b"png"), warc_content_type="image/png"
                )
            writer.write_record(record)


def test_records_are_counted_by_revisit_profile_and_url(tmp_path):
    warc = tmp_path / "run.warc.gz"
    _write(
        warc,
        [
            ("response", "http://a.test/new.json", None),
            ("revisit", "http://a.test/app.js", NOT_MODIFIED),
            ("revisit", "http://a.test/app.js", IDENTICAL),
            ("revisit", "http://a.test/bg.svg", IDENTICAL),
            ("resource", "urn:view:http://a.test/", None),
        ],
    )
    scan = scan_records([warc])
    assert scan.kinds == {"response": 1, "304": 1, "identical": 2, "resource": 1}
    assert set(scan.sizes) == set(scan.kinds) and sum(scan.sizes.values()) == warc.stat().st_size  # every member
    assert scan.by_url == {
        "http://a.test/new.json": ["response"],
        "http://a.test/app.js": ["304", "identical"],
        "http://a.test/bg.svg": ["identical"],
    }  # the page's urn: records are not URLs of the site
    [(digest, size)] = scan.resources["urn:view:http://a.test/"]
    assert digest == hashlib.sha1(b"png").hexdigest() and size == scan.sizes["resource"]
    again = {"urn:view:http://a.test/": [(digest, 90)], "urn:text:http://a.test/": [("0" * 40, 40)]}
    assert same_resources(scan.resources, again) == {"records": 2, "bytes": 130, "same": 1, "same_bytes": 90}
    assert record_kind("revisit", "http://example.org/another-profile") == "revisit"


def test_the_second_run_is_checked_against_the_sites_truth():
    bodies = {
        (1, "http://a.test/same.css"): b"css",
        (2, "http://a.test/same.css"): b"css",
        (1, "http://a.test/same.svg"): b"svg",
        (2, "http://a.test/same.svg"): b"svg",
        (1, "http://a.test/text.json"): b"v1",
        (2, "http://a.test/text.json"): b"v2",
        (2, "http://a.test/list.json?_=2"): b"list",
    }
    first = {"http://a.test/same.css": ["response"], "http://a.test/same.svg": ["response"]}
    first["http://a.test/text.json"] = ["response"]
    second = {
        "http://a.test/same.css": ["304"],
        "http://a.test/same.svg": ["identical"],  # unchanged, yet downloaded again
        "http://a.test/text.json": ["response"],
        "http://a.test/list.json?_=2": ["response"],  # a URL new to run 2: no validators to send
    }
    check = second_run_check(first, second, lambda version, url: bodies.get((version, url)))
    assert check["unchanged"] == 2
    assert check["unchanged_by_kind"] == {"304": 1, "identical": 1}
    assert check["unchanged_304_share"] == 0.5
    assert check["not_304"] == ["http://a.test/same.svg"]
    assert (check["urls"], check["changed"]) == (4, 2)  # text.json, and list.json which version 1 lacks


def test_the_sites_knobs_for_the_bench():
    plain, padded, half = ScriptSite(20), ScriptSite(20, image_bytes=30_000), ScriptSite(20, revise_every=2)
    photo = "/img/photo-7-400.svg"
    assert len(padded.resolve(1, photo).body) == 30_000
    assert padded.resolve(1, photo).body == padded.resolve(2, photo).body  # padded, still unchanged in version 2
    assert padded.resolve(1, "/img/bg.svg").body != padded.resolve(2, "/img/bg.svg").body
    assert plain.resolve(1, photo).body.startswith(b"<svg") and len(plain.resolve(1, photo).body) < 300

    def revised(site: ScriptSite) -> list[int]:
        path = "/api/article/{}.json"
        return [n for n in range(2, 21) if site.resolve(1, path.format(n)).body != site.resolve(2, path.format(n)).body]

    assert revised(plain) == [3, 13]  # article 1's title changes in any case
    assert revised(half) == [3, 5, 7, 9, 11, 13, 15, 17, 19]
