"""``strata verify``: is what the collection holds intact, and does everything derived from it agree?

Three depths (``MODES``):

- ``quick``: every file in ``archive/`` is in the fixity manifest and every manifest entry has its
  file, of the recorded size, and the SHA-256 its ingest recorded (``index.integrity.fixitycheck``, which
  ``Verifier`` builds on). No file is read.
- ``fixity``: as ``quick``, and every file is hashed (SHA-256) against the manifest.
- ``full`` (the default): as ``fixity``, in the same read of each file every record is parsed and its
  block and payload digests checked (``index.integrity.recordscan``); every revisit's original is looked for in
  the collection (by ``WARC-Refers-To``, else ``WARC-Refers-To-Target-URI`` and ``-Date``, else, as
  pywb would, that URI with the same payload digest) and must be intact with the same payload digest;
  every CDXJ line (``indexes/*.cdxj``) must point at a record at its offset, of its length, and every
  response and revisit record must have a line.

Damage and deviations are told apart. Damage (a record that does not read back whole, a digest that
does not match, a missing file or original) is a ``Problem``: the collection is not intact (exit 1).
A deviation from the WARC standard that every reader tolerates (warcio, pywb, and so Strata's replay:
records not followed by the spec's CRLF CRLF, say) is reported once per file and kind as a note in
``deviations`` and leaves the collection intact, unless ``strict`` counts it as a problem.

A missing file or a damaged record lists the revisits that depend on it (found through the CDXJ lines
and the harvest state that still point there). Memory stays bounded: files are streamed, and the
records, revisits and CDXJ lines go to a temporary SQLite database, joined there. Every check is
logged in the collection's fixity events (``index.integrity.fixity``), and the verification itself last.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from index.collection import Collection
from index.integrity.fixitycheck import WARC_SUFFIXES, ArchiveCheck, Problem, VerifyReport, _payload
from index.integrity.recordscan import Damage, Record, bare_digest, scan
from index.revisits import Candidate, Revisit, original_of
from index.storage.state import open_readonly, record_locations
from index.surtkey import surt_key
from strata.times import digits14

_BATCH = 2000
_QUEUE_BATCHES = 16  # batches of records waiting for this thread: bounds memory
_MAX_WORKERS = 4
# CDXJ lines and records are matched by kind of record pywb indexes that has an HTTP status.
_INDEXED_TYPES = ("response", "revisit")
_BEYOND = 1 << 62
_UNLISTED_TYPES = frozenset({"request", "warcinfo"})
_ORIGINAL_TYPES = ("response", "resource")  # records a revisit's payload may be in
_ORIGINAL_SQL = "('response', 'resource')"
# What keeps a file out of the manifest under --adopt: damage to its bytes (not, say, a missing index).
_DAMAGE_KINDS = frozenset({"damaged-record", "damaged-region", "truncated", "size-mismatch", "unreadable-file"})


_SCHEMA = """
CREATE TABLE rec (file TEXT, offset INTEGER, length INTEGER, type TEXT, uri TEXT, date TEXT, rid TEXT,
                  digest TEXT, status TEXT, damaged INTEGER, key TEXT);
CREATE TABLE rev (file TEXT, offset INTEGER, uri TEXT, rid TEXT, refers_to TEXT, rt_uri TEXT, rt_date TEXT,
                  digest TEXT, date TEXT);
CREATE TABLE cdx (file TEXT, offset INTEGER, length INTEGER, url TEXT, ts TEXT, digest TEXT, src TEXT,
                  line INTEGER);
