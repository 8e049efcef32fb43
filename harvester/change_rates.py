"""Per-site change rates: what share of a site's pages changed between runs, by kind of page.

Each run records, per site and page kind (``index``, ``content``), the pages it checked again, how
many of them had changed (``changed`` or ``deleted``; a soft change is noise, not a change), and the
mean time since those pages were last captured (``RunFigures.change_rates``). From these figures
the rate of change is estimated as for single pages (``harvester.schedule.change_rate``: the Poisson
estimator of Cho and Garcia-Molina, which counts the checks that saw no change):

    rate = -ln((n - X + 0.5) / (n + 0.5)) / I     (n pages checked, X changed, mean interval I)

``frequency = "adaptive"`` harvests a job when the expected share of its pages changed since its
last run reaches ``adaptive_target``: pages changing as a Poisson process of rate ``rate`` have
changed with probability ``1 - exp(-rate * t)`` after ``t``, so the interval is

    t = -ln(1 - adaptive_target) / rate,   clamped to adaptive_min .. adaptive_max

with ``rate`` pooled over the job's last ``HISTORY`` runs (all its sites and kinds). A job never run
is due at once; one whose runs checked no page again yet comes back after ``adaptive_min``; one
that never saw a change waits ``adaptive_max``.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from harvester.schedule import change_rate

DAY = 86400.0
KINDS = ("index", "content")
HISTORY = 5  # runs the adaptive rate is pooled over


def _seconds(ts14: str) -> float:
    return datetime.strptime(ts14[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC).timestamp()


def run_change_rates(checks: list[tuple[str, str, bool, str, str | None]]) -> dict[str, dict[str, dict]]:
    """``index.storage.state.page_checks`` rows -> {site: {kind: {checked, changed, interval_days, rate_per_day}}}."""
    sums: dict[tuple[str, str], list[float]] = {}
    for host, kind, was_changed, at, previous in checks:
        acc = sums.setdefault((host or "?", kind), [0, 0, 0.0, 0])
        acc[0] += 1
        acc[1] += 1 if was_changed else 0
        if previous:
            acc[2] += max(0.0, _seconds(at) - _seconds(previous))
            acc[3] += 1
    out: dict[str, dict[str, dict]] = {}
    for (host, kind), (checked, changed, seconds, timed) in sorted(sums.items()):
        interval = seconds / timed / DAY if timed else 0.0
        out.setdefault(host, {})[kind] = {
            "checked": int(checked),
            "changed": int(changed),
            "interval_days": round(interval, 4),
            "rate_per_day": round(change_rate(int(checked), int(changed), interval), 4),
        }
    return out


def pooled_rate(runs: list[dict]) -> float | None:
    """Changes per page per day over the runs' ``change_rates`` figures (all sites and kinds); None
    when no run checked a page again."""
    checked = changed = 0
    weighted = 0.0
    for run in runs:
        for kinds in ((run.get("figures") or {}).get("change_rates") or {}).values():
            for figures in kinds.values():
                checked += figures.get("checked") or 0
                changed += figures.get("changed") or 0
                weighted += (figures.get("checked") or 0) * (figures.get("interval_days") or 0.0)
    if not checked or weighted <= 0:
        return None
    return change_rate(checked, changed, weighted / checked)


def adaptive_interval(rate: float | None, target: float, shortest: float, longest: float) -> float:
    """Seconds until the expected share of changed pages reaches ``target``. No rate yet (the runs
    so far checked no page again): ``shortest``, to get one."""
    if rate is None:
        return shortest
    if rate <= 0:
        return longest
    return max(shortest, min(longest, -math.log(1.0 - target) / rate * DAY))
