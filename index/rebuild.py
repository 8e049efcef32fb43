"""Rebuild a collection's CDXJ index and harvest state from its WARC files alone.

WARC files are the single source of truth. This re-derives, in a fresh database swapped in at the
end: WARC files, runs (from each file's ``warcinfo``: run id, job, mode), captures and their classes
(each URL's captures in time order: first ``new``; same payload ``unchanged``; 304 revisit
``not_modified``; 404/410 after 2xx ``deleted``; otherwise ``changed``), per-URL state (payload,
original, validators, where it was found: the request's ``Referer``), the digest index, and the CDXJ.

What the WARCs do not hold is not rebuilt: checks that wrote nothing (URLs skipped as not due, soft
changes not stored, robots refusals), content fingerprints, link depth; soft changes that were stored
come back as ``changed``. A run's snapshot becomes the time of its last capture.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from harvester.decide import classify, is_success
from index import cdxj
from index.collection import Collection
from index.state import SCHEMA_VERSION, Capture, HarvestState, Original, schema_version

NOT_MODIFIED_PROFILE = "server-not-modified"


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


def rebuild_if_outdated(collection: Collection) -> bool:
    """Rebuild a database made by an older Strata (``index.state.SCHEMA_VERSION``) before it is
    used: the schema is rebuilt from the WARCs rather than migrated. True when it was rebuilt."""
    version = schema_version(collection.db_path)
    if version is None or version >= SCHEMA_VERSION:
        return False
    rebuild_state(collection)
    return True


def rebuild_state(collection: Collection, progress: Callable[[dict], None] | None = None) -> dict:
    """Rebuild ``harvest.sqlite`` and ``indexes/index.cdxj`` from ``archive/``. Takes the harvest lock."""
    with collection.harvest_lock():
        tmp = collection.state_dir / "harvest.sqlite.rebuild"
        for suffix in ("", "-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        state = HarvestState(tmp)
        files = collection.warc_files()
        lines: list[bytes] = []
        runs: dict[str, dict] = {}
        records = 0
        try:
            for done, name in enumerate(files, 1):
                records += _derive_file(collection, state, name, runs)
                lines.extend(cdxj.index_warc(collection.archive_dir / name, name))
                if progress:
                    progress({"phase": "state", "files_done": done, "files": len(files), "records": records})
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
            cdxj.write_index(collection.cdxj_path, lines)
            for suffix in ("-wal", "-shm"):
                Path(str(collection.db_path) + suffix).unlink(missing_ok=True)
            os.replace(tmp, collection.db_path)
        except BaseException:
            state.close()
            for suffix in ("", "-wal", "-shm"):
                Path(str(tmp) + suffix).unlink(missing_ok=True)
            raise
        return {"files": len(files), "records": records, "runs": len(runs), "cdxj_lines": len(lines)}


def _derive_file(collection: Collection, state: HarvestState, name: str, runs: dict) -> int:
    path = collection.archive_dir / name
    run_id = job = mode = None
    count = 0
    state.conn.execute("INSERT OR REPLACE INTO warcs VALUES (?,?,?,?)", (name, None, "indexed", path.stat().st_size))
    referers = _referers(path)   # request records follow their responses: read them first
    with open(path, "rb") as fh, state.transaction():
        iterator = ArchiveIterator(fh)
        for record in iterator:
            headers = record.rec_headers
            kind = record.rec_type
            if kind == "warcinfo":
                info = _warcinfo_fields(record.content_stream().read())
                run_id, job, mode = info.get("run-id") or name, info.get("job") or None, info.get("mode")
                state.conn.execute("UPDATE warcs SET run_id=? WHERE filename=?", (run_id, name))
                continue
            if kind not in ("response", "revisit"):
                continue
            # read the payload before asking for the offset: get_record_offset() reads to the end
            payload_length = len(record.raw_stream.read()) if kind == "response" else None
            iterator.read_to_end(record)
            offset = iterator.get_record_offset()
            length = iterator.get_record_length()
            _derive_capture(state, record, run_id or name, name, offset, length, payload_length, referers, job)
            count += 1
            date = headers.get_header("WARC-Date")
            run = runs.setdefault(run_id or name, {"job": job, "mode": mode, "files": [], "bytes": 0,
                                                   "first": date, "last": date})
            run["first"], run["last"] = min(run["first"], date), max(run["last"], date)
    run = runs.setdefault(run_id or name, {"job": job, "mode": mode, "files": [], "bytes": 0, "first": "", "last": ""})
    run["files"].append(name)
    run["bytes"] += path.stat().st_size
    return count


def _referers(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh):
            if record.rec_type == "request" and record.http_headers:
                referer = record.http_headers.get_header("Referer")
                if referer:
                    out.setdefault(record.rec_headers.get_header("WARC-Target-URI"), referer)
    return out


def _derive_capture(state: HarvestState, record, run_id: str, warc: str, offset: int, length: int,
                    payload_length: int | None, referers: dict[str, str], job: str | None = None) -> None:
    headers = record.rec_headers
    url = headers.get_header("WARC-Target-URI")
    date = headers.get_header("WARC-Date")
    record_id = headers.get_header("WARC-Record-ID")
    digest = headers.get_header("WARC-Payload-Digest")
    http = record.http_headers
    not_modified = record.rec_type == "revisit" and NOT_MODIFIED_PROFILE in (headers.get_header("WARC-Profile") or "")
    status = 304 if not_modified else (int(http.get_statuscode()) if http and http.get_statuscode() else None)
    previous = state.url(url)
    state.see_url(url, url.split("/")[2].split(":")[0] if "//" in url else "", run_id, _iso(date),
                  referers.get(url), 0, "navigation", job=job)     # known already: only the job is added
    cls = classify(previous, status, digest)
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
    state.add_capture(Capture(
        run_id=run_id, url=url, timestamp=_ts14(date), warc_date=date, record_type=record.rec_type, cls=cls,
        status=status, digest=digest, mime=mime or "unknown", payload_length=payload_length, warc=warc,
        offset=offset, length=length, record_id=record_id, refers_to_uri=refers_uri, refers_to_date=refers_date,
        location=http.get_header("Location") if http else None))
    update: dict = {"last_checked": _iso(date), "last_run": run_id, "last_class": cls,
                    "checks": ((previous or {}).get("checks") or 0) + 1}
    if cls in ("changed", "deleted"):
        update["changes"] = ((previous or {}).get("changes") or 0) + 1
    if not not_modified:
        update["last_status"] = status
    if is_success(status) or not_modified:
        update["digest"] = digest
        update["deleted_at"] = None
        if record.rec_type == "response" and not truncated:
            update.update(orig_uri=url, orig_date=date, orig_record_id=record_id, orig_warc=warc)
            if digest and payload_length:
                state.add_digest(digest, Original(url, date, record_id, warc))
        elif record.rec_type == "revisit" and not not_modified and refers_id:
            update.update(orig_uri=refers_uri, orig_date=refers_date, orig_record_id=refers_id,
                          orig_warc=original["warc"] if original else None)
        if not not_modified and http:
            update.update(etag=http.get_header("ETag"), last_modified=http.get_header("Last-Modified"))
    else:
        update.update(digest=digest, orig_uri=None, orig_date=None, orig_record_id=None, orig_warc=None,
                      etag=None, last_modified=None)
        if record.rec_type == "response" and not truncated and digest and payload_length and status:
            state.add_digest(digest, Original(url, date, record_id, warc))
    if cls == "deleted":
        update["deleted_at"] = _iso(date)
    state.update_url(url, **update)
