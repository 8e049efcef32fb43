"""Server-rendered SVG charts for a job's history (no script, nothing fetched).

- ``storage_chart``: per run, the WARC bytes it stored next to what a full harvest would have
  stored (``index.storage.state.full_harvest_estimate``, as ``strata report`` says: its stored bytes, the
  payload bytes its revisits and 304s did not store again, and the pages it skipped at their last
  known size).
- ``classes_chart``: per run, the URLs it looked at, stacked by class (new, changed, soft,
  unchanged, not modified, deleted, redirect, errors).

Each bar links to the run's snapshot in replay when the console knows the archive's address.
"""

from __future__ import annotations

import math

from markupsafe import Markup, escape

WIDTH, HEIGHT = 720, 260
LEFT, RIGHT, TOP, BOTTOM = 70, 16, 30, 46
CLASS_COLOURS = (
    ("new", "#3a9a4a", "new"),
    ("changed", "#2f6db5", "changed"),
    ("soft", "#8fb3e0", "soft-changed"),
    ("unchanged", "#b9b9b9", "unchanged"),
    ("not_modified", "#d9d9d9", "not modified"),
    ("deleted", "#c0392b", "deleted"),
    ("redirect", "#9b7fc4", "redirect"),
    ("errors", "#e08a2c", "errors"),
)


def human_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * exp >= value:
            return step * exp
    return 10 * exp


def _frame(title: str, ymax: float, label) -> list[str]:
    inner_h = HEIGHT - TOP - BOTTOM
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" class="chart" role="img" '
        f'aria-label="{escape(title)}">',
        f'<text x="{LEFT}" y="18" class="chart-title">{escape(title)}</text>',
    ]
    for i in range(5):
        value = ymax * i / 4
        y = TOP + inner_h - inner_h * i / 4
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" class="axis">{escape(label(value))}</text>')
    return out


def _run_label(run: dict) -> str:
    started = run.get("started") or ""
    return f"{started[5:10]} {started[11:16]}" if len(started) >= 16 else str(run.get("run_id", ""))


def _link(run: dict, inner: str) -> str:
    url = run.get("snapshot_url")
    if not url:
        return inner
    return f'<a href="{escape(url)}">{inner}</a>'


def storage_chart(runs: list[dict]) -> Markup:
    title = "Bytes stored per run vs. a full harvest"
    if not runs:
        return Markup(f'<p class="muted">{escape(title)}: no runs yet.</p>')
    ymax = _nice_max(max(max(r.get("bytes_stored") or 0, r.get("full_estimate") or 0) for r in runs))
    out = _frame(title, ymax, human_bytes)
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = inner_w / len(runs)
    bar = min(28.0, slot * 0.35)
    for i, run in enumerate(runs):
        x0 = LEFT + slot * i + slot / 2
        for offset, key, css, what in (
            (-bar, "full_estimate", "bar-full", "a full harvest would have stored"),
            (0, "bytes_stored", "bar-stored", "stored"),
        ):
            value = run.get(key) or 0
            h = inner_h * value / ymax
            tip = f"run {run.get('run_id')} ({run.get('mode')}): {what} {human_bytes(value)}"
            rect = (
                f'<rect x="{x0 + offset:.1f}" y="{TOP + inner_h - h:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'class="{css}"><title>{escape(tip)}</title></rect>'
            )
            out.append(_link(run, rect))
        out.append(
            f'<text x="{x0:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" class="axis">'
            f"{escape(_run_label(run))}</text>"
        )
        out.append(
            f'<text x="{x0:.1f}" y="{HEIGHT - BOTTOM + 30}" text-anchor="middle" class="axis">'
            f"{escape(run.get('mode') or '')}</text>"
        )
    legend_y = HEIGHT - 6
    out.append(
        f'<rect x="{LEFT}" y="{legend_y - 9}" width="10" height="10" class="bar-full"/>'
        f'<text x="{LEFT + 14}" y="{legend_y}" class="axis">full harvest (estimate)</text>'
    )
    out.append(
        f'<rect x="{LEFT + 170}" y="{legend_y - 9}" width="10" height="10" class="bar-stored"/>'
        f'<text x="{LEFT + 184}" y="{legend_y}" class="axis">stored by the run</text>'
    )
    out.append("</svg>")
    return Markup("".join(out))


def classes_chart(runs: list[dict]) -> Markup:
    title = "URLs per run by change class"
    if not runs:
        return Markup(f'<p class="muted">{escape(title)}: no runs yet.</p>')
    totals = [sum(r.get(key) or 0 for key, _, _ in CLASS_COLOURS) for r in runs]
    ymax = _nice_max(max(totals))
    out = _frame(title, ymax, lambda v: f"{v:.0f}")
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = inner_w / len(runs)
    bar = min(40.0, slot * 0.6)
    for i, run in enumerate(runs):
        x = LEFT + slot * i + slot / 2 - bar / 2
        y: float = TOP + inner_h
        parts = []
        for key, colour, label in CLASS_COLOURS:
            value = run.get(key) or 0
            if not value:
                continue
            h = inner_h * value / ymax
            y -= h
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" fill="{colour}" '
                f'class="seg-{key}"><title>{escape(f"{label}: {value}")}</title></rect>'
            )
        out.append(_link(run, "".join(parts)) if parts else "")
        out.append(
            f'<text x="{x + bar / 2:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle" class="axis">'
            f"{escape(_run_label(run))}</text>"
        )
    lx = LEFT
    for _key, colour, label in CLASS_COLOURS:
        out.append(
            f'<rect x="{lx}" y="{HEIGHT - 15}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{lx + 14}" y="{HEIGHT - 6}" class="axis">{escape(label)}</text>'
        )
        lx += 14 + int(6.5 * len(label)) + 10  # the axis font is 11 px: about 6.5 px a character
    out.append("</svg>")
    return Markup("".join(out))
