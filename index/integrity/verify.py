"""``strata verify``: is what the collection holds intact, and does everything derived from it agree?

Three depths (``MODES``):

- ``quick``: every file in ``archive/`` is in the fixity manifest and every manifest entry has its
  file, of the recorded size. No file is read.
- ``fixity``: as ``quick``, and every file is hashed (SHA-256) against the manifest.
- ``full`` (the default): as ``fixity``, in the same read of each file every record is parsed and its
  block and payload digests checked (``index.integrity.digestscan``); every revisit's original is looked for in
  the collection (by ``WARC-Refers-To``, else ``WARC-Refers-To-Target-URI`` and ``-Date``, else, as
  pywb would, that URI with the same payload digest) and must be intact with the same payload digest;
  every CDXJ line (``indexes/*.cdxj``) must point at a record at its offset, of its length, and every
  response and revisit record must have a line.

A missing file or a damaged record lists the revisits that depend on it (found through the CDXJ lines
and the harvest state that still point there). Memory stays bounded: files are streamed, and the
records, revisits and CDXJ lines go to a temporary SQLite database, joined there. Every check is
logged in the collection's fixity events (``index.integrity.fixity``), and the verification itself last.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import queue
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from index.collection import Collection
from index.integrity.digestscan import Damage, Record, bare_digest, scan
from index.integrity.fixity import ALGORITHM, Fixity, now_iso
from index.state import open_readonly, record_locations
from strata.times import digits14

MODES = ("quick", "fixity", "full")
OPEN_SUFFIX = ".open"
_BATCH = 2000
_QUEUE_BATCHES = 16  # batches of records waiting for this thread: bounds memory
_MAX_WORKERS = 4
# CDXJ lines and records are matched by kind of record pywb indexes that has an HTTP status.
_INDEXED_TYPES = ("response", "revisit")
_BEYOND = 1 << 62
_UNLISTED_TYPES = frozenset({"request", "warcinfo"})
_ORIGINAL_TYPES = "('response', 'resource')"
# What keeps a file out of the manifest under --adopt: damage to its bytes (not, say, a missing index).
_DAMAGE_KINDS = frozenset({"damaged-record", "damaged-region", "truncated", "size-mismatch", "unreadable-file"})
WARC_SUFFIXES = (".warc.gz", ".warc")
ARCHIVE_SUFFIXES = WARC_SUFFIXES + (".arc.gz", ".arc")


@dataclasses.dataclass
class Problem:
    kind: str
    file: str | None  # "archive/<name>", or a fixity/ or indexes/ file
    offset: int | None = None
    url: str | None = None
    detail: str = ""
    dependents: list[dict] = dataclasses.field(default_factory=list)  # revisits that need this record

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class VerifyReport:
    collection: str
    mode: str
    started: str = ""
    finished: str = ""
    seconds: float = 0.0
    files: int = 0
    bytes: int = 0
    records: int = 0
    revisits: int = 0
    cdxj_lines: int = 0
    problems: list[Problem] = dataclasses.field(default_factory=list)
    adopted: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def intact(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["intact"] = self.intact
        data["problems"] = [p.as_dict() for p in self.problems]
        return data


def _payload(name: str) -> str:
    return f"archive/{name}"


_SCHEMA = """
CREATE TABLE rec (file TEXT, offset INTEGER, length INTEGER, type TEXT, uri TEXT, date TEXT, rid TEXT,
                  digest TEXT, status TEXT, damaged INTEGER);
CREATE TABLE rev (file TEXT, offset INTEGER, uri TEXT, rid TEXT, refers_to TEXT, rt_uri TEXT, rt_date TEXT,
                  digest TEXT);
CREATE TABLE cdx (file TEXT, offset INTEGER, length INTEGER, url TEXT, ts TEXT, digest TEXT, src TEXT,
                  line INTEGER);
