"""Archived response headers on replay: which pass as they were, which are renamed.

pywb's header rewriter renames most archived headers (``X-Archive-Orig-Date``...) but passes some as
they were, in every mode (``Link``, ``WWW-Authenticate``, ``Proxy-Authenticate``), some in raw modes
(``Access-Control-Allow-Origin``: any origin could then read a restricted capture), and every header
it does not know (``Service-Worker-Allowed``, ``Clear-Site-Data``, ``Refresh``, ``NEL``...). For
``sw_`` it adds a ``Service-Worker-Allowed`` of its own.

``ArchivedHeaderRewriter`` turns that around: an archived header passes under its own name only if
it is in ``PASSED`` (what describes the bytes and their place: type, length, encoding, range,
language, disposition, and the rewritten ``Location``); every other one is renamed
``X-Archive-Orig-<name>``, where a browser ignores it, and cookies are dropped. ``replay.isolation``
then sets the policy headers of the response.
"""

from __future__ import annotations

from pywb.rewrite.header_rewriter import DefaultHeaderRewriter

# Archived headers a reader's browser gets under their own names (pywb's rules decide how).
PASSED = frozenset(
    {
        "accept-ranges",
        "content-base",
        "content-disposition",
        "content-encoding",
        "content-language",
        "content-length",
        "content-location",
        "content-range",
        "content-type",
        "location",
        "transfer-encoding",
    }
)
DROPPED = frozenset({"set-cookie", "set-cookie2"})


class ArchivedHeaderRewriter(DefaultHeaderRewriter):
    """pywb's header rewriter with an allow-list: see the module's docstring."""

    def rewrite_header(self, name, value, rule):
        lower = name.lower()
        if lower in DROPPED:
            return None
        if lower not in PASSED:
            return (self.header_prefix + name, value)
        return super().rewrite_header(name, value, rule)

    def __call__(self):
        rewritten = super().__call__()
        # pywb widens an sw_ script's scope to the archived site's whole replay prefix
        rewritten.remove_header("Service-Worker-Allowed")
        return rewritten
