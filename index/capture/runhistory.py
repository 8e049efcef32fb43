"""Run history kept in the WARCs: one ``metadata`` record per run, and what a rebuild makes of it.

When a run ends (finished, cancelled by SIGINT/SIGTERM, or failed), the harvest writes, as the last
record of its last WARC file before sealing it, a WARC ``metadata`` record with
``WARC-Target-URI: urn:strata:run:<run-id>`` and ``Content-Type: application/json``: the run's report.
``strata index rebuild`` reads it back to restore what the capture records cannot tell:

- ``run``: job, mode, status (outcome), started, finished, snapshot, and every figure of
  ``strata runs --json``. ``bytes_stored`` and ``warc_files`` are as they stood before the record
  was written; the rebuild takes both from the files themselves (which hold the record too).
- ``checks``: every URL the run looked at without writing a capture, and why (robots, not due,
  not followed, soft changes not stored, errors, pages found vanished from every listing). The
  rebuild replays the soft and vanished ones through ``index.capture.decision.not_stored``.
- ``soft``: URLs whose capture in this run was stored as a soft change (a WARC cannot say so).
- ``urls``: for every URL first seen or looked at in the run, the fields of its row that no record
  holds (host, when and where it was first seen, depth, link kind, page kind, main-text
  fingerprint, next due).

Tables are given as ``{"fields": [...], "rows": [[...], ...]}`` sorted by URL: one JSON object,
compact, with the repeated strings close together for gzip.

A Strata run with no such record (killed before it could write it) is restored as ``interrupted``
with figures counted from its captures, exactly as ``harvester.recovery`` marks it
(``interrupted_run``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

from warcio.archiveiterator import ArchiveIterator

from index.capture.decision import not_stored
from index.state import HarvestState
from strata.times import digits14

RUN_URI_PREFIX = "urn:strata:run:"
CONTENT_TYPE = "application/json"
FORMAT = 1
URL_FIELDS = (
    "url",
    "host",
    "first_seen",
    "first_run",
    "found_on",
    "depth",
    "link_kind",
    "page_kind",
    "fingerprint",
    "next_due",
)
CHECK_FIELDS = ("url", "outcome", "reason", "at")
FROM_FILES = ("bytes_stored", "warc_files")  # figures the rebuild takes from the files
CAPTURE_CLASSES = ("new", "changed", "soft", "unchanged", "not_modified", "deleted", "redirect")


def run_uri(run_id: str) -> str:
    return RUN_URI_PREFIX + run_id


def run_report(state: HarvestState, run: dict, figures: dict) -> dict:
    """The report of ``run`` (run_id, job, mode, status, started, finished, snapshot) as the
    collection holds it now, with ``figures``."""
    run_id = run["run_id"]
    checks = state.checks_in_order(run_id)
    return {
        "format": FORMAT,
        "run": {
            **{k: run.get(k) for k in ("run_id", "job", "mode", "status", "started", "finished", "snapshot")},
            "figures": figures,
        },
        "checks": {"fields": list(CHECK_FIELDS), "rows": [[c[f] for f in CHECK_FIELDS] for c in checks]},
        "soft": state.urls_with_class(run_id, "soft"),
        "urls": {
            "fields": list(URL_FIELDS),
            "rows": [[row[f] for f in URL_FIELDS] for row in state.urls_of_run(run_id)],
        },
    }


def encode(report: dict) -> bytes:
    return json.dumps(report, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def write_report(state: HarvestState, run: dict, figures: dict, out: IO[bytes]) -> None:
    """``encode(run_report(state, run, figures))`` written to ``out`` a row at a time: the same
    bytes, without holding a run's rows in memory (at 100,000 URLs the whole report, as rows and
    as text, took more than 100 MB at the end of the run)."""

    def dump(value) -> bytes:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def rows(query: str, fields: tuple[str, ...], params: tuple) -> None:
        first = True
        for row in state.conn.execute(query, params):
            out.write((b"" if first else b",") + dump([row[f] for f in fields]))
            first = False

    run_id = run["run_id"]
    head = {k: run.get(k) for k in ("run_id", "job", "mode", "status", "started", "finished", "snapshot")}
    out.write(b'{"format":' + dump(FORMAT) + b',"run":' + dump({**head, "figures": figures}))
    out.write(b',"checks":{"fields":' + dump(list(CHECK_FIELDS)) + b',"rows":[')
    rows(state.CHECKS_IN_ORDER, CHECK_FIELDS, (run_id,))
    out.write(b']},"soft":' + dump(state.urls_with_class(run_id, "soft")))
    out.write(b',"urls":{"fields":' + dump(list(URL_FIELDS)) + b',"rows":[')
    rows(state.URLS_OF_RUN, URL_FIELDS, (run_id, run_id, run_id))
    out.write(b"]}}")


def is_run_record(record) -> bool:
    return record.rec_type == "metadata" and (record.rec_headers.get_header("WARC-Target-URI") or "").startswith(
        RUN_URI_PREFIX
    )


def decode(block: bytes) -> dict | None:
    """A run report read back, or None when the block is not one this version understands."""
    try:
        report = json.loads(block.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(report, dict) or report.get("format") != FORMAT or "run" not in report:
        return None
    return report


def report_in(path: Path, run_id: str) -> dict | None:
    """The report of ``run_id`` in a WARC file, if it holds one (recovery: a run killed after
    writing its report, before the database heard of its end)."""
    try:
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if is_run_record(record) and record.rec_headers.get_header("WARC-Target-URI") == run_uri(run_id):
                    return decode(record.content_stream().read())
    except (OSError, ValueError, EOFError):
        return None
    return None


def _rows(table: dict) -> list[dict]:
    fields = table.get("fields") or []
    return [dict(zip(fields, row, strict=False)) for row in table.get("rows") or []]


def apply_report(state: HarvestState, report: dict) -> None:
    """At the point in capture order where the run ended: its URL fields, then its checks (the soft
    changes not stored and the vanished pages through ``index.capture.decision``)."""
    run_id = report["run"]["run_id"]
    for row in _rows(report.get("urls") or {}):
        state.put_url_fields(row)
    for check in _rows(report.get("checks") or {}):
        update = not_stored(state.url(check["url"]), check["outcome"], check["at"], run_id)
        if update:
            state.update_url(check["url"], **update)
        state.add_check(run_id, check["url"], check["outcome"], check["reason"], check["at"])


def reported_run(report: dict, files: list[str], size: int) -> dict:
    """The ``runs`` row of a run that wrote its report: figures from the report, but
    ``bytes_stored`` and ``warc_files`` from its files."""
    run = dict(report["run"])
    run["figures"] = {**(run.get("figures") or {}), "warc_files": list(files), "bytes_stored": size}
    return run


def interrupted_run(state: HarvestState, run_id: str, started: str | None, files: list[str], archive: Path) -> dict:
    """Snapshot and figures of a run that died before writing its report, from what its WARCs
    hold: captures by class, revisits and the payload bytes they did not store again, files and
    bytes. Requests count the captures; errors, skipped URLs and bytes downloaded are not in the
    WARCs (0). The snapshot is its last capture's second (else its start's)."""
    counts = state.capture_counts(run_id)
    revisits, saved = state.revisit_savings(run_id)
    size = sum((archive / name).stat().st_size for name in files if (archive / name).exists())
    figures = {
        "urls_fetched": sum(counts.values()),
        "requests": sum(counts.values()),
        **{cls: counts.get(cls, 0) for cls in CAPTURE_CLASSES},
        "errors": 0,
        "revisits": revisits,
        "skipped": 0,
        "bytes_downloaded": 0,
        "bytes_stored": size,
        "bytes_saved": saved,
        "warc_files": list(files),
    }
    last = state.last_capture_timestamp(run_id)
    return {"figures": figures, "snapshot": last or digits14(started or "") or None}