"""
_INDEXES = """
CREATE INDEX rec_pos ON rec (file, offset);
CREATE INDEX rec_rid ON rec (rid);
CREATE INDEX rec_uri ON rec (uri, date);
CREATE INDEX cdx_pos ON cdx (file, offset);
CREATE INDEX cdx_url ON cdx (url, ts);
"""


class Verifier:
    def __init__(
        self,
        collection: Collection,
        mode: str = "full",
        adopt: bool = False,
        progress: Callable[[dict], None] | None = None,
    ):
        if mode not in MODES:
            raise ValueError(mode)
        self.coll = collection
        self.mode = mode
        self.adopt = adopt and mode == "full"
        self.progress = progress
        self.fixity = Fixity(collection.fixity_dir)
        self.report = VerifyReport(collection.name, mode)
        self._events: list[dict] = []
        self._damage: dict[str, list[tuple[int, int, Problem]]] = {}  # file -> (start, end, problem)
        self._missing: dict[str, Problem] = {}  # file name -> problem

    # -- the run -------------------------------------------------------------------------------
    def run(self) -> VerifyReport:
        report = self.report
        report.started = now_iso()
        clock = time.monotonic()
        if self.coll.is_locked():
            report.notes.append("a harvest is running: files it seals meanwhile are not checked")
        files = self._list_archive()
        recorded = self._read_manifest()
        sizes = self.fixity.sizes()
        present = {name: size for name, size in files.items() if not name.endswith(OPEN_SUFFIX)}
        for name in sorted(set(recorded) - set(present)):
            problem = Problem("missing-file", _payload(name), detail="listed in the fixity manifest, not in archive/")
            self._missing[name] = problem
            self._problem(problem)
            self._event(name, "missing")
        for name, size in sorted(present.items()):
            if name in sizes and sizes[name] != size:
                what = "shorter" if size < sizes[name] else "longer"
                self._problem(
                    Problem(
                        "size-mismatch",
                        _payload(name),
                        detail=f"{size} bytes, {what} than the {sizes[name]} recorded when it was sealed",
                    )
                )
        report.files = len(present)
        report.bytes = sum(present.values())
        if self.mode == "quick":
            for name in sorted(present):
                if name in recorded:
                    ok = sizes.get(name) in (None, present[name])
                    self._event(name, "pass" if ok else "fail", algorithm="size")
        else:
            with tempfile.TemporaryDirectory(prefix="strata-verify-") as tmp:
                self.db = sqlite3.connect(os.path.join(tmp, "verify.sqlite"))
                self.db.executescript(
                    "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-32000;" + _SCHEMA
                )
                try:
                    full = self.mode == "full"
                    # the CDXJ is read while the workers read the files
                    digests = self._read_files(present, recorded, full, self._load_cdxj if full else None)
                    if full:
                        self.db.executescript(_INDEXES)
                        self._check_cdxj(present)
                        self._check_revisits()
                        self._adopt(present, recorded, digests)
                finally:
                    self.db.close()
        self._not_in_manifest(present)
        report.problems.sort(key=lambda p: (p.file or "", p.offset or 0, p.kind))
        report.finished = now_iso()
        report.seconds = round(time.monotonic() - clock, 3)
        self._events.append(
            {
                "type": "verification",
                "file": None,
                "algorithm": ALGORITHM if self.mode != "quick" else "size",
                "outcome": "intact" if report.intact else "problems",
                "mode": self.mode,
                "files": report.files,
                "records": report.records,
                "problems": len(report.problems),
                "kinds": sorted({p.kind for p in report.problems}),
                "started": report.started,
            }
        )
        self.fixity.log(self._events)
        return report

    def _problem(self, problem: Problem) -> Problem:
        self.report.problems.append(problem)
        return problem

    def _event(self, name: str, outcome: str, algorithm: str = ALGORITHM) -> None:
        self._events.append(
            {"type": "fixity-check", "file": _payload(name), "algorithm": algorithm, "outcome": outcome}
        )

    def _tick(self, **figures) -> None:
        if self.progress:
            self.progress({"files": self.report.files, "bytes_total": self.report.bytes, **figures})

    # -- archive/ and the manifest -------------------------------------------------------------
    def _list_archive(self) -> dict[str, int]:
        out: dict[str, int] = {}
        archive = self.coll.archive_dir
        if not archive.is_dir():
            return out
        busy = None
        for entry in os.scandir(archive):
            if not entry.is_file(follow_symlinks=False):
                self._problem(Problem("unexpected-entry", _payload(entry.name), detail="not a regular file"))
                continue
            if entry.name.endswith(OPEN_SUFFIX):
                busy = self.coll.is_locked() if busy is None else busy
                if not busy:
                    self._problem(
                        Problem(
                            "unsealed-file",
                            _payload(entry.name),
                            detail=f"left by a harvest that died; run: strata recover {self.coll.name}",
                        )
                    )
                continue
            out[entry.name] = entry.stat().st_size
        return out

    def _read_manifest(self) -> dict[str, str]:
        recorded: dict[str, str] = {}
        manifest = "fixity/" + self.fixity.manifest_path.name
        for entry in self.fixity.entries():
            if entry.name is None:
                self._problem(
                    Problem(
                        "manifest-malformed",
                        manifest,
                        detail=f"line {entry.line_no} is not '<sha256>  archive/<file>': {entry.text[:120]!r}",
                    )
                )
            elif entry.name in recorded and recorded[entry.name] != entry.sha256:
                self._problem(
                    Problem(
                        "manifest-conflict",
                        _payload(entry.name),
                        detail=f"line {entry.line_no} gives the file a second, different digest",
                    )
                )
            else:
                recorded[entry.name] = entry.sha256 or ""
        return recorded

    def _not_in_manifest(self, present: dict[str, int]) -> None:
        recorded = self.fixity.digests()  # read again: a harvest may have sealed a file meanwhile
        for name in sorted(set(present) - set(recorded)):
            if name in self.report.adopted:
                continue
            hint = (
                f"written before the manifest existed? adopt it with: strata verify {self.coll.name} --adopt"
                if name.endswith(ARCHIVE_SUFFIXES)
                else "not a WARC file"
            )
            self._problem(Problem("not-in-manifest", _payload(name), detail=hint))
            self._event(name, "not-in-manifest")

    # -- reading every file --------------------------------------------------------------------
    def _read_files(
        self, present: dict[str, int], recorded: dict[str, str], full: bool, meanwhile: Callable[[], None] | None = None
    ) -> dict[str, str]:
        """Read every file once, several at a time (inflating and hashing let go of the GIL): the
        workers stream records in batches through a bounded queue; this thread runs ``meanwhile``,
        then does the rest."""
        digests: dict[str, str] = {}
        names = sorted(present)
        if not names:
            if meanwhile:
                meanwhile()
            return digests
        out: queue.Queue = queue.Queue(maxsize=_QUEUE_BATCHES)
        stop = threading.Event()

        def put(message) -> None:
            while not stop.is_set():
                try:
                    out.put(message, timeout=0.5)
                    return
                except queue.Full:
                    continue

        done_bytes = finished = 0
        workers = max(1, min(len(names), os.cpu_count() or 1, _MAX_WORKERS))
        self._tick(phase="reading", file=names[0], file_index=0, bytes_done=0)
        with ThreadPoolExecutor(workers, thread_name_prefix="verify") as pool:
            try:
                for name in names:
                    pool.submit(self._read_one, name, full, put, stop)
                if meanwhile:
                    meanwhile()
                while finished < len(names):
                    kind, name, value, error = out.get()
                    if kind == "items":
                        self._take(name, value)
                        continue
                    if kind == "failed":
                        raise value
                    finished += 1
                    done_bytes += present[name]
                    self._tick(phase="reading", file=name, file_index=finished, bytes_done=done_bytes)
                    self._file_done(name, value, error, recorded, digests)
            finally:
                stop.set()
        return digests

    def _read_one(self, name: str, full: bool, put: Callable[[tuple], None], stop: threading.Event) -> None:
        """One file, on a worker thread: its records in batches (a WARC, when checking in full), then
        its SHA-256; an error goes to the reading thread as a message."""
        hasher = hashlib.sha256()
        path = self.coll.archive_dir / name
        try:
            if full and name.endswith(WARC_SUFFIXES):  # other files are hashed only
                batch: list = []
                for item in scan(path, hasher):
                    batch.append(item)
                    if len(batch) >= _BATCH:
                        put(("items", name, batch, None))
                        batch = []
                        if stop.is_set():
                            return
                put(("items", name, batch, None))
            else:
                _hash_into(path, hasher)
            put(("done", name, hasher.hexdigest(), None))
        except OSError as exc:
            put(("done", name, None, str(exc)))
        except BaseException as exc:  # reported to the reading thread, raised there
            put(("failed", name, exc, None))

    def _file_done(
        self, name: str, digest: str | None, error: str | None, recorded: dict[str, str], digests: dict[str, str]
    ) -> None:
        """A file read to its end: its hash held against the manifest (an event either way)."""
        if digest is None:
            self._problem(Problem("unreadable-file", _payload(name), detail=error or ""))
            return
        digests[name] = digest
        if name in recorded:
            ok = recorded[name] == digest
            self._event(name, "pass" if ok else "fail")
            if not ok:
                self._problem(
                    Problem(
                        "checksum-mismatch",
                        _payload(name),
                        detail=f"SHA-256 {digest}, the manifest says {recorded[name]}",
                    )
                )

    def _take(self, name: str, items: list) -> None:
        recs, revs = [], []
        for item in items:
            if type(item) is Damage:
                self._record_damage(name, item)
                continue
            if item.rec_type in _UNLISTED_TYPES and not item.problem:
                continue  # neither an original nor indexed: nothing asks for it
            recs.append(_rec_row(name, item))
            if item.problem:
                self._add_damage(
                    name,
                    item.offset,
                    item.offset + item.length,
                    Problem(
                        "damaged-record",
                        _payload(name),
                        item.offset,
                        item.uri or None,
                        f"{item.rec_type} record: {item.problem}",
                    ),
                )
            if item.rec_type == "revisit":
                revs.append(
                    (
                        name,
                        item.offset,
                        item.uri,
                        item.record_id,
                        item.refers_to,
                        item.refers_to_uri,
                        item.refers_to_date,
                        bare_digest(item.payload_digest),
                    )
                )
        self.report.records += len(items)
        self._flush(recs, revs)

    def _flush(self, recs: list, revs: list) -> None:
        self.db.executemany("INSERT INTO rec VALUES (?,?,?,?,?,?,?,?,?,?)", recs)
        self.db.executemany("INSERT INTO rev VALUES (?,?,?,?,?,?,?,?)", revs)
        self.report.revisits += len(revs)
        recs.clear()
        revs.clear()

    def _record_damage(self, name: str, damage: Damage) -> None:
        kind = "truncated" if "truncated" in damage.reason else "damaged-region"
        detail = damage.reason + (f"; nothing readable up to byte {damage.end}" if kind != "truncated" else "")
        # what was past the end of a truncated file is gone with the rest of it
        end = _BEYOND if kind == "truncated" else max(damage.end, damage.offset + 1)
        self._add_damage(
            name, damage.offset, end, Problem(kind, _payload(name), damage.offset, damage.uri or None, detail)
        )
        if damage.record_id:
            # a stand-in row: a revisit finding its original here learns it is damaged
            self.db.execute(
                "INSERT INTO rec VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    name,
                    damage.offset,
                    damage.end - damage.offset,
                    damage.rec_type,
                    damage.uri,
                    "",
                    damage.record_id,
                    "",
                    "",
                    1,
                ),
            )

    def _add_damage(self, name: str, start: int, end: int, problem: Problem) -> None:
        self._problem(problem)
        self._damage.setdefault(name, []).append((start, end, problem))

    def _damage_at(self, name: str, offset: int) -> Problem | None:
        for start, end, problem in self._damage.get(name, ()):
            if start <= offset < end:
                return problem
        return None

    # -- the CDXJ index ------------------------------------------------------------------------
    def _load_cdxj(self) -> None:
        rows = []
        for src, line_no, line in _cdxj_lines(self.coll.indexes_dir):
            fields = _parse_cdxj(line)
            self.report.cdxj_lines += 1
            if fields is None:
                self._problem(Problem("cdxj-malformed", f"indexes/{src}", detail=f"line {line_no} does not parse"))
                continue
            rows.append(fields + (src, line_no))
            if len(rows) >= _BATCH:
                self.db.executemany("INSERT INTO cdx VALUES (?,?,?,?,?,?,?,?)", rows)
                rows.clear()
        self.db.executemany("INSERT INTO cdx VALUES (?,?,?,?,?,?,?,?)", rows)

    def _check_cdxj(self, present: dict[str, int]) -> None:
        missing_lines: dict[str, int] = {}
        damaged_lines: dict[int, tuple[Problem, int]] = {}
        for file, offset, length, url, _ts, src, line_no, rlen, rdamaged in self.db.execute(
            "SELECT c.file, c.offset, c.length, c.url, c.ts, c.src, c.line, r.length, r.damaged FROM cdx c "
            "LEFT JOIN rec r ON r.file = c.file AND r.offset = c.offset ORDER BY c.file, c.offset"
        ):
            where = f"indexes/{src} line {line_no}"
            if rlen is None:
                if file in self._missing:
                    missing_lines[file] = missing_lines.get(file, 0) + 1
                elif (damage := self._damage_at(file, offset)) is not None:
                    damage.url = damage.url or url
                    damaged_lines[id(damage)] = (damage, damaged_lines.get(id(damage), (None, 0))[1] + 1)
                elif file.endswith((".arc", ".arc.gz")) and file in present:
                    continue  # ARC records are hashed with their file, not parsed: their lines cannot be checked
                elif file not in present:
                    self._problem(
                        Problem(
                            "cdxj-dangling",
                            _payload(file),
                            offset,
                            url,
                            f"{where} points into a file that is not in archive/",
                        )
                    )
                else:
                    self._problem(
                        Problem(
                            "cdxj-dangling", _payload(file), offset, url, f"{where}: no capture starts at this offset"
                        )
                    )
            elif length is not None and length != rlen and not rdamaged:
                self._problem(
                    Problem(
                        "cdxj-mismatch",
                        _payload(file),
                        offset,
                        url,
                        f"{where} gives length {length}, the record is {rlen} bytes",
                    )
                )
        for file, count in missing_lines.items():
            self._missing[file].detail += f"; {count} CDXJ line(s) point into it"
        for damage, count in damaged_lines.values():
            damage.detail += f"; {count} CDXJ line(s) point into it"
        # A file none of whose captures is indexed is one problem, not one per capture.
        where_missing = (
            "FROM rec r LEFT JOIN cdx c ON c.file = r.file AND c.offset = r.offset WHERE c.file IS NULL "
            "AND r.type IN ('response','revisit') AND r.status != '' AND r.damaged = 0"
        )
        totals = dict(
            self.db.execute(
                "SELECT file, COUNT(*) FROM rec WHERE type IN ('response','revisit') AND status != '' AND damaged = 0 "
                "GROUP BY file"
            )
        )
        unindexed = self.db.execute(f"SELECT r.file, COUNT(*) {where_missing} GROUP BY r.file").fetchall()
        for file, count in unindexed:
            if count == totals.get(file) and count > 1:
                self._problem(
                    Problem(
                        "file-not-indexed",
                        _payload(file),
                        detail=(
                            f"none of its {count} captures is in the CDXJ index; run: strata index rebuild "
                            f"{self.coll.name}"
                        ),
                    )
                )
                continue
            for offset, url in self.db.execute(
                f"SELECT r.offset, r.uri {where_missing} AND r.file = ? ORDER BY r.offset", (file,)
            ):
                self._problem(
                    Problem(
                        "not-in-cdxj",
                        _payload(file),
                        offset,
                        url,
                        "a capture no CDXJ line points at (replay cannot find it)",
                    )
                )

    # -- revisits ------------------------------------------------------------------------------
    def _check_revisits(self) -> None:
        harvest_db = open_readonly(self.coll.db_path)
        try:
            # streamed: the lookups run on cursors of their own
            for file, offset, uri, rid, refers_to, rt_uri, rt_date, digest in self.db.execute(
                "SELECT * FROM rev ORDER BY file, offset"
            ):
                self._check_revisit(harvest_db, file, offset, uri, rid, refers_to, rt_uri, rt_date, digest)
        finally:
            if harvest_db is not None:
                harvest_db.close()

    def _find_original(self, refers_to: str, rt_uri: str, rt_date: str, digest: str):
        q = f"SELECT file, offset, digest, damaged FROM rec WHERE type IN {_ORIGINAL_TYPES} AND "
        row = None
        if refers_to:
            row = self.db.execute(q + "rid = ? LIMIT 1", (refers_to,)).fetchone()
        if row is None and rt_uri and rt_date:
            row = self.db.execute(q + "uri = ? AND date = ? ORDER BY damaged LIMIT 1", (rt_uri, rt_date)).fetchone()
        if row is None and digest:
            row = self.db.execute(q + "uri = ? AND digest = ? ORDER BY damaged LIMIT 1", (rt_uri, digest)).fetchone()
        return row

    def _check_revisit(self, harvest_db, file, offset, uri, rid, refers_to, rt_uri, rt_date, digest) -> None:
        rt_uri = rt_uri or uri  # without a target URI pywb looks at the revisit's own URI
        dependent = {"file": _payload(file), "offset": offset, "url": uri}
        row = self._find_original(refers_to, rt_uri, rt_date, digest)
        if row is not None:
            ofile, ooffset, odigest, damaged = row
            if damaged:
                cause = self._damage_at(ofile, ooffset)
                if cause is not None:
                    cause.dependents.append(dependent)
                    return
            elif not digest or odigest == digest:
                return
            else:
                self._problem(
                    Problem(
                        "revisit-digest-mismatch",
                        _payload(file),
                        offset,
                        uri,
                        (
                            f"its original ({_payload(ofile)} at {ooffset}) has payload digest {odigest}, "
                            f"the revisit says {digest}"
                        ),
                    )
                )
                return
        for ofile, ooffset in self._where_original_was(harvest_db, refers_to, rt_uri, rt_date):
            cause = self._missing.get(ofile) or self._damage_at(ofile, ooffset)
            if cause is not None:
                cause.dependents.append(dependent)
                return
        self._problem(
            Problem(
                "revisit-original-missing",
                _payload(file),
                offset,
                uri,
                (
                    f"no intact capture of {rt_uri} of {rt_date or '?'} with payload digest {digest or '?'} "
                    f"({refers_to or 'no WARC-Refers-To'}) is in the collection"
                ),
            )
        )

    def _where_original_was(self, harvest_db, refers_to: str, rt_uri: str, rt_date: str) -> Iterator[tuple]:
        """Where the CDXJ index and the harvest state say the original was."""
        if rt_uri and rt_date:
            yield from self.db.execute(
                "SELECT file, offset FROM cdx WHERE url = ? AND ts = ?", (rt_uri, digits14(rt_date))
            ).fetchall()
        if harvest_db is not None and refers_to:
            yield from record_locations(harvest_db, refers_to)

    # -- adoption ------------------------------------------------------------------------------
    def _adopt(self, present: dict[str, int], recorded: dict[str, str], digests: dict[str, str]) -> None:
        if not self.adopt:
            return
        for name in sorted(set(present) - set(recorded)):
            if name not in digests or not name.endswith(WARC_SUFFIXES):
                continue
            if any(p.file == _payload(name) and p.kind in _DAMAGE_KINDS for p in self.report.problems):
                continue  # only a file whose every record checks out is taken in
            if self.fixity.add(name, present[name], digests[name], agent="adopt"):
                self.report.adopted.append(name)


def _rec_row(name: str, r: Record) -> tuple:
    digest = bare_digest(r.payload_digest) if r.payload_digest else ""
    return (
        name,
        r.offset,
        r.length,
        r.rec_type,
        r.uri,
        r.date,
        r.record_id,
        digest,
        r.http_status if r.rec_type in _INDEXED_TYPES else "",
        1 if r.problem else 0,
    )


def _hash_into(path: Path, hasher) -> None:
    with open(path, "rb", buffering=0) as fh:
        buf = bytearray(1 << 22)
        view = memoryview(buf)
        while n := fh.readinto(buf):
            hasher.update(view[:n])


def _cdxj_lines(indexes_dir: Path) -> Iterator[tuple[str, int, bytes]]:
    if not indexes_dir.is_dir():
        return
    for path in sorted(indexes_dir.glob("*.cdxj")):
        with open(path, "rb") as fh:
            for line_no, line in enumerate(fh, 1):
                if line.strip():
                    yield path.name, line_no, line


_JSON = json.JSONDecoder()


def _parse_cdxj(line: bytes) -> tuple | None:
    try:
        _, ts, blob = line.decode("utf-8").rstrip("\r\n").split(" ", 2)
        fields = _JSON.decode(blob)
        filename = fields["filename"]
        offset = int(fields["offset"])
        length = int(fields["length"]) if str(fields.get("length", "-")).isdigit() else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return (filename, offset, length, fields.get("url", ""), ts, bare_digest(fields.get("digest", "")))


def verify(
    collection: Collection, mode: str = "full", adopt: bool = False, progress: Callable[[dict], None] | None = None
) -> VerifyReport:
    return Verifier(collection, mode, adopt, progress).run()
