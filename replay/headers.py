"""Response headers of replayed resources: what archived headers may not do on the replay origin.

pywb renames most archived headers (``X-Archive-Orig-Date``...) but passes some through as they
were, and any header it does not know: ``Refresh`` can send the reader to the live web,
``Clear-Site-Data`` wipes the origin's storage, ``NEL``/``Report-To`` make the browser report to
the archived site, ``WWW-Authenticate`` opens a login dialog on the archive's origin, and an
archived ``Set-Cookie`` (pywb rewrites cookies only for live and record collections) sets a
cookie on the replay origin. Those are dropped (the ``strip_headers`` setting).

``id_`` responses are the archived bytes with no rewriting, so pywb adds no Content-Security-
Policy to them; an archived page opened that way would run its scripts on the replay origin and
load from the live web. Strata adds a sandboxing policy (``raw_csp``) to active content types.
"""

from __future__ import annotations

from collections.abc import Iterable

ACTIVE_TYPES = ("text/html", "application/xhtml", "image/svg", "text/xml", "application/xml", "text/xsl")


def replay_headers(
    headers: Iterable[tuple[str, str]], strip: Iterable[str], mod: str, raw_csp: str | None
) -> list[tuple[str, str]]:
    drop = {name.lower() for name in strip}
    out = [(k, v) for k, v in headers if k.lower() not in drop]
    if mod == "id_" and raw_csp:
        ctype = next((v for k, v in out if k.lower() == "content-type"), "").lower().lstrip()
        if not ctype or ctype.startswith(ACTIVE_TYPES):
            out = [(k, v) for k, v in out if k.lower() != "content-security-policy"]
            out.append(("Content-Security-Policy", raw_csp))
    return out
