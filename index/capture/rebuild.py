"""Rebuild a collection's CDXJ index and harvest state from its WARC files alone.

WARC files are the single source of truth. This re-derives, in a fresh database swapped in at the
end: WARC files, runs (from each file's ``warcinfo``: run id, job, mode), captures and their classes
and per-URL state (payload, original, validators, where it was found: the request's ``Referer``)
through ``index.capture.decision``, the digest index, and the CDXJ. Captures are applied in capture-time
order (WARC-Date) across all files, never in file-name order: other tools' file names do not sort
by capture date.

Each run's report (a ``metadata`` record, ``index.capture.runhistory``) restores the run's row and figures,
its checks, the soft changes it stored, and the URL fields no capture holds (where and when each URL
was first seen, depth, page kind, fingerprint). A Strata run without one (killed before writing
it) comes back as ``interrupted``, as recovery marks it; another tool's file becomes a ``finished``
run of its own. The README (Rebuilding) lists what cannot be restored.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Callable
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from index.capture import runhistory
from index.capture.decision import NOT_MODIFIED_PROFILE, Observation, decide
from index.cdx import cdxj
from index.collection import Collection
from index.integrity import warcscan
from index.state import SCHEMA_VERSION, Capture, HarvestState, Original, schema_version
from index.storage import backendcopy, redisdb
from index.storage.backend import backend_of
from strata.times import digits14


def _warcinfo_fields(block: bytes) -> dict[str, str]:
    fields = {}
    for line in block.decode("utf-8", "replace").splitlines():
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip()] = value.strip()
    return fields


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


def _date_key(warc_date: str) -> str:
    """A WARC-Date as a string that sorts in time order whatever its precision (``...00Z`` and
    ``...00.5Z`` do not sort as strings): its digits, the fraction last."""
    return "".join(ch for ch in warc_date if ch.isdigit())


@dataclasses.dataclass
class _Scan:
    """What the first pass over every file keeps: one small key per capture record and per run
    report (date, file, offset, length, the report's run id or None), per file its run (from its
    ``warcinfo``), and the reports."""

    keys: list[tuple[str, int, int, int, str | None]] = dataclasses.field(default_factory=list)
    file_runs: list[dict] = dataclasses.field(default_factory=list)
    referers: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)  # url -> (date, referer)
    reports: dict[str, dict] = dataclasses.field(default_factory=dict)  # run id -> report
    lines: list[bytes] = dataclasses.field(default_factory=list)
    captures: int = 0
    damage: list[warcscan.Damage] = dataclasses.field(default_factory=list)  # where files are damaged


def rebuild_state(collection: Collection, progress: Callable[[dict], None] | None = None) -> dict:
    """Rebuild ``harvest.sqlite`` and ``indexes/index.cdxj`` from ``archive/``. Takes the harvest lock.

    Two passes: every file is read once for its ``warcinfo``, its CDXJ lines, its run reports and
    one key per capture (WARC-Date, file, offset); the captures are then derived in WARC-Date
    order across all files, whatever the file names, each record read again at its offset, and
    each run's report applied where the run ended (``index.capture.runhistory``)."""
    with collection.harvest_lock():
        tmp = collection.state_dir / "harvest.sqlite.rebuild"
        for suffix in ("", "-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        state = HarvestState(tmp)
        files = collection.warc_files()
        try:
            scan = _scan(collection, files, progress)
            runs = _derive_all(collection, state, files, scan, progress)
            with state.transaction():
                for run_id, run in runs.items():
                    _restore_run(state, collection, run_id, run, scan.reports.get(run_id))
            state.close()
            cdxj.write_index(collection.cdxj_path, scan.lines)
            for suffix in ("-wal", "-shm"):
                Path(str(collection.db_path) + suffix).unlink(missing_ok=True)
            os.replace(tmp, collection.db_path)
            _refresh_redis(collection)
        except BaseException:
            state.close()
            for suffix in ("", "-wal", "-shm"):
                Path(str(tmp) + suffix).unlink(missing_ok=True)
            raise
        return {
            "files": len(files),
            "records": scan.captures,
            "runs": len(runs),
            "cdxj_lines": len(scan.lines),
            "damage": [d.as_dict() for d in scan.damage],
        }


def _refresh_redis(collection: Collection) -> None:
    """On a root that uses Redis, what the rebuild derived replaces the collection's keys there too:
    the URL state and digests incremental runs read, and pywb's CDX set."""
    backend = backend_of(collection.root)
    if backend.kind != "redis":
        return
    client = redisdb.connect(backend.redis_url)
    try:
        backendcopy.to_redis(collection, client)
    finally:
        client.close()


def _restore_run(state: HarvestState, collection: Collection, run_id: str, run: dict, report: dict | None) -> None:
    """The run's row: from its report; else, for a Strata run (its warcinfo names it), as
    ``interrupted``, as recovery marks a run that died; else (another tool's file) ``finished``,
    from its captures."""
    size = sum(run["sizes"])
    if report is not None:
        state.add_run(runhistory.reported_run(report, run["files"], size))
        return
    if run["strata"]:
        started = run["started"] or (_iso(run["first"]) if run["first"] else None)
        state.add_run(
            {
                "run_id": run_id,
                "job": run["job"],
                "mode": run["mode"],
                "status": "interrupted",
                "started": started,
                "finished": None,
                **runhistory.interrupted_run(state, run_id, started, run["files"], collection.archive_dir),
            }
        )
        return
    counts = {}
    for cls, count in state.capture_counts(run_id).items():
        counts["errors" if cls == "error" else cls] = count
    revisits, saved = state.revisit_totals(run_id)
    figures = {
        "urls_fetched": sum(counts.values()),
        **counts,
        "warc_files": run["files"],
        "bytes_stored": size,
        "revisits": revisits,
        "bytes_saved": saved,
        "rebuilt": True,
    }
    state.add_run(
        {
            "run_id": run_id,
            "job": run["job"],
            "mode": run["mode"],
            "status": "finished",
            "started": _iso(run["first"]) if run["first"] else None,
            "finished": _iso(run["last"]) if run["last"] else None,
            "snapshot": digits14(run["last"]) if run["last"] else None,
            "figures": figures,
        }
    )


def _scan(collection: Collection, files: list[str], progress: Callable[[dict], None] | None) -> _Scan:
    scan = _Scan()
    for index, name in enumerate(files):
        path = collection.archive_dir / name
        # a damaged file is read up to its damage: every whole record before it is indexed
        checked = warcscan.scan_file(path, name)
        limit = None if checked.whole else checked.good_end
        if checked.damage:
            scan.damage.append(checked.damage)
        info: dict = {
            "run_id": None,
            "job": None,
            "mode": None,
            "started": None,
            "strata": False,
            "name": name,
            "size": path.stat().st_size,
            "limit": limit,
            "arc": warcscan.file_format(path) == "arc",
            "readable": checked.records > 0,
        }
        with warcscan.open_prefix(path, limit) as fh:
            iterator = ArchiveIterator(fh, arc2warc=True)  # an ARC record reads as a WARC response
            for record in iterator:
                kind = record.rec_type
                headers = record.rec_headers
                if kind == "warcinfo" and info["run_id"] is None:
                    fields = _warcinfo_fields(record.content_stream().read())
                    info.update(
                        run_id=fields.get("run-id") or name,
                        job=fields.get("job") or None,
                        mode=fields.get("mode"),
                        started=fields.get("started"),
                        strata=bool(fields.get("run-id")),
                    )
                elif kind == "request" and record.http_headers:
                    referer = record.http_headers.get_header("Referer")
                    url = headers.get_header("WARC-Target-URI")
                    date = _date_key(headers.get_header("WARC-Date") or "")
                    if referer and (url not in scan.referers or date < scan.referers[url][0]):
                        scan.referers[url] = (date, referer)
                elif (
                    kind in ("response", "revisit") and _is_web(headers.get_header("WARC-Target-URI"))
                ) or runhistory.is_run_record(record):
                    report = runhistory.decode(record.content_stream().read()) if kind == "metadata" else None
                    iterator.read_to_end(record)
                    if kind == "metadata" and report is None:
                        continue
                    run_id = report["run"]["run_id"] if report else None
                    if report and run_id:
                        scan.reports[run_id] = report
                    else:
                        scan.captures += 1
                    scan.keys.append(
                        (
                            _date_key(headers.get_header("WARC-Date") or ""),
                            index,
                            iterator.get_record_offset(),
                            iterator.get_record_length(),
                            run_id,
                        )
                    )
        info["run_id"] = info["run_id"] or name
        scan.file_runs.append(info)
        scan.lines.extend(cdxj.index_warc(path, name, limit))
        if progress:
            progress({"phase": "scan", "files_done": index + 1, "files": len(files), "records": scan.captures})
    return scan


def _derive_all(
    collection: Collection, state: HarvestState, files: list[str], scan: _Scan, progress: Callable[[dict], None] | None
) -> dict[str, dict]:
    """Every capture in WARC-Date order (ties: file, then offset), through ``index.capture.decision``; each
    run's report where it comes in that order (at the run's end)."""
    runs: dict[str, dict] = {}
    for info in scan.file_runs:
        state.put_warc(info["name"], info["run_id"], "indexed", info["size"])
        if not info["readable"]:  # nothing readable: known (so recovery leaves it alone), no run
            continue
        run = runs.setdefault(
            info["run_id"],
            {
                "job": info["job"],
                "mode": info["mode"],
                "files": [],
                "sizes": [],
                "started": info["started"],
                "strata": info["strata"],
                "first": "",
                "last": "",
            },
        )
        run["files"].append(info["name"])
        run["sizes"].append(info["size"])
    referers = {url: referer for url, (_, referer) in scan.referers.items()}
    soft = {run_id: set(report.get("soft") or ()) for run_id, report in scan.reports.items()}
    scan.keys.sort()
    current, fh = -1, None
    try:
        with state.transaction():
            for done, (_, index, offset, length, report_of) in enumerate(scan.keys, 1):
                if report_of is not None:
                    runhistory.apply_report(state, scan.reports[report_of])
                    continue
                if index != current:
                    if fh is not None:
                        fh.close()
                    current, fh = index, open(collection.archive_dir / files[index], "rb")
                assert fh is not None
                fh.seek(offset)
                record = next(iter(ArchiveIterator(fh, arc2warc=True)))
                # a response's payload length: what follows its HTTP headers (an ARC record's digest too)
                payload_length = warcscan.read_payload(record) if record.rec_type == "response" else None
                if scan.file_runs[index]["arc"]:
                    record.rec_headers.replace_header("WARC-Record-ID", arc_record_id(files[index], offset))
                run_id = scan.file_runs[index]["run_id"]
                _derive_capture(
                    state,
                    record,
                    run_id,
                    files[index],
                    offset,
                    length,
                    payload_length,
                    referers,
                    soft.get(run_id, ()),
                    scan.file_runs[index]["job"],
                )
                date = record.rec_headers.get_header("WARC-Date")
                run = runs[run_id]
                if not run["first"] or _date_key(date) < _date_key(run["first"]):
                    run["first"] = date
                if not run["last"] or _date_key(date) > _date_key(run["last"]):
                    run["last"] = date
                if progress and done % 5000 == 0:
                    progress({"phase": "state", "files_done": len(files), "files": len(files), "records": done})
    finally:
        if fh is not None:
            fh.close()
    return runs


def _is_web(url: str | None) -> bool:
    """http(s) captures only, as pywb's indexer: not Heritrix's dns: records, not ARC file headers."""
    return url is not None and url.split(":", 1)[0].lower() in ("http", "https")


def arc_record_id(filename: str, offset: int) -> str:
    """ARC records have no record id; warcio invents a random one. This one is the same at every
    rebuild: a name-based UUID of the file and the record's offset."""
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'strata-arc:{filename}#{offset}')}>"


