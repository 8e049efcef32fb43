"""The replay application's settings: one table, each with its default and help text.

``create_app(root, config)`` validates ``config`` against ``REPLAY_SETTINGS``; an unknown key or a
bad value is rejected with the setting's name and the reason (``ConfigError``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from strata.errors import ConfigError


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError("expected a list of header names")
    return tuple(v.strip() for v in value)


def _optional_str(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError("expected a string, or None to leave it out")
    return value or None


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 1000:
        raise ValueError("expected a whole number from 0 to 1000")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


@dataclasses.dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    check: Callable[[Any], Any]
    help: str


REPLAY_SETTINGS: tuple[Setting, ...] = (
    Setting("strip_headers",
            ("Refresh", "Clear-Site-Data", "NEL", "Report-To", "Reporting-Endpoints", "WWW-Authenticate",
             "Proxy-Authenticate", "Set-Cookie", "Set-Cookie2"),
            _names, "Archived response headers never sent to readers: they act beyond the page."),
    Setting("raw_csp", "sandbox; default-src 'self' data: blob: 'unsafe-inline'", _optional_str,
            "Content-Security-Policy added to id_ (raw) responses of active types (HTML, SVG, XML)."),
    Setting("nearby_limit", 20, _count, "How many nearby archived URLs a 'not archived' page lists."),
    Setting("calendar_limit", 1000, _count, "How many captures the calendar page of a URL lists at most."),
    Setting("debug", False, _bool, "Let Flask show tracebacks (development only; never on a public server)."),
)

_BY_NAME = {s.name: s for s in REPLAY_SETTINGS}


def build_config(values: dict | None) -> dict:
    config = {s.name: s.default for s in REPLAY_SETTINGS}
    for name, value in (values or {}).items():
        setting = _BY_NAME.get(name)
        if setting is None:
            raise ConfigError(f"unknown replay setting {name!r}; known: {', '.join(sorted(_BY_NAME))}")
        try:
            config[name] = setting.check(value)
        except ValueError as exc:
            raise ConfigError(f"replay setting {name!r}: {exc}") from None
    return config
