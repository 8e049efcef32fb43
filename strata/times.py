"""The one set of time helpers: every timestamp Strata writes is UTC and made here.

Formats in use:

    iso(dt)          2024-03-01T12:00:00.123Z      run start/finish, URL checks (milliseconds)
    iso_micro(dt)    2024-03-01T12:00:00.123456Z   queue, staff accounts (microseconds)
    warc_date(dt)    2024-03-01T12:00:00.123456Z   WARC-Date (WARC 1.1 allows sub-second precision)
    ts14(dt)         20240301120000                CDXJ and replay addresses
"""

from __future__ import annotations

import calendar
from datetime import UTC, datetime

from warcio.timeutils import PAD_14_DOWN, PAD_14_UP, pad_timestamp

MICRO_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def iso_micro(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime(MICRO_FORMAT)


def parse_iso_micro(text: str | None) -> datetime | None:
    """The inverse of ``iso_micro``; ``None`` for an empty value."""
    if not text:
        return None
    return datetime.strptime(text, MICRO_FORMAT).replace(tzinfo=UTC)


def warc_date(dt: datetime) -> str:
    return dt.strftime(MICRO_FORMAT)


def ts14(dt: datetime) -> str:
    return dt.strftime("%Y%m%d%H%M%S")


def digits14(date: str) -> str:
    """The first 14 digits of a WARC-Date or ISO 8601 date ("" for none): its timestamp, unpadded."""
    return "".join(ch for ch in date if ch.isdigit())[:14]


def ts14_of(warc_date: str) -> str:
    """The 14-digit timestamp of a WARC-Date (or any ISO 8601 date), padded with zeros."""
    return digits14(warc_date).ljust(14, "0")


def pad_as_of(timestamp: str) -> str:
    """A partial timestamp means the end of its period: ``2024`` is as of 2024-12-31 23:59:59,
    ``202402`` as of 2024-02-29 23:59:59 (warcio pads every month to day 31)."""
    if len(timestamp) >= 14:
        return timestamp[:14]
    padded = pad_timestamp(timestamp, PAD_14_UP)
    try:
        last_day = calendar.monthrange(int(padded[:4]), int(padded[4:6]))[1]
    except ValueError:
        return padded
    return padded[:6] + f"{min(int(padded[6:8]), last_day):02d}" + padded[8:]


def pad_start(timestamp: str) -> str:
    """A partial timestamp's first second: ``2024`` is 2024-01-01 00:00:00."""
    return pad_timestamp(timestamp, PAD_14_DOWN)
