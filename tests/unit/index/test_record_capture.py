"""``index.capture.record.record_capture``: the one function every capture goes through (harvest,
recovery, rebuild, import). Over a real harvest state: the row, the URL's next state, the digest entry."""

from __future__ import annotations

from index.capture.decision import Observation
from index.capture.record import record_capture
from index.storage.state import HarvestState, Original

URL = "http://example.org/a.html"
D1 = "sha1:AAAA"


def _observed(**fields) -> Observation:
    base = dict(
        url=URL, at="2024-03-01T12:00:00.123Z", run_id="r1", status=200, digest=D1, record_type="response",
        record_id="<urn:uuid:1>", warc_date="2024-03-01T12:00:00.123456Z", warc="a.warc.gz", offset=100,
        length=900, mime="text/html", payload_length=1234, holds_payload=True, etag='"e"',
    )  # fmt: skip
    return Observation(**{**base, **fields})


def test_a_new_response_gives_its_row_the_urls_state_and_a_digest_entry(tmp_path):
    with HarvestState(tmp_path / "h.sqlite") as state:
        state.put_warc("a.warc.gz", "r1", "indexed", 2000)
        with state.transaction():
            state.see_url(URL, "example.org", "r1", "2024-03-01T12:00:00.000Z", None, 0, "navigation")
            decided = record_capture(state, None, _observed())
        assert decided.cls == "new"
        (row,) = state.captures(url=URL)
        assert {k: row[k] for k in ("run_id", "timestamp", "class", "status", "mime", "payload_length", "offset")} == {
            "run_id": "r1",
            "timestamp": "20240301120000",
            "class": "new",
            "status": 200,
            "mime": "text/html",
            "payload_length": 1234,
            "offset": 100,
        }
        held = state.url(URL)
        assert held is not None and held["orig_record_id"] == "<urn:uuid:1>" and held["etag"] == '"e"'
        assert state.lookup_digest(D1) == Original(URL, "2024-03-01T12:00:00.123456Z", "<urn:uuid:1>", "a.warc.gz")


def test_a_revisit_keeps_what_its_record_says_it_refers_to_and_adds_no_digest_entry(tmp_path):
    original = Original("http://example.org/other", "2024-01-01T00:00:00Z", "<urn:uuid:0>", "z.warc.gz")
    with HarvestState(tmp_path / "h.sqlite") as state:
        with state.transaction():
            state.see_url(URL, "example.org", "r1", "2024-03-01T12:00:00.000Z", None, 0, "navigation")
            record_capture(
                state,
                None,
                _observed(
                    record_type="revisit",
                    record_id="<urn:uuid:2>",
                    holds_payload=False,
                    refers_to=original,
                    refers_to_uri=original.url,
                    refers_to_date=original.warc_date,
                ),
            )
        (row,) = state.captures(url=URL)
        assert (row["refers_to_uri"], row["refers_to_date"]) == (original.url, original.warc_date)
        assert state.lookup_digest(D1) is None
        assert state.url(URL)["orig_record_id"] == "<urn:uuid:0>"
