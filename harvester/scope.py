"""Crawl scope: which discovered URLs a job may fetch.

A :class:`Scope` is built once per run from the job settings and answers
:meth:`Scope.decide` for every link. It is pure policy: no I/O, no state
beyond the compiled settings.

Rules, checked in this order (the first failing one is the reason given):

1. The URL must normalise (:func:`strata.urls.normalize_url`).
2. Host. ``same-host``: the URL's host is the host of one of the seeds
   (``www.example.com`` and ``example.com`` are different hosts).
   ``same-domain``: the URL's host is, or is under, the registrable domain of
   a seed, taken as the last two labels, or the last three when the last is a
   two-letter country code and the one before it a generic second level such
   as ``co``, ``com`` or ``gov`` (``news.bbc.co.uk`` -> ``bbc.co.uk``); an IP
   address must match exactly. ``any``: every host. Embeds skip this check
   when ``embeds_offsite`` is true.
3. Exclude patterns: a URL matching any of them is rejected, whatever its kind.
4. Depth (navigation only): ``depth`` is the depth the URL would have, seeds
   being 0 and links found on a depth-*d* page *d* + 1; it must be at most
   ``max_depth``. Embeds are accepted whatever the depth.
5. Include patterns (navigation only): when any are given the URL must match
   one. Seeds themselves pass this check.

Patterns are Python regular expressions searched (``re.search``) in the
normalised URL, compiled once. ``kind`` ``"embed"`` gets the embed rules;
every other kind (``"navigation"``, ``"refresh"``, ``"redirect"``, ...) the
stricter navigation rules. The scope does not follow chains of embeds (an
offsite iframe's own iframes): the caller decides which pages it extracts
links from.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from strata.urls import normalize_url, url_host

__all__ = ["HOST_MODES", "Decision", "Scope", "registrable_domain"]

HOST_MODES = ("same-host", "same-domain", "any")

# Second-level labels under which country-code TLDs register names
# ("example.co.uk", "example.com.cn"): kept short, as a guard against
# putting a whole country in scope, not as a public-suffix list.
_GENERIC_SECOND_LEVEL = frozenset(
    {
        "ac",
        "co",
        "com",
        "edu",
        "gov",
        "gob",
        "gouv",
        "go",
        "govt",
        "mil",
        "net",
        "nic",
        "or",
        "org",
        "ne",
        "ltd",
        "plc",
        "sch",
        "nhs",
    }
)


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer for one URL: ``accept`` and a short ``reason`` for logs and reports."""

    accept: bool
    reason: str

    def __bool__(self) -> bool:
        return self.accept


def registrable_domain(host: str) -> str:
    """Return the part of *host* that ``same-domain`` compares (an IP as is)."""
    host = host.strip("[]")
    if _is_ip(host):
        return host
    labels = host.split(".")
    if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _GENERIC_SECOND_LEVEL:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


class Scope:
    """Scope of one job; see the module docstring for the rules."""

    def __init__(
        self,
        seeds: Iterable[str],
        hosts: str = "same-host",
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        max_depth: int = 3,
        embeds_offsite: bool = True,
    ):
        if hosts not in HOST_MODES:
            raise ValueError(f"hosts must be one of {', '.join(HOST_MODES)}, not {hosts!r}")
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
            raise ValueError(f"max_depth must be a whole number of at least 0, not {max_depth!r}")
        if isinstance(seeds, str):
            raise ValueError("seeds must be a list of URLs, not one string")
        self.seeds: frozenset[str] = frozenset(_normalize_seed(seed) for seed in seeds)
        if not self.seeds:
            raise ValueError("at least one seed URL is needed")
        self.hosts = hosts
        self.max_depth = max_depth
        self.embeds_offsite = bool(embeds_offsite)
        self.include = _compile_all(include, "include")
        self.exclude = _compile_all(exclude, "exclude")
        self._seed_hosts = frozenset(url_host(seed) for seed in self.seeds)
        self._seed_domains = frozenset(registrable_domain(host) for host in self._seed_hosts)

    def decide(self, url: str, depth: int, kind: str) -> Decision:
        """Decide whether *url*, found as a *kind* link at *depth*, is in scope."""
        normal = normalize_url(url)
        if normal is None:
            return Decision(False, "not an http(s) URL")
        embed = kind == "embed"
        if not (embed and self.embeds_offsite) and not self.host_in_scope(url_host(normal)):
            return Decision(False, "out-of-scope host")
        for pattern in self.exclude:
            if pattern.search(normal):
                return Decision(False, f"excluded by pattern /{pattern.pattern}/")
        if embed:
            return Decision(True, "embed")
        if depth > self.max_depth:
            return Decision(False, "too deep")
        if normal in self.seeds:
            return Decision(True, "seed")
        if self.include and not any(pattern.search(normal) for pattern in self.include):
            return Decision(False, "matches no include pattern")
        return Decision(True, "in scope")

    def host_in_scope(self, host: str) -> bool:
        """Whether navigation may lead to *host* (a normalised host, as from ``url_host``)."""
        if self.hosts == "any":
            return bool(host)
        if self.hosts == "same-host" or _is_ip(host):
            return host in self._seed_hosts
        return registrable_domain(host) in self._seed_domains

    def __repr__(self) -> str:
        return (
            f"Scope(seeds={sorted(self.seeds)!r}, hosts={self.hosts!r}, max_depth={self.max_depth}, "
            f"include={[p.pattern for p in self.include]!r}, exclude={[p.pattern for p in self.exclude]!r}, "
            f"embeds_offsite={self.embeds_offsite})"
        )


def _normalize_seed(seed: str) -> str:
    normal = normalize_url(seed)
    if normal is None:
        raise ValueError(f"seed {seed!r} is not an http(s) URL")
    return normal


def _compile_all(patterns: Iterable[str], field: str) -> tuple[re.Pattern[str], ...]:
    if isinstance(patterns, str):
        raise ValueError(f"{field} must be a list of regular expressions, not one string")
    compiled = []
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise ValueError(f"{field} pattern {pattern!r} is not a string")
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ValueError(
                f"{field} pattern {pattern!r} is not a valid regular expression: {exc}"
            ) from None
    return tuple(compiled)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
