"""The WARC records of what a page looked like and said, beside the records of its requests.

Strata's convention, Browsertrix's URIs (``strata.pageuris``; Browsertrix QA and ReplayWeb.page
read them too):

=====================  ===================================  =============================================
``WARC-Target-URI``     ``Content-Type``                      block
=====================  ===================================  =============================================
``urn:view:<page>``     ``image/png``                         the viewport (``BrowserSettings.viewport``),
                                                              scrolled to the top, after the behaviours
``urn:text:<page>``     ``text/plain; charset=utf-8``         the rendered text (``innerText`` of the page
                                                              and its frames, after the behaviours)
``urn:pageinfo:<page>`` ``application/json``                  the page's requests and their outcomes, its
                                                              title, status, behaviours (``PageCapture.info``)
=====================  ===================================  =============================================

All three are ``resource`` records (their own payload, not an HTTP exchange). ``<page>`` is the URL
the page was loaded from (its navigation's URL as the harvest asked for it). They carry the page
capture's own ``WARC-Date``: the capture of a page is named by (URI, 14-digit timestamp) as pywb
names every capture, so ``urn:text:<page>`` at the page's timestamp is exactly that capture's
text, and a page replayed at that timestamp finds it. ``WARC-Concurrent-To`` names the record of
the page's navigation (its response or revisit) when the caller knows it. The text record also
carries the rendered title, ``WARC-Strata-Title`` (one line, at most 1,000 characters), which the
full-text index takes as the page's title (the HTML's ``<title>`` may be set by script).

A second run of an unchanged page writes its screenshot and text as identical-payload revisits of
the first run's records when their bytes are the same (``harvester.recorder.write_page_records``:
the payload's digest looked up as any payload's; the page info, which says when and how long, is
new every time); full text and QA read both (``index.fulltext``, ``replay.qa.pages``).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re

from warcio.warcwriter import WARCWriter

from strata.pageuris import PAGEINFO, TEXT, TITLE_HEADER, VIEW, page_uri

_CONTENT_TYPES = {VIEW: "image/png", TEXT: "text/plain; charset=utf-8", PAGEINFO: "application/json"}
_BUILDER = WARCWriter(None, gzip=True, warc_version="1.1")
_SPACE = re.compile(r"\s+")


def one_line(text: str, limit: int = 1000) -> str:
    """A title as a header value: whitespace (line breaks included) collapsed, cut at ``limit``."""
    return _SPACE.sub(" ", text or "").strip()[:limit]


def payload_digest(block: bytes) -> str:
    """``sha1:<base32>``, as every digest of the archive is written."""
    return "sha1:" + base64.b32encode(hashlib.sha1(block).digest()).decode("ascii")


def _resource(kind: str, page_url: str, block: bytes, warc_date: str, concurrent_to: str | None, extra=None):
    # the digests now (warcio would add the same when writing): the harvest looks the payload up
    # first, and writes a revisit when an earlier record holds it (``harvester.recorder``)
    digest = payload_digest(block)
    headers = {"WARC-Date": warc_date, "WARC-Payload-Digest": digest, "WARC-Block-Digest": digest, **(extra or {})}
    if concurrent_to:
        headers["WARC-Concurrent-To"] = concurrent_to
    return _BUILDER.create_warc_record(
        page_uri(kind, page_url),
        "resource",
        payload=io.BytesIO(block),
        length=len(block),
        warc_content_type=_CONTENT_TYPES[kind],
        warc_headers_dict=headers,
    )


def screenshot_record(page_url: str, png: bytes, warc_date: str, concurrent_to: str | None = None):
    return _resource(VIEW, page_url, png, warc_date, concurrent_to)


def text_record(page_url: str, text: str, title: str, warc_date: str, concurrent_to: str | None = None):
    extra = {TITLE_HEADER: one_line(title)} if one_line(title) else {}
    return _resource(TEXT, page_url, text.encode("utf-8"), warc_date, concurrent_to, extra)


def pageinfo_record(page_url: str, info: dict, warc_date: str, concurrent_to: str | None = None):
    block = json.dumps(info, ensure_ascii=False, sort_keys=True).encode("utf-8")
    return _resource(PAGEINFO, page_url, block, warc_date, concurrent_to)


def page_records(capture, warc_date: str, concurrent_to: str | None = None) -> list:
    """The records of one ``PageCapture`` (``harvester.browser.page``): its screenshot (when taken),
    text and page info, for the page's URL as asked."""
    records = []
    if capture.screenshot:
        records.append(screenshot_record(capture.url, capture.screenshot, warc_date, concurrent_to))
    records.append(text_record(capture.url, capture.text, capture.title, warc_date, concurrent_to))
    records.append(pageinfo_record(capture.url, capture.info(), warc_date, concurrent_to))
    return records
