"""Rebuild a collection's CDXJ index and harvest state from its WARC files alone.

WARC files are the single source of truth. This re-derives, in a fresh database swapped in at the
end: WARC files, runs (from each file's ``warcinfo``: run id, job, mode), captures and their classes
and per-URL state (payload, original, validators, where it was found: the request's ``Referer``)
through ``index.decision``, the digest index, and the CDXJ. Captures are applied in capture-time
order (WARC-Date) across all files, never in file-name order: other tools' file names do not sort
by capture date.

What the WARCs do not hold is not rebuilt: checks that wrote nothing (URLs skipped as not due, soft
changes not stored, robots refusals), content fingerprints, link depth; soft changes that were stored
come back as ``changed``. A run's snapshot becomes the time of its last capture.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from index import cdxj
from index.collection import Collection
from index.decision import NOT_MODIFIED_PROFILE, Observation, decide
from index.state import Capture, HarvestState, Original


def _warcinfo_fields(block: bytes) -> dict[str, str]:
    fields = {}
    for line in block.decode("utf-8", "replace").splitlines():
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip()] = value.strip()
    return fields


def _ts14(warc_date: str) -> str:
    return "".join(ch for ch in warc_date if ch.isdigit())[:14]


def _iso(warc_date: str) -> str:
    return warc_date[:19] + "." + (warc_date[20:23] if len(warc_date) > 20 else "000").ljust(3, "0") + "Z"


def _date_key(warc_date: str) -> str:
    """A WARC-Date as a string that sorts in time order whatever its precision (``...00Z`` and
    ``...00.5Z`` do not sort as strings): its digits, the fraction last."""
    return "".join(ch for ch in warc_date if ch.isdigit())


@dataclasses.dataclass
class _Scan:
    """What the first pass over every file keeps: one small key per capture record, and per file
    its run (from its ``warcinfo``)."""

    keys: list[tuple[str, int, int, int]] = dataclasses.field(default_factory=list)  # (date, file, offset, length)
    file_runs: list[dict] = dataclasses.field(default_factory=list)
    referers: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)   # url -> (date, referer)
    lines: list[bytes] = dataclasses.field(default_factory=list)


def rebuild_state(collection: Collection, progress: Callable[[dict], None] | None = None) -> dict:
    """Rebuild ``harvest.sqlite`` and ``indexes/index.cdxj`` from ``archive/``. Takes the harvest lock.

    Two passes: every file is read once for its ``warcinfo``, its CDXJ lines and one key per
    capture (WARC-Date, file, offset); the captures are then derived in WARC-Date order across all
    files, whatever the file names, each record read again at its offset."""
    with collection.harvest_lock():
        tmp = collection.state_dir / "harvest.sqlite.rebuild"
        for suffix in ("", "-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        state = HarvestState(tmp)
        files = collection.warc_files()
        try:
            scan = _scan(collection, files, progress)
            runs = _derive_all(collection, state, files, scan, progress)
            for run_id, run in runs.items():
                counts = {}
                for cls, count in state.conn.execute(
                        "SELECT class, COUNT(*) FROM captures WHERE run_id=? GROUP BY class", (run_id,)):
                    counts["errors" if cls == "error" else cls] = count
                revisits, saved = state.conn.execute(
                    "SELECT COUNT(*), COALESCE(SUM(payload_length), 0) FROM captures WHERE run_id=? "
                    "AND record_type='revisit'", (run_id,)).fetchone()
                figures = {"urls_fetched": sum(counts.values()), **counts, "warc_files": run["files"],
                           "bytes_stored": run["bytes"], "revisits": revisits, "bytes_saved": saved,
                           "rebuilt": True}
                state.conn.execute(
                    "INSERT INTO runs (run_id, job, mode, status, started, finished, snapshot, pid, figures) "
                    "VALUES (?,?,?,?,?,?,?,?,?)",
                    (run_id, run["job"], run["mode"], "finished", _iso(run["first"]), _iso(run["last"]),
                     _ts14(run["last"]), None, "{}"))
                state.update_run(run_id, figures=figures)
            state.close()
            cdxj.write_index(collection.cdxj_path, scan.lines)
            for suffix in ("-wal", "-shm"):
                Path(str(collection.db_path) + suffix).unlink(missing_ok=True)
            os.replace(tmp, collection.db_path)
        except BaseException:
            state.close()
            for suffix in ("", "-wal", "-shm"):
                Path(str(tmp) + suffix).unlink(missing_ok=True)
            raise
        return {"files": len(files), "records": len(scan.keys), "runs": len(runs), "cdxj_lines": len(scan.lines)}


def _scan(collection: Collection, files: list[str], progress: Callable[[dict], None] | None) -> _Scan:
    scan = _Scan()
    for index, name in enumerate(files):
        path = collection.archive_dir / name
        info: dict = {"run_id": None, "job": None, "mode": None, "name": name, "size": path.stat().st_size}
        with open(path, "rb") as fh:
            iterator = ArchiveIterator(fh, arc2warc=True)
            for record in iterator:
                kind = record.rec_type
                headers = record.rec_headers
                if kind == "warcinfo" and info["run_id"] is None:
                    fields = _warcinfo_fields(record.content_stream().read())
                    info.update(run_id=fields.get("run-id") or name, job=fields.get("job"), mode=fields.get("mode"))
                elif kind == "request" and record.http_headers:
                    referer = record.http_headers.get_header("Referer")
                    url = headers.get_header("WARC-Target-URI")
                    date = _date_key(headers.get_header("WARC-Date") or "")
                    if referer and (url not in scan.referers or date < scan.referers[url][0]):
                        scan.referers[url] = (date, referer)
                elif kind in ("response", "revisit"):
                    iterator.read_to_end(record)
                    scan.keys.append((_date_key(headers.get_header("WARC-Date") or ""), index,
                                      iterator.get_record_offset(), iterator.get_record_length()))
        info["run_id"] = info["run_id"] or name
        scan.file_runs.append(info)
        scan.lines.extend(cdxj.index_warc(path, name))
        if progress:
            progress({"phase": "scan", "files_done": index + 1, "files": len(files), "records": len(scan.keys)})
    return scan


def _derive_all(collection: Collection, state: HarvestState, files: list[str], scan: _Scan,
                progress: Callable[[dict], None] | None) -> dict[str, dict]:
    """Every capture in WARC-Date order (ties: file, then offset), through ``index.decision``."""
    runs: dict[str, dict] = {}
    for info in scan.file_runs:
        state.conn.execute("INSERT OR REPLACE INTO warcs VALUES (?,?,?,?)",
                           (info["name"], info["run_id"], "indexed", info["size"]))
        run = runs.setdefault(info["run_id"], {"job": info["job"], "mode": info["mode"], "files": [], "bytes": 0,
                                               "first": "", "last": ""})
        run["files"].append(info["name"])
        run["bytes"] += info["size"]
    referers = {url: referer for url, (_, referer) in scan.referers.items()}
    scan.keys.sort()
    current, fh = -1, None
    try:
        with state.transaction():
            for done, (_, index, offset, length) in enumerate(scan.keys, 1):
                if index != current:
                    if fh is not None:
                        fh.close()
                    current, fh = index, open(collection.archive_dir / files[index], "rb")
                fh.seek(offset)
                record = next(iter(ArchiveIterator(fh, arc2warc=True)))
                # a response's payload length: what follows its HTTP headers
                payload_length = len(record.raw_stream.read()) if record.rec_type == "response" else None
                info = scan.file_runs[index]
                _derive_capture(state, record, info["run_id"], files[index], offset, length, payload_length,
                                referers)
                date = record.rec_headers.get_header("WARC-Date")
                run = runs[info["run_id"]]
                run["first"] = min(run["first"], date) if run["first"] else date
                run["last"] = max(run["last"], date)
                if progress and done % 5000 == 0:
                    progress({"phase": "state", "files_done": len(files), "files": len(files), "records": done})
    finally:
        if fh is not None:
            fh.close()
    return runs


def _derive_capture(state: HarvestState, record, run_id: str, warc: str, offset: int, length: int,
                    payload_length: int | None, referers: dict[str, str]) -> None:
    """One response or revisit record through ``index.decision``, as the harvest did when it wrote it."""
    headers = record.rec_headers
    url = headers.get_header("WARC-Target-URI")
    date = headers.get_header("WARC-Date")
    record_id = headers.get_header("WARC-Record-ID")
    digest = headers.get_header("WARC-Payload-Digest")
    http = record.http_headers
    profile = headers.get_header("WARC-Profile") if record.rec_type == "revisit" else None
    not_modified = NOT_MODIFIED_PROFILE in (profile or "")
    status = 304 if not_modified else (int(http.get_statuscode()) if http and http.get_statuscode() else None)
    previous = state.url(url)
    if previous is None:
        state.see_url(url, url.split("/")[2].split(":")[0] if "//" in url else "", run_id, _iso(date),
                      referers.get(url), 0, "navigation")
        previous = state.url(url)
    mime = (http.get_header("Content-Type") or "").split(";")[0].strip().lower() if http else ""
    refers_uri = headers.get_header("WARC-Refers-To-Target-URI")
    refers_date = headers.get_header("WARC-Refers-To-Date")
    refers_id = headers.get_header("WARC-Refers-To")
    original = state.capture_by_record_id(refers_id) if refers_id else None
    if not mime and original:
        mime = original["mime"]
    if payload_length is None:   # a revisit: the payload is its original's
        payload_length = original["payload_length"] if original and not not_modified else 0
    truncated = headers.get_header("WARC-Truncated") if record.rec_type == "response" else None
    refers = Original(refers_uri, refers_date, refers_id, original["warc"] if original else None) \
        if record.rec_type == "revisit" and refers_id else None
    capture = Observation(
        url=url, at=_iso(date), run_id=run_id, status=status, digest=digest, record_type=record.rec_type,
        profile=profile, record_id=record_id, warc_date=date, warc=warc,
        holds_payload=record.rec_type == "response" and bool(digest) and not truncated and bool(payload_length),
        refers_to=refers, etag=http.get_header("ETag") if http else None,
        last_modified=http.get_header("Last-Modified") if http else None,
        location=http.get_header("Location") if http else None)
    decided = decide(previous, capture)
    state.add_capture(Capture(
        run_id=run_id, url=url, timestamp=_ts14(date), warc_date=date, record_type=record.rec_type,
        cls=decided.cls, status=status, digest=digest, mime=mime or "unknown", payload_length=payload_length,
        warc=warc, offset=offset, length=length, record_id=record_id, refers_to_uri=refers_uri,
        refers_to_date=refers_date, location=capture.location))
    state.update_url(url, **decided.state)
    if decided.original:
        state.add_digest(digest, decided.original)
