"""URL normalisation for the frontier.

Every URL the harvester queues, compares or records goes through
:func:`normalize_url` first, so that two spellings of one resource
(``http://Example.COM:80/a/../b#x`` and ``http://example.com/b``) become one
frontier entry and one scope decision.

The rules follow what browsers do (the WHATWG URL standard) where that matters
for fetching, and RFC 3986 where the standard leaves room:

* only ``http`` and ``https`` survive; ``javascript:``, ``mailto:``, ``data:``
  and every other scheme give ``None``;
* leading and trailing C0 controls and spaces are stripped and tabs and
  newlines removed anywhere, as browsers do with ``href`` values; in http(s)
  URLs a backslash before the query counts as a slash;
* the host is percent-decoded, lowercased, IDNA-encoded (UTS 46, falling back
  to IDNA 2003 for hosts such as emoji domains that browsers still accept),
  loses one trailing dot, and must then consist of ``[a-z0-9_-]`` labels;
  numeric hosts are parsed as browsers parse them (``http://2130706433/``,
  ``http://0x7f.1/`` become dotted quads) and IPv6 literals are compressed;
* user information (``user:password@``) is dropped: credentials must not end
  up in WARC headers, indexes or logs;
* default ports are dropped, ports outside 1..65535 reject the URL;
* the fragment and an empty query (a bare ``?``) are dropped, dot segments
  removed (``%2e`` counts as a dot), an empty path becomes ``/``;
* characters that a request line cannot carry (controls, space, non-ASCII,
  ``"<>``, in the path `` ^ ` { | }`` and in the query ``'``, as Chromium does) are
  percent-encoded as UTF-8 (a query in the document's encoding is encoded before, by
  :mod:`strata.query_encoding`); existing
  ``%XX`` escapes are kept (hex digits uppercased), so nothing is encoded
  twice. The output is a fixed point of httpx's own URL quoting, so the URL
  recorded is the URL requested.

Inputs or results longer than :data:`MAX_URL_LENGTH` are rejected. Nothing
here does I/O, and :func:`normalize_url` returns ``None`` rather than raising
for any input.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

import idna

__all__ = ["MAX_URL_LENGTH", "local_path", "normalize_url", "url_host", "url_origin"]

#: Longer inputs and results are rejected (the de-facto limit of crawlers and CDNs).
MAX_URL_LENGTH = 2048

_SCHEMES = {"http": 80, "https": 443}
_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
_C0_AND_SPACE = "".join(chr(i) for i in range(0x21))
# Existing escapes, or a character a request line cannot carry as is.
# As Chromium encodes them (checked on every printable ASCII character): the URL standard's path and
# special-query percent-encode sets, plus "|" in the path, as Chromium does.
_PATH_UNSAFE = re.compile(r'%[0-9A-Fa-f]{2}|[^\x21-\x7e]|["#<>?^`{|}]')
_QUERY_UNSAFE = re.compile(r'%[0-9A-Fa-f]{2}|[^\x21-\x7e]|["#<>\']')
# Looser than RFC 1123 (edge hyphens, underscores): such hosts exist and browsers accept them.
_LABEL = re.compile(r"[a-z0-9_\-]{1,63}")
_DIGITS = {8: "01234567", 10: "0123456789", 16: "0123456789abcdef"}
_DOT = {".", "%2e"}
_DOTDOT = {"..", ".%2e", "%2e.", "%2e%2e"}


# A harvest meets the same hrefs and URLs again and again (navigation on every page, the frontier,
# scope and host checks on each link): the pure functions below remember recent answers.
_CACHE_SIZE = 32_768


def normalize_url(url: str, base: str | None = None) -> str | None:
    """Return the normalised absolute http(s) form of *url*, or ``None``.

    *url* is resolved against *base* when it is relative; *base* is normalised
    first and ignored when *url* is absolute. ``None`` means "not a URL the
    harvester can fetch": other schemes, empty or invalid hosts, bad ports,
    over-long input, or anything else that does not parse. Never raises.
    """
    if not isinstance(url, str) or len(url) > MAX_URL_LENGTH or not (base is None or isinstance(base, str)):
        return None
    return _normalize_cached(url, base)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _normalize_cached(url: str, base: str | None) -> str | None:
    plain = _plain_normal(url, base)
    if plain is not None:
        return plain
    try:
        return _normalize(url, base)
    except (ValueError, UnicodeError):  # idna.IDNAError is a UnicodeError
        return None


# -- URLs the rules leave as they are -------------------------------------------------------------
# Most URLs a harvest meets are normal already, or relative ones that resolve against a normal base
# by plain concatenation: for those the rules above change nothing, and checking that costs about a
# quarter of applying them (6 against 26 us a URL, measured). Anything the patterns below do not
# match, or that looks like it might need a rule (a dot segment, a number for a host, a default
# port, a ";" or "//" that urljoin would rewrite), takes the full path; the suite checks that both
# give the same answer.
_PATH_CHAR = r"(?:[!$&-;=@-\[\]_a-z~]|%[0-9A-F]{2})"  # printable ASCII but _PATH_UNSAFE, a lone "%" and "\\"
_QUERY_CHAR = r"(?:[!$&(-;=?-\[\]-~]|%[0-9A-F]{2})"  # printable ASCII but _QUERY_UNSAFE, a lone "%" and "\\"
_SUFFIX = rf"{_PATH_CHAR}*(?:\?{_QUERY_CHAR}+)?"
_PLAIN_ABSOLUTE = re.compile(
    rf"(https?)://((?:[a-z0-9_\-]{{1,63}}\.)*[a-z0-9_\-]{{1,63}})(?::([1-9][0-9]{{0,4}}))?(/{_SUFFIX})"
)
_PLAIN_RELATIVE = re.compile(_SUFFIX)
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"  # as str(IPv4Address) writes it
_CANONICAL_IPV4 = re.compile(rf"(?:{_OCTET}\.){{3}}{_OCTET}")


def _plain_normal(url: str, base: str | None) -> str | None:
    """``_normalize(url, base)`` when that changes nothing but the joining, else None."""
    if _plain_absolute(url):
        return url
    if ";" in url:
        return None  # urljoin reads ";" as the start of parameters, and may drop it
    if url[:1] == "/":
        if url[:2] == "//" or base is None or not _PLAIN_RELATIVE.fullmatch(url) or _may_hold_dot_segment(url):
            return None
        if not _plain_absolute(base):
            return None
        return _within_limit(base[: base.index("/", base.index("//") + 2)] + url)
    if not url or url[0] in ".?" or base is None or not _PLAIN_RELATIVE.fullmatch(url):
        return None
    head = url.split("?", 1)[0]
    if ":" in head.split("/", 1)[0] or _may_hold_dot_segment(url):
        return None  # a scheme, or a dot segment
    if not _plain_absolute(base):
        return None
    path_end = base.find("?")
    directory = base[: (base.rindex("/", 0, path_end) if path_end >= 0 else base.rindex("/")) + 1]
    if "//" in head or "//" in directory[directory.index("//") + 2 :]:
        return None  # urljoin drops the empty segments of a merged path
    return _within_limit(directory + url)


def _may_hold_dot_segment(reference: str) -> bool:
    """Whether a path (and query) might hold a segment of "." or ".." (or "%2E": the plain patterns
    admit escapes in upper case only); one that starts with a dot counts, to be safe."""
    return reference.startswith((".", "%2E")) or "/." in reference or "/%2E" in reference


def _within_limit(url: str) -> str | None:
    return url if len(url) <= MAX_URL_LENGTH else None  # None: the full rules say so too


def _plain_absolute(url: str) -> bool:
    """An absolute URL that ``_normalize`` returns as it is."""
    match = _PLAIN_ABSOLUTE.fullmatch(url)
    if match is None:
        return False
    scheme, host, port, path = match.groups()
    if _may_hold_dot_segment(path):
        return False
    if port is not None and (int(port) > 65535 or int(port) == _SCHEMES[scheme]):
        return False
    if len(host) > 253:
        return False
    last = host.rpartition(".")[2]
    if last.isdigit() or last[:2] == "0x":
        return _CANONICAL_IPV4.fullmatch(host) is not None
    return True


def local_path(target: str | None) -> str | None:
    """``target`` when a browser would take it as a path on the same host (a ``next=`` after a login),
    else None. A browser drops tabs and newlines from a URL and reads a backslash as ``/``, so
    ``/<tab>/evil.test/x`` is ``//evil.test/x`` to it, another host: any control character, space or
    backslash is refused, and what is left must be a path that does not start with ``//``."""
    if not target or any(ch <= " " or ch in "\\\x7f" for ch in target):
        return None
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith("/") or parts.path.startswith("//"):
        return None
    return target


