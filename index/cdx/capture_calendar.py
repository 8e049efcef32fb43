"""A URL's captures as a calendar: years, month grids, days coloured by what each capture found,
and how much changed at each.

Built from two things a reader may already be shown: the captures of the URL
(``index.cdx.versions.read_versions``, through ``filter_captures``, so access rules apply) and, from the
harvest state, each capture's class and payload size (``index.storage.state.capture_marks``). A collection
indexed by ``wb-manager`` alone has no state: its captures are then ``capture`` (a response) or
``revisit``, and their sizes are the records'.

How much changed at a capture is counted in payload bytes: a new URL's whole payload; a changed
payload's size against the payload before it (a change that keeps the size counts 0 bytes but is
still a change); a deletion the payload that went; an unchanged or not-modified capture 0. It is a
measure of size, cheap enough for a URL of 10,000 captures; ``index.compare.diff`` says what changed in
words, two captures at a time.
"""

from __future__ import annotations

import calendar as _calendar
import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping

from index.cdx.versions import Version
from strata.times import pad_as_of

__all__ = [
    "CHANGE_KINDS",
    "KINDS",
    "Day",
    "Mark",
    "Month",
    "Period",
    "YearSummary",
    "marks_of",
    "month_grids",
    "period_of",
    "years",
]

# Most significant first: a day's colour is its most significant capture's kind.
KINDS = (
    "deleted",
    "changed",
    "new",
    "soft",
    "capture",
    "not_modified",
    "unchanged",
    "revisit",
    "redirect",
    "error",
)
_RANK = {k: i for i, k in enumerate(KINDS)}
CHANGE_KINDS = frozenset({"new", "changed", "soft", "deleted", "capture"})


@dataclasses.dataclass(frozen=True, slots=True)
class Mark:
    """One capture on the calendar."""

    version: Version
    kind: str
    size: int  # payload bytes (a revisit's: its original's)
    change: int  # bytes changed at this capture (see the module's docstring)
    timestamp: str  # the version's (read 50,000 times on a calendar of 10,000 captures)


def marks_of(
    versions: Iterable[Version], states: Mapping[tuple[str, int], tuple[str | None, int | None]]
) -> list[Mark]:
    """The calendar's marks for ``versions`` (oldest first). ``states``: (WARC file, offset) ->
    (class, payload length) from the harvest state; a capture it does not hold is a ``capture`` or
    a ``revisit`` with its record's length."""
    out: list[Mark] = []
    by_digest: dict[str, int] = {}
    previous = 0
    seen_payload = False
    for v in versions:
        cls, length = states.get((v.filename, v.offset), (None, None))
        if v.revisit:
            size = by_digest.get(v.digest or "", previous)
        else:
            size = length if length is not None else max(v.length, 0)
            if v.digest and v.status.startswith("2"):
                by_digest[v.digest] = size
        kind = cls or ("revisit" if v.revisit else "capture")
        if kind == "new" or (kind == "capture" and not seen_payload):
            change = size
        elif kind in ("changed", "soft", "capture"):
            change = abs(size - previous)
        elif kind == "deleted":
            change = previous
        else:
            change = 0
        if kind != "deleted" and v.status[:1] in ("2", "3", "-", ""):
            previous, seen_payload = size, True
        elif kind == "deleted":
            previous = 0
        out.append(Mark(v, kind, size, change, v.timestamp))
    return out


@dataclasses.dataclass
class YearSummary:
    year: int
    count: int
    changes: int  # captures whose kind is a change (new, changed, soft, deleted)


def years(marks: list[Mark]) -> list[YearSummary]:
    found: dict[int, YearSummary] = {}
    for m in marks:
        y = int(m.timestamp[:4])
        s = found.get(y)
        if s is None:
            s = found[y] = YearSummary(y, 0, 0)
        s.count += 1
        s.changes += m.kind in CHANGE_KINDS and m.kind != "capture"
    return [found[y] for y in sorted(found)]


