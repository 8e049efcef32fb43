"""What a search asks: its query, parsed safely, and its parameters, checked.

The query language is small and parsed here, not by Whoosh's ``QueryParser``: words, ``"quoted
phrases"``, ``AND``/``OR``/``NOT`` (upper case), ``-word``, parentheses and ``word*`` (a prefix of
at least ``MIN_PREFIX`` letters, expanded to a bounded number of terms by ``index.fulltext.matching``).
Nothing else has a meaning, so ``field:value``, ``?*?*``, ``[a TO z]``, ``word~``, ``^boost`` are
plain text (their punctuation is dropped by the analyzer): a user cannot reach the filter fields
(collection, site, type, date) or Whoosh's wildcard, range and fuzzy expansions. Filters come only
from parameters (``SearchParams``, whose fields ``index.fulltext.fields`` declares). Limits:
``MAX_QUERY_CHARS`` characters, ``MAX_TERMS`` words and phrases, ``MAX_DEPTH`` nested parentheses.

A word is searched in the title, meta description and keywords, and the main text, and in scope
``all`` also in the boilerplate; English words by their stems. A Chinese or Japanese word of
several characters is the phrase of its bigrams (``index.fulltext.cjk``); a single CJK character
matches wherever it is.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime

from index.fulltext.cjk import CJKBigramAnalyzer, is_cjk, normalize
from index.fulltext.filters import MetaFilters
from index.fulltext.text import MIME_GROUPS
from strata.errors import QueryError

__all__ = ["MAX_PER_PAGE", "SORTS", "ParsedQuery", "SearchParams", "parse_query", "parse_when"]

MAX_QUERY_CHARS = 500
MAX_TERMS = 32
MAX_DEPTH = 12
MAX_PHRASE_TOKENS = 48
MAX_PER_PAGE = 100
SORTS = ("relevance", "date", "oldest")

_ANALYZER = CJKBigramAnalyzer()
_PREFIX_ANALYZER = CJKBigramAnalyzer(stemming=False)
MIN_PREFIX = 2  # letters before a prefix's *


# -- dates ---------------------------------------------------------------------------------------

_DATE_RE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")


def parse_when(value: str | None, end: bool = False) -> str | None:
    """A 14-digit UTC timestamp from a date (``2024``, ``2024-03``, ``2024-03-05``), an ISO 8601
    date-time (``2024-03-05T12:00``, with ``Z`` or an offset) or digits (``20240305``,
    ``20240305120000``). ``end`` rounds up: ``2024-03`` ends at ``20240331235959``."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    if text.isdigit() and len(text) in (4, 6, 8, 10, 12, 14):
        digits = text
    elif match := _DATE_RE.match(text):
        digits = "".join(g for g in match.groups() if g)
    else:
        try:
            dt = datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
        except ValueError:
            raise QueryError(
                f"{text!r} is not a date: use 2024, 2024-03, 2024-03-05, 2024-03-05T12:00:00Z "
                "or a 14-digit timestamp such as 20240305120000"
            ) from None
        if dt.tzinfo is not None:
            dt = dt.astimezone(UTC)
        return dt.strftime("%Y%m%d%H%M%S")
    pad_low, pad_high = "00000101000000", "99991231235959"
    stamp = digits + (pad_high if end else pad_low)[len(digits) :]
    if end and len(digits) == 6:  # the last day of that month
        year, month = int(digits[:4]), int(digits[4:6])
        nxt = datetime(year + (month == 12), month % 12 + 1, 1)
        stamp = digits + f"{(nxt - datetime(year, month, 1)).days:02d}235959"
    try:
        datetime.strptime(stamp, "%Y%m%d%H%M%S")
    except ValueError:
        raise QueryError(f"{text!r} is not a valid date or timestamp") from None
    return stamp


# -- the query language --------------------------------------------------------------------------

_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\uff02": '"', "\u300c": '"', "\u300d": '"'})


