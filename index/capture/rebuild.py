"""Rebuild a collection's CDXJ index and harvest state from its WARC files alone.

WARC files are the single source of truth. This re-derives, in a fresh database swapped in at the
end: WARC files, runs (from each file's ``warcinfo``: run id, job, mode), captures and their classes
and per-URL state (payload, original, validators, where it was found: the request's ``Referer``)
and the digest index, through ``index.capture.record`` as the harvest records them, and the CDXJ.
Captures are applied in capture-time order (WARC-Date) across all files, never in file-name order:
other tools' file names do not sort by capture date.

Each file is read once (``index.capture.filefacts``): its CDXJ lines and one small ``Fact`` per capture
record. The facts wait in a temporary database, the lines in an on-disk sort, so memory stays bounded
whatever the collection's size; the captures are then derived from the facts in time order without
reading any record again. Every record pywb's indexer indexes is in the CDXJ; every ``response``,
``revisit`` and ``resource`` record of an http(s) URI is a capture, a record written twice included.

Each run's report (a ``metadata`` record, ``index.capture.runhistory``) restores the run's row and figures,
its checks, the soft changes it stored, and the URL fields no capture holds (where and when each URL
was first seen, depth, page kind, fingerprint). A Strata run without one (killed before writing
it) comes back as ``interrupted``, as recovery marks it; another tool's file becomes a run of its
own, of mode ``imported``. The README (Rebuilding) lists what cannot be restored.

Nothing is changed until everything is derived: the new CDXJ and database are written beside the
old ones and replace them at the end (``os.replace``), with a marker file (``rebuild.pending``) held
while they do, so that a rebuild killed between the two is run again (``finish_interrupted``)
rather than leaving an index and a state that disagree.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import os
import shutil
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import cast

from warcio.archiveiterator import ArchiveIterator

from index.capture import backendcopy, filefacts, runhistory
from index.capture.decision import Observation
from index.capture.filefacts import Fact, FileFacts, arc_record_id
from index.capture.profiles import profile_of
from index.capture.record import record_capture
from index.cdx import cdxj
from index.cdx.extsort import ExternalSort
from index.collection import Collection
from index.integrity.fixity import Fixity
from index.integrity.recordscan import Damage
from index.storage import redisdb
from index.storage.backend import backend_of
from index.storage.state import SCHEMA_VERSION, HarvestState, Original, schema_version
from strata.times import digits14

IMPORTED_MODE = "imported"  # the mode of a run made from another tool's file
PENDING = "rebuild.pending"  # in strata/: a rebuild's swap is under way
JOURNAL = "import.journal"  # in strata/: an import's files being linked into archive/
IMPORT_TEMP_PREFIX = ".import-"  # in archive/: an import's copy being made (no WARC file has such a name)
FACTS_SUFFIX = ".rebuild-facts"  # beside harvest.sqlite: the facts of the rebuild under way
SORT_DIR = "rebuild.sort"  # in strata/: its CDXJ lines being sorted
_FACT_FIELDS = [f.name for f in dataclasses.fields(Fact)]
_FACT_VALUES = operator.attrgetter(*_FACT_FIELDS)  # a fact's values in column order


def _iso(warc_date: str) -> str:
    return warc_date[:19] + "." + (warc_date[20:23] if len(warc_date) > 20 else "000").ljust(3, "0") + "Z"


def rebuild_if_outdated(collection: Collection) -> bool:
    """Before the state is used: finish an import or a rebuild that was killed half way through
    (``finish_interrupted``), and rebuild a database made by an older Strata
    (``index.storage.state.SCHEMA_VERSION``): the schema is rebuilt from the WARCs rather than migrated.
    True when it was rebuilt."""
    if finish_interrupted(collection):
        return True
    version = schema_version(collection.db_path)
    if version is None or version >= SCHEMA_VERSION:
        return False
    rebuild_state(collection)
    return True


def finish_interrupted(collection: Collection) -> bool:
    """Finish what a killed import or rebuild left half done. An import's journal (``JOURNAL``): its
    files (checked whole before it was written) are linked, put in the manifest and indexed. A
    rebuild's marker (``PENDING``): the rebuild runs again. True if there was anything to finish."""
    state_dir = collection.state_dir
    if not (state_dir / JOURNAL).exists() and not (state_dir / PENDING).exists():
        return False
    with collection.harvest_lock():
        journal = state_dir / JOURNAL
        entries: list[dict] = []
        if journal.exists():
            try:
                entries = json.loads(journal.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                entries = []
            archive = collection.archive_dir
            apply_journal(
                collection, [e for e in entries if (archive / e["name"]).exists() or (archive / e["tmp"]).exists()]
            )
        rebuild_state(collection)
        journal.unlink(missing_ok=True)
        for entry in entries:
            (collection.archive_dir / entry["tmp"]).unlink(missing_ok=True)
    return True


def write_journal(collection: Collection, entries: list[dict]) -> None:
    """An import's files about to be linked into ``archive/`` (``{tmp, name, sha256, size}`` each),
    written and synced before the first is."""
    with open(collection.state_dir / JOURNAL, "w", encoding="utf-8") as fh:
        json.dump(entries, fh)
        fh.flush()
        os.fsync(fh.fileno())


def apply_journal(collection: Collection, entries: list[dict]) -> None:
    """Each copy linked under its name (a link never replaces a file) and recorded in the fixity
    manifest with the SHA-256 checked before it was copied (the copy's own, verified)."""
    archive = collection.archive_dir
    for entry in entries:
        target = archive / entry["name"]
        if not target.exists():
            os.link(archive / entry["tmp"], target)
    fd = os.open(archive, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    fixity = Fixity(collection.fixity_dir)
    for entry in entries:
        fixity.add(entry["name"], entry["size"], entry["sha256"], "import")


@dataclasses.dataclass
class _Scan:
    """What the pass over every file keeps: per file its run (from its ``warcinfo``), the reports,
    the first ``Referer`` of each URL, the damage found; the facts and lines themselves are on disk."""

    files: list[FileFacts] = dataclasses.field(default_factory=list)
    referers: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)  # url -> (date, referer)
    reports: dict[str, dict] = dataclasses.field(default_factory=dict)  # run id -> report
    captures: int = 0
    lines: int = 0
    damage: list[Damage] = dataclasses.field(default_factory=list)  # where files are damaged


def rebuild_state(
    collection: Collection,
    progress: Callable[[dict], None] | None = None,
    extra: Mapping[str, Path] | None = None,
    before_swap: Callable[[], None] | None = None,
) -> dict:
    """Rebuild ``harvest.sqlite`` and ``indexes/index.cdxj`` from ``archive/``. Takes the harvest lock.

    ``extra``: files not in ``archive/`` yet (an import's copies, ``name -> path``), derived as if they
    were there under ``name``. ``before_swap`` runs once everything is derived and written beside the
    collection's files, before they are replaced: an exception there leaves the collection as it was
    (the import puts its files in place there). Two passes: every file is read once
    (``index.capture.filefacts``); the captures are then derived in WARC-Date order across all files,
    whatever the file names, from the facts alone, and each run's report applied where the run ended
    (``index.capture.runhistory``)."""
    extra = dict(extra or {})
    with collection.harvest_lock():
        tmp = collection.state_dir / "harvest.sqlite.rebuild"
        facts_path = Path(str(collection.db_path) + FACTS_SUFFIX)
        _remove(tmp, facts_path)
        state = HarvestState(tmp)
        facts = sqlite3.connect(facts_path)
        facts.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; CREATE TABLE facts (file INTEGER, "
            + ", ".join(_FACT_FIELDS)
            + ")"
        )
        sort_dir = collection.state_dir / SORT_DIR
        shutil.rmtree(sort_dir, ignore_errors=True)
        sort_dir.mkdir(parents=True)
        lines = ExternalSort(sort_dir)
        files = sorted(set(collection.warc_files()) | set(extra))
        index_tmp: str | None = None
        try:
            paths = [extra.get(name) or collection.archive_dir / name for name in files]
            scan = _scan(paths, files, facts, lines, progress)
            runs = _derive_all(state, files, scan, facts, progress)
            with state.transaction():
                for run_id, run in runs.items():
                    _restore_run(state, collection, run_id, run, scan.reports.get(run_id))
            state.close()
            facts.close()
            index_tmp = cdxj.write_temp(collection.cdxj_path, iter(lines))
            if before_swap is not None:
                before_swap()
            _swap_in(collection, tmp, index_tmp)
            index_tmp = None
        except BaseException:
            state.close()
            facts.close()
            _remove(tmp)
            if index_tmp is not None:
                Path(index_tmp).unlink(missing_ok=True)
            raise
        finally:
            lines.close()
            shutil.rmtree(sort_dir, ignore_errors=True)
            facts_path.unlink(missing_ok=True)
        return {
            "files": len(files),
            "records": scan.captures,
            "runs": len(runs),
            "cdxj_lines": scan.lines,
            "damage": [d.as_dict() for d in scan.damage],
        }


def _remove(*paths: Path) -> None:
    for path in paths:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(str(path) + suffix).unlink(missing_ok=True)


def _swap_in(collection: Collection, db_tmp: Path, index_tmp: str) -> None:
    """The new CDXJ, then the new database, in place; the marker says a swap is under way."""
    marker = collection.state_dir / PENDING
    with open(marker, "wb") as fh:
        fh.write(b"a rebuild is replacing indexes/index.cdxj and strata/harvest.sqlite\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(index_tmp, collection.cdxj_path)
    for suffix in ("-wal", "-shm"):
        Path(str(collection.db_path) + suffix).unlink(missing_ok=True)
    os.replace(db_tmp, collection.db_path)
    _refresh_redis(collection)
    marker.unlink()


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
    ``interrupted``, as recovery marks a run that died; else (another tool's file) ``finished``, of
    mode ``imported``, from its captures. A Strata run's job is its warcinfo's (none for a run from
    ``--seed`` URLs), whatever its report says: reports written before that was mended named such
    runs' job ``cli``."""
    size = sum(run["sizes"])
    if report is not None:
        row = runhistory.reported_run(report, run["files"], size)
        if run["strata"]:
            row["job"] = run["job"]
        state.add_run(row)
        return
    started = run["started"] or (_iso(run["first"]) if run["first"] else None)
    restored = runhistory.interrupted_run(state, run_id, started, run["files"], collection.archive_dir, size)
    if run["strata"]:
        state.add_run(
            {
                "run_id": run_id,
                "job": run["job"],
                "mode": run["mode"],
                "status": "interrupted",
                "started": started,
                "finished": None,
                **restored,
            }
        )
        return
    state.add_run(
        {
            "run_id": run_id,
            "job": run["job"],
            "mode": IMPORTED_MODE,
            "status": "finished",
            "started": _iso(run["first"]) if run["first"] else None,
            "finished": _iso(run["last"]) if run["last"] else None,
            "snapshot": digits14(run["last"]) if run["last"] else None,
            "figures": {**restored["figures"], "rebuilt": True},
        }
    )


def _scan(
    paths: list[Path],
    files: list[str],
    facts: sqlite3.Connection,
    lines: ExternalSort,
    progress: Callable[[dict], None] | None,
) -> _Scan:
    scan = _Scan()
    insert = f"INSERT INTO facts VALUES ({', '.join('?' * (len(_FACT_FIELDS) + 1))})"
    for index, (path, name) in enumerate(zip(paths, files, strict=True)):
        # a damaged file is read up to its damage: every whole record before it is indexed
        try:
            read = filefacts.read_file(path, name)
        except Exception as exc:  # noqa: BLE001 (a file nothing can read is damaged from its first byte)
            read = FileFacts(name, path.stat().st_size, good_end=0)
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            read.damage = Damage(0, read.size, f"cannot be read: {why}", filename=name)
        if read.damage:
            scan.damage.append(read.damage)
        for line in read.lines:
            lines.add(line)
        scan.lines += len(read.lines)
        for url, seen in read.referers.items():
            if url not in scan.referers or seen[0] < scan.referers[url][0]:
                scan.referers[url] = seen
        rows = []
        for fact in read.facts:
            if fact.report:
                report = _report_at(path, fact.offset)
                run_id = report["run"]["run_id"] if report else None
                if not report or not run_id:
                    continue
                scan.reports[run_id] = report
                fact.url = run_id  # the report's run, for the pass in time order
            else:
                scan.captures += 1
            rows.append((index, *_FACT_VALUES(fact)))
        facts.executemany(insert, rows)
        read.facts, read.lines, read.referers = [], [], {}  # what the second pass needs is kept on disk
        read.run_id = read.run_id or name
        scan.files.append(read)
        if progress:
            progress({"phase": "scan", "files_done": index + 1, "files": len(files), "records": scan.captures})
    return scan


def _report_at(path: Path, offset: int) -> dict | None:
    """The run report written at ``offset`` (None when it is not one this version reads)."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        record = next(iter(ArchiveIterator(fh)))
        return runhistory.decode(record.content_stream().read())


def _derive_all(
    state: HarvestState,
    files: list[str],
    scan: _Scan,
    facts: sqlite3.Connection,
    progress: Callable[[dict], None] | None,
) -> dict[str, dict]:
    """Every capture in WARC-Date order (ties: file, then offset), through ``index.capture.record``; each
    run's report where it comes in that order (at the run's end)."""
    runs: dict[str, dict] = {}
    for info in scan.files:
        state.put_warc(info.name, info.run_id, "indexed", info.size)
        if not info.readable:  # nothing readable: known (so recovery leaves it alone), no run
            continue
        run = runs.setdefault(
            info.run_id or info.name,
            {
                "job": info.job,
                "mode": info.mode if info.strata else IMPORTED_MODE,
                "files": [],
                "sizes": [],
                "started": info.started,
                "strata": info.strata,
                "first": "",
                "last": "",
                "first_key": "",
                "last_key": "",
            },
        )
        run["files"].append(info.name)
        run["sizes"].append(info.size)
    referers = {url: referer for url, (_, referer) in scan.referers.items()}
    soft = {run_id: set(report.get("soft") or ()) for run_id, report in scan.reports.items()}
    done = 0
    with state.transaction():
        for row in facts.execute(f"SELECT file, {', '.join(_FACT_FIELDS)} FROM facts ORDER BY date_key, file, offset"):
            index, fact = row[0], Fact(*row[1:])
            if fact.report:
                runhistory.apply_report(state, scan.reports[fact.url])
                continue
            info = scan.files[index]
            run_id = info.run_id or info.name
            derive_capture(state, fact, run_id, files[index], referers, soft.get(run_id, ()), info.job)
            run = runs[run_id]
            if not run["first"] or fact.date_key < run["first_key"]:
                run["first"], run["first_key"] = fact.warc_date, fact.date_key
            if not run["last"] or fact.date_key > run["last_key"]:
                run["last"], run["last_key"] = fact.warc_date, fact.date_key
            done += 1
            if progress and done % 5000 == 0:
                progress({"phase": "state", "files_done": len(files), "files": len(files), "records": done})
    return runs


def derive_capture(
    state: HarvestState,
    fact: Fact,
    run_id: str,
    warc: str,
    referers: Mapping[str, str],
    soft: set[str] | tuple[str, ...] = (),
    job: str | None = None,
) -> None:
    """One capture record through ``index.capture.record``, as the harvest did when it wrote it."""
    url, date = fact.url, fact.warc_date
    not_modified = fact.rec_type == "revisit" and profile_of(fact.profile).not_modified
    status = 304 if not_modified else fact.status
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
    mime = fact.mime
    original = state.capture_by_record_id(fact.refers_to) if fact.refers_to else None
    if not mime and original:
        mime = original["mime"]
    payload_length = fact.payload_length
    if payload_length is None:  # a revisit: the payload is its original's
        payload_length = original["payload_length"] if original and not not_modified else 0
    refers = (
        # as the record says, a missing Target-URI or Date left empty (NULL) as it was written
        Original(
            cast(str, fact.refers_to_uri),
            cast(str, fact.refers_to_date),
            fact.refers_to,
            original["warc"] if original else None,
        )
        if fact.rec_type == "revisit" and fact.refers_to
        else None
    )
    observed = Observation(
        url=url,
        at=_iso(date),
        run_id=run_id,
        status=status,
        digest=fact.digest,
        record_type=fact.rec_type,
        profile=fact.profile,
        record_id=fact.record_id,
        warc_date=date,
        warc=warc,
        offset=fact.offset,
        length=fact.length,
        mime=mime or "unknown",
        payload_length=payload_length,
        holds_payload=fact.rec_type != "revisit" and bool(fact.digest) and not fact.truncated and bool(payload_length),
        refers_to=refers,
        refers_to_uri=fact.refers_to_uri,
        refers_to_date=fact.refers_to_date,
        etag=fact.etag,
        last_modified=fact.last_modified,
        location=fact.location,
        main_text_same=url in soft,
    )
    record_capture(state, previous, observed)


def add_missing_captures(collection: Collection, state: HarvestState, name: str) -> int:
    """Capture rows, as the rebuild derives them, for the capture records of ``name`` (a file
    recovery has just sealed) that have none: a harvest killed after writing a URL's records and
    before committing its rows (``harvester.run.COMMIT_INTERVAL``) leaves exactly those. The file's
    run and job are its ``warcinfo``'s. Returns the rows added."""
    read = filefacts.read_file(collection.archive_dir / name, name)
    added = 0
    with state.transaction():
        for fact in read.facts:
            if fact.report or state.capture_by_record_id(fact.record_id) is not None:
                continue
            derive_capture(state, fact, read.run_id or name, name, {}, (), read.job)
            added += 1
    return added


__all__ = [
    "IMPORTED_MODE",
    "add_missing_captures",
    "apply_journal",
    "arc_record_id",
    "finish_interrupted",
    "rebuild_if_outdated",
    "rebuild_state",
    "write_journal",
]
