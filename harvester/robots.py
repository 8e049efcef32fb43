"""robots.txt policy (RFC 9309): rules for one origin, and a per-run cache of them.

:class:`RobotsRules` turns a robots.txt response into answers for
:meth:`RobotsRules.allowed`. It implements RFC 9309 itself rather than using
``urllib.robotparser``, which knows neither ``*`` nor ``$`` nor longest-match:

* status: 2xx is parsed; 3xx left after the fetch's own redirects and 4xx mean
  "unavailable", so everything is allowed, except 429 Too Many Requests, which
  (as Google does) counts as a server error; 5xx, any other status and no
  response at all (``None``: DNS, connection or timeout failure) disallow
  everything;
* at most :data:`MAX_ROBOTS_BYTES` (500 KiB, the RFC's minimum) are parsed; a
  line cut by that limit is dropped rather than read short. Bytes are decoded
  as UTF-8 with replacement characters, a BOM is ignored;
* groups: the group whose ``User-agent`` product token equals ours
  (case-insensitive; ``Strata`` in ``Strata/0.1 (+https://...)``) wins, else
  the ``*`` group, else everything is allowed. Several groups for the same
  agent are merged. Rules before any ``User-agent`` line are ignored;
* matching: against the URL's path and query, with ``*`` matching any run of
  characters and a final ``$`` anchoring the end. Both sides are normalised
  first (non-ASCII and controls percent-encoded as UTF-8, escapes of
  unreserved characters decoded, other escapes uppercased). The longest
  matching pattern wins; between an ``allow`` and a ``disallow`` of equal
  length, ``allow`` wins. A pattern not starting with ``/`` or ``*`` gets a
  leading ``/``. ``/robots.txt`` itself is always allowed;
* ``Crawl-delay`` (not in the RFC) is read from the chosen group(s); the
  largest valid value wins. The harvest spaces requests to the host by it (:func:`effective_delay`).

:class:`RobotsCache` fetches and caches the rules of each origin
(``scheme://host:port``) for a run, and coalesces concurrent lookups of one
origin into one fetch.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from strata.urls import normalize_url, url_origin

__all__ = ["MAX_ROBOTS_BYTES", "RobotsCache", "RobotsRules", "RobotsUnreachable", "effective_delay", "product_token"]

log = logging.getLogger(__name__)

#: How much of a robots.txt body is parsed (RFC 9309 section 2.5: at least 500 KiB).
MAX_ROBOTS_BYTES = 500 * 1024

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_TOKEN = re.compile(r"[A-Za-z_\-]+")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_TO_NORMALIZE = re.compile(r"%[0-9A-Fa-f]{2}|[^\x21-\x7e]")


class RobotsUnreachable(OSError):
    """Raised by a robots fetcher when no answer came (its message says why: DNS, refused, guard)."""


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: str
    allow: bool


def effective_delay(crawl_delay: float | None, delay: float, cap: float) -> float:
    """Seconds between request starts to a host: the job's ``delay``, or the host's ``Crawl-delay``
    when larger, that capped at ``cap`` (a site cannot stall a job for hours per request)."""
    if crawl_delay is None:
        return delay
    return max(delay, min(crawl_delay, cap))


def product_token(user_agent: str) -> str:
    """Return the lowercased product token of a User-Agent (``""`` if none)."""
    match = _TOKEN.match(user_agent.strip()) if isinstance(user_agent, str) else None
    return match.group(0).lower() if match else ""


class RobotsRules:
    """The robots.txt rules that apply to one user agent on one origin."""

    def __init__(self, rules=(), crawl_delay: float | None = None, *, default: bool = True, reason: str = ""):
        # Longest pattern first; at equal length allow before disallow.
        self._rules: tuple[_Rule, ...] = tuple(sorted(rules, key=lambda r: (-len(r.pattern), not r.allow)))
        self._default = default
        self._crawl_delay = crawl_delay
        #: How these rules came about, for logs ("parsed 12 rules", "HTTP 503: disallow all").
        self.reason = reason

    @classmethod
    def allow_all(cls, reason: str = "allow all") -> RobotsRules:
        return cls(default=True, reason=reason)

    @classmethod
    def disallow_all(cls, reason: str = "disallow all") -> RobotsRules:
        return cls(default=False, reason=reason)

    @classmethod
    def from_response(cls, status: int | None, body: bytes | None, user_agent: str) -> RobotsRules:
        """Rules from the final response to ``/robots.txt`` (``status=None``: unreachable)."""
        if status is None:
            return cls.disallow_all("unreachable: disallow all")
        if 200 <= status < 300:
            return cls.parse(body or b"", user_agent)
        if status == 429:
            return cls.disallow_all("HTTP 429: disallow all")
        if 300 <= status < 500:
            return cls.allow_all(f"HTTP {status}: allow all")
        return cls.disallow_all(f"HTTP {status}: disallow all")

    @classmethod
    def parse(cls, body: bytes | str, user_agent: str) -> RobotsRules:
        """Rules from a robots.txt body (bytes are capped at 500 KiB and decoded)."""
        if isinstance(body, (bytes, bytearray)):
            body = _decode(bytes(body))
        token = product_token(user_agent)
        groups = _parse_groups(body)
        chosen = [g for g in groups if token and token in g.agents] or [g for g in groups if "*" in g.agents]
        rules = [rule for group in chosen for rule in group.rules]
        delays = [delay for group in chosen for delay in group.delays]
        return cls(
            rules,
            max(delays) if delays else None,
            reason=f"parsed {len(rules)} rules" if chosen else "no group applies: allow all",
        )

    @property
    def crawl_delay(self) -> float | None:
        """Seconds between requests asked for by ``Crawl-delay``, if any."""
        return self._crawl_delay

    @property
    def disallows_everything(self) -> bool:
        """True for the blanket refusal of an unreachable or failing robots.txt."""
        return not self._default

    def allowed(self, url: str) -> bool:
        """Whether *url* (on this origin) may be fetched."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return False
        path = parts.path or "/"
        if path == "/robots.txt":
            return True
        if not self._default or not self._rules:
            return self._default
        target = _normalize(path + ("?" + parts.query if parts.query else ""))
        for rule in self._rules:
            if _matches(rule.pattern, target):
                return rule.allow
        return True

    def __repr__(self) -> str:
        return f"<RobotsRules {self.reason!r}>"


