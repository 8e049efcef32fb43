"""A test site of legacy CJK pages, served over real HTTP on 127.0.0.1, for harvest and replay tests.

Real Chinese and Japanese government sites still serve GBK, GB18030 and Shift_JIS pages without a
declared charset, or declare it only in ``<meta>``, or send a header that names the wrong one, and
link with non-ASCII paths and query strings. This site has one *group* of pages per case:

==================  =========  =====================================  ==========================
group               bytes      Content-Type header                    in the document
==================  =========  =====================================  ==========================
``gbk-none``        GBK        ``text/html``                          nothing (detection)
``gbk-meta``        GBK        ``text/html``                          ``<meta charset="gbk">``
``gbk-wrong``       GBK        ``text/html; charset=iso-8859-1``      ``<meta charset="gbk">``
``gb18030-none``    GB18030    ``text/html``                          nothing
``gb18030-meta``    GB18030    ``text/html``                          ``<meta http-equiv>``
``gb18030-wrong``   GB18030    ``text/html; charset=gbk``             ``<meta charset="gb18030">``
``sjis-none``       Shift_JIS  ``text/html``                          nothing
``sjis-meta``       Shift_JIS  ``text/html``                          ``<meta charset="Shift_JIS">``
``sjis-wrong``      Shift_JIS  ``text/html; charset=utf-8``           ``<meta charset="Shift_JIS">``
``utf8-meta``       UTF-8      ``text/html``                          ``<meta charset="utf-8">``
==================  =========  =====================================  ==========================

A browser believes the header before ``<meta>``, so on a "wrong" page it decodes with the header's
charset (windows-1252 for ``iso-8859-1``) and requests what that gives: mojibake paths this server
answers with 404, as a real one would, while a query encoded back through windows-1252 round-trips
the original bytes and is found. ``gbk`` is read with the GB18030 decoder but queries are encoded
with the GBK encoder, which cannot encode GB18030's four-byte characters (the URL standard writes
them as ``%26%23NNNNN%3B``).

Every group has an index page ``/<group>/`` (ASCII) whose links have non-ASCII paths, non-ASCII
queries (in the page's encoding, as browsers send them), ``&amp;`` in ``href``, a query-only
reference (``?s=大``) and, for GBK and Shift_JIS, characters whose second byte is an ASCII
punctuation byte (``乗`` is ``81 5C`` in GBK, ``表`` is ``95 5C`` in Shift_JIS). Each page carries
about 300 characters of its own language (enough for charset detection) and a distinctive
``marker`` sentence. ``/`` (UTF-8, declared in the header) links to every index.

API::

    with start_cjk_site() as site:          # a CjkSite, serving on a free port
        site.base_url                        # "http://127.0.0.1:PORT"
        site.url("/gbk-none/")               # absolute URL of a request target
        site.pages                           # {request target: CjkPage}, every page served with 200
        site.page("/gbk-none/")              # one CjkPage (KeyError if not served)
        site.requested()                     # [(method, target)] in arrival order
        site.requested_targets()             # {target} of GET requests, robots.txt/favicon left out
        site.clear_log()                     # forget the requests so far
    # leaving the block (or site.stop()) shuts the server down and releases the port

A :class:`CjkPage` has ``target`` (the request target as a browser sends it, percent-encoded),
``group``, ``encoding`` (the Python codec of its bytes), ``declared`` (``"none"``, ``"meta"`` or
``"wrong-header"``), ``content_type`` (the header sent), ``body`` (bytes), ``title``, ``marker``
(text to look for when the page is shown), ``hrefs`` (the ``href`` values as written, entities
decoded) and ``text`` (its title, paragraphs and marker as the author wrote them). A target that
is not in ``pages`` is answered with 404. The pages never change between requests.
``LIVE_CHARSET[page.group]`` is the ``document.characterSet`` Chromium shows for the live page.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from demo.site_server import RequestRecord, Resource
from tests.support.served_site import ServedSite

__all__ = ["GROUPS", "LIVE_CHARSET", "CjkPage", "CjkSite", "browser_target", "start_cjk_site"]


@dataclass(frozen=True)
class Group:
    name: str
    encoding: str  # Python codec of the bytes
    declared: str  # "none" | "meta" | "wrong-header"
    header: str  # Content-Type header sent
    meta: str  # declaration inside <head> ("" for none)
    web_encoding: str  # the document's real encoding (URL standard name): links are served as
    language: str  # encoded with it; "zh" | "ja"


GROUPS: tuple[Group, ...] = (
    Group("gbk-none", "gbk", "none", "text/html", "", "gbk", "zh"),
    Group("gbk-meta", "gbk", "meta", "text/html", '<meta charset="gbk">', "gbk", "zh"),
    Group("gbk-wrong", "gbk", "wrong-header", "text/html; charset=iso-8859-1", '<meta charset="gbk">', "gbk", "zh"),
    Group("gb18030-none", "gb18030", "none", "text/html", "", "gb18030", "zh"),
    Group(
        "gb18030-meta",
        "gb18030",
        "meta",
        "text/html",
        '<meta http-equiv="Content-Type" content="text/html; charset=GB18030">',
        "gb18030",
        "zh",
    ),
    Group(
        "gb18030-wrong",
        "gb18030",
        "wrong-header",
        "text/html; charset=gbk",
        '<meta charset="gb18030">',
        "gb18030",
        "zh",
    ),
    Group("sjis-none", "cp932", "none", "text/html", "", "shift_jis", "ja"),
    Group("sjis-meta", "cp932", "meta", "text/html", '<meta charset="Shift_JIS">', "shift_jis", "ja"),
    Group(
        "sjis-wrong",
        "cp932",
        "wrong-header",
        "text/html; charset=utf-8",
        '<meta charset="Shift_JIS">',
        "shift_jis",
        "ja",
    ),
    Group("utf8-meta", "utf-8", "meta", "text/html", '<meta charset="utf-8">', "utf-8", "zh"),
)

#: ``document.characterSet`` of each group's live pages in Chromium (tests/test_cjk_chromium.py checks
#: it on every page): what a replayed page must show as too.
LIVE_CHARSET = {
    "gbk-none": "GBK",
    "gbk-meta": "GBK",
    "gbk-wrong": "windows-1252",
    "gb18030-none": "GBK",
    "gb18030-meta": "gb18030",
    "gb18030-wrong": "GBK",
    "sjis-none": "Shift_JIS",
    "sjis-meta": "Shift_JIS",
    "sjis-wrong": "UTF-8",
    "utf8-meta": "UTF-8",
    "root": "UTF-8",
}

_ZH_TEXT = (
    "本网站是市人民政府信息公开平台，发布政策文件、通知公告和办事指南。市教育局、卫生健康委员会、交通运输局等部门"
    "定期更新工作动态。公众可以通过网站查询历年统计数据，了解城市规划和重大项目的进展情况。",
    "为进一步做好政务公开工作，现将有关事项通知如下：各区县人民政府、市政府各部门要高度重视，认真组织学习，"
    "结合本地区本部门实际，制定具体实施方案，确保各项措施落到实处。",
    "我们欢迎社会各界提出宝贵意见和建议，共同推进法治政府建设。咨询电话和电子邮箱见页面底部，工作时间为每周一至周五。"
    "图书馆、博物馆和文化馆免费向市民开放，节假日另行通知。",
)
_JA_TEXT = (
    "このウェブサイトは府庁の公式ホームページです。報道発表資料、募集案内、各種申請の手続きについて掲載しています。"
    "防災情報や観光案内、子育て支援に関するお知らせも随時更新しております。",
    "府民の皆様へのお願い。台風や大雨の際には、市町村から発表される避難情報に注意し、早めの行動を心がけてください。"
    "詳しくは危機管理課までお問い合わせください。",
    "ご意見やご要望はお問い合わせ窓口までお寄せください。図書館や美術館などの文化施設の開館時間は施設ごとに異なります。"
    "表示されている情報は掲載時点のものです。",
)

# Links of an index page, per language: (href as written, label). {g} is the group's name.
_ZH_LINKS = (
    ("新闻/列表.html?dept=教育局&page=2", "新闻列表"),
    ("/{g}/搜索?q=大学&lang=zh", "站内搜索"),
    ("detail.html?id=7&title=公告", "公告详情"),
    ("文档/第一章.html", "第一章"),
    ("?s=大", "大字版"),
    ("list.html?k=乗车&sort=new", "乘车指南"),
    ("notice.html?id=8", "通知"),
)
_ZH_GB18030_LINKS = (
    ("name.html?n=𠮷野", "吉野"),
    ("路径/𠮷.html", "罕用字"),
)
_JA_LINKS = (
    ("お知らせ/一覧.html?課=防災課&page=2", "お知らせ一覧"),
    ("/{g}/検索?q=大学&lang=ja", "サイト内検索"),
    ("detail.html?id=7&title=公告", "公告詳細"),
    ("資料/第一章.html", "第一章"),
    ("?s=大", "大きな文字"),
    ("list.html?k=表示&sort=new", "表示切替"),
    ("notice.html?id=8", "通知"),
)

# What a browser leaves as is in a query of an http(s) URL (the URL standard's special-query
# percent-encode set is C0 controls, space, " # < > ' and everything above 0x7E).
_QUERY_KEEP = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in "\"#<>'")
_PATH_KEEP = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in '"#<>?`{}')
_WEB_CODECS = {"gbk": "gbk", "gb18030": "gb18030", "shift_jis": "cp932", "utf-8": "utf-8", "windows-1252": "cp1252"}


@dataclass(frozen=True)
class CjkPage:
    target: str
    group: str
    encoding: str
    declared: str
    content_type: str
    body: bytes
    title: str
    marker: str
    hrefs: tuple[str, ...]
    text: str


def browser_target(href: str, directory: str, encoding: str) -> str:
    """The request target a browser sends for *href* on a page in *directory* (``/g/``) whose
    encoding it takes to be *encoding* (a URL standard name): path as UTF-8, query in that encoding
    (an unencodable character as ``%26%23N%3B``). Only for the hrefs of this site (no dot segments).
    The site serves each link's target as computed with the document's real encoding."""
    if href.startswith("?"):
        path, query = directory, href[1:]
    else:
        path, _, query = href.partition("?")
        path = path if path.startswith("/") else directory + path
    target = quote(path, safe=_PATH_KEEP)
    if query:
        codec = _WEB_CODECS[encoding]
        out = []
        for char in query:
            try:
                data = char.encode(codec)
            except UnicodeEncodeError:
                out.append(f"%26%23{ord(char)}%3B")
                continue
            out.append(quote(data, safe=_QUERY_KEEP))
        target += "?" + "".join(out)
    return target


def _paragraphs(language: str, marker: str, count: int = 3) -> str:
    pool = _ZH_TEXT if language == "zh" else _JA_TEXT
    return (
        "\n".join(f"<p>{html.escape(pool[i % len(pool)])}</p>" for i in range(count))
        + f'\n<p class="marker">{html.escape(marker)}</p>'
    )


def _document(group: Group, title: str, body_html: str) -> str:
    lang = "zh-CN" if group.language == "zh" else "ja"
    meta = group.meta + "\n" if group.meta else ""
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n{meta}<title>{html.escape(title)}</title>\n'
        f"</head>\n<body>\n{body_html}\n</body>\n</html>\n"
    )


def _links_html(hrefs: tuple[tuple[str, str], ...]) -> str:
    items = "".join(f'<li><a href="{html.escape(href)}">{html.escape(label)}</a></li>\n' for href, label in hrefs)
    return f'<ul class="links">\n{items}</ul>'


def _build() -> dict[str, CjkPage]:
    pages: dict[str, CjkPage] = {}
    root_links = []
    for group in GROUPS:
        directory = f"/{group.name}/"
        zh = group.language == "zh"
        links = _ZH_LINKS if zh else _JA_LINKS
        if group.encoding == "gb18030":
            links = links + _ZH_GB18030_LINKS
        links = tuple((href.replace("{g}", group.name), label) for href, label in links)
        home = "首页" if zh else "トップページ"
        index_title = f"{group.name} 政府信息公开" if zh else f"{group.name} 府庁ホームページ"
        index_marker = f"本页是{group.name}组的首页。" if zh else f"このページは{group.name}のトップページです。"
        children = []
        for number, (href, label) in enumerate(links, 1):
            if href.startswith("?"):
                continue  # the index page itself, with a query: served below
            target = browser_target(href, directory, group.web_encoding)
            children.append((target, label, number))
        pages[directory] = _page(group, directory, index_title, index_marker, links)
        query_only = browser_target("?s=大", directory, group.web_encoding)
        pages[query_only] = _page(
            group,
            query_only,
            index_title + "（大字版）",
            ("本页是大字版。" if zh else "このページは大きな文字の版です。") + group.name,
            links,
        )
        for target, label, number in children:
            marker = (
                f"这是{group.name}组的第{number}个页面：{label}。"
                if zh
                else f"これは{group.name}の{number}番目のページ「{label}」です。"
            )
            pages[target] = _page(
                group, target, f"{label} - {group.name}", marker, ((directory, home), ("/", "Strata CJK test site"))
            )
        root_links.append((directory, group.name))
    root_html = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>CJK test site</title>\n'
        f"</head>\n<body>\n<h1>CJK test site</h1>\n{_links_html(tuple(root_links))}\n</body>\n</html>\n"
    )
    pages["/"] = CjkPage(
        "/",
        "root",
        "utf-8",
        "header",
        "text/html; charset=utf-8",
        root_html.encode("utf-8"),
        "CJK test site",
        "CJK test site",
        tuple(h for h, _ in root_links),
        "CJK test site",
    )
    return pages


def _page(group: Group, target: str, title: str, marker: str, links: tuple[tuple[str, str], ...]) -> CjkPage:
    body_html = f"<h1>{html.escape(title)}</h1>\n{_paragraphs(group.language, marker)}\n{_links_html(links)}"
    document = _document(group, title, body_html)
    text = " ".join((title, *(_ZH_TEXT if group.language == "zh" else _JA_TEXT), marker))
    return CjkPage(
        target,
        group.name,
        group.encoding,
        group.declared,
        group.header,
        document.encode(group.encoding),
        title,
        marker,
        tuple(h for h, _ in links),
        text,
    )


class _Model:
    def __init__(self, pages: Mapping[str, CjkPage]):
        self.pages = pages

    def resolve(self, version: int, path: str, request_headers: Mapping[str, str]) -> Resource | None:
        page = self.pages.get(path)
        if page is None:
            return None
        return Resource(200, (("Content-Type", page.content_type),), page.body)


_IGNORED = ("/robots.txt", "/favicon.ico")


class CjkSite(ServedSite):
    """The running site; see the module docstring."""

    def __init__(self, port: int = 0):
        self.pages: dict[str, CjkPage] = _build()
        super().__init__(_Model(self.pages), port)

    def page(self, target: str) -> CjkPage:
        return self.pages[target]

    def request_log(self) -> list[RequestRecord]:
        return self._server.request_log

    def requested(self) -> list[tuple[str, str]]:
        return [(record.method, record.path) for record in self._server.request_log]

    def requested_targets(self) -> set[str]:
        return {path for method, path in self.requested() if method == "GET" and path not in _IGNORED}

    def clear_log(self) -> None:
        self._server.reset_counters()


def start_cjk_site(port: int = 0) -> CjkSite:
    """Start the site on ``127.0.0.1`` (``port=0``: a free one) and return it running."""
    return CjkSite(port).start()