def _derive_capture(
    state: HarvestState,
    record,
    run_id: str,
    warc: str,
    offset: int,
    length: int,
    payload_length: int | None,
    referers: dict[str, str],
    soft: set[str] | tuple[str, ...] = (),
    job: str | None = None,
) -> None:
    """One response or revisit record through ``index.capture.decision``, as the harvest did when it wrote it."""
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
    state.see_url(
        url,
        url.split("/")[2].split(":")[0] if "//" in url else "",
        run_id,
        _iso(date),
        referers.get(url),
        0,
        "navigation",
        job=job,
    )  # known already: only the job is added
    if previous is None:
        previous = state.url(url)
    mime = (http.get_header("Content-Type") or "").split(";")[0].strip().lower() if http else ""
    refers_uri = headers.get_header("WARC-Refers-To-Target-URI")
    refers_date = headers.get_header("WARC-Refers-To-Date")
    refers_id = headers.get_header("WARC-Refers-To")
    original = state.capture_by_record_id(refers_id) if refers_id else None
    if not mime and original:
        mime = original["mime"]
    if payload_length is None:  # a revisit: the payload is its original's
        payload_length = original["payload_length"] if original and not not_modified else 0
    truncated = headers.get_header("WARC-Truncated") if record.rec_type == "response" else None
    refers = (
        Original(refers_uri, refers_date, refers_id, original["warc"] if original else None)
        if record.rec_type == "revisit" and refers_id
        else None
    )
    capture = Observation(
        url=url,
        at=_iso(date),
        run_id=run_id,
        status=status,
        digest=digest,
        record_type=record.rec_type,
        profile=profile,
        record_id=record_id,
        warc_date=date,
        warc=warc,
        holds_payload=record.rec_type == "response" and bool(digest) and not truncated and bool(payload_length),
        refers_to=refers,
        etag=http.get_header("ETag") if http else None,
        last_modified=http.get_header("Last-Modified") if http else None,
        location=http.get_header("Location") if http else None,
        main_text_same=url in soft,
    )
    decided = decide(previous, capture)
    state.add_capture(
        Capture(
            run_id=run_id,
            url=url,
            timestamp=digits14(date),
            warc_date=date,
            record_type=record.rec_type,
            cls=decided.cls,
            status=status,
            digest=digest,
            mime=mime or "unknown",
            payload_length=payload_length,
            warc=warc,
            offset=offset,
            length=length,
            record_id=record_id,
            refers_to_uri=refers_uri,
            refers_to_date=refers_date,
            location=capture.location,
        )
    )
    state.update_url(url, **decided.state)
    if decided.original:
        state.add_digest(digest, decided.original)


