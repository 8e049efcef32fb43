"""Replay addresses: what follows ``/<collection>/`` in a request, parsed and checked.

    <ts><mod>/<url>        replay as of <ts> (4 to 14 digits; a partial one means the end of
                           its period); <mod> is pywb's modifier: none (rewritten page with
                           banner), id_ (archived bytes), im_, js_, cs_, if_, mp_ ...
    <url>                  Memento TimeGate (Accept-Datetime, else the latest capture)
    <mod>/<url>            TimeGate with a modifier
    timemap/<fmt>/<url>    Memento TimeMap (fmt: link, json, cdxj)
    *<url>, <ts>*/<url>    the calendar of a URL; <url>* lists archived URLs with that prefix

Malformed parts raise ``BadAddress`` with a hint of what to type instead.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import datetime
from urllib.parse import quote, unquote

from warcio.timeutils import PAD_14_DOWN, pad_timestamp

from replay.errors import BadAddress

_CALENDAR = re.compile(r"^(\d*)\*/(.*)$", re.S)
_REPLAY = re.compile(r"^(\d+)([a-z]{2,3}_)?/+(.*)$", re.S)
_MOD_ONLY = re.compile(r"^([a-z]{2,3}_)/+(.*)$", re.S)
_BAD_TS = re.compile(r"^\d[\w-]*/", re.S)  # "2024x/...": a timestamp gone wrong, not a host name
_TIMEMAP = re.compile(r"^timemap/([a-z]+)/+(.*)$", re.S)
_ESCAPES = re.compile(r"(?:[^%]|%[0-9A-Fa-f]{2})+")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):/*(.*)$", re.S)
TIMEMAP_OUTPUTS = ("link", "json", "cdxj")
TS_HINT = "Use a timestamp of 4 to 14 digits, YYYYMMDDhhmmss, e.g. 20240115120000."


@dataclasses.dataclass(frozen=True)
class Address:
    coll: str
    kind: str  # replay | timegate | timemap | calendar
    url: str
    timestamp: str = ""
    mod: str = ""
    output: str = ""  # timemap format
    prefix: bool = False  # calendar: list URLs starting with url

    def pywb_path(self) -> str:
        """The address in pywb's own form (what ``WbUrl`` parses)."""
        if self.kind == "timemap":
            return self.url
        return f"{self.timestamp}{self.mod}/{self.url}" if (self.timestamp or self.mod) else self.url


def parse_address(coll: str, rest: str) -> Address:
    if m := _TIMEMAP.match(rest):
        output, url = m.groups()
        if output not in TIMEMAP_OUTPUTS:
            raise BadAddress(
                coll,
                f"{output!r} is not a TimeMap format.",
                f"Use one of {', '.join(TIMEMAP_OUTPUTS)}: /{coll}/timemap/link/<url>.",
            )
        return Address(coll, "timemap", check_url(coll, url), output=output)
    if m := _CALENDAR.match(rest):
        ts, url = m.groups()
        if ts:
            check_timestamp(coll, ts)
        prefix = url.endswith("*")
        return Address(coll, "calendar", check_url(coll, url.rstrip("*") if prefix else url), ts, prefix=prefix)
    if m := _REPLAY.match(rest):
        ts, mod, url = m.groups()
        return Address(coll, "replay", check_url(coll, url), check_timestamp(coll, ts), mod or "")
    if _BAD_TS.match(rest):
        raise BadAddress(coll, f"{rest.split('/', 1)[0]!r} is not a timestamp.", TS_HINT)
    if m := _MOD_ONLY.match(rest):
        mod, url = m.groups()
        return Address(coll, "timegate", check_url(coll, url), mod=mod)
    return Address(coll, "timegate", check_url(coll, rest))


def check_timestamp(coll: str, ts: str) -> str:
    if not 4 <= len(ts) <= 14:
        raise BadAddress(coll, f"{ts!r} is not a timestamp.", TS_HINT)
    try:
        datetime.strptime(pad_timestamp(ts, PAD_14_DOWN), "%Y%m%d%H%M%S")
    except ValueError:
        raise BadAddress(coll, f"{ts!r} is not a valid date and time.", TS_HINT) from None
    return ts


def check_url(coll: str, url: str) -> str:
    """An http(s) URL with a host; ``example.org/x`` means ``http://example.org/x``."""
    hint = f"Give a full web address after the timestamp, e.g. /{coll}/20240115120000/https://example.org/"
    if not url.strip():
        raise BadAddress(coll, "The address names no URL.", hint)
    m = _SCHEME.match(url)
    if m and not re.match(r"^\d+(/|$)", m.group(2)):  # a scheme, not host:port
        scheme, rest = m.groups()
        if scheme.lower() not in ("http", "https"):
            raise BadAddress(coll, f"Only http and https URLs are archived, not {scheme}: URLs.", hint)
        url = f"{scheme.lower()}://{rest}"  # proxies and browsers merge the slashes of http://
    else:
        url = "http://" + url
    host = url.split("://", 1)[1].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if "%" in host:  # a browser's form of a non-ASCII host left in a replayed link (replay.pagelinks)
        try:
            decoded = unquote(host, errors="strict") if _ESCAPES.fullmatch(host) else host
        except UnicodeDecodeError:
            decoded = host
        if decoded != host and not decoded.isascii():
            url, host = url.replace(host, decoded, 1), decoded
    if not host or any(c.isspace() or c in '<>"{}|\\^`%' for c in host):
        raise BadAddress(coll, f"{url!r} has no valid host name.", hint)
    if not host.isascii():
        try:
            url = url.replace(host, host.encode("idna").decode("ascii"), 1)
        except UnicodeError:
            raise BadAddress(coll, f"{host!r} is not a valid host name.", hint) from None
    return quote(url, safe="!#$%&'()*+,/:;=?@[]~")  # an IRI's other characters, percent-encoded as UTF-8