def _lex(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "()":
            tokens.append(("(" if ch == "(" else ")", ch))
            i += 1
        elif ch == '"':
            close = text.find('"', i + 1)
            if close < 0:
                raise QueryError('a quoted phrase is not closed: add the closing "')
            tokens.append(("phrase", text[i + 1 : close]))
            i = close + 1
        elif (
            ch == "-"
            and i + 1 < n
            and not text[i + 1].isspace()
            and (not tokens or text[i - 1 : i].isspace() or text[i - 1 : i] == "(")
        ):
            tokens.append(("NOT", "-"))
            i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '()"':
                j += 1
            word = text[i:j]
            if word in ("AND", "OR", "NOT"):
                tokens.append((word, word))
            elif len(word) > 1 and word.endswith("*") and "*" not in word.rstrip("*"):
                tokens.append(("prefix", word.rstrip("*")))
            else:
                tokens.append(("word", word))
            i = j
    return tokens


class _Parser:
    """words, "phrases", AND / OR / NOT / -, parentheses. AND binds tighter than OR; juxtaposition is AND."""

    def __init__(self, tokens: list[tuple[str, str]]):
        self.tokens = tokens
        self.i = 0
        self.terms = 0

    def peek(self) -> str:
        return self.tokens[self.i][0] if self.i < len(self.tokens) else "EOF"

    def take(self) -> tuple[str, str]:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def parse(self):
        node = self.parse_or(0)
        if self.peek() != "EOF":
            raise QueryError("unbalanced parentheses: remove the extra ')'")
        return node

    def parse_or(self, depth: int):
        items = [self.parse_and(depth)]
        while self.peek() == "OR":
            self.take()
            if self.peek() in ("EOF", ")", "OR", "AND"):
                raise QueryError("OR needs a word or phrase on each side")
            items.append(self.parse_and(depth))
        return items[0] if len(items) == 1 else ("or", items)

    def parse_and(self, depth: int):
        if self.peek() in ("EOF", ")", "OR", "AND"):
            raise QueryError(f"expected a word or phrase, found {self._describe()}")
        items = [self.parse_unary(depth)]
        while self.peek() not in ("EOF", ")", "OR"):
            if self.peek() == "AND":
                self.take()
                if self.peek() in ("EOF", ")", "OR", "AND"):
                    raise QueryError("AND needs a word or phrase on each side")
            items.append(self.parse_unary(depth))
        return items[0] if len(items) == 1 else ("and", items)

    def parse_unary(self, depth: int):
        negations = 0
        while self.peek() == "NOT":
            self.take()
            negations += 1
        if negations and self.peek() in ("EOF", ")", "OR", "AND"):
            raise QueryError("NOT needs a word, phrase or group after it")
        node = self.parse_atom(depth)
        return ("not", node) if negations % 2 else node

    def parse_atom(self, depth: int):
        kind, value = self.take()
        if kind == "(":
            if depth + 1 > MAX_DEPTH:
                raise QueryError(f"parentheses are nested more than {MAX_DEPTH} deep: simplify the query")
            node = self.parse_or(depth + 1)
            if self.peek() != ")":
                raise QueryError("a '(' is never closed: add the ')'")
            self.take()
            return node
        if kind in ("word", "phrase", "prefix"):
            self.terms += 1
            if self.terms > MAX_TERMS:
                raise QueryError(f"the query has more than {MAX_TERMS} words and phrases: use fewer")
            return (kind, value)
        raise QueryError(f"unexpected {value!r}")

    def _describe(self) -> str:
        return "the end of the query" if self.peek() == "EOF" else repr(self.tokens[self.i][1])


@dataclasses.dataclass
class ParsedQuery:
    tree: object  # the parse tree; None for an empty query (filters only)
    terms: set[str]  # positive analysed terms, for highlighting
    prefixes: set[str]  # single CJK characters searched as prefixes
    word_prefixes: set[str] = dataclasses.field(default_factory=set)  # arch* -> arch, for highlighting


def parse_query(text: str) -> ParsedQuery:
    """Check and parse a user's query. Raises ``QueryError`` with a message a reader can act on."""
    text = normalize(text or "").translate(_QUOTES).strip()
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is {len(text)} characters long; the limit is {MAX_QUERY_CHARS}: shorten it")
    if not text:
        return ParsedQuery(None, set(), set())
    tree = _Parser(_lex(text)).parse()
    terms: set[str] = set()
    prefixes: set[str] = set()
    word_prefixes: set[str] = set()
    tree = _analyse(tree, terms, prefixes, positive=True, word_prefixes=word_prefixes)
    if tree is None:
        raise QueryError(
            "the query has no searchable words (common English words, single letters and punctuation are not indexed)"
        )
    return ParsedQuery(tree, terms, prefixes, word_prefixes)


def _analyse(node, terms: set[str], prefixes: set[str], positive: bool, word_prefixes: set[str] | None = None):
    """Replace words and phrases by their analysed tokens; drop what analyses to nothing. A prefix
    (``arch*``) of one word of letters or digits is ``("prefix", "arch")``; any other prefix (CJK:
    its bigrams already match inside longer words) is searched as the word."""
    kind = node[0]
    word_prefixes = set() if word_prefixes is None else word_prefixes
    if kind == "prefix":
        plain = [t.text for t in _PREFIX_ANALYZER(node[1], mode="query", removestops=False)]
        if len(plain) == 1 and not is_cjk(plain[0]) and len(plain[0]) >= MIN_PREFIX:
            if positive:
                word_prefixes.add(plain[0])
            return ("prefix", plain[0])
        if len(plain) == 1 and not is_cjk(plain[0]):
            raise QueryError(f"a prefix needs at least {MIN_PREFIX} letters before the *: {node[1]}*")
        kind, node = "word", ("word", node[1])
    if kind in ("word", "phrase"):
        tokens = [t.text for t in _ANALYZER(node[1], mode="query")][:MAX_PHRASE_TOKENS]
        if not tokens:
            return None
        if positive:
            terms.update(tokens)
            if kind == "word" and len(tokens) == 1 and len(tokens[0]) == 1 and is_cjk(tokens[0]):
                prefixes.add(tokens[0])
        return ("tokens", tokens, kind == "word")
    if kind == "not":
        inner = _analyse(node[1], terms, prefixes, not positive, word_prefixes)
        return None if inner is None else ("not", inner)
    items = [
        x for x in (_analyse(child, terms, prefixes, positive, word_prefixes) for child in node[1]) if x is not None
    ]
    if not items:
        return None
    return items[0] if len(items) == 1 else (kind, items)


# -- parameters -------------------------------------------------------------------------------


@dataclasses.dataclass
class SearchParams:
    q: str = ""
    date_from: str | None = None
    date_to: str | None = None
    site: str | None = None
    type: str | None = None
    collections: list[str] | None = None  # None: every collection under the root
    sort: str = "relevance"
    page: int | str = 1  # str: a form's text, until checked() makes it an int
    per_page: int | str = 10
    # metadata filters and the scope (index.fulltext.filters); checked() makes them one MetaFilters
    title: str | None = None
    author: str | None = None
    keyword: str | None = None
    lang: str | None = None
    published_from: str | None = None
    published_to: str | None = None
    scope: str = "all"
    meta: MetaFilters | None = None

    def checked(self) -> SearchParams:
        if self.sort not in SORTS:
            raise QueryError(f"sort must be one of {', '.join(SORTS)}, not {self.sort!r}")
        try:
            page, per_page = int(self.page), int(self.per_page)
        except (TypeError, ValueError):
            raise QueryError("page and per_page must be whole numbers") from None
        if page < 1 or page > 1000:
            raise QueryError("page must be from 1 to 1000")
        if not 1 <= per_page <= MAX_PER_PAGE:
            raise QueryError(f"per_page must be from 1 to {MAX_PER_PAGE}")
        kind = (self.type or "").strip().lower() or None
        if kind and kind not in MIME_GROUPS and not re.fullmatch(r"[a-z0-9.+-]+/[a-z0-9.+-]+", kind):
            raise QueryError(f"type must be one of {', '.join(MIME_GROUPS)} or a MIME type such as application/pdf")
        site = (self.site or "").strip().lower() or None
        if site:
            site = re.sub(r"^[a-z][a-z0-9+.-]*://", "", site).split("/")[0].split(":")[0].strip(".")
            if not site or len(site) > 253 or not re.fullmatch(r"[a-z0-9.\-_\[\]]+", site):
                raise QueryError("site must be a host name or domain such as example.org")
        lo, hi = parse_when(self.date_from), parse_when(self.date_to, end=True)
        if lo and hi and lo > hi:
            raise QueryError("the 'from' date is after the 'to' date")
        meta = MetaFilters.checked(
            title=self.title,
            author=self.author,
            keyword=self.keyword,
            lang=self.lang,
            published_from=self.published_from,
            published_to=self.published_to,
            scope=self.scope,
        )
        return dataclasses.replace(
            self,
            sort=self.sort,
            page=page,
            per_page=per_page,
            type=kind,
            site=site,
            date_from=lo,
            date_to=hi,
            meta=meta,
            scope=meta.scope,
        )
