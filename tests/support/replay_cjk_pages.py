"""Legacy-encoded test pages for replay, and helpers to drive Chromium over them and archive them.

The site serves GBK, GB18030, Shift_JIS and UTF-8 pages, declared in the header, only by
``<meta>``, not at all, or with a header that contradicts the page, each linking to URLs with
non-ASCII paths and query strings (``&amp;`` between parameters, as HTML wants). Any other path
answers a small UTF-8 "target" page naming the raw path it was asked for. The fixtures that use
them are in ``tests.support.replay_cjk_fixtures``.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Mapping
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from demo.site_server import Resource

COLL = "cjk"
WARC_DATE = "2024-05-01T10:00:00Z"
TIMESTAMP = "20240501100000"

ZH = (
    "教育局关于二〇二四年春季学期开学工作的通知。各区县教育局、各直属学校：为做好春季学期开学工作，"
    "现将有关事项通知如下。一、认真做好校园安全检查。二、做好学生返校报到工作。三、加强教学管理。"
)
JA = (
    "東京都教育委員会のお知らせ。新しい学習指導要領について、説明会を開催します。参加を希望する方は、"
    "表示された申込書に必要事項を記入のうえ、期日までに提出してください。検索結果は以下のとおりです。"
)
EXT_B = "\U00020000"  # 𠀀: a four-byte GB18030 sequence, not in GBK


@dataclasses.dataclass(frozen=True)
class Page:
    path: str
    codec: str  # what the body is encoded with
    declared: str  # header | meta | none | wrong-header
    text: str  # the body's text, as the page means it
    links: tuple[str, ...]  # href values as written in the HTML (with &amp;)
    header_charset: str = ""  # the Content-Type charset (declared == header or wrong-header)
    meta_charset: str = ""  # the <meta> label (declared == meta, or wrong-header)
    before_meta: str = ""  # head markup before the <meta>

    @property
    def body(self) -> bytes:
        meta = (
            f'<meta http-equiv="Content-Type" content="text/html; charset={self.meta_charset}">\n'
            if self.meta_charset
            else ""
        )
        items = "\n".join(f'<li><a class="l" href="{href}">link {i}</a></li>' for i, href in enumerate(self.links))
        html = (
            f"<!DOCTYPE html>\n<html><head>\n{self.before_meta}{meta}<title>{self.path}</title>\n</head>\n<body>\n"
            f'<p id="text">{self.text}</p>\n<ul>\n{items}\n</ul>\n</body></html>\n'
        )
        return html.encode(self.codec)

    @property
    def content_type(self) -> str:
        return f"text/html; charset={self.header_charset}" if self.header_charset else "text/html"


PAGES = (
    Page(
        "/utf8/meta.html",
        "utf-8",
        "meta",
        ZH,
        (
            "list.html?dept=教育局&amp;page=2",
            "/新闻/通知.html",
            "/xxgk/list.html?dept=教育局&amp;page=2#第二页",
        ),
        meta_charset="utf-8",
    ),
    Page(
        "/utf8/header.html",
        "utf-8",
        "header",
        JA,
        (
            "検索.html?q=東京&amp;p=1",
            "?q=表示",
        ),
        header_charset="utf-8",
    ),
    Page("/utf8/none.html", "utf-8", "none", ZH, ("list.html?dept=教育局&amp;page=3",)),
    Page(
        "/gbk/header.html",
        "gbk",
        "header",
        ZH,
        (
            "search.html?s=大&amp;p=1",
            "/gbk/栏目/首页.html?id=教育",
        ),
        header_charset="gbk",
    ),
    Page(
        "/gbk/none.html",
        "gbk",
        "none",
        ZH * 2,
        (
            "search.html?s=教育&amp;p=2",
            "/gbk/通知.html",
        ),
    ),
    Page(
        "/gbk/short.html",
        "gbk",
        "none",
        "教育局通知",
        (  # too short for charset-normalizer (EUC-KR)
            "search.html?s=通知&amp;p=4",
        ),
    ),
    Page(
        "/gbk/meta.html",
        "gbk",
        "meta",
        ZH,
        (
            "search.html?s=通知&amp;p=3",
            "列表.html?dept=教育局",
        ),
        meta_charset="gb2312",
    ),
    Page(
        "/gb18030/meta.html",
        "gb18030",
        "meta",
        ZH + EXT_B,
        (
            f"search.html?q={EXT_B}&amp;p=1",
            "search.html?q=学校",
        ),
        meta_charset="gb18030",
    ),
    Page(
        "/gb18030/late-meta.html",
        "gb18030",
        "meta",
        ZH + EXT_B,
        (  # Chromium finds it past 1,024 bytes
            f"search.html?q={EXT_B}&amp;p=2",
        ),
        meta_charset="gb18030",
        before_meta=f"<script>var pad = '{'x' * 2000}';</script>\n",
    ),
    Page(
        "/sjis/none.html",
        "shift_jis",
        "none",
        JA * 2,
        (
            "kensaku.html?q=検索&amp;p=1",
            "/sjis/表示.html",
        ),
    ),
    Page(
        "/sjis/meta.html",
        "shift_jis",
        "meta",
        JA,
        (
            "kensaku.html?q=東京&amp;p=2",
            "表示.html?q=表",
        ),
        meta_charset="Shift_JIS",
    ),
    Page(
        "/wrong/latin1.html",
        "gbk",
        "wrong-header",
        ZH,
        ("search.html?s=大&amp;p=1",),
        header_charset="iso-8859-1",
        meta_charset="gbk",
    ),
    Page(
        "/wrong/utf8.html",
        "shift_jis",
        "wrong-header",
        JA,
        ("kensaku.html?q=検索",),
        header_charset="utf-8",
        meta_charset="shift_jis",
    ),
)


#: A capture whose WARC-Target-URI is an IRI (raw UTF-8), as some tools write it: not from the live visit.
IRI_PATH = "/其他/页.html?a=1"


def target_body(raw_path: str) -> bytes:
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>target</title></head>\n'
        f'<body><p id="text">TARGET {raw_path}</p></body></html>\n'
    ).encode()


class CjkSite:
    """The content model: the pages above; any other path a target page naming its raw path."""

    by_path = {page.path: page for page in PAGES}

    def resolve(self, version: int, path: str, request_headers: Mapping[str, str]) -> Resource | None:
        page = self.by_path.get(path)
        if page is not None:
            return Resource(200, (("Content-Type", page.content_type),), page.body)
        if path in ("/favicon.ico", "/robots.txt"):
            return None
        return Resource(200, (("Content-Type", "text/html; charset=utf-8"),), target_body(path))


@dataclasses.dataclass
class LiveVisit:
    base_url: str
    charset: dict[str, str]  # page path -> document.characterSet on the live site
    text: dict[str, str]  # page path -> #text as shown
    clicks: dict[str, list[str]]  # page path -> raw request path of each link, in order
    target_text: dict[str, str]  # raw request path -> text shown after the click
    responses: dict[str, Resource]  # raw request path -> the live response


def click_each_link(page, url: str, count: int, on_each) -> None:
    """Open ``url``, click link i (for every i), call ``on_each(i)`` once the target has loaded."""
    for i in range(count):
        page.goto(url, wait_until="load")
        with page.expect_navigation(wait_until="load", timeout=10_000):
            page.locator("a.l").nth(i).click()
        on_each(i)


def write_warc(path: Path, base_url: str, responses: Mapping[str, Resource]) -> None:
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        for raw_path, res in sorted(responses.items()):
            http = StatusAndHeaders(
                "200 OK", list(res.headers) + [("Content-Length", str(len(res.body)))], protocol="HTTP/1.1"
            )
            record = writer.create_warc_record(
                base_url + raw_path,
                "response",
                payload=io.BytesIO(res.body),
                http_headers=http,
                warc_headers_dict={"WARC-Date": WARC_DATE},
            )
            writer.write_record(record)


def replay_url(origin: str, live_url: str, timestamp: str = TIMESTAMP, mod: str = "") -> str:
    return f"{origin}/{COLL}/{timestamp}{mod}/{live_url}"
