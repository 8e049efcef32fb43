"""Replayed responses as a browser gets them, for every modifier: archived bytes are sandboxed unless
pywb rewrote them as a page, one Content-Type, nosniff, no archived header that acts beyond the page,
no service worker script, a Content-Length that is the length sent, and decoding bounded.

The captures are written by warcio: an HTML page with every hostile header, pages under two
Content-Types (two headers, and one listing both), a service worker script with
``Service-Worker-Allowed: /`` and a gzip page that inflates to 200 MiB (``tests.support.hostile``).
The field WARCs of ArchiveWeb.page and pywacz (bodies stored decoded under the encoded transfer's
headers) are imported when the field corpus is here (``tests.support.field_corpus``)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from replay.isolation import RAW_CSP
from replay.payload import MIN_DECODED
from tests.conftest import VENV_BIN
from tests.support.field_corpus import field_corpus
from tests.support.hostile import _bomb
from tests.support.replay_fixtures import StrataServer

SITE = "http://hostile.example"
MODS = ("", "id_", "im_", "oe_", "ex_", "xx_", "mp_", "if_", "fr_", "js_", "cs_", "sw_", "wkr_")
PAGE = b"<html><head><title>t</title></head><body><script>fetch('http://collector.test/')</script></body></html>"
HOSTILE_HEADERS = (
    ("Service-Worker-Allowed", "/"),
    ("Set-Cookie", "strata_staff=x; domain=example.org; path=/jobs"),
    ("Refresh", "0; url=http://collector.test/refresh"),
    ("Strict-Transport-Security", "max-age=31536000"),
    ("Clear-Site-Data", '"*"'),
    ("Access-Control-Allow-Origin", "*"),
    ("Link", "<http://collector.test/x>; rel=preload"),
    ("NEL", "{}"),
)
CAPTURES = {
    "/page.html": ((("Content-Type", "text/html"), *HOSTILE_HEADERS), PAGE),
    "/two-types.html": ((("Content-Type", "image/png"), ("Content-Type", "text/html")), PAGE),
    "/listed-types.html": ((("Content-Type", "image/png, text/html"),), PAGE),
    "/sw.js": ((("Content-Type", "application/javascript"), ("Service-Worker-Allowed", "/")), b"self.x=1;"),
    "/bomb.html": ((("Content-Type", "text/html"), ("Content-Encoding", "gzip")), None),
}
FIELD = field_corpus()
DECODED = ("pywacz-example-iana.warc", "pywacz-example-warcinfo-metadata.warc")


def _index(coll: Path) -> None:
    warcs = sorted((coll / "archive").iterdir())
    out = subprocess.run(
        [str(Path(sys.executable).parent / "cdx-indexer"), "-j", "-s", "-p", *map(str, warcs)],
        capture_output=True,
        check=True,
    ).stdout.decode()
    lines = sorted(line.replace(str(coll / "archive") + "/", "") for line in out.splitlines() if line.strip())
    (coll / "indexes").mkdir(exist_ok=True)
    (coll / "indexes" / "index.cdxj").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def hostile_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("isolation") / "collections"
    coll = root / "h"
    (coll / "archive").mkdir(parents=True)
    with open(coll / "archive" / "h.warc.gz", "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for path, (headers, body) in CAPTURES.items():
            http = StatusAndHeaders("200 OK", list(headers), protocol="HTTP/1.1")
            record = writer.create_warc_record(
                SITE + path,
                "response",
                payload=io.BytesIO(_bomb() if body is None else body),
                http_headers=http,
                warc_headers_dict={"WARC-Date": "2024-01-01T00:00:00Z"},
            )
            writer.write_record(record)
    _index(coll)
    if FIELD is not None:
        for name in DECODED:
            done = subprocess.run(
                [str(VENV_BIN / "strata"), "import", name.split(".")[0], str(FIELD / name), "--root", str(root)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
    return root


@pytest.fixture(scope="module")
def client(hostile_root):
    from replay import create_app

    return create_app(hostile_root).test_client()


@pytest.mark.parametrize("mod", MODS)
@pytest.mark.parametrize("path", ["/page.html", "/two-types.html", "/listed-types.html", "/sw.js"])
def test_every_modifier_sandboxes_archived_bytes(client, mod, path):
    response = client.get(f"/h/2024{mod}/{SITE}{path}")
    assert response.status_code == 200, (mod, path)
    headers = response.headers
    assert len(headers.getlist("Content-Type")) == 1 and len(headers.getlist("Content-Security-Policy")) == 1
    assert headers["X-Content-Type-Options"] == "nosniff"
    page = b"<!-- WB Insert" in response.data
    if not page:  # archived bytes as they were: scripts never run, nothing else loads
        assert headers["Content-Security-Policy"] == RAW_CSP, (mod, path)
    else:  # rewritten by pywb with its insert: loads from the archive only
        assert headers["Content-Security-Policy"].startswith("default-src 'self'"), (mod, path)
        assert headers["Content-Type"].startswith("text/html")
    if path != "/sw.js":
        assert headers["Content-Type"].startswith("text/html")  # what Chromium reads, said once
    lower = {k.lower() for k in headers.keys()}
    for name in ("set-cookie", "service-worker-allowed", "refresh", "strict-transport-security", "clear-site-data"):
        assert name not in lower, (mod, path, name)
    assert "access-control-allow-origin" not in lower and "nel" not in lower
    assert all("collector.test" not in v for k, v in headers.items() if k.lower() == "link")
    if "Content-Length" in headers:
        assert int(headers["Content-Length"]) == len(response.data), (mod, path)


@pytest.mark.parametrize("mod", MODS)
def test_no_replay_address_serves_a_service_worker(client, mod):
    response = client.get(f"/h/2024{mod}/{SITE}/sw.js", headers={"Service-Worker": "script"})
    assert response.status_code == 403 and b"service worker" in response.data
    assert client.get("/", headers={"Service-Worker": "script"}).status_code == 403


@pytest.mark.skipif(FIELD is None, reason="the field WARC corpus (STRATA_FIELD_WARCS) is not here")
@pytest.mark.parametrize("name", [n.split(".")[0] for n in DECODED])
@pytest.mark.parametrize("mod", ["id_", "im_", "", "mp_"])
@pytest.mark.parametrize("accept", ["gzip, deflate, br", "identity"])
def test_bodies_stored_decoded_are_sent_with_their_own_length(client, name, mod, accept):
    # the stored body is 1,256 bytes of HTML under the transfer's "Content-Length: 648" (and, in
    # the metadata file, "Content-Encoding: gzip"): pywb announced 648 and sent 1,256, or gzip
    response = client.get(f"/{name}/2030{mod}/https://example.com/", headers={"Accept-Encoding": accept})
    assert response.status_code == 200
    body = response.data
    if "Content-Length" in response.headers:
        assert int(response.headers["Content-Length"]) == len(body)
    assert "Content-Encoding" not in response.headers  # the stored bytes are not gzip
    assert b"Example Domain" in body


def test_an_expanding_page_is_sent_as_stored_or_cut_at_its_bound(client):
    stored = client.get(f"/h/2024id_/{SITE}/bomb.html", headers={"Accept-Encoding": "gzip"})
    assert stored.headers["Content-Encoding"] == "gzip"
    assert int(stored.headers["Content-Length"]) == len(stored.data) == len(_bomb())
    for mod, accept in (("id_", "identity"), ("mp_", "gzip"), ("", "gzip")):
        response = client.get(f"/h/2024{mod}/{SITE}/bomb.html", headers={"Accept-Encoding": accept}, buffered=False)
        sent = 0
        with pytest.raises(Exception, match="decodes to more than"):
            for chunk in response.response:
                sent += len(chunk)
        assert sent <= MIN_DECODED + 65536, (mod, sent)


def test_over_a_socket_an_expanding_page_is_cut_off(hostile_root, tmp_path):
    server = StrataServer(hostile_root, tmp_path / "serve.log")
    try:
        received = 0
        with pytest.raises(httpx.HTTPError), httpx.stream("GET", f"{server.base_url}/h/2024mp_/{SITE}/bomb.html") as r:
            for chunk in r.iter_raw():
                received += len(chunk)
        assert received <= MIN_DECODED + (1 << 20)
        assert httpx.get(f"{server.base_url}/h/2024id_/{SITE}/page.html").status_code == 200  # still serving
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.skipif(FIELD is None, reason="the field WARC corpus (STRATA_FIELD_WARCS) is not here")
def test_every_capture_of_archivewebpage_is_sent_with_the_length_it_has(client, hostile_root):
    # 94 of these 464 answers announced fewer bytes than they sent (6,831 for 37,683, 71,383 for 935,294)
    index = (hostile_root / "pywacz-example-iana" / "indexes" / "index.cdxj").read_text().splitlines()
    checked = 0
    for line in index:
        _, timestamp, fields = line.split(" ", 2)
        url = json.loads(fields)["url"]
        for mod in ("id_", "", "js_", "cs_"):
            for accept in ("gzip, br", "identity"):
                response = client.get(
                    f"/pywacz-example-iana/{timestamp}{mod}/{url}", headers={"Accept-Encoding": accept}
                )
                if "Content-Length" in response.headers:
                    assert int(response.headers["Content-Length"]) == len(response.data), (mod, accept, url)
                checked += 1
    assert checked > 400