def url_host(url: str) -> str:
    """Return the normalised host of *url* (IPv6 without brackets), or ``""``."""
    return _host_cached(url) if isinstance(url, str) else ""


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _host_cached(url: str) -> str:
    normal = normalize_url(url)
    if normal is None:
        return ""
    return _split_netloc(urlsplit(normal).netloc)[0].strip("[]")


def url_origin(url: str) -> str | None:
    """Return ``scheme://host:port`` of *url* with the port always written out.

    Used as a key for per-origin state such as robots.txt rules. ``None`` when
    *url* does not normalise.
    """
    normal = normalize_url(url)
    if normal is None:
        return None
    parts = urlsplit(normal)
    host, port = _split_netloc(parts.netloc)
    return f"{parts.scheme}://{host}:{port or _SCHEMES[parts.scheme]}"


def _normalize(url: str, base: str | None) -> str | None:
    url = url.strip(_C0_AND_SPACE).translate(_TAB_NEWLINE)
    match = _SCHEME_RE.match(url)
    scheme = match.group(1).lower() if match else None
    if scheme is not None and scheme not in _SCHEMES:
        return None
    url = _backslashes_to_slashes(url)
    if scheme is None or not url[len(scheme) + 1 :].startswith("//"):
        # Relative reference (or "http:path", relative in browsers too).
        if not isinstance(base, str):
            return None
        normal_base = _normalize_base(base)
        if normal_base is None:
            return None
        url = urljoin(normal_base, url)

    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        return None
    host: str | None
    host, port = _split_netloc(parts.netloc.rpartition("@")[2])
    host = _normalize_host(host)
    if host is None:
        return None
    port_number = _parse_port(port)
    if port_number is None:
        return None
    netloc = host if port_number in (0, _SCHEMES[scheme]) else f"{host}:{port_number}"

    path = _remove_dot_segments(_encode(parts.path or "/", _PATH_UNSAFE))
    query = _encode(parts.query, _QUERY_UNSAFE)
    result = urlunsplit((scheme, netloc, path, query, ""))
    return result if len(result) <= MAX_URL_LENGTH else None


