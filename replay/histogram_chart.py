"""The search page's histogram drawn on a true time axis: one bar per period from the first to the
last (``index.fulltext.histogram``), empty periods kept as gaps, and a few labelled ticks.

HTML and CSS (a row of bars and an axis), not SVG: the labels keep their size at any width, and
the chart follows the column it is in (the facet column at 1280 px, the whole page at 390 px).
"""

from __future__ import annotations

MAX_TICKS = 3  # labels that fit a 14rem column without touching
PLURAL = {"hour": "hours", "day": "days", "month": "months", "year": "years", "decade": "decades"}


def histogram_chart(histogram: dict) -> dict | None:
    buckets = histogram.get("buckets") or []
    if not buckets:
        return None
    n = len(buckets)
    top = max(b["count"] for b in buckets) or 1
    bars = [
        {
            **b,
            "height": round(100 * b["count"] / top, 1) if b["count"] else 0,
            "tip": f"{b['label']}: {b['count']} capture{'' if b['count'] == 1 else 's'}"
            if b["count"]
            else f"{b['label']}: no captures",
        }
        for b in buckets
    ]
    picks = sorted({0, n - 1, *(round(k * (n - 1) / (MAX_TICKS - 1)) for k in range(1, MAX_TICKS - 1))})
    ticks = []
    for i in picks:
        left = 100 * (i + 0.5) / n
        align = "start" if i == 0 else "end" if i == n - 1 else "middle"
        ticks.append({"label": buckets[i]["label"], "left": round(left, 2), "align": align})
    if n == 1:
        ticks = [{"label": buckets[0]["label"], "left": 50.0, "align": "middle"}]
    unit = histogram.get("unit", "year")
    empty = sum(1 for b in buckets if not b["count"])
    return {
        "unit": unit,
        "bars": bars,
        "ticks": ticks,
        "top": top,
        "first": buckets[0]["label"],
        "last": buckets[-1]["label"],
        "periods": n,
        "empty": empty,
        "summary": f"{n} {PLURAL.get(unit, unit) if n != 1 else unit}"
        + (f", {empty} without captures" if empty else ""),
    }
