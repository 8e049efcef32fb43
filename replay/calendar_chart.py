"""The calendar's timeline: one bar a day of the year, as tall as the bytes that changed that day
(on a square-root scale, so one large change does not flatten the rest), coloured by the day's most
significant kind. Drawn as an SVG of at most 366 bars, whatever the number of captures, with its
month labels as HTML below it (text in a stretched SVG would not stay readable on a phone)."""

from __future__ import annotations

import calendar
import math
from datetime import date

from index.cdx.capture_calendar import CHANGE_KINDS, Mark, Month, month_grids

HEIGHT = 60  # the SVG's own units; it is stretched to the width of the page


def timeline_of(marks: list[Mark], year: int, months: list[Month] | None = None) -> dict:
    """Bars for the days of ``year`` with captures: ``x`` (day of the year, from 0), ``h`` (of
    ``HEIGHT``), ``kind``, ``date``, ``count``, ``change``; with the year's length, its top change
    and a sentence saying what it shows (the chart's text alternative)."""
    days = [d for month in months or month_grids(marks, year) for d in month.days() if d.count]
    top = max((d.change for d in days), default=0)
    length = 366 if calendar.isleap(year) else 365
    bars = []
    for d in days:
        x = (date(year, int(d.date[4:6]), d.day) - date(year, 1, 1)).days
        # a day with captures and no change still gets a sliver, so it shows on the axis; a change that
        # kept the payload's size a bar of its own (it changed, by 0 bytes)
        if d.change and top:
            h = max(3.0, HEIGHT * math.sqrt(d.change / top))
        else:
            h = 8.0 if d.kind in CHANGE_KINDS else 2.0
        bars.append({"x": x, "h": round(h, 1), "kind": d.kind, "date": d.date, "count": d.count, "change": d.change})
    changed = sum(1 for d in days if d.change)
    summary = (
        f"{len(days)} day{'s' if len(days) != 1 else ''} with captures in {year}, "
        f"{changed} with changes; the largest change of a day: {top:,} bytes"
    )
    return {"bars": bars, "length": length, "height": HEIGHT, "top": top, "summary": summary, "year": year}
