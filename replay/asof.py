"""As-of capture selection: the archive as it stood at a moment.

pywb sorts the captures of a URL by distance from the requested timestamp in either direction
(``cdx_sort_closest``), so a snapshot page can pick up a capture from a later harvest. Strata
orders them instead as the NDL's WARP rule says: the most recent capture at or before the
requested time first (newest first), then, only as a fallback, the later captures (earliest
first). pywb's loader takes the first candidate it can load, so this ordering alone gives
"at or before, else the earliest later". A requested time that falls during a finished run is
read as that run's end (``replay.snapshots``): what a page's scripts asked for seconds after its
navigation belongs to the same snapshot as the page.

``AsOfIndexSource`` is pywb's directory index source (every ``*.cdx``/``*.cdxj`` under
``<root>/<coll>/indexes/``, as ``wayback`` reads them) with that ordering in place of
``closest``. The revisit original lookup of pywb's ``ResolvingLoader`` goes through the same
source (``closest=<WARC-Refers-To-Date>`` plus a digest filter); the original sits exactly at
that date, so it still comes first. On a root that uses Redis the index lines of ``index.cdxj``
come from the collection's sorted set (``redis``, see ``index.cdx.capture_index``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from pywb.utils.format import res_template
from pywb.utils.wbexception import NotFoundException
from pywb.warcserver.index.aggregator import DirectoryIndexSource
from pywb.warcserver.index.cdxops import (
    cdx_clamp,
    cdx_collapse_time_status,
    cdx_filter,
    cdx_limit,
    cdx_resolve_revisits,
    cdx_reverse,
)
from pywb.warcserver.index.query import CDXQuery
from warcio.timeutils import timestamp_now

from index.cdx.capture_index import IndexPart
from index.cdx.redis_cdx import RedisCdx
from index.collection import Collection
from replay.redis_index import RedisPartSource
from replay.snapshots import RunSpans
from strata.errors import CollectionError
from strata.times import pad_as_of


def _order_key(cdx) -> tuple:
    # Within one second, the record written later (later file, then later offset) is the newer one.
    try:
        offset = int(cdx.get("offset", 0))
    except ValueError:
        offset = 0
    return cdx["timestamp"], cdx.get("filename", ""), offset


def as_of_order(cdx_iter: Iterable, as_of: str, limit: int | None = None) -> Iterator:
    """Captures at or before ``as_of``, newest first, then later ones, earliest first."""
    as_of = pad_as_of(as_of)
    before: list = []
    after: list = []
    for cdx in cdx_iter:
        (before if cdx["timestamp"] <= as_of else after).append(cdx)
    before.sort(key=_order_key, reverse=True)
    after.sort(key=_order_key)
    ordered = before + after
    return iter(ordered if limit is None else ordered[:limit])


class AsOfIndexSource(DirectoryIndexSource):
    """pywb's per-collection directory index, answering ``closest=`` queries as of that time.

    Everything but the ordering is pywb's own ``BaseAggregator.__call__`` / ``process_cdx``
    (filters, from/to clamps, collapsing, limits), so the CDX server API keeps its meaning.
    """

    def __init__(self, *args, rules_for=None, redis: RedisCdx | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._listings: dict[str, tuple[tuple[int, int], list]] = {}
        self.rules_for = rules_for  # coll -> index.access.rules.RuleSet, for queries carrying ACCESS_PARAM
        self.redis = redis  # the root's Redis CDX (index.cdx.capture_index): index.cdxj is read from it
        self.spans = RunSpans(Path(self.base_prefix))  # a moment during a run means the run's snapshot

    def _iter_sources(self, params: dict):
        """The index files of the collection, listed again only when its directory changes (a
        file added, removed or atomically replaced). pywb's own cache does this too, but prints a
        line on every lookup; collection names are checked before they get here, so no glob."""
        the_dir = os.path.join(self.base_prefix, res_template(self.base_dir, params))
        try:
            st = os.stat(the_dir)
        except OSError:
            raise NotFoundException(the_dir) from None
        stamp = (st.st_mtime_ns, st.st_ino)
        cached = self._listings.get(the_dir)
        if cached is None or cached[0] != stamp:
            cached = (stamp, self._with_redis(params, list(self._load_files_single_dir(the_dir))))
            self._listings[the_dir] = cached
        return iter(cached[1])

    def _with_redis(self, params: dict, sources: list) -> list:
        """On a Redis root, ``index.cdxj`` read from the collection's set (``replay.redis_index``)."""
        if self.redis is None:
            return sources
        try:
            part = IndexPart.redis_set(Collection(Path(self.base_prefix), params.get("param.coll", "")), self.redis)
        except CollectionError:
            return sources
        name = os.path.relpath(str(part.path), self.base_prefix)
        kept = [(n, s) for n, s in sources if n != name]
        return sorted([*kept, (name, RedisPartSource(part))], key=lambda pair: pair[0])

    def __call__(self, params: dict):
        if params.get("closest") == "now":
            params["closest"] = timestamp_now()
        elif params.get("closest"):
            # as of the end of the run in progress at that moment (replay.snapshots): what a page's
            # scripts asked for later in the same run belongs to the same snapshot
            params["closest"] = self.spans.extend(params.get("param.coll", ""), pad_as_of(params["closest"]))
        if params.get("content_type"):
            params["filter"] = "=mime:" + params["content_type"]
        query = CDXQuery(params)
        cdx_iter, errs = self.load_index(query.params)
        if params.get(POSTED_PARAM):
            cdx_iter = self._or_posted(cdx_iter, params)
        level = params.get(ACCESS_PARAM)
        rules = self.rules_for(params.get("param.coll", "")) if level and self.rules_for else None
        if not query.page_count:
            cdx_iter = _process(cdx_iter, query, rules, level)
        return cdx_iter, dict(errs)

    def _or_posted(self, cdx_iter, params: dict):
        """The captures of exactly the URL asked for; when it has none, those of the same URL made
        by a request with a body (POST, PUT): pywb keys them with the body's parameters
        (``__wb_method=post&...``), so asking for the URL alone does not find them, though it is
        their own URL. pywb's fuzzy match (the first capture of any query on the path) is left for
        when there is none of those either."""
        lines = list(cdx_iter)
        url = params.get("url") or ""
        if lines or not url or params.get("matchType", "exact") != "exact":
            return iter(lines)
        asked = {k: v for k, v in params.items() if k not in ("key", "end_key", "alt_url")}
        query = CDXQuery({**asked, "url": url.split("?", 1)[0], "matchType": "prefix"})
        try:
            found, _ = self.load_index(query.params)
        except NotFoundException:
            return iter(())
        return iter([cdx for cdx in found if cdx.get("method") and cdx.get("url") == url])


