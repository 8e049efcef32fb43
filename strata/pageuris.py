"""The URIs of the records that say what a browser-captured page looked like and said.

Browsertrix's convention, which ReplayWeb.page and Browsertrix's QA read: ``urn:<kind>:<page URL>``,
with ``kind`` one of ``view`` (a PNG screenshot), ``text`` (the rendered text) and ``pageinfo``
(the page's requests and their outcomes, JSON). The records themselves are built in
``harvester.browser.records``; full text (``index.fulltext.rendered``) and QA read them. The
capture they belong to is named, as every capture, by the record's 14-digit timestamp, the page
capture's own.
"""

from __future__ import annotations

VIEW = "view"
TEXT = "text"
PAGEINFO = "pageinfo"
KINDS = (VIEW, TEXT, PAGEINFO)
TITLE_HEADER = "WARC-Strata-Title"  # on a text record: the rendered page's title, one line


def page_uri(kind: str, page_url: str) -> str:
    """``urn:<kind>:<page URL>``."""
    if kind not in KINDS:
        raise ValueError(f"unknown page record kind {kind!r}")
    return f"urn:{kind}:{page_url}"


def parse_page_uri(uri: str) -> tuple[str, str] | None:
    """(kind, page URL) of a page record's URI, or None for any other URI."""
    for kind in KINDS:
        prefix = f"urn:{kind}:"
        if uri.startswith(prefix) and uri[len(prefix) :].startswith(("http://", "https://")):
            return kind, uri[len(prefix) :]
    return None
