"""The one way a capture enters the harvest state: its row, the URL's next state, its digest entry.

    record_capture(state, previous, observed) -> Decision

``observed`` is what was fetched and written (``index.capture.decision.Observation``); the capture's
class and the URL's next state come from the one decision (``index.capture.decision.decide``). The
harvest (``harvester.recorder``) calls it for the records it has just written; the rebuild, recovery
and import (``index.capture.rebuild``) for the records they read back, so that a collection rebuilt
from its WARCs holds the rows its harvests wrote. The caller holds the transaction.
"""

from __future__ import annotations

from index.capture.decision import Decision, Observation, Row, decide
from index.storage.state import Capture, HarvestState
from strata.times import digits14


def capture_row(observed: Observation, cls: str) -> Capture:
    """The ``captures`` row of a capture of class ``cls``."""
    # a record that was written has all three
    assert observed.record_type and observed.record_id and observed.warc_date and observed.warc
    return Capture(
        run_id=observed.run_id,
        url=observed.url,
        timestamp=digits14(observed.warc_date),
        warc_date=observed.warc_date,
        record_type=observed.record_type,
        cls=cls,
        status=observed.status,
        digest=observed.digest,
        mime=observed.mime,
        payload_length=observed.payload_length,
        warc=observed.warc,
        offset=observed.offset,
        length=observed.length,
        record_id=observed.record_id,
        refers_to_uri=observed.refers_to_uri,
        refers_to_date=observed.refers_to_date,
        location=observed.location,
    )


def record_capture(state: HarvestState, previous: Row | None, observed: Observation) -> Decision:
    """Decide the capture (``previous``: the URL's row before it, or None) and write what follows."""
    decided = decide(previous, observed)
    state.add_capture(capture_row(observed, decided.cls))
    state.update_url(observed.url, **decided.state)
    if decided.original is not None and observed.digest:
        state.add_digest(observed.digest, decided.original)
    return decided
