"""The per-URL decision: what one capture of a URL means, and what the collection then knows of it.

One pure function, used by the harvest as it fetches (``harvester.run``) and by the rebuild as it
reads the WARCs back in capture-time order (``index.capture.rebuild``); nothing else derives a class.

    decide(previous, capture) -> Decision(cls, state, original)

``previous`` is the URL's row of the ``urls`` table before the capture (None when there is none),
``capture`` an ``Observation``: what came back (status, payload digest, validators, Location) and
how it was written (record type, revisit profile, the record's id, date and file), plus what only
the harvest can see: the page kind, the main-text fingerprint, and ``main_text_same`` from change
detection (the payload differs, the main text does not). The result is the capture's class, the
fields to write to the URL's row, and the digest-index entry the capture provides, if any.

Classes: ``new`` (first capture of the URL), ``changed`` (payload differs from the last one),
``soft`` (payload differs, main text the same: enters only through ``main_text_same``),
``unchanged`` (same payload), ``not_modified`` (the server answered 304), ``deleted`` (2xx before,
404/410 now), ``redirect`` (a 3xx other than 304, written in full; it counts as a change of the URL
when its payload, the redirect itself, differs from the one held; ``Decision.redirect`` carries its
target), ``error`` (no HTTP response: nothing is written and the row does not change).

``not_stored(previous, outcome, at, run_id)`` is the same for looks that wrote no record: a soft
change the job does not store, and a content page found vanished from every listing.

No I/O, nothing of Strata's imported but ``index.state``'s ``Original``.
"""

from __future__ import annotations

import dataclasses

from index.state import Original

GONE_STATUSES = (404, 410)
REDIRECT_STATUSES = (301, 302, 303, 307, 308)
NOT_MODIFIED_PROFILE = "server-not-modified"  # the tail of the WARC 1.1 revisit profile URI


def is_success(status: int | None) -> bool:
    return status is not None and 200 <= status < 300


@dataclasses.dataclass(frozen=True)
class Observation:
    """One capture of a URL, as fetched and as written."""

    url: str
    at: str  # ISO 8601 time of the capture (becomes last_checked)
    run_id: str
    status: int | None  # HTTP status; None: no response (an error)
    digest: str | None = None  # payload digest of the capture (a revisit's: its original's)
    record_type: str | None = None  # "response" | "revisit" | None (nothing written)
    profile: str | None = None  # a revisit's WARC-Profile
    record_id: str | None = None  # the record written, its date and file: the original of
    warc_date: str | None = None  # later revisits when it holds the payload
    warc: str | None = None
    holds_payload: bool = False  # a response with a digest and its whole, non-empty payload
    refers_to: Original | None = None  # a revisit's original
    etag: str | None = None
    last_modified: str | None = None
    location: str | None = None
    page_kind: str | None = None  # harvest only: index | content | ..., for a 2xx HTML page
    fingerprint: str | None = None  # harvest only: main-text fingerprint, when it was computed
    main_text_same: bool = False  # change detection: the payload differs, the main text not

    @property
    def not_modified_revisit(self) -> bool:
        return self.record_type == "revisit" and NOT_MODIFIED_PROFILE in (self.profile or "")


@dataclasses.dataclass(frozen=True)
class Decision:
    cls: str
    state: dict  # fields to write to the URL's row
    original: Original | None = None  # digest-index entry the capture provides
    redirect: str | None = None  # a redirect's Location


def classify(previous: dict | None, status: int | None, digest: str | None, main_text_same: bool = False) -> str:
    if status is None:
        return "error"
    if status == 304:
        return "not_modified"
    if 300 <= status < 400:
        return "redirect"
    return payload_class(previous, status, digest, main_text_same)


def payload_class(previous: dict | None, status: int, digest: str | None, main_text_same: bool = False) -> str:
    """What the payload says, whatever the status: new, unchanged, soft, changed (or deleted)."""
    prev_status = previous.get("last_status") if previous else None
    if status in GONE_STATUSES and is_success(prev_status):
        return "deleted"
    if not previous or not previous.get("digest") and prev_status is None:
        return "new"
    if digest and digest == previous.get("digest"):
        return "unchanged"
    if main_text_same and compares_main_text(previous, status, digest):
        return "soft"
    return "changed"


def compares_main_text(previous: dict | None, status: int | None, digest: str | None) -> bool:
    """Would the main text decide between ``changed`` and ``soft``? Only for a changed 2xx payload
    of a URL that answered 2xx before: the harvest computes the (costly) comparison only then."""
    if not previous or not is_success(status) or not is_success(previous.get("last_status")):
        return False
    return classify(previous, status, digest) == "changed"


def decide(previous: dict | None, capture: Observation) -> Decision:
    cls = classify(previous, capture.status, capture.digest, capture.main_text_same)
    if cls == "error":
        return Decision(cls, {})
    status = capture.status
    state: dict = {"last_checked": capture.at, "last_run": capture.run_id, "last_class": cls}
    if capture.page_kind is not None:
        state["page_kind"] = capture.page_kind
    if capture.fingerprint is not None:
        state["fingerprint"] = capture.fingerprint
    if not capture.not_modified_revisit:
        state["last_status"] = status
    original = (
        Original(capture.url, capture.warc_date, capture.record_id, capture.warc)
        if capture.holds_payload and capture.record_id and capture.warc_date
        else None
    )
    if is_success(status) or status == 304:
        state["digest"] = capture.digest
        if capture.holds_payload:
            state.update(
                orig_uri=capture.url,
                orig_date=capture.warc_date,
                orig_record_id=capture.record_id,
                orig_warc=capture.warc,
            )
        elif capture.refers_to is not None and status != 304:
            refers = capture.refers_to
            state.update(
                orig_uri=refers.url, orig_date=refers.warc_date, orig_record_id=refers.record_id, orig_warc=refers.warc
            )
        if status != 304:
            state.update(etag=capture.etag, last_modified=capture.last_modified)
    else:
        state.update(
            digest=capture.digest,
            orig_uri=None,
            orig_date=None,
            orig_record_id=None,
            orig_warc=None,
            etag=None,
            last_modified=None,
        )
    if cls == "deleted":
        state["deleted_at"] = capture.at
    elif is_success(status) or status == 304:
        state["deleted_at"] = None
    state["checks"] = ((previous or {}).get("checks") or 0) + 1
    if cls in ("changed", "deleted") or (
        cls == "redirect" and status is not None and payload_class(previous, status, capture.digest) == "changed"
    ):
        state["changes"] = ((previous or {}).get("changes") or 0) + 1
    if capture.digest != (previous or {}).get("digest") and capture.fingerprint is None:
        state["fingerprint"] = None  # it described the payload held before
    return Decision(cls, state, original, capture.location if status in REDIRECT_STATUSES else None)


def not_stored(previous: dict | None, outcome: str, at: str, run_id: str) -> dict:
    """The URL's next state after a look that wrote no record (a ``checks`` row): ``soft``, a soft
    change not stored; ``deleted``, a content page no longer on any listing. Other outcomes (not
    due, not followed, robots, errors) leave the row as it was."""
    if outcome == "soft":
        return {
            "last_checked": at,
            "last_run": run_id,
            "last_class": "soft",
            "checks": ((previous or {}).get("checks") or 0) + 1,
        }
    if outcome == "deleted":
        return {"deleted_at": at, "last_class": "deleted"}
    return {}
