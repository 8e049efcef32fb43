"""The search's histogram: captures of the matching URLs on a true time axis.

Every period from the first capture's to the last capture's is a bucket, empty ones included,
so a gap in the harvests shows as a gap (2024-10 is not drawn beside 2026-12). The unit is the
finest of hour, day, month, year and decade that gives at most ``MAX_BUCKETS`` buckets. Each
bucket has its ``value`` (the timestamp's leading digits: ``2024``, ``202403``, ``20240305``,
``2024030512``; a decade's first year), the ``from`` and ``to`` a date filter for it takes, a
``label`` for people and its ``count``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timedelta

__all__ = ["MAX_BUCKETS", "histogram"]

MAX_BUCKETS = 60
UNITS = ("hour", "day", "month", "year", "decade")


def histogram(hits: list[dict]) -> dict:
    stamps = [s for h in hits for s in h["captures"]]
    if not stamps:
        return {"unit": "year", "buckets": []}
    lo, hi = min(stamps), max(stamps)
    for unit in UNITS:
        if unit == "decade" or _count(unit, lo, hi) <= MAX_BUCKETS:
            break
    counts = Counter(_key(unit, s) for s in stamps)
    buckets = [
        {"value": value, "from": start, "to": end, "label": _label(unit, value), "count": counts.get(value, 0)}
        for value, start, end in _periods(unit, _key(unit, lo), _key(unit, hi))
    ]
    return {"unit": unit, "buckets": buckets}


def _key(unit: str, stamp: str) -> str:
    if unit == "decade":
        return stamp[:3] + "0"
    return stamp[: {"hour": 10, "day": 8, "month": 6, "year": 4}[unit]]


def _count(unit: str, lo: str, hi: str) -> int:
    """Buckets from the period of ``lo`` to that of ``hi`` in this unit."""
    start, end = _moment(lo), _moment(hi)
    if unit == "hour":
        return int((end.replace(minute=0, second=0) - start.replace(minute=0, second=0)).total_seconds() // 3600) + 1
    if unit == "day":
        return (end.date() - start.date()).days + 1
    if unit == "month":
        return (end.year - start.year) * 12 + end.month - start.month + 1
    return end.year - start.year + 1  # years (decades are never counted)


def _moment(stamp: str) -> datetime:
    return datetime.strptime(stamp[:10].ljust(10, "0"), "%Y%m%d%H")


def _days(lo: str, hi: str) -> Iterator[str]:
    day, last = _moment(lo).date(), _moment(hi).date()
    while day <= last:
        yield day.strftime("%Y%m%d")
        day += timedelta(days=1)


def _periods(unit: str, first: str, last: str) -> Iterator[tuple[str, str, str]]:
    """(value, from, to) of every period from ``first`` to ``last`` (keys of ``unit``)."""
    if unit in ("year", "decade"):
        step = 10 if unit == "decade" else 1
        for year in range(int(first), int(last) + 1, step):
            yield str(year), str(year), str(year + step - 1)
    elif unit == "month":
        year, month = int(first[:4]), int(first[4:6])
        while f"{year:04d}{month:02d}" <= last:
            value = f"{year:04d}{month:02d}"
            yield value, value, value
            year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    elif unit == "day":
        for day in _days(first, last):
            yield day, day, day
    else:
        for day in _days(first[:8], last[:8]):
            for hour in range(24):
                value = f"{day}{hour:02d}"
                if first <= value <= last:
                    yield value, value, value


def _label(unit: str, value: str) -> str:
    if unit == "decade":
        return f"{value}s"
    parts = [value[:4], value[4:6], value[6:8]]
    label = "-".join(p for p in parts if p)
    return label + (f" {value[8:10]}h" if len(value) > 8 else "")
