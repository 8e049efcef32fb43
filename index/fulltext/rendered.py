"""A browser-captured page's rendered text as that page's text in the index.

A page built by script says little in its HTML ("Loading..."): its words come from JSON that its
scripts fetch. Browser capture keeps what the page showed as a ``urn:text:<page URL>`` resource
record (``strata.pageuris``; ``harvester.browser.records`` writes it), dated as the page's capture,
with the rendered title in ``WARC-Strata-Title``. Each distinct rendered text of a page becomes a
document of that page, keyed ``(page URL, digest of the text)`` like any payload of that URL, so a
word only the JSON carried is found on the page that showed it, at the timestamps it showed it
(a later run that found the same text, a revisit of the text record, adds a timestamp). The
document's type is the page's (``text/html``); its HTML payload keeps its own document.

Two ways in, as for every payload: the rebuild from WARCs reads the records as it meets them
(``index.fulltext.rebuild``); ``index_run`` finds a run's text records in the CDXJ index
(``urn:text:`` lines are one contiguous block of it) by the run's WARC files, since the harvest
state holds captures of HTTP(S) URLs only.
"""

from __future__ import annotations

import json

from index.cdx.capture_index import capture_lines
from index.collection import Collection
from index.fulltext.documents import Payload
from index.fulltext.text import extract
from strata.pageuris import TEXT, TITLE_HEADER, page_uri, parse_page_uri

_START = page_uri(TEXT, "").encode()  # b"urn:text:": every text record's key starts so
_END = _START[:-1] + b";"  # the next key after that block (";" follows ":")


def page_of(uri: str | None) -> str | None:
    """The page URL of a ``urn:text:`` record's URI, else None."""
    parsed = parse_page_uri(uri or "")
    return parsed[1] if parsed and parsed[0] == TEXT else None


def payload(rec_headers, raw: bytes) -> Payload:
    """The document of a rendered text: its words, language and the page's rendered title."""
    out = extract(raw, "text/plain; charset=utf-8")
    return Payload(
        mime="text/html",
        status=200,
        size=len(raw),
        title=(rec_headers.get_header(TITLE_HEADER) or "") if rec_headers is not None else "",
        text=out.text,
        lang=out.language,
    )


def run_groups(collection: Collection, files: set[str]) -> dict[tuple[str, str], dict]:
    """(page URL, text digest) -> capture timestamps and the record holding the text, for the text
    records in ``files`` (a run's WARC files), as ``index.fulltext.update.group_capture`` groups."""
    groups: dict[tuple[str, str], dict] = {}
    if not files:
        return groups
    for line in capture_lines(collection, _START, _END):
        try:
            _key, timestamp, fields = line.split(b" ", 2)
            cdx = json.loads(fields)
        except ValueError:
            continue
        page = page_of(cdx.get("url"))
        digest = cdx.get("digest")
        if page is None or not digest or cdx.get("filename") not in files:
            continue
        digest = digest if digest.startswith("sha1:") else "sha1:" + digest
        group = groups.setdefault((page, digest), {"ts": set(), "response": None, "refers": None})
        group["ts"].add(timestamp.decode())
        if cdx.get("mime") != "warc/revisit" and group["response"] is None:
            group["response"] = (cdx["filename"], int(cdx["offset"]))
    return groups
