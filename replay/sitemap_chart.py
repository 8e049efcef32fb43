"""The site map's picture: a treemap of a folder's entries, each a rectangle whose area is its
number of URLs and whose shade is the share of them that changed since the date (light: none,
dark: all). Squarified (Bruls, Huizing and van Wijk), so rectangles stay close to squares and their
labels readable. Two shapes of one picture are drawn, wide and tall, and the page shows the one
that fits the screen; each rectangle links where its row of the table does."""

from __future__ import annotations

from collections.abc import Sequence

from index.access.sitemap import Entry

MAX_RECTS = 60  # the largest entries drawn; the rest are in the table
SHAPES = {"wide": (720.0, 360.0), "tall": (360.0, 460.0)}
SHADES = ("#dbe7f3", "#b7cfe8", "#8fb3d9", "#5f8fc4", "#356fae", "#1f4f86")  # by share changed


def treemap(entries: Sequence[Entry]) -> dict[str, list[dict]]:
    """Per shape, the rectangles: x, y, w, h, the entry, its shade and whether a label fits."""
    drawn = sorted((e for e in entries if e.urls), key=lambda e: -e.urls)[:MAX_RECTS]
    out = {}
    for shape, (width, height) in SHAPES.items():
        rects = []
        for (x, y, w, h), e in zip(_squarify([e.urls for e in drawn], 0.0, 0.0, width, height), drawn, strict=True):
            shade = SHADES[min(len(SHADES) - 1, int(e.share_changed * len(SHADES)))]
            ink = "#fff" if shade in SHADES[3:] else "#111"
            rects.append(
                {
                    "x": round(x, 1),
                    "y": round(y, 1),
                    "w": round(w, 1),
                    "h": round(h, 1),
                    "entry": e,
                    "fill": shade,
                    "ink": ink,
                    "label": w >= 46 and h >= 16,
                    "chars": max(1, int(w / 7.2)),
                }
            )
        out[shape] = rects
    return out


def _squarify(values: list[int], x: float, y: float, w: float, h: float) -> list[tuple[float, float, float, float]]:
    """Rectangles for ``values`` (largest first) filling (x, y, w, h), in the same order."""
    total = float(sum(values))
    if not values or total <= 0:
        return []
    scale = w * h / total
    areas = [v * scale for v in values]
    out: list[tuple[float, float, float, float]] = []
    row: list[float] = []
    i = 0
    while i < len(areas):
        side = min(w, h)
        candidate = [*row, areas[i]]
        if not row or _worst(candidate, side) <= _worst(row, side):
            row = candidate
            i += 1
            continue
        x, y, w, h = _lay_row(row, x, y, w, h, out)
        row = []
    if row:
        _lay_row(row, x, y, w, h, out)
    return out


def _worst(row: list[float], side: float) -> float:
    s = sum(row)
    return max(max(side * side * r / (s * s), (s * s) / (side * side * r)) for r in row)


def _lay_row(row: list[float], x: float, y: float, w: float, h: float, out: list) -> tuple[float, float, float, float]:
    """Lay ``row`` along the shorter side of (x, y, w, h); return what is left."""
    s = sum(row)
    if w >= h:  # a column at the left
        col = s / h if h else 0.0
        cy = y
        for a in row:
            rh = a / col if col else 0.0
            out.append((x, cy, col, rh))
            cy += rh
        return x + col, y, w - col, h
    band = s / w if w else 0.0
    cx = x
    for a in row:
        rw = a / band if band else 0.0
        out.append((cx, y, rw, band))
        cx += rw
    return x, y + band, w, h - band
