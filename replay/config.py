"""The replay application's settings: one table, each with its default and help text.

``create_app(root, config)`` validates ``config`` against ``REPLAY_SETTINGS``; an unknown key or a
bad value is rejected with the setting's name and the reason (``ConfigError``).
"""

from __future__ import annotations

from typing import Any

from strata.settings import Setting, apply_settings, check_bool, check_int


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError("expected a list of header names")
    return tuple(v.strip() for v in value)


def _optional_str(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError("expected a string, or None to leave it out")
    return value or None


REPLAY_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "strip_headers",
        (
            "Refresh",
            "Clear-Site-Data",
            "NEL",
            "Report-To",
            "Reporting-Endpoints",
            "WWW-Authenticate",
            "Proxy-Authenticate",
            "Set-Cookie",
            "Set-Cookie2",
        ),
        _names,
        "Archived response headers never sent to readers: they act beyond the page.",
    ),
    Setting(
        "raw_csp",
        "sandbox; default-src 'self' data: blob: 'unsafe-inline'",
        _optional_str,
        "Content-Security-Policy added to id_ (raw) responses of active types (HTML, SVG, XML).",
    ),
    Setting("nearby_limit", 20, check_int(0, 1000), "How many nearby archived URLs a 'not archived' page lists."),
    Setting("calendar_limit", 1000, check_int(0, 1000), "How many captures the calendar page of a URL lists at most."),
    Setting(
        "default_collection",
        None,
        _optional_str,
        "The collection /web/<ts>/<url> addresses resolve in (None: the only collection, when there is one).",
    ),
    Setting("debug", False, check_bool, "Let Flask show tracebacks (development only; never on a public server)."),
)


def build_config(values: dict | None) -> dict:
    return apply_settings(REPLAY_SETTINGS, values, "replay")
