"""How often a job runs: the frequencies a job file may name and the next slot of each.

``hourly``, ``daily``, ``weekly`` are fixed intervals; ``monthly`` and ``quarterly`` are calendar
months (same day of month, clamped to the month's length); anything else is a five-field cron
expression in UTC, evaluated by ``cronsim``. Pure functions of their arguments.
"""

from __future__ import annotations

import calendar
from datetime import UTC, datetime, timedelta

from strata.errors import ConfigError

FREQUENCIES = ("hourly", "daily", "weekly", "monthly", "quarterly")
ADAPTIVE = "adaptive"  # as often as the job's change rate warrants: harvester.change_rates
INTERVALS = {"hourly": timedelta(hours=1), "daily": timedelta(days=1), "weekly": timedelta(weeks=1)}
MONTHS = {"monthly": 1, "quarterly": 3}


def _cron(expression: str, after: datetime) -> datetime:
    from cronsim import CronSim, CronSimError

    try:
        return next(CronSim(expression, after.astimezone(UTC)))
    except (CronSimError, StopIteration) as exc:
        raise ConfigError(f"field 'frequency': {expression!r} is not a usable cron expression ({exc})") from None


def check_frequency(frequency: str) -> None:
    """What ``validate_job`` cannot see: that a cron expression has a next time (``61 * * * *`` has none)."""
    if frequency not in ("manual", ADAPTIVE) and frequency not in INTERVALS and frequency not in MONTHS:
        _cron(frequency, datetime(2024, 1, 1, tzinfo=UTC))


def add_months(when: datetime, months: int) -> datetime:
    month0 = when.month - 1 + months
    year, month = when.year + month0 // 12, month0 % 12 + 1
    day = min(when.day, calendar.monthrange(year, month)[1])
    return when.replace(year=year, month=month, day=day)


def next_slot(frequency: str, previous: datetime, now: datetime) -> datetime:
    """The first slot strictly after ``now`` in the series through ``previous``."""
    if frequency in INTERVALS:
        step = INTERVALS[frequency]
        if previous > now:
            return previous
        return previous + step * ((now - previous) // step + 1)
    if frequency in MONTHS:
        month_step = MONTHS[frequency]
        months = max(0, (now.year - previous.year) * 12 + now.month - previous.month)
        slot = add_months(previous, (months // month_step) * month_step)
        while slot <= now:
            slot = add_months(slot, month_step)
        return slot
    return _cron(frequency, max(previous, now))


def first_due(frequency: str, last_run: datetime | None, now: datetime) -> datetime:
    if frequency in INTERVALS:
        return last_run + INTERVALS[frequency] if last_run else now
    if frequency in MONTHS:
        return add_months(last_run, MONTHS[frequency]) if last_run else now
    return _cron(frequency, now)
