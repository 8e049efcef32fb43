"""The per-URL decision (``index.capture.decision``), one table: a URL's previous state and a new capture in,
the capture's class and the URL's next state out. The harvest and the rebuild both call it."""

from __future__ import annotations

import pytest

from index.capture.decision import Observation, classify, compares_main_text, decide, not_stored
from index.state import Original

URL = "http://example.org/a.html"
AT = "2026-01-02T03:04:05.678Z"
DATE = "2026-01-02T03:04:05.678901Z"
D1, D2 = "sha1:AAAA", "sha1:BBBB"
EMPTY = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
OLD = Original(URL, "2025-12-01T00:00:00.000000Z", "<urn:uuid:old>", "c-old.warc.gz")
NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"

# A row of the urls table as see_url leaves it: seen, never captured.
SEEN = {"url": URL, "last_status": None, "digest": None, "checks": 0, "changes": 0, "fingerprint": None}
# Held: a 2xx capture with payload D1 in an earlier run.
HELD = {
    **SEEN,
    "last_status": 200,
    "last_class": "new",
    "digest": D1,
    "orig_uri": OLD.url,
    "orig_date": OLD.warc_date,
    "orig_record_id": OLD.record_id,
    "orig_warc": OLD.warc,
    "etag": '"e1"',
    "last_modified": None,
    "checks": 3,
    "changes": 1,
    "fingerprint": "fp-old",
    "deleted_at": None,
}
GONE = {
    **HELD,
    "last_status": 404,
    "last_class": "deleted",
    "digest": EMPTY,
    "orig_uri": None,
    "orig_date": None,
    "orig_record_id": None,
    "orig_warc": None,
    "etag": None,
    "deleted_at": "2025-12-02T00:00:00.000Z",
}
REDIRECTED = {**HELD, "last_status": 301, "digest": D2, "etag": None}


def response(status=200, digest=D1, **kw):
    """A response record written in full (holds its payload when it has one)."""
    values = dict(
        url=URL,
        at=AT,
        run_id="r2",
        status=status,
        digest=digest,
        record_type="response",
        record_id="<urn:uuid:new>",
        warc_date=DATE,
        warc="c-new.warc.gz",
        holds_payload=bool(digest),
        etag=None,
        last_modified=None,
    )
    return Observation(**{**values, **kw})


def revisit(digest=D1, status=200, profile=IDENTICAL, refers=OLD, **kw):
    return Observation(
        url=URL,
        at=AT,
        run_id="r2",
        status=status,
        digest=digest,
        record_type="revisit",
        profile=profile,
        record_id="<urn:uuid:new>",
        warc_date=DATE,
        warc="c-new.warc.gz",
        refers_to=refers,
        **kw,
    )


NEW_ORIG = {"orig_uri": URL, "orig_date": DATE, "orig_record_id": "<urn:uuid:new>", "orig_warc": "c-new.warc.gz"}
OLD_ORIG = {"orig_uri": OLD.url, "orig_date": OLD.warc_date, "orig_record_id": OLD.record_id, "orig_warc": OLD.warc}
NO_ORIG = dict.fromkeys(("orig_uri", "orig_date", "orig_record_id", "orig_warc"))
SEEN_AT = {"last_checked": AT, "last_run": "r2"}

