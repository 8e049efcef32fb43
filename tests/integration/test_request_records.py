"""Request records as a strict HTTP parser reads them, and the address each capture came from."""

from __future__ import annotations

import subprocess

import h11
from warcio.archiveiterator import ArchiveIterator

from index.collection import Collection
from tests.conftest import VENV_BIN, harvest


def records(root, name="sample"):
    """(record type, URI, WARC headers, raw block) of every record the collection holds."""
    out = []
    for path in sorted(Collection.open(root, name).archive_dir.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh, no_record_parse=True):
                out.append(
                    (
                        record.rec_type,
                        record.rec_headers.get_header("WARC-Target-URI"),
                        record.rec_headers,
                        record.content_stream().read(),
                    )
                )
    return out


def strictly_parsed(block: bytes) -> h11.Request:
    """The request as h11 (a strict HTTP/1.1 implementation) reads it on a server's side."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(block)
    event = conn.next_event()
    assert isinstance(event, h11.Request), event
    return event


def test_request_lines_carry_the_http_version(root, site):
    harvest(root, site, depth=1)
    requests = [(uri, block) for kind, uri, _, block in records(root) if kind == "request"]
    assert len(requests) > 3
    robots = [block for uri, block in requests if uri.endswith("/robots.txt")]
    assert robots and robots[0].startswith(b"GET /robots.txt HTTP/1.1\r\n")
    for uri, block in requests:
        event = strictly_parsed(block)
        assert event.method == b"GET" and event.http_version == b"1.1"
        assert uri.endswith(event.target.decode("ascii"))
    # warcio, parsing the records itself, reads the method and the rest of the line
    with open(sorted(Collection.open(root, "sample").archive_dir.glob("*.warc.gz"))[0], "rb") as fh:
        parsed = [r.http_headers for r in ArchiveIterator(fh) if r.rec_type == "request"]
    assert parsed and all(h.protocol == "GET" and h.statusline.endswith(" HTTP/1.1") for h in parsed)


def test_every_capture_says_the_address_it_was_fetched_from(root, site):
    for fetch_process in (True, False):
        name = f"ip{int(fetch_process)}"
        harvest(root, site, name=name, depth=1, fetch_process=fetch_process)
        harvest(root, site, name=name, depth=1, fetch_process=fetch_process)  # 304s: revisit records
        kinds = {}
        for kind, uri, headers, _ in records(root, name):
            if kind in ("warcinfo", "metadata"):  # a run's warcinfo and its report came from no host
                assert headers.get_header("WARC-IP-Address") is None
                continue
            kinds[kind] = kinds.get(kind, 0) + 1
            assert headers.get_header("WARC-IP-Address") == "127.0.0.1", (kind, uri)
        assert kinds.get("response") and kinds.get("request") and kinds.get("revisit"), kinds


def test_revisits_get_a_request_record_only_when_the_job_asks_for_all(root, site):
    """Default ``request_records = "changed"``: every response keeps the request it answered, a
    revisit (which stores no payload) none; ``"all"``: a revisit too. Either way warcio's checker
    accepts the files and every revisit replays (tests/integration/test_replay_revisits.py)."""
    for setting in ("changed", "all"):
        name = f"rr-{setting}"
        harvest(root, site, name=name, depth=2, request_records=setting)
        harvest(root, site, name=name, depth=2, request_records=setting)
        ids = {}
        concurrent = []
        for kind, _, headers, _ in records(root, name):
            ids[headers.get_header("WARC-Record-ID")] = kind
            if kind == "request":
                concurrent.append(headers.get_header("WARC-Concurrent-To"))
        answered = [ids[record_id] for record_id in concurrent]
        assert answered.count("response") == list(ids.values()).count("response") > 0
        revisits = list(ids.values()).count("revisit")
        assert revisits > 0
        assert answered.count("revisit") == (revisits if setting == "all" else 0), setting
        for path in Collection.open(root, name).archive_dir.glob("*.warc.gz"):
            checked = subprocess.run([str(VENV_BIN / "warcio"), "check", str(path)], capture_output=True, text=True)
            assert checked.returncode == 0, checked.stdout + checked.stderr
