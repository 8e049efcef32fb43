"""The run's writing: the WARC records of each capture, the WARC files they go in, each file sealed,
and each capture recorded in the harvest state through the one capture path.

- ``write_response``: a response record, or an identical-payload revisit when an indexed original
  holds the payload (``harvester.write_policy``), with the request it answered;
- ``write_not_modified``: a 304 to a conditional request, a server-not-modified revisit of the
  payload held;
- ``record``: the capture's row, the URL's next state and its digest entry
  (``index.capture.record.record_capture``, which the rebuild calls too);
- the files: ``harvester.warcfile.WarcRoller`` rolls them over by size; a sealed file's CDXJ lines
  are merged and only then do its digests become usable (``index.capture.seal``);
- ``write_run_record``: the run's report, last in its last file (``index.capture.runhistory``).

It also reads back what it wrote (``stored_body``): a 304's links and main text are those of the
original it refers to.
"""

from __future__ import annotations

import tempfile
from datetime import datetime
from typing import Any

from harvester import records, write_policy
from harvester.fetchresult import FetchResult
from harvester.job import JobSettings
from harvester.look import Look
from harvester.report import RunFigures
from harvester.warcfile import OPEN_SUFFIX, RecordLocation, WarcRoller
from index.capture import runhistory
from index.capture.decision import Decision, Observation, Row
from index.capture.record import record_capture
from index.capture.seal import index_sealed_file
from index.cdx import cdxj
from index.collection import Collection
from index.integrity.fixity import Fixity
from index.payload import read_record
from index.storage.state import HarvestState, Original
from strata import __version__
from strata.times import iso, utc_now, warc_date


