"""The charset of a ``Content-Type`` header is read as Chromium reads it.

Each case serves the same ASCII page (no ``<meta>``, nothing to detect) under one header, so the
charset Chromium reports (``document.characterSet``) comes from the header or, when the header
names none it knows, from its default, windows-1252. ``strata.charset.charset_param`` and
``codec_for_label`` must name the same codec, or none where Chromium fell back: the harvester
reads links, the full-text index reads text, and replay decides whether to declare a charset with
that one reader. Python's parameter readers (werkzeug's ``parse_options_header``, ``email.message``)
differ from Chromium on several of these (the last ``charset`` wins, ``charset = gbk`` counts,
single quotes are stripped), which is why Strata parses them itself.
"""

from __future__ import annotations

import pytest

from demo.site_server import Resource, SiteServer
from strata.charset import charset_param, codec_for_label
from tests.support.chromium import launched

pytestmark = pytest.mark.browser

BODY = b"<html><head><title>t</title></head><body><p>plain ascii</p></body></html>"
CASES = [
    "text/html; charset=gbk",
    "text/html;charset=gbk ",
    "text/html; CHARSET=GBK",
    'text/html; charset="Shift_JIS"',
    'text/html; charset="gbk"x',
    'text/html; charset="gb\\k"',
    'text/html; foo="a;b"; charset=gbk',
    'text/html; foo="a;charset=utf-8"; charset=gbk',
    "text/html; charset=gbk; charset=utf-8",
    "text/html; charset=utf-8; charset=gbk",
    "text/html; charset = gbk",
    "text/html charset=gbk",
    "text/html; charset='gbk'",
    "text/html; charset=gbk'",
    "text/html; charset=gbk foo",
    "text/html; charset=",
    'text/html; charset=""; charset=gbk',
    "text/html; xcharset=gbk",
]


class HeaderCases:
    def resolve(self, version, path, request_headers):
        index = int(path.strip("/") or -1)
        if 0 <= index < len(CASES):
            return Resource(headers=(("Content-Type", CASES[index]),), body=BODY)
        return None


@pytest.fixture(scope="module")
def chromium_charsets() -> list[str]:
    with SiteServer(HeaderCases()) as site, launched() as browser:
        page = browser.new_page()
        found = []
        for index in range(len(CASES)):
            page.goto(site.url(f"/{index}"))
            found.append(page.evaluate("document.characterSet"))
        page.close()
    return found


@pytest.mark.parametrize("index", range(len(CASES)), ids=CASES)
def test_the_header_charset_is_the_one_chromium_reads(chromium_charsets, index):
    ours = codec_for_label(charset_param(CASES[index])) or "cp1252"
    assert ours == codec_for_label(chromium_charsets[index]), (CASES[index], chromium_charsets[index])
