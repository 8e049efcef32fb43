"""The harvest's write policy: whether a payload is written again, and which validators to send.

Pure functions over what the collection knew of the URL before the fetch; no I/O, so the policy is
tested without touching a WARC. What a capture *means* (its class, the URL's next state) is
``index.capture.decision``, shared with the rebuild.
"""

from __future__ import annotations

import dataclasses

from index.capture.decision import is_success
from index.state import Original

EMPTY_SHA1 = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"


@dataclasses.dataclass(frozen=True)
class WriteDecision:
    kind: str  # "response" | "revisit"
    original: Original | None = None


def dedup_decision(
    digest: str | None, truncated: str | None, body_length: int, original: Original | None, status: int | None = 200
) -> WriteDecision:
    """Write a revisit only when an indexed original with the same payload exists. A truncated body,
    an empty payload, a redirect or an error page is always written in full: an unmodified pywb
    replays a redirect revisit with an empty body, and its indexer gives a revisit no status, so a
    deleted page's 404 written as a revisit of another page's identical 404 would not show as 404 in
    the CDX index."""
    if original is None or not digest or truncated or body_length == 0 or digest == EMPTY_SHA1:
        return WriteDecision("response")
    if status is not None and not 200 <= status < 300:
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
