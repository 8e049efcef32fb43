"""Permanent capture identifiers: short, and derived from the collection, URL and timestamp alone.

    pid = <capture second, 7 base32 digits> <hash of "collection\\ntimestamp\\nURL", 8 base32 digits>

e.g. ``1q2w3e4r5t6y7u8`` (15 characters, Crockford's base32 alphabet, lower case). Nothing is
stored: the same capture gets the same identifier from any index derived from the same WARCs, so
an identifier keeps working after ``strata index rebuild`` (or a rebuild by ``wb-manager``).
Resolving one reads only the CDXJ lines of that second (a byte search for the timestamp, then the
hash of each candidate's collection and URL), so it needs no table and writes nothing.
"""

from __future__ import annotations

import calendar
import hashlib
import mmap
import re
import time
from collections.abc import Mapping
from pathlib import Path

from index.cdx.capture_index import index_files
from index.cdx.cdxj import parse_line
from index.cdx.versions import Version, filter_captures
from index.collection import Collection, list_collections
from strata.errors import ConfigError

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford's base32: no i, l, o, u
TIME_DIGITS = 7  # 35 bits of seconds since 1970: until the year 3058
HASH_DIGITS = 8  # 40 bits
PID_RE = re.compile(rf"^[{ALPHABET}]{{{TIME_DIGITS + HASH_DIGITS}}}$")


def _base32(number: int, digits: int) -> str:
    out = []
    for _ in range(digits):
        number, rest = divmod(number, 32)
        out.append(ALPHABET[rest])
    return "".join(reversed(out))


def _hash(collection: str, url: str, timestamp: str) -> str:
    digest = hashlib.sha256(f"{collection}\n{timestamp}\n{url}".encode()).digest()
    return _base32(int.from_bytes(digest[:5], "big"), HASH_DIGITS)


def capture_pid(collection: str, url: str, timestamp: str) -> str:
    """The permanent identifier of the capture of ``url`` at ``timestamp`` (14 digits) in ``collection``."""
    seconds = calendar.timegm(time.strptime(timestamp[:14], "%Y%m%d%H%M%S"))
    return _base32(seconds, TIME_DIGITS) + _hash(collection, url, timestamp[:14])


def parse_pid(pid: str) -> tuple[str, str]:
    """(14-digit timestamp, hash part) of a well-formed identifier, or ConfigError."""
    pid = pid.strip().lower()
    if not PID_RE.match(pid):
        raise ConfigError(
            f"{pid!r} is not a permanent capture id; one is {TIME_DIGITS + HASH_DIGITS} characters of "
            f"{ALPHABET}, as the 'cite this' line of a replayed page gives it"
        )
    seconds = 0
    for ch in pid[:TIME_DIGITS]:
        seconds = seconds * 32 + ALPHABET.index(ch)
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(seconds)), pid[TIME_DIGITS:]


def resolve(root: Path, pid: str, viewer: Mapping | None = None) -> list[tuple[str, Version]]:
    """Every (collection, capture) the identifier names: one, unless two URLs captured in the same
    second of one collection share the 40-bit hash. Captures pass through ``filter_captures``."""
    timestamp, wanted = parse_pid(pid)
    found: list[tuple[str, Version]] = []
    for name in list_collections(root):
        collection = Collection(root, name)
        matches = [v for v in _lines_at(collection, timestamp) if _hash(name, v.url, v.timestamp) == wanted]
        found += [(name, v) for v in filter_captures(collection, matches, viewer)]
    return found


def _lines_at(collection: Collection, timestamp: str) -> list[Version]:
    needle = f" {timestamp} ".encode()
    out = []
    for path in index_files(collection):
        if path.stat().st_size == 0:
            continue
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            pos = data.find(needle)
            while pos >= 0:
                start = data.rfind(b"\n", 0, pos) + 1
                end = data.find(b"\n", pos)
                end = len(data) if end < 0 else end
                line = data[start:end]
                if line.index(b" ") == pos - start:  # the timestamp field, not a space inside the JSON
                    out.append(Version.from_cdx(parse_line(line)))
                pos = data.find(needle, end)
    return out
