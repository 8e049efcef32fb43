"""Access rules in full-text search: the documents and capture dates a level may find.

A search document is one payload of one URL with its capture dates (``index.fulltext``). For a
level, each document is visible (every capture visible), hidden (none visible) or partly visible
(an embargo hides its recent captures). ``SearchAccess.allowed`` gives the documents a query may
rank, so hits, totals, facets and the histogram are counted over visible ones only, and
``stamps`` the capture dates a hit may show; a snippet or title only ever comes from a ranked
(visible) document. The split is computed once per index generation, rule set and level (again
every minute when a rule has a date condition: a capture crossing an embargo's boundary changes
sides within a minute) and shared by every query.
"""

from __future__ import annotations

import threading
import time
import weakref

from index.access.rules import RuleSet, urlkey

_REFRESH = 60.0  # seconds a split stays valid when rules depend on the date


class _Split:
    __slots__ = ("visible", "partial", "made", "nothing_hidden")

    def __init__(self, visible: set[int], partial: set[int], made: float, nothing_hidden: bool):
        self.visible, self.partial, self.made = visible, partial, made
        self.nothing_hidden = nothing_hidden  # no document of this index is hidden: no filter at all


class SearchAccess:
    """Per (index view, rule set, level): which documents are visible. Thread-safe."""

    def __init__(self) -> None:
        # per index view (gone with it), per (rule set serial, level); never keyed by id(), which a
        # later object may reuse
        self._splits: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def _split(self, view, rules: RuleSet, level: str) -> _Split:
        key = (rules.serial, level)
        now = time.monotonic()
        per_view = self._splits.get(view) or {}
        split = per_view.get(key)
        if split is not None and (not rules.dated or now - split.made < _REFRESH):
            return split
        with self._lock:
            per_view = self._splits.setdefault(view, {})
            split = per_view.get(key)
            if split is None or (rules.dated and now - split.made >= _REFRESH):
                split = self._compute(view, rules, level, now)
                if len(per_view) > 16:  # older rule sets of this view
                    per_view.clear()
                per_view[key] = split
        return split

    @staticmethod
    def _compute(view, rules: RuleSet, level: str, now: float) -> _Split:
        urls = view.columns["url"]
        captures = view.captures
        visible: set[int] = set()
        partial: set[int] = set()
        hidden = 0
        for docnum in range(view.count):
            try:
                url = urls[docnum]
            except IndexError:
                break
            if not url:
                continue
            key = urlkey(url)
            seen = [rules.verdict_key(key, ts, level).visible for ts in captures.of(docnum)]
            if all(seen):
                visible.add(docnum)
            elif any(seen):
                partial.add(docnum)
            else:
                hidden += 1
        return _Split(visible, partial, now, not hidden and not partial)

    def allowed(self, view, rules: RuleSet, level: str, date_from: str | None, date_to: str | None) -> set[int] | None:
        """Documents with at least one visible capture in the range; None when nothing is hidden."""
        if not rules.hides_from(level):
            return None
        split = self._split(view, rules, level)
        if split.nothing_hidden:
            return None
        if not split.partial:
            return split.visible
        urls = view.columns["url"]
        extra = {d for d in split.partial if self._partial_stamps(view, rules, level, d, urls[d], date_from, date_to)}
        return split.visible | extra

    def stamps(
        self, view, rules: RuleSet, level: str, docnum: int, url: str, date_from: str | None, date_to: str | None
    ) -> list[str]:
        """The document's capture dates in the range that ``level`` may see."""
        stamps = view.captures.of(docnum, date_from, date_to)
        if not rules.hides_from(level) or docnum in self._split(view, rules, level).visible:
            return stamps
        return self._partial_stamps(view, rules, level, docnum, url, date_from, date_to, stamps)

    @staticmethod
    def _partial_stamps(view, rules, level, docnum, url, date_from, date_to, stamps=None) -> list[str]:
        if stamps is None:
            stamps = view.captures.of(docnum, date_from, date_to)
        key = urlkey(url)
        return [ts for ts in stamps if rules.verdict_key(key, ts, level).visible]
