"""Registrable domains ("eTLD+1") from the Public Suffix List, for ``same-domain`` scope.

``pref.kyoto.lg.jp`` and ``pref.osaka.lg.jp`` are different bodies under the public suffix
``lg.jp``, ``alice.github.io`` and ``bob.github.io`` different people under the private suffix
``github.io``: the list, not a rule of thumb about country codes, says where a site ends. The list
is tldextract's bundled snapshot (tldextract comes with pywb), private section included; the
extractor is built once, on first use, with no suffix-list URLs and no cache directory, so it
never touches the network or writes to disk. Importing tldextract costs about half a second
(it imports requests), so it happens then, not when this module is imported.

Rules on top of the list: an IP address is its own domain (brackets dropped); a host that *is*
a public suffix (``github.io``, ``gov.cn``) or a single label (``localhost``) is its own domain;
a host under no listed suffix gets the list's default rule ``*`` (its last two labels).
"""

from __future__ import annotations

import functools
import ipaddress

__all__ = ["is_ip", "registrable_domain"]


@functools.lru_cache(maxsize=32_768)
def registrable_domain(host: str) -> str:
    """The registrable domain of a normalised *host* (as :func:`strata.urls.url_host` gives it)."""
    host = host.strip("[]").lower()
    if not host or is_ip(host):
        return host
    parts = _extractor()(host)
    if parts.suffix and parts.domain:
        return f"{parts.domain}.{parts.suffix}"
    if parts.suffix:  # the host is a public suffix itself
        return host
    labels = host.split(".")
    return ".".join(labels[-2:])  # the default rule "*"


@functools.cache
def _extractor():
    import tldextract  # half a second (requests): only jobs with same-domain scope pay it

    return tldextract.TLDExtract(
        cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True, include_psl_private_domains=True
    )


def is_ip(host: str) -> bool:
    """An IPv4 or IPv6 address (which has no registrable domain), not a name."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
