"""Template filters for Strata's own pages."""

from __future__ import annotations

from datetime import datetime

from flask import Flask, request

from replay import origins

_FAST = {  # the formats pages use most, from a 14-digit timestamp by slicing (strptime is 15 us a call)
    "%Y-%m-%d %H:%M:%S UTC": lambda v: f"{v[:4]}-{v[4:6]}-{v[6:8]} {v[8:10]}:{v[10:12]}:{v[12:14]} UTC",
    "%Y-%m-%d": lambda v: f"{v[:4]}-{v[4:6]}-{v[6:8]}",
    "%H:%M:%S": lambda v: f"{v[8:10]}:{v[10:12]}:{v[12:14]}",
}


def ts(value: str | None, fmt: str = "%Y-%m-%d %H:%M:%S UTC") -> str:
    """A 14-digit (or ISO 8601) timestamp, readable."""
    if not value:
        return ""
    fast = _FAST.get(fmt)
    if fast is not None and len(value) == 14 and value.isdigit() and "01" <= value[4:6] <= "12":
        return fast(value)
    try:
        if value[:14].isdigit() and len(value) >= 14:
            return datetime.strptime(value[:14], "%Y%m%d%H%M%S").strftime(fmt)
        return datetime.fromisoformat(value.replace("Z", "+00:00")).strftime(fmt)
    except ValueError:
        return value


def iso(value: str | None) -> str:
    return ts(value, "%Y-%m-%dT%H:%M:%SZ")


def size(n) -> str:
    n = float(n or 0)
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def replay_url(coll: str, timestamp: str, url: str, mod: str = "") -> str:
    """``/<coll>/<ts><mod>/<url>``; a timestamp of ``*`` gives the calendar, a url ending in
    ``*`` a prefix listing. On the host its address is served from (``replay.origins``): a replay
    address on the content host, a calendar on the pages host."""
    calendar = "*" in timestamp or timestamp.startswith("timemap")
    base = origins.pages_base() if calendar else origins.content_base()
    return f"{base}{request.script_root}/{coll}/{timestamp}{mod}/{url}"


def register(app: Flask) -> None:
    app.add_template_global(replay_url, "replay_url")
    app.add_template_filter(ts, "ts")
    app.add_template_filter(iso, "iso")
    app.add_template_filter(size, "size")
