"""pywb's CDX server API over a collection: what ``/<coll>/cdx`` answers.

The lines are pywb's own: the query goes to pywb's ``IndexHandler`` (with its fuzzy-match rules)
over the collection's ``indexes/*.cdxj`` read by pywb's directory index source, exactly as an
unmodified ``wayback`` answers its ``/<coll>/cdx`` (``tests/integration/test_cdx_api.py`` compares
the two for a table of queries); on a Redis root ``index.cdxj``'s lines come from the collection's
sorted set, as replay reads them (``index.cdx.capture_index``). Strata adds, before pywb sees the query:

- checked parameters: a bad ``matchType``, ``from``/``to``/``closest``, ``limit``, ``sort``, ``output``,
  ``filter`` or ``fl`` is refused with ``CdxQueryError`` (HTTP 400) saying what to send instead;
- a cap on the lines of one answer (``max_lines``): a larger or missing ``limit`` is lowered to it,
  and an answer cut there says so in its ``X-Strata-CDX-Truncated`` header;
- the same pywb access checker ``wayback`` runs (rules from ``<coll>/acl/``, default allow), which
  marks each line ``"access": "allow"``; Strata's own rules apply at ``index.access.exposure``;
- a time bound (``time_limit``): the index lines are read under a deadline, checked as pywb reads
  them, so a slow filter or a huge prefix cannot hold the server; past it the answer is a 503.

The answer is gathered before it is sent (at most ``max_lines`` lines), so that a timeout or a
pywb error becomes a clean status instead of a cut-off body. Every line passes the collection's
``index.access.exposure`` filter, the one place access rules apply.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from pathlib import Path

from pywb.utils.format import query_to_dict
from pywb.utils.wbexception import WbException
from pywb.warcserver.access_checker import AccessChecker, CacheDirectoryAccessSource
from pywb.warcserver.handlers import IndexHandler
from pywb.warcserver.index.aggregator import DirectoryIndexSource
from pywb.warcserver.index.cdxobject import CDXException
from pywb.warcserver.inputrequest import DirectWSGIInputRequest

from index.access.exposure import CaptureFilter, capture_filter, show_all
from index.cdx.capture_index import root_cdx
from replay.asof import AsOfIndexSource
from strata.errors import QueryError

__all__ = ["CdxAnswer", "CdxApi", "CdxQueryError", "CdxTimeUp"]

MATCH_TYPES = ("exact", "prefix", "host", "domain")
OUTPUTS = ("cdxj", "json", "text", "link")  # pywb's IndexHandler.OUTPUTS
SORTS = ("reverse", "closest")
_TS = re.compile(r"^\d{1,14}$")
_FIELD = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
MAX_URL_CHARS = 4096
CHECK_EVERY = 256  # index lines read between two looks at the clock


class CdxQueryError(QueryError):
    """A CDX query parameter pywb would misread or fail on (HTTP 400)."""


class CdxTimeUp(Exception):
    """The query ran past its time bound."""


@dataclasses.dataclass
class CdxAnswer:
    status: int
    content_type: str
    body: bytes
    truncated: bool = False


class _PlainIndexSource(AsOfIndexSource):
    """The collection's index files listed as ``AsOfIndexSource`` lists them (once per change of the
    directory), answered as pywb answers: nearest-first ``closest`` (not as-of), so the lines are
    pywb's. Each file is read through ``_guarded``: under the query's deadline (``_deadline`` in the
    params), and with the exposure filter (``_shown``) applied to its captures, before pywb's
    fuzzy matching, filters and limits: a capture it refuses is as if never indexed."""

    def __call__(self, params: dict):
        return DirectoryIndexSource.__call__(self, params)

    def _iter_sources(self, params: dict):
        for name, source in super()._iter_sources(params):
            yield name, _Guarded(source, params["_deadline"], params["_shown"])


class _Guarded:
    def __init__(self, source, deadline: float, shown: CaptureFilter):
        self.source = source
        self.deadline = deadline
        self.shown = shown

    def load_index(self, params: dict):
        return _guarded(self.source.load_index(params), self.deadline, self.shown)

    def __str__(self) -> str:
        return str(self.source)


def _guarded(cdx_iter, deadline: float, shown: CaptureFilter):
    """The file's captures (pywb's ``CDXObject``s, as its file source parses them) under the deadline
    and the exposure filter; a capture without a timestamp cannot be judged and is not shown."""
    everything = shown is show_all
    for n, cdx in enumerate(cdx_iter):
        if n % CHECK_EVERY == 0 and time.monotonic() > deadline:
            raise CdxTimeUp
        if everything or ("timestamp" in cdx and shown(cdx.get("url", ""), cdx["timestamp"])):
            yield cdx


class CdxApi:
    def __init__(self, root: Path, max_lines: int, time_limit: float):
        root_dir = os.path.join(os.path.abspath(root), "")
        self.root = Path(root_dir)
        self.max_lines = max_lines
        self.time_limit = time_limit
        source = _PlainIndexSource(
            base_prefix=root_dir, base_dir=os.path.join("{coll}", "indexes", ""), redis=root_cdx(self.root)
        )
        # pywb's access checker as wayback sets it up (default "allow", rules from <coll>/acl/ if
        # any): it marks each line "access": "allow", so the lines stay wayback's byte for byte.
        access = AccessChecker(
            CacheDirectoryAccessSource(base_prefix=root_dir, base_dir=os.path.join("{coll}", "acl")), "allow"
        )
        self.handler = IndexHandler(source, access_checker=access)

    def query(self, coll: str, environ: dict, level: str = "public") -> CdxAnswer:
        """Answer the query string of ``environ`` for collection ``coll`` (already checked to exist),
        with the captures ``level`` may see (``index.access.exposure``)."""
        params = check_params(environ.get("QUERY_STRING", ""), self.max_lines)
        wanted = int(params["limit"]) if "limit" in params else None
        capped = wanted is None or wanted > self.max_lines
        cap = self.max_lines if wanted is None or capped else wanted
        params["limit"] = str(cap + 1 if capped else cap)  # one line more: tells an answer cut by the cap
        env = dict(environ)
        env.pop("HTTP_X_PYWB_ACL_USER", None)  # a client's is never believed
        if level != "public":
            # the rules' own lines for this level (index.access.rules): pywb marks what it may see "allow"
            env["HTTP_X_PYWB_ACL_USER"] = level
        params.update({"mode": "index", "param.coll": coll, "_input_req": DirectWSGIInputRequest(env)})
        params["_deadline"] = time.monotonic() + self.time_limit
        params["_shown"] = capture_filter(self.root, coll, "cdx", level)
        try:
            headers, lines, errs = self.handler(params)
            if lines is None:
                return _error_answer(errs)
            body: list[bytes] = []
            for line in lines:
                if len(body) == cap:
                    return CdxAnswer(200, headers["Content-Type"], b"".join(body), truncated=True)
                body.append(line)
        except CdxTimeUp:
            raise CdxTimeUp(
                f"the query took longer than {self.time_limit:g} s: narrow it (an exact url, a shorter "
                "prefix, from/to, a lower limit)"
            ) from None
        except CDXException as exc:
            raise CdxQueryError(str(exc)) from None
        return CdxAnswer(200, headers["Content-Type"], b"".join(body))


def _error_answer(errs: dict | None) -> CdxAnswer:
    """pywb's own error (no captures: 404 with its message as JSON, as ``wayback`` answers)."""
    exc = (errs or {}).get("last_exc")
    status = 404
    message = "No Captures found"
    if isinstance(exc, WbException):
        status, message = exc.status_code, str(exc.msg)
    elif exc is not None:
        status, message = 400, str(exc)
    if status == 400:
        raise CdxQueryError(message)
    return CdxAnswer(status, "application/json", json.dumps({"message": message}).encode())


