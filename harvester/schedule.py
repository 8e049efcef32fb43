"""When to look at a URL again: page kinds and adaptive recheck intervals.

Index pages (seeds, and pages matching ``index_patterns``) are re-read every incremental run. Content
pages are fetched when new and afterwards when *due*: each one's change rate is estimated from its
history with the Poisson estimator of Cho and Garcia-Molina ("Estimating frequency of change", 2003),
which accounts for checks that saw no change:

    rate = -ln((n - X + 0.5) / (n + 0.5)) / I

for ``n`` checks at mean interval ``I`` of which ``X`` saw a change. The next check is due one mean
change interval (1/rate) after the last, clamped to the job's ``min_interval`` .. ``max_interval``.
"""

from __future__ import annotations

import math
import re
import zlib
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

from strata.regex import compile_linear


class PageKinds:
    def __init__(self, index_patterns, content_patterns, default: str, seeds):
        self.index = [compile_linear(p) for p in index_patterns]  # RE2: linear in the URL
        self.content = [compile_linear(p) for p in content_patterns]
        self.default = default
        self.seeds = set(seeds)

    @property
    def enabled(self) -> bool:
        """The index/content strategy is on when the job names either kind of page."""
        return bool(self.index or self.content)

    def kind(self, url: str) -> str:
        """Patterns are tried against the whole URL and against its path (with query), so both
        ``^https://site/news/`` and ``^/news/`` work."""
        if url in self.seeds:
            return "index"
        path = "/" + url.split("://", 1)[-1].partition("/")[2]
        if any(p.search(url) or p.search(path) for p in self.index):
            return "index"
        if any(p.search(url) or p.search(path) for p in self.content):
            return "content"
        return self.default


def change_rate(checks: int, changes: int, mean_interval: float) -> float:
    """Changes per second (0 when nothing ever changed)."""
    if checks <= 0 or mean_interval <= 0:
        return 0.0
    changes = min(changes, checks)
    return -math.log((checks - changes + 0.5) / (checks + 0.5)) / mean_interval


def next_interval(rate: float, min_interval: float, max_interval: float) -> float:
    if rate <= 0:
        return max_interval
    return max(min_interval, min(max_interval, 1.0 / rate))


def mean_interval(first_seen: str | None, last_checked: str | None, checks: int) -> float:
    if not first_seen or not last_checked or checks < 2:
        return 0.0
    span = (parse_iso(last_checked) - parse_iso(first_seen)).total_seconds()
    return max(span / (checks - 1), 1.0)


def due_at(row: dict, min_interval: float, max_interval: float) -> tuple[datetime | None, float]:
    """(when the URL is next due, its estimated changes per day); None means due now (never checked).

    With fewer than two checks there is no history to estimate from; the page's age stands in for
    it (its Last-Modified, else a date in its URL): a page unchanged for a long time is likely to
    stay so, so it is due after half its age, within the bounds. A per-URL spread of 10-20% keeps a
    whole site's pages from coming due in one burst."""
    if not row.get("last_checked"):
        return None, 0.0
    checks, changes = row.get("checks") or 0, row.get("changes") or 0
    last = parse_iso(row["last_checked"])
    rate = change_rate(checks, changes, mean_interval(row.get("first_seen"), row.get("last_checked"), checks))
    if checks < 2:
        born = _born(row)
        age = (last - born).total_seconds() if born else 0.0
        interval = max(min_interval, min(max_interval, age / 2))
    else:
        interval = next_interval(rate, min_interval, max_interval)
    u = zlib.crc32((row.get("url") or "").encode("utf-8")) / 0xFFFFFFFF
    if interval <= min_interval:
        interval = min_interval * (1 + 0.2 * u)  # never sooner than the job allows
    else:
        interval = max(min_interval, interval * (0.9 + 0.1 * u))  # never later than it allows
    return last + timedelta(seconds=interval), rate * 86400


_URL_DATE = re.compile(r"(?<!\d)((?:19|20)\d{2})[-/_]?(0[1-9]|1[0-2])(?:[-/_]?(0[1-9]|[12]\d|3[01]))?(?!\d)")


def _born(row: dict) -> datetime | None:
    """When the page's content dates from: its Last-Modified header, else a date in its URL."""
    if row.get("last_modified"):
        try:
            when = parsedate_to_datetime(row["last_modified"])
            return when if when.tzinfo else when.replace(tzinfo=UTC)
        except (TypeError, ValueError):
            pass
    match = _URL_DATE.search(row.get("url") or "")
    if match:
        year, month, day = int(match.group(1)), int(match.group(2)), int(match.group(3) or 1)
        try:
            return datetime(year, month, day, tzinfo=UTC)
        except ValueError:
            return None
    return None


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


_NUMBERS = re.compile(r"\d+")


def url_order_key(url: str) -> tuple[int, ...]:
    """The numbers in a URL (dates, sequential IDs), for recognising ordered listings."""
    return tuple(int(n) for n in _NUMBERS.findall(url.split("://", 1)[-1].split("/", 1)[-1])[:8])


def is_ordered_listing(content_urls: list[str]) -> bool:
    """Newest first by date or sequential ID: the number keys never increase down the page."""
    keys = [url_order_key(u) for u in content_urls]
    keys = [k for k in keys if k]
    if len(keys) < 2:
        return False
    return all(a >= b for a, b in zip(keys, keys[1:], strict=False))


def is_pagination_link(page_url: str, link_url: str) -> bool:
    """A link to another page of the same listing: shares at least one directory with the page and
    carries a number (``/news/`` -> ``/news/page/2.html``)."""
    page_path = page_url.split("://", 1)[-1].split("/", 1)[-1]
    link_path = link_url.split("://", 1)[-1].split("/", 1)[-1]
    page_dirs = page_path.split("/")[:-1]
    link_dirs = link_path.split("/")[:-1]
    if not page_dirs or not link_dirs or page_dirs[0] != link_dirs[0]:
        return False
    return bool(_NUMBERS.search(link_path))


def page_number(url: str) -> int:
    """The page of a paginated listing: the last number in its last path segment or its query, 0 when
    there is none. Listings number their pages from 1 (``/news/``, ``/news/page/2.html``) or from 0
    (``index.htm``, ``index_1.htm``): either way the unnumbered first page comes before the rest."""
    rest = url.split("://", 1)[-1].partition("/")[2]
    path, _, query = rest.partition("?")
    numbers = _NUMBERS.findall(path.rsplit("/", 1)[-1] + "?" + query)
    return int(numbers[-1]) if numbers else 0
