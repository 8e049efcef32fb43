"""A generated, seeded website in two versions, shaped like a government news portal.

The model (:class:`GeneratedSite`) plugs into :class:`demo.site_server.SiteServer` like the sample
site does, but is large and parameterised (:class:`SiteSpec`), so benchmarks can harvest thousands of
URLs and compare what was archived with exact ground truth (:meth:`GeneratedSite.truth`).

Shape (the National Library of China's gov.cn case, scaled by the spec):

- **Index pages** (re-read on every visit, dynamic): the home ``/`` (latest articles, sections),
  section homes ``/<section>/`` and paginated listings ``/<section>/list/index.htm``,
  ``index_1.htm``, ``index_2.htm`` ... newest first, so a new article shifts every later page.
- **Content pages**: articles ``/<section>/<yyyy-mm>/<dd>/content_<id>.htm`` with images
  (``.../<id>/images/<n>.jpg``), sometimes a PDF attachment (``.../<id>/files/<n>.pdf``) and links
  to related, older articles (which may be deleted in v2: a stale link, as on real sites).
- **Static files** shared by every page: CSS (with a ``url()``), JS, a logo; and ``/robots.txt``.

From v1 to v2: new articles (with their files), edited articles, articles whose footer noise alone
moved (visit counter, "generated at" time: ``NOISE_SELECTORS``), deleted articles (404, files too),
replaced images and PDFs, and every index page regenerated. Static files carry ``ETag`` and
``Last-Modified``; a share of HTML pages do too (``page_validator_share``), and a share are served
gzip-encoded to clients that accept it (``gzip_share``). Every byte depends only on the spec's seed,
the version and the path: no clock, no global randomness.

``python bench/sitegen.py --preset govcn`` prints the counts and sizes of a preset;
``--serve`` serves it on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import itertools
import math
import random
import re
import sys
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from html import escape
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from demo.site_server import Resource, SiteServer  # noqa: E402

__all__ = [
    "CHANGE_KINDS",
    "CONTENT_PATTERNS",
    "INDEX_PATTERNS",
    "NOISE_SELECTORS",
    "GeneratedSite",
    "PathTruth",
    "SiteSpec",
]

VERSION_DATES = {1: datetime(2024, 1, 15, 8, 0, tzinfo=UTC), 2: datetime(2024, 4, 15, 8, 0, tzinfo=UTC)}
CHANGE_KINDS = ("new", "changed", "soft", "unchanged", "deleted")
INDEX_PATTERNS = (r"^/$", r"^/[a-z]+/$", r"^/[a-z]+/list/index(?:_\d+)?\.htm$")
CONTENT_PATTERNS = (r"^/[a-z]+/\d{4}-\d{2}/\d{2}/content_\d+\.htm$",)
NOISE_SELECTORS = (".footer .counter", ".footer .generated")
_NOISE_RE = re.compile(rb'(<span class="(?:counter|generated)">)[^<]*(</span>)')

_SECTIONS = (
    ("zhengce", "政策"), ("xinwen", "新闻"), ("hudong", "互动"), ("fuwu", "服务"),
    ("shuju", "数据"), ("guowuyuan", "国务院"), ("zhuanti", "专题"), ("lianbo", "联播"),
    ("renwu", "人物"), ("gongbao", "公报"), ("difang", "地方"), ("bumen", "部门"),
    ("guoqing", "国情"), ("wenhua", "文化"), ("keji", "科技"), ("jiaoyu", "教育"),
    ("jingji", "经济"), ("shehui", "社会"), ("huanjing", "环境"), ("waishi", "外事"),
)  # fmt: skip
_CHARS = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面"
    "而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把"
    "性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质"
    "气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活"
    "设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则"
    "任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美"
    "再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元"
    "况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委"
)
_SOURCES = ("新华社", "人民日报", "中国政府网", "国务院办公厅", "国家统计局", "央视新闻")
_VOCAB_SIZE = 3000
_BOILERPLATE_SLACK = 400  # bytes the footer and closing tags add after the size check


@dataclasses.dataclass(frozen=True)
class SiteSpec:
    """Everything that shapes a generated site. Shares are of v1 articles unless said otherwise."""

    seed: int = 1
    sections: int = 8
    articles: int = 2000  # content pages in v1
    per_page: int = 20  # entries per listing page
    image_share: float = 0.35  # articles with images (1..max_images each)
    max_images: int = 3
    pdf_share: float = 0.06  # articles with one PDF attachment
    new_share: float = 0.10  # new articles in v2
    changed_share: float = 0.10  # articles edited in v2
    soft_share: float = 0.05  # articles whose footer noise alone moves in v2
    deleted_share: float = 0.01  # articles deleted in v2 (404, their files too)
    file_changed_share: float = 0.03  # images and PDFs of surviving articles replaced in v2
    page_validator_share: float = 1.0  # HTML pages sending ETag and/or Last-Modified
    gzip_share: float = 0.5  # HTML pages served gzip-encoded when the client accepts it
    html_kb: tuple[float, float] = (5, 30)
    image_kb: tuple[float, float] = (10, 100)
    pdf_kb: tuple[float, float] = (50, 300)

    @classmethod
    def preset(cls, name: str, **changes) -> SiteSpec:
        """``quick`` (about 700 URLs), ``issue2`` (about 3,600 URLs, 100 MB), ``govcn`` (about 7,400
        HTML pages in v1 and 8,100 in v2, about 1,800 new or changed, 230 MB) or ``100k`` (issue2's
        mix, about 100,000 URLs)."""
        presets = {
            "quick": dict(sections=4, articles=400),
            "issue2": dict(),
            # issue2's page mix at 28 x its size: about 100,000 URLs (2.8 GB) in v1, held in memory
            "100k": dict(articles=56_000),
            "govcn": dict(
                sections=20,
                articles=7030,
                image_share=0.15,
                pdf_share=0.04,
                new_share=0.105,
                changed_share=0.10,
                soft_share=0.08,
                deleted_share=0.006,
                page_validator_share=0.6,
            ),
        }
        if name not in presets:
            raise ValueError(f"unknown preset {name!r}; use one of {', '.join(presets)}")
        return dataclasses.replace(cls(**presets[name]), **changes)


@dataclasses.dataclass(frozen=True)
class PathTruth:
    """What the server sends for one path in v1 and v2 (sizes of the identity body; None: 404)."""

    path: str
    kind: str  # home | section | listing | article | image | pdf | static | robots
    page: str | None  # "index", "content" or None (not an HTML page)
    change: str  # v1 -> v2: one of CHANGE_KINDS
    size_v1: int | None
    size_v2: int | None
    mime: str
    gzip: bool  # sent gzip-encoded to clients that accept it
    validators: tuple[str, ...]  # "etag", "last-modified"

    def in_version(self, version: int) -> bool:
        return (self.size_v1 if version == 1 else self.size_v2) is not None


@dataclasses.dataclass
class _Article:
    n: int
    section: int
    published: datetime
    in_v1: bool
    in_v2: bool
    edited: bool = False
    soft: bool = False
    images: list[str] = dataclasses.field(default_factory=list)
    pdfs: list[str] = dataclasses.field(default_factory=list)
    related: list[int] = dataclasses.field(default_factory=list)

    @property
    def cid(self) -> int:
        return 5_100_000 + self.n * 7

    @property
    def dir(self) -> str:
        d = self.published
        return f"/{_SECTIONS[self.section][0]}/{d:%Y-%m}/{d:%d}"

    @property
    def path(self) -> str:
        return f"{self.dir}/content_{self.cid}.htm"

    def live(self, version: int) -> bool:
        return self.in_v1 if version == 1 else self.in_v2


@dataclasses.dataclass
class _File:
    path: str
    kind: str  # image | pdf
    article: int
    replaced: bool  # a new body in v2


def _rng(*parts: object) -> random.Random:
    return random.Random(":".join(map(str, parts)))


def _hash_int(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "big")


def _log_uniform(rng: random.Random, lo_kb: float, hi_kb: float) -> int:
    return int(1024 * math.exp(rng.uniform(math.log(lo_kb), math.log(hi_kb))))


def _http_date(when: datetime) -> str:
    return format_datetime(when, usegmt=True)


class GeneratedSite:
    """The content model. ``resolve(version, path, headers)`` gives a ``Resource`` or None (404).

    Bodies are generated on first use and cached (an unchanged body is one object shared by both
    versions), so serving costs no generation time once :meth:`truth` or :meth:`warm` has run.
    """

    versions = (1, 2)
    INDEX_PATTERNS = INDEX_PATTERNS
    CONTENT_PATTERNS = CONTENT_PATTERNS
    NOISE_SELECTORS = NOISE_SELECTORS

    def __init__(self, spec: SiteSpec | None = None):
        self.spec = spec or SiteSpec()
        if not 1 <= self.spec.sections <= len(_SECTIONS):
            raise ValueError(f"sections must be 1..{len(_SECTIONS)}")
        self._lock = threading.Lock()
        self._cache: dict[tuple, Resource] = {}
        self._truth: dict[str, PathTruth] | None = None
        self._vocab()
        self._plan()

    # -- the plan: which articles and files exist in which version --------------------------------
    def _vocab(self) -> None:
        rng = _rng(self.spec.seed, "vocab")
        self.words = ["".join(rng.choices(_CHARS, k=rng.choice((2, 2, 2, 3, 4)))) for _ in range(_VOCAB_SIZE)]
        self.cum_weights = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(_VOCAB_SIZE)))

    def _plan(self) -> None:
        spec = self.spec
        rng = _rng(spec.seed, "plan")
        n_new = round(spec.articles * spec.new_share)
        v1_date, v2_date = VERSION_DATES[1], VERSION_DATES[2]
        old = sorted(v1_date - timedelta(seconds=rng.uniform(86400, 730 * 86400)) for _ in range(spec.articles))
        new = sorted(
            v1_date + timedelta(seconds=rng.uniform(86400, (v2_date - v1_date).total_seconds() - 86400))
            for _ in range(n_new)
        )
        self.articles: list[_Article] = []
        for n, when in enumerate(old + new):
            when = when.replace(microsecond=0)
            self.articles.append(_Article(n, rng.randrange(spec.sections), when, n < spec.articles, True))
        v1_ids = list(range(spec.articles))
        picks = rng.sample(
            v1_ids, min(len(v1_ids), round(spec.articles * (spec.deleted_share + spec.changed_share + spec.soft_share)))
        )
        n_del, n_edit = round(spec.articles * spec.deleted_share), round(spec.articles * spec.changed_share)
        for i, n in enumerate(picks):
            art = self.articles[n]
            if i < n_del:
                art.in_v2 = False
            elif i < n_del + n_edit:
                art.edited = True
            else:
                art.soft = True
        by_section: dict[int, list[int]] = {}
        self.files: dict[str, _File] = {}
        for art in self.articles:
            arng = _rng(spec.seed, "article", art.n)
            earlier = by_section.setdefault(art.section, [])
            art.related = sorted(arng.sample(earlier[-50:], min(3, len(earlier[-50:]))), reverse=True)
            earlier.append(art.n)
            if arng.random() < spec.image_share:
                art.images = [
                    f"{art.dir}/{art.cid}/images/{k}.jpg" for k in range(1, arng.randint(1, spec.max_images) + 1)
                ]
            if arng.random() < spec.pdf_share:
                art.pdfs = [f"{art.dir}/{art.cid}/files/P0{art.cid}.pdf"]
            for path in art.images + art.pdfs:
                replaced = art.in_v1 and art.in_v2 and arng.random() < spec.file_changed_share
                self.files[path] = _File(path, "image" if path.endswith(".jpg") else "pdf", art.n, replaced)
        self.by_path = {art.path: art for art in self.articles}
        self.section_articles: dict[tuple[int, int], list[_Article]] = {}
        for version in self.versions:
            for s in range(spec.sections):
                live = [a for a in self.articles if a.section == s and a.live(version)]
                self.section_articles[version, s] = sorted(live, key=lambda a: a.published, reverse=True)

    # -- paths -------------------------------------------------------------------------------------
    def _listing_pages(self, version: int, section: int) -> int:
        return max(1, -(-len(self.section_articles[version, section]) // self.spec.per_page))

    @staticmethod
    def listing_path(section: int, page: int) -> str:
        name = _SECTIONS[section][0]
        return f"/{name}/list/index.htm" if page == 1 else f"/{name}/list/index_{page - 1}.htm"

    def paths(self, version: int) -> set[str]:
        """Every path that answers 200 in ``version`` (all reachable by links from ``/``)."""
        found = {"/", "/robots.txt", *_STATIC}
        for s in range(self.spec.sections):
            found.add(f"/{_SECTIONS[s][0]}/")
            found.update(self.listing_path(s, p) for p in range(1, self._listing_pages(version, s) + 1))
        for art in self.articles:
            if art.live(version):
                found.add(art.path)
                found.update(art.images + art.pdfs)
        return found

    def _route(self, path: str) -> tuple[str, object] | None:
        if path == "/":
            return "home", None
        if path == "/robots.txt":
            return "robots", None
        if path in _STATIC:
            return "static", None
        if path in self.by_path:
            return "article", self.by_path[path]
        if path in self.files:
            return self.files[path].kind, self.files[path]
        m = re.fullmatch(r"/([a-z]+)/(?:list/index(?:_(\d+))?\.htm)?", path)
        if m:
            names = [name for name, _ in _SECTIONS[: self.spec.sections]]
            if m.group(1) in names:
                s = names.index(m.group(1))
                if path.endswith("/"):
                    return "section", s
                return "listing", (s, int(m.group(2) or 0) + 1)
        return None

    # -- the content model -------------------------------------------------------------------------
    def resolve(self, version: int, path: str, request_headers: Mapping[str, str] | None = None) -> Resource | None:
        """What the server sends for ``path`` (query included: none exists here) in ``version``."""
        route = self._route(path)
        if route is None or version not in self.versions:
            return None
        kind, ref = route
        key = self._key(version, kind, ref, path)
        if key is None:
            return None
        with self._lock:
            res = self._cache.get(key)
        if res is None:
            res = self._build(version, kind, ref, path)
            with self._lock:
                res = self._cache.setdefault(key, res)
        return res

    def _key(self, version: int, kind: str, ref, path: str) -> tuple | None:
        """A cache key naming the body: equal keys, equal bytes (so unchanged paths share one)."""
        if kind in ("static", "robots"):
            return (path,)
        if kind in ("home", "section"):
            return (path, version)
        if kind == "listing":
            section, page = ref
            return (path, version) if page <= self._listing_pages(version, section) else None
        art = ref if kind == "article" else self.articles[ref.article]
        if not art.live(version):
            return None
        if kind == "article":
            moved = version == 2 and art.in_v1 and (art.edited or art.soft)
            return (path, 2 if moved else 1)
        return (path, 2 if version == 2 and ref.replaced else 1)

    def _build(self, version: int, kind: str, ref, path: str) -> Resource:
        if kind == "static":
            ctype, body = _STATIC[path]
            return self._static(path, ctype, body, VERSION_DATES[1] - timedelta(days=400))
        if kind == "robots":
            return self._static(
                path,
                "text/plain; charset=utf-8",
                b"User-agent: *\nDisallow: /search/\n",
                VERSION_DATES[1] - timedelta(days=400),
            )
        if kind in ("image", "pdf"):
            art = self.articles[ref.article]
            rev = 2 if version == 2 and ref.replaced else 1
            when = art.published if rev == 1 else VERSION_DATES[2] - timedelta(hours=_hash_int(path) % 72 + 1)
            body = self._image(path, rev) if kind == "image" else self._pdf(path, rev, art)
            return self._static(path, "image/jpeg" if kind == "image" else "application/pdf", body, when)
        if kind == "article":
            html, since = self._article(version, ref)
        elif kind == "listing":
            html, since = self._listing(version, *ref), VERSION_DATES[version]
        elif kind == "section":
            html, since = self._section(version, ref), VERSION_DATES[version]
        else:
            html, since = self._home(version), VERSION_DATES[version]
        body = html.encode("utf-8")
        validators = self._page_validators(path)
        return Resource(
            200,
            (("Content-Type", "text/html; charset=utf-8"),),
            body,
            chunked=kind != "article",  # dynamic pages stream
            gzip=_hash_int(self.spec.seed, "gzip", path) % 1000 < self.spec.gzip_share * 1000,
            etag=f'"{hashlib.sha1(body).hexdigest()[:20]}"' if "etag" in validators else None,
            last_modified=_http_date(since) if "last-modified" in validators else None,
        )

    def _page_validators(self, path: str) -> tuple[str, ...]:
        h = _hash_int(self.spec.seed, "validators", path)
        if h % 1000 >= self.spec.page_validator_share * 1000:
            return ()
        return (("etag",), ("last-modified",), ("etag", "last-modified"))[(h // 1000) % 3]

    @staticmethod
    def _static(path: str, ctype: str, body: bytes, modified: datetime) -> Resource:
        return Resource(
            200,
            (("Content-Type", ctype),),
            body,
            etag=f'"{hashlib.sha1(body).hexdigest()[:20]}"',
            last_modified=_http_date(modified),
        )

    # -- bodies --------------------------------------------------------------------------------------
    def _text(self, rng: random.Random, min_chars: int, max_chars: int) -> str:
        words = rng.choices(self.words, cum_weights=self.cum_weights, k=max(1, rng.randint(min_chars, max_chars) // 3))
        out, sentence = [], 0
        bits, uniform = rng.getrandbits, rng.random
        for w in words:
            out.append(w)
            sentence += 1
            # rng.randint(6, 18) as CPython draws it (4 bits, redrawn while >= 13), without its call
            # overhead: half of generating a site went there. Same draws, same bytes.
            r = bits(4)
            while r >= 13:
                r = bits(4)
            if sentence > 6 + r:
                out.append("。" if uniform() < 0.6 else "，")
                sentence = 0
        return "".join(out) + "。"

    def _title(self, n: int) -> str:
        return self._text(_rng(self.spec.seed, "title", n), 14, 40).rstrip("。")

    def _footer(self, path: str, epoch: int) -> str:
        visits = 1000 + _hash_int("visits", path, epoch) % 900_000
        when = VERSION_DATES[epoch] + timedelta(seconds=_hash_int("generated", path, epoch) % 86400)
        return (
            f'<div class="footer"><p>主办：示例办公厅 | 网站标识码 bm01000001 | 京ICP备00000000号</p>\n'
            f'<p><span class="counter">访问量：{visits}</span> | '
            f'<span class="generated">生成时间：{when:%Y-%m-%d %H:%M:%S}</span></p></div>\n'
        )

    def _page(self, title: str, crumbs: str, main: str, path: str, epoch: int, description: str = "") -> str:
        nav = "".join(f'<li><a href="/{name}/">{label}</a></li>' for name, label in _SECTIONS[: self.spec.sections])
        return (
            '<!DOCTYPE html>\n<html lang="zh-CN">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{escape(title)}_示例政府网</title>\n"
            f'<meta name="description" content="{escape(description[:120])}">\n'
            '<link rel="stylesheet" href="/static/css/main.css">\n<script src="/static/js/main.js"></script>\n'
            '</head>\n<body>\n<div class="header"><a href="/"><img src="/static/img/logo.png" alt="示例政府网" '
            f'width="200" height="60"></a>\n<ul class="nav"><li><a href="/">首页</a></li>{nav}</ul></div>\n'
            f'<div class="crumb"><a href="/">首页</a>{crumbs}</div>\n{main}\n{self._footer(path, epoch)}'
            "</body>\n</html>\n"
        )

    def _item(self, art: _Article) -> str:
        return (
            f'<li><a href="{art.path}" target="_blank">{escape(self._title(art.n))}</a>'
            f'<span class="date">{art.published:%Y-%m-%d}</span></li>'
        )

    def _article(self, version: int, art: _Article) -> tuple[str, datetime]:
        spec = self.spec
        rng = _rng(spec.seed, "body", art.n)
        target = _log_uniform(rng, *spec.html_kb)
        edited = version == 2 and art.in_v1 and art.edited
        moved = version == 2 and art.in_v1 and (art.edited or art.soft)
        since = VERSION_DATES[2] - timedelta(hours=_hash_int("edit", art.n) % 72 + 1) if moved else art.published
        name, label = _SECTIONS[art.section]
        title = self._title(art.n)
        figures = "".join(
            f'<p style="text-align:center"><img src="{src}" alt="{escape(title)}" width="600"></p>\n'
            for src in art.images
        )
        attach = "".join(f'<p class="attach">附件：<a href="{href}">{escape(title)}.pdf</a></p>\n' for href in art.pdfs)
        related = "".join(self._item(self.articles[n]) for n in art.related)
        head = (
            f'<div class="article">\n<h1>{escape(title)}</h1>\n<div class="info"><span class="date">'
            f'{art.published:%Y-%m-%d %H:%M}</span> <span class="source">来源：{rng.choice(_SOURCES)}</span></div>\n'
            f'<div class="content" id="UCAP-CONTENT">\n'
        )
        tail = f'</div>\n{attach}<div class="related"><h3>相关文章</h3><ul>\n{related}</ul></div>\n</div>'
        paragraphs: list[str] = []
        size = len(self._page(title, "", head + figures + tail, art.path, 1).encode()) + _BOILERPLATE_SLACK
        edit_rng = _rng(spec.seed, "edit", art.n)
        edit_at = {edit_rng.randrange(8) for _ in range(2)}
        while size < target:
            text = self._text(rng, 150, 600)
            if edited and len(paragraphs) in edit_at:
                text = self._text(edit_rng, 150, 600)
            paragraphs.append(f"<p>{text}</p>\n")
            size += len(paragraphs[-1].encode())
        if edited:
            paragraphs.append(f'<p class="update">（{since:%Y年%m月%d日}更新）</p>\n')
        crumbs = f' &gt; <a href="/{name}/">{label}</a> &gt; 正文'
        main = head + "".join(paragraphs[:1]) + figures + "".join(paragraphs[1:]) + tail
        epoch = 2 if moved else 1
        return self._page(title, crumbs, main, art.path, epoch, description=paragraphs[0] if paragraphs else ""), since

    def _listing(self, version: int, section: int, page: int) -> str:
        name, label = _SECTIONS[section]
        arts = self.section_articles[version, section]
        per = self.spec.per_page
        pages = self._listing_pages(version, section)
        items = "\n".join(self._item(a) for a in arts[(page - 1) * per : page * per])
        shown = sorted({1, pages, *range(page - 2, page + 3), *range(10, pages + 1, 10)} & set(range(1, pages + 1)))
        pager = " ".join(
            f"<span>{p}</span>" if p == page else f'<a href="{self.listing_path(section, p)}">{p}</a>' for p in shown
        )
        main = (
            f'<div class="list"><h2>{label}</h2><ul>\n{items}\n</ul></div>\n'
            f'<div class="pager">共{pages}页 {pager}</div>'
        )
        crumbs = f' &gt; <a href="/{name}/">{label}</a> &gt; 列表'
        return self._page(f"{label}列表 第{page}页", crumbs, main, self.listing_path(section, page), version)

    def _section(self, version: int, section: int) -> str:
        name, label = _SECTIONS[section]
        arts = self.section_articles[version, section]
        intro = self._text(_rng(self.spec.seed, "intro", section), 200, 400)
        latest = "\n".join(self._item(a) for a in arts[:15])
        main = (
            f'<div class="section"><h2>{label}</h2><p>{intro}</p>\n<ul class="latest">\n{latest}\n</ul>\n'
            f'<p class="more"><a href="{self.listing_path(section, 1)}">更多{label}</a></p></div>'
        )
        return self._page(label, f' &gt; <a href="/{name}/">{label}</a>', main, f"/{name}/", version)

    def _home(self, version: int) -> str:
        live = [a for a in self.articles if a.live(version)]
        latest = "\n".join(self._item(a) for a in sorted(live, key=lambda a: a.published, reverse=True)[:10])
        blocks = []
        for s in range(self.spec.sections):
            name, label = _SECTIONS[s]
            items = "\n".join(self._item(a) for a in self.section_articles[version, s][:5])
            blocks.append(f'<div class="block"><h2><a href="/{name}/">{label}</a></h2><ul>\n{items}\n</ul></div>')
        main = f'<div class="headline"><h2>要闻</h2><ul>\n{latest}\n</ul></div>\n' + "\n".join(blocks)
        return self._page("首页", "", main, "/", version)

    def _image(self, path: str, rev: int) -> bytes:
        rng = _rng(self.spec.seed, "image", path, rev)
        size = _log_uniform(_rng(self.spec.seed, "image-size", path), *self.spec.image_kb)
        head = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x48\x00\x48\x00\x00"
        return head + rng.randbytes(max(0, size - len(head) - 2)) + b"\xff\xd9"  # entropy-coded data: incompressible

    def _pdf(self, path: str, rev: int, art: _Article) -> bytes:
        """A valid one-page PDF (its title as text) padded with an unreferenced binary stream, as
        compressed images and fonts fill real PDFs."""
        rng = _rng(self.spec.seed, "pdf", path, rev)
        size = _log_uniform(_rng(self.spec.seed, "pdf-size", path), *self.spec.pdf_kb)
        text = f"Attachment {art.cid} revision {rev}".encode("latin-1")
        content = b"BT /F1 14 Tf 72 720 Td (" + text + b") Tj ET"
        pad = rng.randbytes(max(0, size - 900))
        objects = [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents "
            b"5 0 R >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
            b"<< /Length %d >>\nstream\n%s\nendstream" % (len(pad), pad),
        ]
        out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
        offsets = []
        for number, obj in enumerate(objects, 1):
            offsets.append(len(out))
            out += b"%d 0 obj\n%s\nendobj\n" % (number, obj)
        xref = len(out)
        out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
        out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
        out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
        return bytes(out)

    # -- ground truth ------------------------------------------------------------------------------
    @staticmethod
    def strip_noise(body: bytes) -> bytes:
        return _NOISE_RE.sub(rb"\1\2", body)

    @staticmethod
    def page_kind(path: str) -> str | None:
        if any(re.search(p, path) for p in INDEX_PATTERNS):
            return "index"
        if any(re.search(p, path) for p in CONTENT_PATTERNS):
            return "content"
        return None

    def truth(self) -> dict[str, PathTruth]:
        """Every path of v1 or v2, with its change kind v1 -> v2 worked out from the bytes served."""
        if self._truth is not None:
            return self._truth
        truth = {}
        for path in sorted(self.paths(1) | self.paths(2)):
            kind = self._route(path)[0]
            old, new = self.resolve(1, path), self.resolve(2, path)
            if old is None:
                change = "new"
            elif new is None:
                change = "deleted"
            elif old.body == new.body:
                change = "unchanged"
            elif self.strip_noise(old.body) == self.strip_noise(new.body):
                change = "soft"
            else:
                change = "changed"
            res = new or old
            truth[path] = PathTruth(
                path,
                kind,
                self.page_kind(path),
                change,
                len(old.body) if old else None,
                len(new.body) if new else None,
                (res.content_type or "").split(";")[0],
                res.gzip,
                tuple(v for v, on in (("etag", res.etag), ("last-modified", res.last_modified)) if on),
            )
        self._truth = truth
        return truth

    def warm(self) -> None:
        """Generate every body of both versions now (so serving is not slowed by generation)."""
        self.truth()

    def wire_body(self, version: int, path: str, accept_gzip: bool = True) -> bytes | None:
        """The payload bytes a client gets (gzip-encoded exactly as SiteServer does it)."""
        res = self.resolve(version, path)
        if res is None:
            return None
        return gzip.compress(res.body, mtime=0) if (res.gzip and accept_gzip) else res.body

    def stats(self) -> dict:
        truth = self.truth()
        out: dict = {
            "urls_v1": 0,
            "urls_v2": 0,
            "html_v1": 0,
            "html_v2": 0,
            "bytes_v1": 0,
            "bytes_v2": 0,
            "by_kind": {},
            "changes": dict.fromkeys(CHANGE_KINDS, 0),
            "html_changes": dict.fromkeys(CHANGE_KINDS, 0),
        }
        for t in truth.values():
            for v, size in ((1, t.size_v1), (2, t.size_v2)):
                if size is not None:
                    out[f"urls_v{v}"] += 1
                    out[f"bytes_v{v}"] += size
                    out[f"html_v{v}"] += t.page is not None
            k = out["by_kind"].setdefault(t.kind, {"v1": 0, "v2": 0, "bytes_v1": 0})
            k["v1"] += t.size_v1 is not None
            k["v2"] += t.size_v2 is not None
            k["bytes_v1"] += t.size_v1 or 0
            out["changes"][t.change] += 1
            if t.page:
                out["html_changes"][t.change] += 1
        return out


_CSS = """body { font-family: "Microsoft YaHei", sans-serif; margin: 0;
  background: #f4f4f4 url(../img/bg.png) repeat-x; }
.header { background: #b30000; color: #fff; } .nav li { display: inline-block; margin: 0 0.6em; }
.list li, .latest li { line-height: 2; } .date { float: right; color: #888; }
.article h1 { font-size: 1.6em; text-align: center; } .content p { text-indent: 2em; line-height: 1.9; }
.footer { border-top: 2px solid #b30000; color: #666; font-size: 0.85em; text-align: center; }
"""
_JS = "// Marks the page as scripted; loads nothing else.\ndocument.documentElement.className += ' js';\n"
_STATIC: dict[str, tuple[str, bytes]] = {
    "/static/css/main.css": ("text/css; charset=utf-8", _CSS.encode()),
    "/static/js/main.js": ("application/javascript; charset=utf-8", _JS.encode()),
    "/static/img/logo.png": ("image/png", b"\x89PNG\r\n\x1a\n" + _rng("logo").randbytes(2400)),
    "/static/img/bg.png": ("image/png", b"\x89PNG\r\n\x1a\n" + _rng("bg").randbytes(400)),
}


def _size(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python bench/sitegen.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="issue2", help="quick, issue2 (default), govcn or 100k")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--serve", type=int, choices=(1, 2), help="serve this version until interrupted")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each response")
    args = parser.parse_args(argv)
    started = time.monotonic()
    site = GeneratedSite(SiteSpec.preset(args.preset, seed=args.seed))
    s = site.stats()
    print(f"preset {args.preset}, seed {args.seed}: generated in {time.monotonic() - started:.1f} s")
    print(
        f"v1: {s['urls_v1']} URLs ({s['html_v1']} HTML), {_size(s['bytes_v1'])}; "
        f"v2: {s['urls_v2']} URLs ({s['html_v2']} HTML), {_size(s['bytes_v2'])}"
    )
    for kind, k in sorted(s["by_kind"].items()):
        print(f"  {kind:<8} v1 {k['v1']:>6}  v2 {k['v2']:>6}  {_size(k['bytes_v1']):>9} in v1")
    print("changes v1->v2, all URLs: " + ", ".join(f"{k} {v}" for k, v in s["changes"].items()))
    print("changes v1->v2, HTML:     " + ", ".join(f"{k} {v}" for k, v in s["html_changes"].items()))
    if args.serve:
        with SiteServer(site, args.serve, port=args.port, latency=args.latency) as server:
            print(f"serving v{args.serve} at {server.base_url}/ (Ctrl-C to stop)", flush=True)
            try:
                threading.Event().wait()
            except KeyboardInterrupt:
                pass


if __name__ == "__main__":
    main()
