"""Replay of captures other tools write and Strata never does, each compared with what the capture
holds (and, where pywb agrees, with an unmodified pywb):

- a POST capture whose URL has a query string (pywb keys it with the request body's parameters, so
  asking for the URL found nothing: "never archived", though the 404 page listed it among nearby URLs);
- a 301 from ``http://`` to the same URL over ``https://``: pywb refuses it as a redirect to itself
  (a page would loop), which left nothing to answer the raw bytes (``id_``) but a 400;
- a revisit of a 404 page whose payload is another URL's (a favicon answered by the home page's
  bytes), its digest labelled ``sha-256:`` where the original's says ``sha256:``: it answered 503.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import httpx

from index.capture.importing import import_files
from index.collection import Collection
from replay import create_app
from tests.support.warc_makers import gzip_records, raw_record, sha1_digest


def _record(kind: str, url: str, date: str, block: bytes, ctype: str, **extra: str) -> bytes:
    return raw_record(kind, url, date, block, ctype, version="WARC/1.1", **extra)


_sha1 = sha1_digest


def _write(path: Path, *records: bytes) -> Path:
    return gzip_records(path, *records)


RESPONSE = "application/http; msgtype=response"
REQUEST = "application/http; msgtype=request"


def _response(url: str, date: str, status: str, body: bytes, digest: str | None = None, **headers: str) -> bytes:
    more = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    http = f"HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n{more}\r\n".encode()
    return _record("response", url, date, http + body, RESPONSE, **{"WARC-Payload-Digest": digest or _sha1(body)})


def test_a_post_capture_whose_url_has_a_query_is_served_at_its_url(tmp_path, root, wayback_factory):
    url = "http://forms.test/post?foo=bar"
    form = b"data=1"
    answer = b'{"args": {"foo": "bar"}, "form": {"data": "1"}}'
    request = (
        b"POST /post?foo=bar HTTP/1.1\r\nHost: forms.test\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        b"Content-Length: 6\r\n\r\n" + form
    )
    path = _write(
        tmp_path / "post.warc.gz",
        _response(url, "2014-06-10T00:12:55Z", "200 OK", answer),
        _record("request", url, "2014-06-10T00:12:55Z", request, REQUEST),
    )
    assert import_files(root, "c", [path], fulltext=False).imported
    client = create_app(root).test_client()
    raw = client.get(f"/c/20140610001255id_/{url}")
    assert (raw.status_code, raw.data) == (200, answer)
    assert client.get(f"/c/20140610001255/{url}").status_code == 200
    calendar = client.get(f"/api/captures/c/{url}").get_json()
    assert [c["timestamp"] for c in calendar["captures"]] == ["20140610001255"]
    # the only capture of its path: pywb's fuzzy match finds it too
    wayback = wayback_factory(root)
    theirs = httpx.get(f"{wayback.base_url}/c/20140610001255id_/{url}", timeout=10)
    assert (theirs.status_code, theirs.content) == (200, answer)


def test_the_raw_bytes_of_a_redirect_to_the_same_url_over_https_are_served(tmp_path, root):
    url = "http://net.test/page.htm"
    path = _write(
        tmp_path / "redirect.warc.gz",
        _response(
            url, "2020-06-27T13:51:26Z", "301 Moved Permanently", b"moved", Location=url.replace("http:", "https:")
        ),
    )
    assert import_files(root, "c", [path], fulltext=False).imported
    raw = create_app(root).test_client().get(f"/c/20200627135126id_/{url}")
    assert (raw.status_code, raw.headers["Location"], raw.data) == (301, "https://net.test/page.htm", b"moved")


def test_a_revisit_of_a_404_whose_payload_is_another_url_s_is_served_as_archived(tmp_path, root):
    body = b"<html><title>Example Domain</title></html>"
    hexdigest = hashlib.sha256(body).hexdigest()
    home = _response("https://site.test/", "2021-05-20T22:15:23Z", "200 OK", body, digest=f"sha256:{hexdigest}")
    favicon = _record(
        "revisit",
        "https://site.test/favicon.ico",
        "2021-05-20T22:15:24Z",
        f"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n\r\n".encode(),
        RESPONSE,
        **{
            "WARC-Payload-Digest": f"sha-256:{hexdigest}",  # the same digest, labelled otherwise
            "WARC-Refers-To-Target-URI": "https://site.test/",
            "WARC-Refers-To-Date": "2021-05-20T22:15:23Z",
            "WARC-Profile": "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
        },
    )
    path = _write(tmp_path / "favicon.warc.gz", home, favicon)
    assert import_files(root, "c", [path], fulltext=False).imported
    raw = create_app(root).test_client().get("/c/20210520221524id_/https://site.test/favicon.ico")
    assert (raw.status_code, raw.data) == (404, body)
    coll = Collection.open(root, "c")
    from index.integrity.verify import verify

    assert verify(coll).intact