CASES = [
    # (name, previous, capture, class, expected next state (exactly), digest entry provided)
    (
        "first capture, no row",
        None,
        response(),
        "new",
        {
            **SEEN_AT,
            "last_class": "new",
            "last_status": 200,
            "digest": D1,
            **NEW_ORIG,
            "etag": None,
            "last_modified": None,
            "deleted_at": None,
            "checks": 1,
            "fingerprint": None,
        },
        True,
    ),
    (
        "first capture of a seen URL, validators kept",
        SEEN,
        response(etag='"e"', last_modified="Mon, 1 Jan 2024"),
        "new",
        {
            **SEEN_AT,
            "last_class": "new",
            "last_status": 200,
            "digest": D1,
            **NEW_ORIG,
            "etag": '"e"',
            "last_modified": "Mon, 1 Jan 2024",
            "deleted_at": None,
            "checks": 1,
            "fingerprint": None,
        },
        True,
    ),
    (
        "same digest, written in full",
        HELD,
        response(),
        "unchanged",
        {
            **SEEN_AT,
            "last_class": "unchanged",
            "last_status": 200,
            "digest": D1,
            **NEW_ORIG,
            "etag": None,
            "last_modified": None,
            "deleted_at": None,
            "checks": 4,
        },
        True,
    ),
    (
        "same digest, identical-payload revisit",
        HELD,
        revisit(),
        "unchanged",
        {
            **SEEN_AT,
            "last_class": "unchanged",
            "last_status": 200,
            "digest": D1,
            **OLD_ORIG,
            "etag": None,
            "last_modified": None,
            "deleted_at": None,
            "checks": 4,
        },
        False,
    ),
    (
        "changed payload",
        HELD,
        response(digest=D2),
        "changed",
        {
            **SEEN_AT,
            "last_class": "changed",
            "last_status": 200,
            "digest": D2,
            **NEW_ORIG,
            "etag": None,
            "last_modified": None,
            "deleted_at": None,
            "checks": 4,
            "changes": 2,
            "fingerprint": None,
        },
        True,
    ),
    (
        "changed payload, new fingerprint and page kind",
        HELD,
        response(digest=D2, fingerprint="fp", page_kind="index"),
        "changed",
        {
            **SEEN_AT,
            "last_class": "changed",
            "page_kind": "index",
            "fingerprint": "fp",
            "last_status": 200,
            "digest": D2,
            **NEW_ORIG,
            "etag": None,
            "last_modified": None,
            "deleted_at": None,
            "checks": 4,
            "changes": 2,
        },
        True,
    ),
    (
        "changed payload, duplicate of another URL's payload",
        HELD,
        revisit(digest=D2, refers=Original("http://example.org/b", DATE, "<urn:uuid:b>", "c-b.warc.gz")),
        "changed",
        {
            **SEEN_AT,
            "last_class": "changed",
            "last_status": 200,
            "digest": D2,
            "orig_uri": "http://example.org/b",
            "orig_date": DATE,
            "orig_record_id": "<urn:uuid:b>",
            "orig_warc": "c-b.warc.gz",
            "etag": None,
            "last_modified": None,
            "deleted_at": None,
            "checks": 4,
            "changes": 2,
            "fingerprint": None,
        },
        False,
    ),
    (
        "soft: payload differs, main text the same",
        HELD,
        response(digest=D2, fingerprint="fp", main_text_same=True),
        "soft",
        {
            **SEEN_AT,
            "last_class": "soft",
            "fingerprint": "fp",
            "last_status": 200,
            "digest": D2,
            **NEW_ORIG,
            "etag": None,
            "last_modified": None,
            "deleted_at": None,
            "checks": 4,
        },
        True,
    ),
    (
        "soft needs a change: same digest stays unchanged",
        HELD,
        response(main_text_same=True),
        "unchanged",
        {
            **SEEN_AT,
            "last_class": "unchanged",
            "last_status": 200,
            "digest": D1,
            **NEW_ORIG,
            "etag": None,
            "last_modified": None,
            "deleted_at": None,
            "checks": 4,
        },
        True,
    ),
    (
        "soft needs a 2xx before: after a 404 it is changed",
        GONE,
        response(digest=D2, main_text_same=True),
        "changed",
        {
            **SEEN_AT,
            "last_class": "changed",
            "last_status": 200,
            "digest": D2,
            **NEW_ORIG,
            "etag": None,
            "last_modified": None,
            "deleted_at": None,
            "checks": 4,
            "changes": 2,
            "fingerprint": None,
        },
        True,
    ),
    (
        "304 to a conditional request: server-not-modified revisit",
        HELD,
        revisit(status=304, profile=NOT_MODIFIED),
        "not_modified",
        {**SEEN_AT, "last_class": "not_modified", "digest": D1, "deleted_at": None, "checks": 4},
        False,
    ),
    (
        "304 without validators sent, written as a response",
        HELD,
        response(status=304, digest=EMPTY, holds_payload=False),
        "not_modified",
        {
            **SEEN_AT,
            "last_class": "not_modified",
            "last_status": 304,
            "digest": EMPTY,
            "deleted_at": None,
            "checks": 4,
            "fingerprint": None,
        },
        False,
    ),
    (
        "404 after 200",
        HELD,
        response(status=404, digest=EMPTY, holds_payload=True),
        "deleted",
        {
            **SEEN_AT,
            "last_class": "deleted",
            "last_status": 404,
            "digest": EMPTY,
            **NO_ORIG,
            "etag": None,
            "last_modified": None,
            "deleted_at": AT,
            "checks": 4,
            "changes": 2,
            "fingerprint": None,
        },
        True,
    ),
    (
        "410 after 200",
        HELD,
        response(status=410, digest=EMPTY, holds_payload=True),
        "deleted",
        {
            **SEEN_AT,
            "last_class": "deleted",
            "last_status": 410,
            "digest": EMPTY,
            **NO_ORIG,
            "etag": None,
            "last_modified": None,
            "deleted_at": AT,
            "checks": 4,
            "changes": 2,
            "fingerprint": None,
        },
        True,
    ),
    (
        "404 first",
        SEEN,
        response(status=404, digest=D2),
        "new",
        {
            **SEEN_AT,
            "last_class": "new",
            "last_status": 404,
            "digest": D2,
            **NO_ORIG,
            "etag": None,
            "last_modified": None,
            "checks": 1,
            "fingerprint": None,
        },
        True,
    ),
    (
        "404 again after 404: the same error page",
        GONE,
        response(status=404, digest=EMPTY, holds_payload=False),
        "unchanged",
        {
            **SEEN_AT,
            "last_class": "unchanged",
            "last_status": 404,
            "digest": EMPTY,
            **NO_ORIG,
            "etag": None,
            "last_modified": None,
            "checks": 4,
        },
        False,
    ),
    (
        "back after deletion",
        GONE,
        response(digest=D1),
        "changed",
        {
            **SEEN_AT,
            "last_class": "changed",
            "last_status": 200,
            "digest": D1,
            **NEW_ORIG,
            "etag": None,
            "last_modified": None,
            "deleted_at": None,
            "checks": 4,
            "changes": 2,
            "fingerprint": None,
        },
        True,
    ),
    (
        "500 after 200 is a change, not a deletion",
        HELD,
        response(status=500, digest=D2),
        "changed",
        {
            **SEEN_AT,
            "last_class": "changed",
            "last_status": 500,
            "digest": D2,
            **NO_ORIG,
            "etag": None,
            "last_modified": None,
            "checks": 4,
            "changes": 2,
            "fingerprint": None,
        },
        True,
    ),
    (
        "redirect first",
        SEEN,
        response(status=301, digest=D2, location="/b.html"),
        "redirect",
        {
            **SEEN_AT,
            "last_class": "redirect",
            "last_status": 301,
            "digest": D2,
            **NO_ORIG,
            "etag": None,
            "last_modified": None,
            "checks": 1,
            "fingerprint": None,
        },
        True,
    ),
    (
        "the same redirect again",
        REDIRECTED,
        response(status=301, digest=D2, location="/b.html"),
        "redirect",
        {
            **SEEN_AT,
            "last_class": "redirect",
            "last_status": 301,
            "digest": D2,
            **NO_ORIG,
            "etag": None,
            "last_modified": None,
            "checks": 4,
        },
        True,
    ),
    (
        "a page that now redirects",
        HELD,
        response(status=302, digest=D2, location="/c.html"),
        "redirect",
        {
            **SEEN_AT,
            "last_class": "redirect",
            "last_status": 302,
            "digest": D2,
            **NO_ORIG,
            "etag": None,
            "last_modified": None,
            "checks": 4,
            "changes": 2,
            "fingerprint": None,
        },
        True,
    ),
    (
        "truncated response: no original for later revisits",
        HELD,
        response(digest=D2, holds_payload=False),
        "changed",
        {
            **SEEN_AT,
            "last_class": "changed",
            "last_status": 200,
            "digest": D2,
            "etag": None,
            "last_modified": None,
            "deleted_at": None,
            "checks": 4,
            "changes": 2,
            "fingerprint": None,
        },
        False,
    ),
    (
        "error: no response, nothing changes",
        HELD,
        Observation(url=URL, at=AT, run_id="r2", status=None),
        "error",
        {},
        False,
    ),
    # Revisits as the rebuild reads them back from WARCs written by other tools: the first record of a
    # URL may be a revisit (dedup against another URL), a revisit may name no WARC-Refers-To.
    (
        "rebuild: a revisit is the URL's first capture",
        SEEN,
        revisit(),
        "new",
        {
            **SEEN_AT,
            "last_class": "new",
            "last_status": 200,
            "digest": D1,
            **OLD_ORIG,
            "etag": None,
            "last_modified": None,
            "deleted_at": None,
            "checks": 1,
            "fingerprint": None,
        },
        False,
    ),
    (
        "rebuild: a revisit without WARC-Refers-To keeps the original held",
        HELD,
        revisit(refers=None),
        "unchanged",
        {
            **SEEN_AT,
            "last_class": "unchanged",
            "last_status": 200,
            "digest": D1,
            "etag": None,
            "last_modified": None,
            "deleted_at": None,
            "checks": 4,
        },
        False,
    ),
    (
        "rebuild: a not-modified revisit of another tool (304 kept out of last_status)",
        HELD,
        revisit(status=304, profile="http://netpreserve.org/warc/1.0/revisit/server-not-modified"),
        "not_modified",
        {**SEEN_AT, "last_class": "not_modified", "digest": D1, "deleted_at": None, "checks": 4},
        False,
    ),
]