class Recorder:
    def __init__(
        self,
        collection: Collection,
        state: HarvestState,
        job: JobSettings,
        figures: RunFigures,
        *,
        run_id: str,
        mode: str,
        job_key: str | None,
        started: datetime,
        label: str | None = None,
    ):
        self.collection = collection
        self.state = state
        self.job = job
        self.figures = figures
        self.run_id = run_id
        self.mode = mode
        self.archive_dir = collection.archive_dir
        self.roller = WarcRoller(
            self.archive_dir,
            collection.name,
            warcinfo={
                "software": f"Strata/{__version__} (warcio, httpx)",
                **({"job": job_key} if job_key else {}),
                "run-id": run_id,
                "mode": mode,
                "started": iso(started),
                "robots": "classic" if job.robots == "obey" else "ignore",
                "http-header-user-agent": job.user_agent,
                "isPartOf": collection.name,
                **({"worker": label} if label else {}),
            },
            label=label,
            max_size=job.warc_max_size,
            on_open=self._on_opened,
            on_sealed=self._on_sealed,
            indexer=cdxj.RecordIndexer(),
            fixity=Fixity(collection.fixity_dir),
        )

    # -- the files -------------------------------------------------------------------------------
    def open_first_file(self) -> None:
        """The run's first file (its warcinfo) at once: even a killed run leaves one."""
        self.roller.write([])

    @property
    def files(self) -> list[str]:
        return list(self.roller.files)

    @property
    def bytes_written(self) -> int:
        return self.roller.bytes_written

    def close(self) -> None:
        """Seal the open file."""
        self.roller.close()

    def _on_opened(self, filename: str) -> None:
        self.state.commit_now()  # a file's states are committed as they change, as without deferred commits
        self.state.warc_opened(filename, self.run_id)
        self.state.commit_now()

    def _on_sealed(self, filename: str, size: int, lines: list[bytes] | None) -> None:
        self.state.commit_now()
        self.state.warc_state(filename, "sealed", size)
        self.state.commit_now()
        index_sealed_file(self.collection, self.state, filename, lines)
        self.state.commit_now()

    # -- one capture -----------------------------------------------------------------------------
    def write_response(self, url: str, result: FetchResult, now: datetime, look: Look, mime: str) -> Observation:
        """A response record, or an identical-payload revisit when an indexed original holds the payload."""
        date = warc_date(now)
        original = self._original_of(result.digest)
        write = write_policy.dedup_decision(
            result.digest, result.truncated, result.body_length, original, result.status
        )
        if write.kind == "revisit" and write.original is not None:
            main = records.identical_revisit(result, date, write.original)
            self.figures.bytes_saved += result.body_length
            self.figures.revisits += 1
        else:
            main = records.response_record(result, date)
        loc = self._write_pair(result, date, main)
        holds = write.kind == "response" and bool(result.digest) and not result.truncated and result.body_length > 0
        return self._observation(url, result, now, main, loc, result.digest, write.original, mime, look, holds)

    def write_not_modified(
        self, url: str, result: FetchResult, previous: Row, now: datetime, mime: str
    ) -> tuple[Observation, Row]:
        """A 304 to a conditional request: a server-not-modified revisit of the payload held. With it,
        the held original's capture row ({} when it is not known), whose payload the 304 stands for."""
        date = warc_date(now)
        original = Original(
            previous["orig_uri"], previous["orig_date"], previous["orig_record_id"], previous["orig_warc"]
        )
        main = records.not_modified_revisit(result, date, original, previous["digest"])
        loc = self._write_pair(result, date, main)
        held = self.state.capture_by_record_id(original.record_id) or {}
        self.figures.bytes_saved += held.get("payload_length") or 0
        self.figures.revisits += 1
        mime = held.get("mime") or mime
        return self._observation(url, result, now, main, loc, previous["digest"], original, mime), held

    def record(self, previous: Row | None, observed: Observation) -> Decision:
        """The capture's row, the URL's next state and its digest entry (the caller holds the
        transaction), and the run's figure for its class."""
        decided = record_capture(self.state, previous, observed)
        self.figures.count(decided.cls)
        return decided

    def _original_of(self, digest: str | None) -> Original | None:
        """The record a payload may refer to. URL-agnostic: any URL's payload counts. An incremental
        run refers to any indexed file or earlier in its open one; a full run only to its own files,
        so that it stays complete on its own."""
        if not digest:
            return None
        original = self.state.lookup_digest(digest, self.roller.current_file)
        if original is not None and self.mode != "incremental" and original.warc not in self.roller.files:
            return None
        return original

    def _write_pair(self, result: FetchResult, date: str, main: Any) -> RecordLocation:
        """The capture's record and, unless the job keeps requests of changed captures only and this
        is a revisit, the request it answered (``WARC-Concurrent-To`` the capture)."""
        if main.rec_type == "revisit" and self.job.request_records == "changed":
            return self.roller.write([main])[0]
        request = records.request_record(result, date, records.record_id(main))
        written, request_written = self.roller.write([main, request])
        self.figures.request_records += 1
        self.figures.request_bytes += request_written.length
        return written

    def _observation(
        self,
        url: str,
        result: FetchResult,
        now: datetime,
        main: Any,
        loc: RecordLocation,
        digest: str | None,
        refers: Original | None,
        mime: str,
        look: Look | None = None,
        holds: bool = False,
    ) -> Observation:
        look = look or Look()
        profile = main.rec_headers.get_header("WARC-Profile")
        return Observation(
            url=url,
            at=iso(now),
            run_id=self.run_id,
            status=result.status,
            digest=digest,
            record_type=main.rec_type,
            profile=profile,
            record_id=records.record_id(main),
            warc_date=main.rec_headers.get_header("WARC-Date"),
            warc=loc.filename,
            offset=loc.offset,
            length=loc.length,
            mime=mime,
            payload_length=result.body_length,
            holds_payload=holds,
            refers_to=refers,
            refers_to_uri=refers.url if refers else None,
            refers_to_date=refers.warc_date if refers else None,
            etag=result.header("ETag"),
            last_modified=result.header("Last-Modified"),
            location=result.header("Location"),
            page_kind=look.page_kind,
            fingerprint=look.fingerprint,
            main_text_same=look.main_text_same,
        )

    def write_page_records(self, records: list[Any]) -> None:
        """A page's records from the browser (its screenshot, text and page info:
        ``harvester.browser.records``), after the records of its requests. Not captures of a URL:
        the harvest state leaves them alone, the CDXJ and full text take them from the file."""
        self.roller.write(records)
        self.figures.pages_rendered += 1
        self.figures.page_records += len(records)

    # -- reading back ----------------------------------------------------------------------------
    def _read(self, capture: Row) -> tuple[Any, Any, bytes]:  # warcio's headers (untyped)
        """(rec_headers, http_headers, payload as stored) of a capture's record; from its ``.open``
        name while this run still writes the file (each write is flushed before its row exists)."""
        path = self.archive_dir / capture["warc"]
        if not path.exists() and capture["warc"] == self.roller.current_file:
            path = self.archive_dir / (capture["warc"] + OPEN_SUFFIX)
        return read_record(path, capture["offset"])

    def stored_body(self, capture: Row) -> tuple[bytes | None, str, str | None]:
        """(payload as stored, Content-Type, Content-Encoding) of a capture, read back from its WARC."""
        try:
            _, http_headers, body = self._read(capture)
        except (OSError, ValueError):
            return None, "", None
        if http_headers is None:
            return body, "", None
        return body, http_headers.get_header("Content-Type") or "", http_headers.get_header("Content-Encoding")

    def stored_answer(self, capture: Row) -> tuple[int, list[tuple[str, str]], bytes] | None:
        """(status, HTTP headers, payload as stored) of a capture, read back from its WARC as replay
        would show it: an identical-payload revisit with its own status and headers and its original's
        payload, a server-not-modified revisit as its original. None when it cannot be read."""
        try:
            rec_headers, http_headers, body = self._read(capture)
            if capture["record_type"] == "revisit":
                refers = rec_headers.get_header("WARC-Refers-To")
                original = self.state.capture_by_record_id(refers) if refers else None
                if original is None or original["record_type"] != "response":
                    return None
                _, original_http, body = self._read(original)
                http_headers = http_headers or original_http
        except (OSError, ValueError):
            return None
        if http_headers is None or not (http_headers.get_statuscode() or "").isdigit():
            return None
        return int(http_headers.get_statuscode()), list(http_headers.headers), body

    # -- the run's report ------------------------------------------------------------------------
    def write_run_record(self, run: Row, figures: Row) -> str | None:
        """The run's report as a WARC metadata record, last in its last file: what a rebuild needs to
        restore the run, its checks and the URL state no capture holds. None, or why it was not written."""
        try:
            with tempfile.TemporaryFile() as report:
                runhistory.write_report(self.state, run, figures, report)
                report.seek(0)
                self.roller.write([records.run_record(runhistory.run_uri(self.run_id), report, warc_date(utc_now()))])
        except OSError as exc:
            return str(exc)
        return None