def add_missing_captures(collection: Collection, state: HarvestState, name: str) -> int:
    """Capture rows, as the rebuild derives them, for the response and revisit records of ``name``
    (a file recovery has just sealed) that have none: a harvest killed after writing a URL's
    records and before committing its rows (``harvester.run.COMMIT_INTERVAL``) leaves exactly those. The
    file's run and job are its ``warcinfo``'s. Returns the rows added."""
    added = 0
    run_id = job = None
    with open(collection.archive_dir / name, "rb") as fh, state.transaction():
        iterator = ArchiveIterator(fh)
        for record in iterator:
            headers = record.rec_headers
            if record.rec_type == "warcinfo" and run_id is None:
                fields = _warcinfo_fields(record.content_stream().read())
                run_id, job = fields.get("run-id") or name, fields.get("job") or None
                continue
            url = headers.get_header("WARC-Target-URI")
            if record.rec_type not in ("response", "revisit") or not _is_web(url):
                continue
            if state.capture_by_record_id(headers.get_header("WARC-Record-ID")) is not None:
                continue
            payload_length = warcscan.read_payload(record) if record.rec_type == "response" else None
            iterator.read_to_end(record)
            offset, length = iterator.get_record_offset(), iterator.get_record_length()
            _derive_capture(state, record, run_id or name, name, offset, length, payload_length, {}, (), job)
            added += 1
    return added