class RobotsCache:
    """Rules per origin for one run, fetched at most once per origin at a time.

    *fetch* is an async callable ``fetch(url) -> (status | None, body | None)``
    for the ``/robots.txt`` URL of an origin. It must itself follow up to 5
    redirects (RFC 9309 section 2.3.1.2) and return the final status, return
    ``(None, None)`` or raise when the server cannot be reached, and need not
    read more than :data:`MAX_ROBOTS_BYTES` of the body. An exception from it
    counts as unreachable.

    Rules are kept for *ttl* seconds (RFC 9309 asks for at most 24 hours); the
    blanket refusal after an unreachable or failing robots.txt only for
    *error_ttl* seconds, after which the next lookup fetches again.
    """

    def __init__(
        self,
        fetch: Callable[[str], Awaitable[tuple[int | None, bytes | None]]],
        user_agent: str = "Strata",
        *,
        ttl: float = 86400.0,
        error_ttl: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._fetch = fetch
        self.user_agent = user_agent
        self._ttl = ttl
        self._error_ttl = error_ttl
        self._clock = clock
        self._rules: dict[str, tuple[RobotsRules, float]] = {}
        self._pending: dict[str, asyncio.Future[RobotsRules]] = {}

    async def rules_for(self, url: str) -> RobotsRules:
        """The rules for *url*'s origin (disallow-all for a URL that does not normalise)."""
        origin = url_origin(url)
        if origin is None:
            return RobotsRules.disallow_all("not an http(s) URL")
        cached = self._rules.get(origin)
        if cached is not None and cached[1] > self._clock():
            return cached[0]
        task = self._pending.get(origin)
        if task is None:
            task = asyncio.ensure_future(self._load(origin))
            self._pending[origin] = task
            task.add_done_callback(lambda _: self._pending.pop(origin, None))
        # One waiter being cancelled must not cancel the fetch the others wait for.
        return await asyncio.shield(task)

    async def allowed(self, url: str) -> bool:
        return (await self.rules_for(url)).allowed(url)

    async def _load(self, origin: str) -> RobotsRules:
        robots_url = normalize_url(origin + "/robots.txt")
        assert robots_url is not None  # an http(s) origin and a path make an http(s) URL
        try:
            status, body = await self._fetch(robots_url)
        except Exception as exc:  # the fetcher's failure is the site's unreachability
            log.info("robots.txt of %s unreachable: %r", origin, exc)
            rules = RobotsRules.disallow_all(f"unreachable ({exc or type(exc).__name__}): disallow all")
        else:
            rules = RobotsRules.from_response(status, body, self.user_agent)
        ttl = self._error_ttl if rules.disallows_everything else self._ttl
        self._rules[origin] = (rules, self._clock() + ttl)
        return rules


@dataclass
class _Group:
    agents: set[str]
    rules: list[_Rule]
    delays: list[float]


def _decode(body: bytes) -> str:
    if len(body) > MAX_ROBOTS_BYTES:
        body = body[:MAX_ROBOTS_BYTES]
        cut = max(body.rfind(b"\n"), body.rfind(b"\r"))
        body = body[: cut + 1] if cut >= 0 else b""
    text = body.decode("utf-8", errors="replace")
    return text[1:] if text.startswith("\ufeff") else text


def _parse_groups(text: str) -> list[_Group]:
    groups: list[_Group] = []
    group: _Group | None = None
    in_agent_lines = False
    for line in _LINE_BREAK.split(text):
        key, sep, value = line.partition("#")[0].partition(":")
        if not sep:
            continue
        key = key.strip().lower().replace(" ", "")
        value = value.strip()
        if key in ("user-agent", "useragent"):
            if group is None or not in_agent_lines:
                group = _Group(set(), [], [])
                groups.append(group)
            in_agent_lines = True
            group.agents.add("*" if value.startswith("*") else product_token(value))
        elif key in ("allow", "disallow"):
            in_agent_lines = False
            if group is not None and value:
                group.rules.append(_Rule(_pattern(value), key == "allow"))
        elif key in ("crawl-delay", "crawldelay"):
            in_agent_lines = False
            if group is not None:
                try:
                    delay = float(value)
                except ValueError:
                    continue
                if math.isfinite(delay) and delay >= 0:
                    group.delays.append(delay)
        # Sitemap and unknown lines belong to no group and end nothing.
    return groups


def _pattern(value: str) -> str:
    if not value.startswith(("/", "*")):
        value = "/" + value
    return _normalize(value)


def _normalize_escape(match: re.Match[str]) -> str:
    text = match.group(0)
    if text[0] == "%" and len(text) == 3:
        char = chr(int(text[1:], 16))
        return char if char in _UNRESERVED else text.upper()
    return "".join(f"%{byte:02X}" for byte in text.encode("utf-8", errors="replace"))


def _normalize(text: str) -> str:
    """RFC 9309 section 2.2.2: one encoding for both patterns and paths."""
    return _TO_NORMALIZE.sub(_normalize_escape, text)


def _matches(pattern: str, path: str) -> bool:
    """Prefix match with ``*`` wildcards and an optional final ``$``, in O(len(path) * parts)."""
    anchored = pattern.endswith("$")
    if anchored:
        pattern = pattern[:-1]
    parts = pattern.split("*")
    first = parts[0]
    if not path.startswith(first):
        return False
    if len(parts) == 1:
        return not anchored or len(path) == len(first)
    pos = len(first)
    for part in parts[1:-1]:  # leftmost placement of each middle part is never worse
        found = path.find(part, pos)
        if found < 0:
            return False
        pos = found + len(part)
    last = parts[-1]
    if anchored:
        return len(path) - pos >= len(last) and path.endswith(last)
    return path.find(last, pos) >= 0