@functools.lru_cache(maxsize=64)
def _normalize_base(base: str) -> str | None:
    # Link extraction resolves thousands of links against one base.
    if len(base) > MAX_URL_LENGTH:
        return None
    return _normalize(base, None)


def _backslashes_to_slashes(url: str) -> str:
    # Browsers read "\" as "/" in special (http, https) URLs, up to the query.
    if "\\" not in url:
        return url
    end = len(url)
    for stop in "?#":
        index = url.find(stop)
        if 0 <= index < end:
            end = index
    return url[:end].replace("\\", "/") + url[end:]


def _split_netloc(netloc: str) -> tuple[str, str]:
    """Split ``host:port`` (host may be a bracketed IPv6 literal)."""
    if netloc.startswith("["):
        close = netloc.find("]")
        if close < 0:
            raise ValueError("unclosed IPv6 literal")
        rest = netloc[close + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError("junk after IPv6 literal")
        return netloc[: close + 1], rest[1:]
    host, _, port = netloc.partition(":")
    return host, port


def _parse_port(port: str) -> int | None:
    """0 for "no port", None for an invalid one."""
    if not port:
        return 0
    if not port.isascii() or not port.isdigit() or len(port) > 5:
        return None
    number = int(port)
    return number if 1 <= number <= 65535 else None


def _normalize_host(host: str) -> str | None:
    if host.startswith("["):
        address = ipaddress.IPv6Address(host[1:-1])  # ValueError if bad
        if address.scope_id is not None:  # "%eth0" zones mean nothing off this machine
            return None
        return f"[{address.compressed}]"
    if "%" in host:
        host = unquote(host)
    if not host:
        return None
    if host.isascii():
        host = host.lower()
    else:
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except idna.IDNAError:
            # IDNA 2003 still accepts what browsers accept (e.g. emoji labels).
            host = host.lower().encode("idna").decode("ascii")
    if host.endswith("."):
        host = host[:-1]
    if not host or len(host) > 253:
        return None
    if _ends_in_number(host):
        return _parse_ipv4(host)
    if all(_LABEL.fullmatch(label) for label in host.split(".")):
        return host
    return None


def _ends_in_number(host: str) -> bool:
    last = host.rsplit(".", 1)[-1]
    if last.isdigit():
        return True
    return last[:2] == "0x" and all(c in "0123456789abcdef" for c in last[2:])


def _parse_ipv4(host: str) -> str | None:
    """Parse an IPv4 host the way browsers do: 1 to 4 parts, hex/octal/decimal."""
    parts = host.split(".")
    if len(parts) > 4:
        return None
    numbers = []
    for part in parts:
        if not part:
            return None
        if part[:2] == "0x":
            digits, radix = part[2:] or "0", 16
        elif len(part) > 1 and part[0] == "0":
            digits, radix = part[1:], 8
        else:
            digits, radix = part, 10
        if len(digits) > 12 or any(c not in _DIGITS[radix] for c in digits):
            return None
        numbers.append(int(digits, radix))
    last = numbers.pop()
    if any(n > 255 for n in numbers) or last >= 256 ** (4 - len(numbers)):
        return None
    value = last
    for index, number in enumerate(numbers):
        value += number << (8 * (3 - index))
    return str(ipaddress.IPv4Address(value))


def _escape(match: re.Match[str]) -> str:
    text = match.group(0)
    if text[0] == "%" and len(text) == 3:
        return text.upper()
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogate
        data = "\ufffd".encode()
    return "".join(f"%{byte:02X}" for byte in data)


def _encode(text: str, unsafe: re.Pattern[str]) -> str:
    return unsafe.sub(_escape, text) if text else text


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4 for an absolute path (also "%2e" as a dot)."""
    segments = path.split("/")[1:]
    if not any(segment.lower() in _DOT or segment.lower() in _DOTDOT for segment in segments):
        return path
    output: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        lowered = segment.lower()
        if lowered in _DOT:
            if last:
                output.append("")
        elif lowered in _DOTDOT:
            if output:
                output.pop()
            if last:
                output.append("")
        else:
            output.append(segment)
    return "/" + "/".join(output)
