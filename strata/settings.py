"""Settings tables: the ``Setting`` row type, its checkers, and duration and size parsing.

Each table of settings (the harvest job's in ``harvester.job``, the replay app's in
``replay.config``, the staff console's in ``replay.staff.app``) is a tuple of ``Setting`` rows;
``apply_settings`` checks values against one. Checkers raise ``ValueError`` with the reason.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from strata.errors import ConfigError
from strata.regex import compile_linear

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)?\s*$")
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, None: 1}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|kib|mib|gib)?\s*$", re.I)
_SIZE_UNITS = {None: 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30}


def parse_seconds(value: Any) -> float:
    """Seconds from a number or a string such as ``"90s"``, ``"6m"`` (minutes), ``"12h"``, ``"7d"``,
    ``"2w"``: a job's intervals. (An embargo's calendar period, where ``6m`` is six months, is
    ``index.access.rules.parse_calendar_period``.)"""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 30, '90s', '12h' or '7d'")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError("must not be negative")
        return float(value)
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a duration; use a number of seconds or '90s', '12h', '7d', '2w'")
    return float(match.group(1)) * _DURATION_UNITS[match.group(2)]


def parse_size(value: Any) -> int:
    """Bytes from a number or a string such as ``"100MB"``, ``"1GiB"``."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 1000000 or '100MB'")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("must not be negative")
        return value
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a size; use a number of bytes or '100MB', '1GiB'")
    unit = match.group(2).lower() if match.group(2) else None
    return int(float(match.group(1)) * _SIZE_UNITS[unit])


def check_int(lo: int, hi: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected a whole number from {lo} to {hi}")
        if not lo <= value <= hi:
            raise ValueError(f"must be from {lo} to {hi}, not {value}")
        return value

    return check


def check_float(lo: float, hi: float) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected a number from {lo} to {hi}")
        if not lo <= value <= hi:
            raise ValueError(f"must be from {lo} to {hi}, not {value}")
        return float(value)

    return check


def check_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def check_str(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a non-empty string")
    if len(value) > 1000:
        raise ValueError("longer than 1000 characters")
    return value.strip()


def check_choice(*choices: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, not {value!r}")
        return value

    return check


def check_str_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError("expected a list of non-empty strings")
    if len(value) > 10000:
        raise ValueError("more than 10000 entries")
    return tuple(v.strip() for v in value)


def check_regex_list(value: Any) -> tuple[str, ...]:
    """Patterns matched in linear time (``strata.regex``): refused here, with the reason, when RE2
    cannot take them."""
    patterns = check_str_list(value)
    for pattern in patterns:
        compile_linear(pattern)
    return patterns


def check_header_value(value: Any) -> str:
    """A string that can be sent as an HTTP header value: no CR, LF or other control character
    (one would end the header and start another: header injection)."""
    text = check_str(value)
    if any(ord(ch) < 0x20 and ch != "\t" or ord(ch) == 0x7F for ch in text):
        raise ValueError("must not hold line breaks or other control characters (it is sent as an HTTP header)")
    return text


def check_duration(value: Any) -> float:
    return parse_seconds(value)


def check_size(value: Any) -> int:
    return parse_size(value)


@dataclasses.dataclass(frozen=True)
class Setting:
    """One row of a settings table: its name, default, checker (raises ValueError) and help text.
    The job table below, the replay app's and the staff console's tables are all made of these."""

    name: str
    default: Any
    check: Callable[[Any], Any]
    help: str


def apply_settings(table: tuple[Setting, ...], values: dict | None, what: str) -> dict[str, Any]:
    """Defaults overridden by ``values``, each checked; ``ConfigError`` names the setting and why."""
    by_name = {s.name: s for s in table}
    config = {s.name: s.default for s in table}
    for name, value in (values or {}).items():
        setting = by_name.get(name)
        if setting is None:
            raise ConfigError(f"unknown {what} setting {name!r}; known: {', '.join(sorted(by_name))}")
        try:
            config[name] = setting.check(value)
        except ValueError as exc:
            raise ConfigError(f"{what} setting {name!r}: {exc}") from None
    return config
