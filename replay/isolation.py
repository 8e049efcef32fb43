"""What a replayed response may do in the reader's browser: the header policy of the replay origins.

An archive replays hostile code by design. pywb marks only the top-level page of a replay address
(no modifier) with a Content-Security-Policy; every other modifier (``id_``, ``im_``, ``oe_``,
``ex_``, ``mp_``, ``if_``, ``fr_``, ``js_``, ``cs_``, any unknown ``xx_``) answered archived HTML
as it was, and Chromium renders HTML under two ``Content-Type`` headers (``image/png`` then
``text/html``) or one listing both. So the policy is decided here, once, for every response the
engine sends, from what the browser will actually do with it:

- **One Content-Type**: the type Chromium would use (the Fetch standard's "extract a MIME type":
  every value of every ``Content-Type`` header, the last valid one wins, a charset carried over
  while the essence stays the same), sent as the only ``Content-Type``, with
  ``X-Content-Type-Options: nosniff`` so the browser does not guess another.
- **Sandboxed unless rewritten as a page**: a response whose body pywb did not rewrite as HTML,
  with its wombat insert, carries the archived bytes as they were. It gets ``RAW_CSP``: ``sandbox``
  without ``allow-scripts`` or ``allow-same-origin`` (no script runs, the document has an opaque
  origin, reads no cookie or storage of the replay origin) and loads nothing from elsewhere.
  Images, scripts and style sheets used by a page ignore a CSP on their own response, so this costs
  replay nothing.
- **Rewritten pages load only from the archive**: ``PAGE_CSP`` (pywb's default without ``ws:``/
  ``wss:``, which let a page open a socket anywhere): scripts, fetches, beacons, forms, frames and
  images go to the replay origin only, so what a page reads cannot be sent out that way.
- ``frame-ancestors`` (``policy(frame_ancestors=)``): the restricted and reading-room origins are
  framed only by themselves; with ``Cross-Origin-Resource-Policy: same-origin`` their captures
  cannot be embedded by a page of another origin either (``<script src>``, ``<img>``).

Archived headers that act beyond the page (``Set-Cookie``, ``Clear-Site-Data``,
``Service-Worker-Allowed``, ``Refresh``, HSTS...) never reach the reader: ``replay.headers``
renames them (pywb's ``X-Archive-Orig-``) before this policy runs, and ``policy`` drops any that
come through another way (the ``strip_headers`` setting).

Service workers: a worker registered on a replay origin would answer every later request of that
origin, in that browser, until its data is cleared. No replay address serves a service worker
script: a request carrying ``Service-Worker`` (what a browser sends when it fetches one) is refused
(``refuses_service_worker``), and no response carries ``Service-Worker-Allowed``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

RAW_CSP = "sandbox; default-src 'self' data: blob: 'unsafe-inline'"
PAGE_CSP = (
    "default-src 'self' 'unsafe-eval' 'unsafe-inline' data: blob: mediastream:; form-action 'self'; base-uri 'self'"
)
# Names that never leave with a replayed response, whichever way they came (pywb passes some as
# they were; Strata's header rewriter renames every archived one it does not know to be harmless).
ALWAYS_STRIPPED = frozenset(
    name.lower()
    for name in (
        "Set-Cookie",
        "Set-Cookie2",
        "Clear-Site-Data",
        "Service-Worker-Allowed",
        "Refresh",
        "Strict-Transport-Security",
        "Content-Security-Policy",
        "Content-Security-Policy-Report-Only",
        "X-Content-Type-Options",
    )
)
_WS = " \t\r\n"
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


def _split_values(values: Iterable[str]) -> list[str]:
    """Every comma-separated value of the headers, commas inside quoted strings kept (Fetch's
    "get, decode, and split")."""
    out: list[str] = []
    for value in values:
        current: list[str] = []
        quoted = escaped = False
        for ch in value:
            if escaped:
                escaped = False
            elif quoted and ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = not quoted
            elif ch == "," and not quoted:
                out.append("".join(current).strip(" \t"))
                current = []
                continue
            current.append(ch)
        out.append("".join(current).strip(" \t"))
    return out


def _parse_mime(value: str) -> tuple[str, str | None] | None:
    """(essence, charset or None) of one MIME type, or None when it is not one (WHATWG MIME Sniffing)."""
    essence, _, params = value.partition(";")
    kind, slash, sub = essence.strip(_WS).partition("/")
    sub = sub.strip(_WS)
    if not slash or not _TOKEN.match(kind) or not _TOKEN.match(sub):
        return None
    charset = None
    for param in params.split(";"):
        name, eq, val = param.partition("=")
        if eq and name.strip(_WS).lower() == "charset":
            val = val.strip(_WS)
            if val.startswith('"'):
                val = val[1:].split('"', 1)[0]
            if val and charset is None:
                charset = val
    return f"{kind.lower()}/{sub.lower()}", charset


def effective_content_type(values: Iterable[str]) -> str | None:
    """The MIME type a browser takes from these ``Content-Type`` header values (Fetch, "extract a
    MIME type"), as one header value; None when none is valid."""
    essence = charset = None
    found = None
    for value in _split_values(values):
        parsed = _parse_mime(value)
        if parsed is None or parsed[0] == "*/*":
            continue
        if parsed[0] != essence:
            essence, charset = parsed
        elif parsed[1] is not None:
            charset = parsed[1]
        found = essence
    if found is None:
        return None
    if charset and not _TOKEN.match(charset):
        charset = '"' + charset.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{found}; charset={charset}" if charset else found


def refuses_service_worker(environ: dict) -> bool:
    """A browser fetching a service worker's script says so with ``Service-Worker: script``."""
    return "HTTP_SERVICE_WORKER" in environ


def policy(
    headers: Iterable[tuple[str, str]],
    *,
    sandbox: bool,
    strip: Iterable[str] = (),
    frame_ancestors: str | None = None,
    same_origin_only: bool = False,
) -> list[tuple[str, str]]:
    """The headers a replayed response goes out with. ``sandbox``: the body is archived bytes not
    rewritten as a page (``RAW_CSP``), else ``PAGE_CSP``. ``frame_ancestors``: who may frame it
    (None: anyone). ``same_origin_only``: no other origin may embed it (restricted captures)."""
    drop = ALWAYS_STRIPPED | {name.lower() for name in strip}
    kept, types = [], []
    for name, value in headers:
        lower = name.lower()
        if lower == "content-type":
            types.append(value)
        elif lower not in drop:
            kept.append((name, value))
    content_type = effective_content_type(types)
    if content_type:
        kept.append(("Content-Type", content_type))
    csp = RAW_CSP if sandbox else PAGE_CSP
    if frame_ancestors:
        csp += f"; frame-ancestors {frame_ancestors}"
    kept.append(("Content-Security-Policy", csp))
    kept.append(("X-Content-Type-Options", "nosniff"))
    if same_origin_only:
        kept.append(("Cross-Origin-Resource-Policy", "same-origin"))
    return kept