"""
_INDEXES = """
CREATE INDEX rec_pos ON rec (file, offset);
CREATE INDEX rec_rid ON rec (rid);
CREATE INDEX rec_uri ON rec (uri, date);
CREATE INDEX rec_key ON rec (key);
CREATE INDEX cdx_pos ON cdx (file, offset);
CREATE INDEX cdx_url ON cdx (url, ts);
"""


class Verifier(ArchiveCheck):
    def __init__(
        self,
        collection: Collection,
        mode: str = "full",
        adopt: bool = False,
        progress: Callable[[dict], None] | None = None,
        strict: bool = False,
    ):
        super().__init__(collection, mode, adopt, progress, strict)
        self._damage: dict[str, list[tuple[int, int, Problem]]] = {}  # file -> (start, end, problem)
        # (file, kind) -> (the reported deviation, how many records, the first one's detail)
        self._deviations: dict[tuple[str, str], tuple[Problem, int, str]] = {}

    def _read(self, present: dict[str, int], recorded: dict[str, str]) -> None:
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
            if item.note:
                self._deviation(name, "no-record-separator", item.offset, item.uri, item.note)
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
                        item.date,
                    )
                )
        self.report.records += len(items)
        self._flush(recs, revs)

    def _flush(self, recs: list, revs: list) -> None:
        self.db.executemany("INSERT INTO rec VALUES (?,?,?,?,?,?,?,?,?,?,?)", recs)
        self.db.executemany("INSERT INTO rev VALUES (?,?,?,?,?,?,?,?,?)", revs)
        self.report.revisits += len(revs)
        recs.clear()
        revs.clear()

    def _deviation(self, name: str, kind: str, offset: int, url: str, detail: str) -> None:
        """One deviation per file and kind: the first, with the number of records like it."""
        key = (name, kind)
        seen = self._deviations.get(key)
        if seen is None:
            problem = Problem(kind, _payload(name), offset, url or None, detail)
            self._deviations[key] = (problem, 1, detail)
            self.report.deviations.append(problem)
            return
        problem, count, first = seen
        self._deviations[key] = (problem, count + 1, first)
        problem.detail = f"{count + 1} records, the first at this offset: {first}"

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
                "INSERT INTO rec VALUES (?,?,?,?,?,?,?,?,?,?,?)",
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
                    _key(damage.uri) if damage.rec_type in _ORIGINAL_TYPES else "",
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
            for file, offset, uri, rid, refers_to, rt_uri, rt_date, digest, date in self.db.execute(
                "SELECT * FROM rev ORDER BY file, offset"
            ):
                revisit = Revisit(
                    uri, digits14(date), digest or None, rt_uri or None, rt_date or None, refers_to or None
                )
                self._check_revisit(harvest_db, file, offset, rid, revisit)
        finally:
            if harvest_db is not None:
                harvest_db.close()

    def _candidates(self, target: str) -> list[Candidate]:
        """The records of the target's SURT key that can hold a payload, in the CDXJ's order."""
        rows = self.db.execute(
            f"SELECT file, offset, length, uri, date, digest, rid, damaged FROM rec WHERE key = ? AND type IN "
            f"{_ORIGINAL_SQL} ORDER BY date, uri, file, offset",
            (_key(target),),
        ).fetchall()
        return [
            Candidate(uri, digits14(date), digest, file, offset, length, record_id=rid, source=bool(damaged))
            for file, offset, length, uri, date, digest, rid, damaged in rows
        ]

    def _check_revisit(self, harvest_db, file: str, offset: int, rid: str, revisit: Revisit) -> None:
        """The revisit's original as ``index.revisits`` finds it (as replay does) must be intact."""
        if revisit.empty:
            return  # pywb serves an empty payload's revisit without an original
        dependent = {"file": _payload(file), "offset": offset, "url": revisit.url}
        original = original_of(revisit, self._candidates(revisit.target))
        if original is not None:
            if not original.source:  # intact
                return
            cause = self._damage_at(original.filename, original.offset)
            if cause is not None:
                cause.dependents.append(dependent)
                return
        if revisit.refers_to:
            named = self.db.execute(
                f"SELECT file, offset, digest FROM rec WHERE rid = ? AND type IN {_ORIGINAL_SQL} AND damaged = 0 "
                "LIMIT 1",
                (revisit.refers_to,),
            ).fetchone()
            if named is not None and revisit.digest and named[2] != revisit.digest:
                self._problem(
                    Problem(
                        "revisit-digest-mismatch",
                        _payload(file),
                        offset,
                        revisit.url,
                        (
                            f"its original ({_payload(named[0])} at {named[1]}) has payload digest {named[2]}, "
                            f"the revisit says {revisit.digest}"
                        ),
                    )
                )
                return
        for ofile, ooffset in self._where_original_was(
            harvest_db, revisit.refers_to or "", revisit.target, revisit.refers_to_date or ""
        ):
            cause = self._missing.get(ofile) or self._damage_at(ofile, ooffset)
            if cause is not None:
                cause.dependents.append(dependent)
                return
        self._problem(
            Problem(
                "revisit-original-missing",
                _payload(file),
                offset,
                revisit.url,
                (
                    f"no intact capture of {revisit.target} (any scheme) of {revisit.refers_to_date or '?'} with "
                    f"payload digest {revisit.digest or '?'} ({revisit.refers_to or 'no WARC-Refers-To'}) is in the "
                    "collection"
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


def _key(uri: str) -> str:
    """The URI's SURT key, as the CDXJ (and so a revisit's lookup) has it; "" when it has none."""
    try:
        return surt_key(uri) if uri else ""
    except Exception:  # noqa: BLE001 (a URI the canonicalizer refuses is no key anything looks up)
        return ""


def _rec_row(name: str, r: Record) -> tuple:
    digest = bare_digest(r.indexed_digest) if r.indexed_digest else ""  # as the CDXJ has it
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
        _key(r.uri) if r.rec_type in _ORIGINAL_TYPES else "",
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
    collection: Collection,
    mode: str = "full",
    adopt: bool = False,
    progress: Callable[[dict], None] | None = None,
    strict: bool = False,
) -> VerifyReport:
    return Verifier(collection, mode, adopt, progress, strict).run()