POSTED_PARAM = "strata.posted"  # a replay lookup: a URL's POST captures count as its own (_or_posted)
RAW_PARAM = "strata.raw"  # a replay lookup for the archived bytes (id_): replay.warcserver serves them as they are
ACCESS_PARAM = "strata.access"  # the request's access level, set by Strata's own queries only
ACCESS_MARKER = "strata-access-blocked"


class AccessBlocked(Exception):
    """Every capture the query found is hidden from the level, at least one under a ``block`` rule.
    Not pywb's ``WbException``: pywb would try the next capture or answer 404."""

    def __init__(self, level_needed: str):
        super().__init__(f"{ACCESS_MARKER}: {level_needed}")
        self.level_needed = level_needed


def _visible_only(cdx_iter, rules, level: str, closest: bool):
    if rules is None or not rules.hides_from(level):
        return cdx_iter
    if not closest:  # a listing: the hidden are simply absent
        return rules.filter_cdx(cdx_iter, level)
    hidden: list = []
    shown = list(rules.filter_cdx(cdx_iter, level, hidden))
    if not shown:
        blocked = [v for v in hidden if v.access == "block"]
        if blocked:
            raise AccessBlocked(blocked[0].level)
    return shown


def _process(cdx_iter, query: CDXQuery, rules=None, level: str | None = None):
    if query.resolve_revisits:
        cdx_iter = cdx_resolve_revisits(cdx_iter)
    if query.filters:
        cdx_iter = cdx_filter(cdx_iter, query.filters)
    if query.from_ts or query.to_ts:
        cdx_iter = cdx_clamp(cdx_iter, query.from_ts, query.to_ts)
    if rules is not None and level:
        cdx_iter = _visible_only(cdx_iter, rules, level, bool(query.closest))
    if query.collapse_time:
        cdx_iter = cdx_collapse_time_status(cdx_iter, query.collapse_time)
    if query.closest:
        return as_of_order(cdx_iter, query.closest, query.limit)
    if query.reverse:
        return cdx_reverse(cdx_iter, query.limit)
    return cdx_limit(cdx_iter, query.limit)