@pytest.mark.parametrize(("name", "previous", "capture", "cls", "state", "provides"), CASES, ids=[c[0] for c in CASES])
def test_decision_table(name, previous, capture, cls, state, provides):
    decided = decide(previous, capture)
    assert decided.cls == cls
    assert decided.state == state
    if provides:
        assert decided.original == Original(URL, DATE, "<urn:uuid:new>", "c-new.warc.gz")
    else:
        assert decided.original is None


def test_every_class_is_in_the_table():
    assert {c[3] for c in CASES} == {
        "new",
        "changed",
        "soft",
        "unchanged",
        "not_modified",
        "deleted",
        "redirect",
        "error",
    }


def test_a_redirect_carries_its_target_and_nothing_else_does():
    assert decide(SEEN, response(status=301, location="/b.html")).redirect == "/b.html"
    assert decide(SEEN, response(status=308, location="/b.html")).redirect == "/b.html"
    assert decide(SEEN, response(status=200, location="/b.html")).redirect is None
    assert decide(SEEN, response(status=301)).redirect is None


@pytest.mark.parametrize(
    ("previous", "status", "digest", "compares"),
    [
        (HELD, 200, D2, True),  # a changed 2xx page: only its main text can tell soft from changed
        (HELD, 200, D1, False),  # unchanged
        (SEEN, 200, D2, False),  # new
        (GONE, 200, D2, False),  # was not 2xx
        (HELD, 404, EMPTY, False),  # deleted
        (HELD, 500, D2, False),
        (HELD, 304, None, False),
        (None, 200, D1, False),
    ],
)
def test_main_text_is_compared_only_where_it_decides(previous, status, digest, compares):
    assert compares_main_text(previous, status, digest) is compares
    assert (classify(previous, status, digest, main_text_same=True) == "soft") is compares


@pytest.mark.parametrize(
    ("outcome", "state"),
    [
        ("soft", {"last_checked": AT, "last_run": "r2", "last_class": "soft", "checks": 4}),
        ("deleted", {"deleted_at": AT, "last_class": "deleted"}),
        ("not_due", {}),
        ("not_followed", {}),
        ("skipped", {}),
        ("error", {}),
    ],
)
def test_looks_that_wrote_nothing(outcome, state):
    assert not_stored(HELD, outcome, AT, "r2") == state


def test_a_sequence_of_captures_as_the_rebuild_applies_them():
    """First capture, the same payload, a 304, a change, a deletion, a return: each decision's state
    is the next one's previous."""
    row = dict(SEEN)
    classes = []
    for capture in (
        response(),
        revisit(),
        revisit(status=304, profile=NOT_MODIFIED),
        response(digest=D2),
        response(status=404, digest=EMPTY),
        response(digest=D2),
    ):
        decided = decide(row, capture)
        classes.append(decided.cls)
        row.update(decided.state)
    assert classes == ["new", "unchanged", "not_modified", "changed", "deleted", "changed"]
    assert (row["checks"], row["changes"], row["deleted_at"], row["last_status"]) == (6, 3, None, 200)
