"""What a fetch means for the archive: its class, and whether its payload is written again.

Pure functions over what the collection knew of the URL before the fetch; no I/O, so the policy is
tested without touching a WARC.

Classes: ``new`` (first capture of the URL), ``changed`` (payload differs from the last capture),
``unchanged`` (identical payload), ``not_modified`` (the server answered 304), ``deleted`` (the URL
answered 2xx before and answers 404/410 now), ``error`` (no HTTP response).
"""

from __future__ import annotations

import dataclasses

from index.state import Original

EMPTY_SHA1 = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
GONE_STATUSES = (404, 410)


def is_success(status: int | None) -> bool:
    return status is not None and 200 <= status < 300


def classify(previous: dict | None, status: int | None, digest: str | None) -> str:
    if status is None:
        return "error"
    if status == 304:
        return "not_modified"
    prev_status = previous.get("last_status") if previous else None
    if status in GONE_STATUSES and is_success(prev_status):
        return "deleted"
    if not previous or not previous.get("digest") and prev_status is None:
        return "new"
    if digest and digest == previous.get("digest"):
        return "unchanged"
    return "changed"


@dataclasses.dataclass(frozen=True)
class WriteDecision:
    kind: str                    # "response" | "revisit"
    original: Original | None = None


def dedup_decision(digest: str | None, truncated: str | None, body_length: int,
                   original: Original | None, status: int | None = 200) -> WriteDecision:
    """Write a revisit only when an indexed original with the same payload exists. A truncated body,
    an empty payload or a redirect is always written in full (the safe, bigger write: an unmodified
    pywb replays a redirect revisit with an empty body)."""
    if original is None or not digest or truncated or body_length == 0 or digest == EMPTY_SHA1:
        return WriteDecision("response")
    if status is not None and 300 <= status < 400:
        return WriteDecision("response")
    return WriteDecision("revisit", original)


def conditional_headers(previous: dict | None) -> dict[str, str]:
    """Validators to send: only when the URL's payload is held by an original we can point at."""
    if not previous or not previous.get("orig_record_id") or not is_success(previous.get("last_status")):
        return {}
    headers = {}
    if previous.get("etag"):
        headers["If-None-Match"] = previous["etag"]
    if previous.get("last_modified"):
        headers["If-Modified-Since"] = previous["last_modified"]
    return headers