def check_params(query_string: str, max_lines: int) -> dict:
    """pywb's reading of the query string (``filter`` repeatable), each parameter checked."""
    try:
        params = query_to_dict(query_string, multi=["filter"])
    except (ValueError, UnicodeDecodeError):
        raise CdxQueryError("the query string cannot be read: percent-encode its values") from None
    url = (params.get("url") or "").strip()
    if not url:
        raise CdxQueryError("url is required: /<coll>/cdx?url=example.org/page (add matchType=prefix for a prefix)")
    if len(url) > MAX_URL_CHARS:
        raise CdxQueryError(f"url is longer than {MAX_URL_CHARS} characters")
    _one_of(params, "matchType", MATCH_TYPES)
    _one_of(params, "output", OUTPUTS)
    _one_of(params, "sort", SORTS)
    for name in ("from", "to", "closest"):
        value = params.get(name)
        if value is not None and not (_TS.match(value) or (name == "closest" and value == "now")):
            raise CdxQueryError(f"{name} must be a timestamp of 1 to 14 digits (YYYYMMDDhhmmss), not {value!r}")
    if params.get("sort") == "closest" and not params.get("closest"):
        raise CdxQueryError("sort=closest needs closest=<timestamp>")
    if "limit" in params:
        value = params["limit"]
        if not value.isdigit() or int(value) < 1:
            raise CdxQueryError(f"limit must be a whole number from 1 (at most {max_lines} lines are given)")
    fields = params.get("fl") or params.get("fields")
    if fields is not None:
        bad = [f for f in fields.split(",") if not _FIELD.match(f)]
        if bad or not fields:
            raise CdxQueryError(
                f"fl must be field names separated by commas (urlkey,timestamp,url,...), not {fields!r}"
            )
    filters = params.get("filter", [])
    for text in [filters] if isinstance(filters, str) else filters:  # pywb gives one value as a str
        _check_filter(text)
    return params


def _one_of(params: dict, name: str, allowed: tuple[str, ...]) -> None:
    value = params.get(name)
    if value is not None and value not in allowed:
        raise CdxQueryError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")


def _check_filter(text: str) -> None:
    """pywb's filter syntax: ``[!][=|~]field:value`` (``=`` exact, ``~`` regular expression, else contains)."""
    body = text[1:] if text.startswith("!") else text
    regex = body.startswith("~")
    body = body[1:] if body[:1] in ("=", "~") else body
    field, sep, value = body.partition(":")
    if not sep or not _FIELD.match(field):
        raise CdxQueryError(
            f"filter must be [!][=|~]field:value, e.g. filter=status:200 or filter=!mime:warc/revisit, not {text!r}"
        )
    if regex:
        try:
            re.compile(value)
        except re.error as exc:
            raise CdxQueryError(f"filter {text!r}: not a regular expression ({exc})") from None