@dataclasses.dataclass
class Day:
    date: str  # YYYYMMDD
    day: int
    count: int = 0
    kinds: Counter = dataclasses.field(default_factory=Counter)
    change: int = 0

    @property
    def kind(self) -> str:
        """The most significant kind of the day's captures ('' for a day without any)."""
        return min(self.kinds, key=lambda k: _RANK.get(k, len(KINDS))) if self.kinds else ""

    @property
    def level(self) -> int:
        """1 to 4 by the number of captures (1, 2-3, 4-9, 10 or more); 0 for none."""
        n = self.count
        return 0 if n == 0 else 1 if n == 1 else 2 if n < 4 else 3 if n < 10 else 4


@dataclasses.dataclass
class Month:
    year: int
    month: int
    weeks: list[list[Day | None]]  # Monday first; None outside the month
    count: int = 0

    @property
    def key(self) -> str:
        return f"{self.year:04d}{self.month:02d}"

    @property
    def name(self) -> str:
        return _calendar.month_name[self.month]

    def days(self) -> Iterable[Day]:
        return (d for week in self.weeks for d in week if d is not None)


def month_grids(marks: list[Mark], year: int) -> list[Month]:
    """Twelve month grids of ``year``, each day with its captures' count, kinds and change."""
    by_date: dict[str, Day] = {}
    months = []
    cal = _calendar.Calendar(firstweekday=0)
    for month in range(1, 13):
        weeks = []
        for week in cal.monthdayscalendar(year, month):
            row: list[Day | None] = []
            for d in week:
                if d == 0:
                    row.append(None)
                    continue
                day = Day(f"{year:04d}{month:02d}{d:02d}", d)
                by_date[day.date] = day
                row.append(day)
            weeks.append(row)
        months.append(Month(year, month, weeks))
    prefix = f"{year:04d}"
    for m in marks:
        if not m.timestamp.startswith(prefix):
            continue
        day = by_date[m.timestamp[:8]]
        day.count += 1
        day.kinds[m.kind] += 1
        day.change += m.change
        months[int(m.timestamp[4:6]) - 1].count += 1
    return months


@dataclasses.dataclass(frozen=True)
class Period:
    """What the calendar shows: a year's grids and the captures of one month or day in its table."""

    year: int  # the year whose grids are shown
    month: int | None  # 1-12: the table shows that month (or one day of it); None: every capture
    day: int | None = None

    @property
    def prefix(self) -> str:
        """The timestamps of the table's captures start with this."""
        if self.month is None:
            return ""
        return f"{self.year:04d}{self.month:02d}" + (f"{self.day:02d}" if self.day else "")


def period_of(marks: list[Mark], asked: str, whole: int = 0) -> Period:
    """The period a calendar address names: ``""`` every capture when there are at most ``whole``,
    else the month of the last capture; ``2024`` the last
    month of that year with captures (else its first month); ``202403`` that month; ``20240305``
    that day; a longer timestamp the month of the capture a reader sees then (as replay: the latest
    at or before it), else of the first capture."""
    last = marks[-1].timestamp
    if not asked:
        return Period(int(last[:4]), None if len(marks) <= whole else int(last[4:6]))
    if len(asked) == 4:
        inside = [m.timestamp for m in marks if m.timestamp.startswith(asked)]
        return Period(int(asked), int(inside[-1][4:6]) if inside else 1, None)
    if len(asked) in (6, 7):
        return Period(int(asked[:4]), int(asked[4:6]), None)
    if len(asked) in (8, 9):
        return Period(int(asked[:4]), int(asked[4:6]), int(asked[6:8]))
    end = pad_as_of(asked)
    seen = [m.timestamp for m in marks if m.timestamp <= end]
    ts = seen[-1] if seen else marks[0].timestamp
    return Period(int(ts[:4]), int(ts[4:6]), None)
