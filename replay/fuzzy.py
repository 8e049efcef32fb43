"""Fuzzy matching as of the snapshot, with one stated rule for cache-busting query parameters.

Scripts add a parameter whose value changes on every call (``/api/list.json?page=1&_=<Date.now()>``)
so that no cache answers them; replay asks for a value no capture has. pywb then looks the URL up
by its fuzzy rules, which drop the requested time (``closest`` is among the parameters a fuzzy
query leaves out) and take the first candidate in index order, often an earlier snapshot's; and
its general rule accepts any query on the same path for a file with an extension, so page 2 of a
list could answer for page 1. Strata replaces that with, in order:

1. **The cache-buster rule.** A query parameter is a cache-buster when its name is one of
   ``CACHE_BUSTERS`` and its value is 8 or more digits (``Date.now()``, seconds since 1970) or ``0.``
   and 6 or more digits (``Math.random()``). A URL with no capture of its own is matched to the
   captures of the URLs that equal it once both lose their cache-busters (same scheme, host,
   path, and every other parameter with its value), and of those the one as of the requested
   time is taken: the most recent at or before the end of the snapshot (``replay.snapshots``),
   else the earliest after, exactly as for any other URL (``replay.asof``).
2. **pywb's own rules** (``rules.yaml``), only when the first finds nothing, with what they
   match ordered as of the requested time too (captures of one second keep pywb's index order).

Either way the match is never served as the URL asked for: ``replay.rewriter`` redirects to the
matched capture's own address (``id_`` answers 404), so the address, and the banner on a page,
name what is shown.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pywb.utils.format import to_bool
from pywb.warcserver.index.fuzzymatcher import FuzzyMatcher

CACHE_BUSTERS = frozenset({"_", "cb", "uncache", "nocache", "t", "ts", "timestamp", "rnd", "rand", "random"})
_BUSTER_VALUE = re.compile(r"\d{8,}|0\.\d{6,}")


def is_cache_buster(name: str, value: str) -> bool:
    return name in CACHE_BUSTERS and bool(_BUSTER_VALUE.fullmatch(value))


def without_cache_busters(url: str) -> str | None:
    """``url`` less its cache-busting parameters (other parameters in their order), or None when
    it has none."""
    parts = urlsplit(url)
    if not parts.query:
        return None
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    kept = [(k, v) for k, v in pairs if not is_cache_buster(k, v)]
    if len(kept) == len(pairs):
        return None
    return urlunsplit(parts._replace(query=urlencode(kept), fragment=""))


def same_resource(asked: str, captured: str) -> bool:
    """The cache-buster rule: equal once both lose their cache-busters (parameter order aside)."""
    a, b = urlsplit(asked), urlsplit(captured)
    if (a.scheme, a.netloc.lower(), a.path) != (b.scheme, b.netloc.lower(), b.path):
        return False
    return _kept(a.query) == _kept(b.query)


def _kept(query: str) -> list[tuple[str, str]]:
    return sorted((k, v) for k, v in parse_qsl(query, keep_blank_values=True) if not is_cache_buster(k, v))


class SnapshotFuzzyMatcher(FuzzyMatcher):
    """pywb's matcher with the cache-buster rule first, and its matches ordered as of the time asked."""

    def get_fuzzy_iter(self, cdx_iter, index_source, params):
        found = False
        for cdx in cdx_iter:
            found = True
            yield cdx
        if found or not to_bool(params.get("allowFuzzy", True)):
            return
        # the index source has replaced ``closest`` by the end of its snapshot (replay.asof)
        closest = params.get("closest")
        url = params.get("url") or ""
        matched = list(self._cache_buster_matches(index_source, params, url)) if without_cache_busters(url) else []
        if not matched:
            matched = list(super().get_fuzzy_iter(iter(()), index_source, params))
        yield from as_of(matched, closest) if closest else matched

    def _cache_buster_matches(self, index_source, params: dict, url: str):
        """The captures the cache-buster rule allows, in index order."""
        query = {key: value for key, value in params.items() if key not in _NOT_PASSED}
        # no limit: the rule, not the index order, picks among the path's captures
        query.update(url=url.split("?", 1)[0] + "?", matchType="prefix")
        cdx_iter, _errs = index_source(query)
        for cdx in cdx_iter:
            if same_resource(url, cdx.get("url") or ""):
                cdx["is_fuzzy"] = "1"
                yield cdx


_NOT_PASSED = {"url", "matchType", "filter", "key", "end_key", "alt_url", "limit", "closest", "reverse"}


def as_of(captures: list, closest: str) -> list:
    """Captures at or before ``closest`` (14 digits), newest first, then later ones, earliest first;
    captures of one second keep their order (the index's, as pywb's matcher had them)."""
    before = [c for c in captures if c["timestamp"] <= closest]
    after = [c for c in captures if c["timestamp"] > closest]
    return sorted(before, key=lambda c: c["timestamp"], reverse=True) + sorted(after, key=lambda c: c["timestamp"])
