"""Crawl scope: which discovered URLs a job may fetch.

A :class:`Scope` is built once per run from the job settings and answers
:meth:`Scope.decide` for every link. It is pure policy: no I/O, no state
beyond the compiled settings.

Rules, checked in this order (the first failing one is the reason given):

1. The URL must normalise (:func:`strata.urls.normalize_url`).
2. Host. ``same-host``: the URL's host and port are those of one of the
   seeds (``www.example.com`` and ``example.com`` are different hosts, and so
   are ``127.0.0.1:8001`` and ``127.0.0.1:8002``; default ports are dropped by
   normalisation, so ``http://h/`` and ``https://h/`` are one host). With
   ``same_host_any_port`` the port is not compared.
   ``same-domain``: the URL's host has the registrable domain of a seed, from
   the Public Suffix List (:mod:`strata.public_suffix`: ``pref.kyoto.lg.jp``
   and ``pref.osaka.lg.jp`` differ, as do ``alice.github.io`` and
   ``bob.github.io``), on any port; an IP address must match exactly.
   ``any``: every host. Embeds skip this check when ``embeds_offsite`` is true.
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

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from strata.public_suffix import is_ip, registrable_domain
from strata.regex import compile_linear
from strata.urls import normalize_url, url_host

__all__ = ["HOST_MODES", "Decision", "Scope", "registrable_domain"]

HOST_MODES = ("same-host", "same-domain", "any")


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer for one URL: ``accept`` and a short ``reason`` for logs and reports."""

    accept: bool
    reason: str

    def __bool__(self) -> bool:
        return self.accept


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
        same_host_any_port: bool = False,
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
        self.same_host_any_port = bool(same_host_any_port)
        self.include = _compile_all(include, "include")
        self.exclude = _compile_all(exclude, "exclude")
        self._seed_hosts = frozenset(url_host(seed) for seed in self.seeds)
        self._seed_netlocs = frozenset(_netloc(seed) for seed in self.seeds)
        self._seed_domains = frozenset(registrable_domain(host) for host in self._seed_hosts)

    def decide(self, url: str, depth: int, kind: str) -> Decision:
        """Decide whether *url*, found as a *kind* link at *depth*, is in scope."""
        normal = normalize_url(url)
        if normal is None:
            return Decision(False, "not an http(s) URL")
        embed = kind == "embed"
        if not (embed and self.embeds_offsite) and not self._url_host_in_scope(normal):
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

    def _url_host_in_scope(self, normal: str) -> bool:
        if self.hosts == "same-host" and not self.same_host_any_port:
            return _netloc(normal) in self._seed_netlocs
        return self.host_in_scope(url_host(normal))

    def host_in_scope(self, host: str) -> bool:
        """Whether navigation may lead to *host* (a normalised host, as from ``url_host``) on some
        port: in ``same-host`` scope the port is checked by :meth:`decide`, not here."""
        if self.hosts == "any":
            return bool(host)
        if self.hosts == "same-host" or is_ip(host):
            return host in self._seed_hosts
        return registrable_domain(host) in self._seed_domains

    def __repr__(self) -> str:
        return (
            f"Scope(seeds={sorted(self.seeds)!r}, hosts={self.hosts!r}, max_depth={self.max_depth}, "
            f"include={[p.pattern for p in self.include]!r}, exclude={[p.pattern for p in self.exclude]!r}, "
            f"embeds_offsite={self.embeds_offsite}, same_host_any_port={self.same_host_any_port})"
        )


def _normalize_seed(seed: str) -> str:
    normal = normalize_url(seed)
    if normal is None:
        raise ValueError(f"seed {seed!r} is not an http(s) URL")
    return normal


def _netloc(normal: str) -> str:
    # A normalised URL: "scheme://host[:port]/...", the port only when not the default.
    return normal.split("/", 3)[2]


def _compile_all(patterns: Iterable[str], field: str) -> tuple[Any, ...]:
    if isinstance(patterns, str):
        raise ValueError(f"{field} must be a list of regular expressions, not one string")
    compiled = []
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise ValueError(f"{field} pattern {pattern!r} is not a string")
        try:
            compiled.append(compile_linear(pattern))  # RE2: linear in the URL whatever the pattern
        except ValueError as exc:
            raise ValueError(f"{field} pattern {exc}") from None
    return tuple(compiled)
