"""Taking WARC and ARC files written by other tools into a collection (``strata import``).

Each file is checked whole before anything of it enters the collection, by the record scanner
``strata verify`` and replay use (``index.capture.filefacts``, over ``index.integrity.recordscan``'s
whole prefix): every record read back whole, its block and payload digests checked, one record per
gzip member; what every reader tolerates (a record not followed by CRLF CRLF) is accepted, as
``verify`` notes it; and, where its CDXJ lines cannot be built from the records, pywb's own indexer
must read it. An ARC file is checked by warcio's reader behind the same view
(``index.integrity.arcscan``) and pywb's indexer. A file that fails is refused with the file, the
byte offset and the reason; the other files are still imported.

A file that passes is copied, never modified: to a temporary name in ``archive/``, synced, its
SHA-256 checked against the bytes that were checked. Its name is kept unless a different file
already has it; then it gets ``<stem>-<first 12 hex digits of its SHA-256><suffix>``, the same name
at every import of the same bytes. A file whose bytes are already in the collection is skipped.

Then the collection's CDXJ index and harvest state are derived again from all its files, the copies
included under their final names (``index.capture.rebuild.rebuild_state``), so that an import gives exactly
the state ``strata index rebuild`` gives over the same files. Only when that has succeeded are the
copies linked under their names and added to the fixity manifest, and the new index and state
swapped in: a file is fully imported (copied, indexed, in the manifest) or not at all, and a file
the derivation cannot take is refused with the reason, leaving the collection as it was. The step
from linking to swapping is written ahead in ``strata/import.journal``; an import killed during it is
finished by the next import, rebuild or harvest of the collection (``finish_interrupted``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from index.capture import filefacts, rebuild
from index.collection import Collection
from index.fulltext.update import index_run
from index.integrity import recordscan
from strata.errors import ArchiveError

ProgressFn = Callable[[dict], None]
_CHUNK = 1 << 20
_SUFFIXES = (".warc.gz", ".arc.gz", ".warc", ".arc")
TEMP_PREFIX = rebuild.IMPORT_TEMP_PREFIX  # in archive/: a copy being made


@dataclasses.dataclass
class Imported:
    source: str
    name: str  # its name in archive/
    records: int
    size: int
    sha256: str
    format: str  # "warc" or "arc"
    versions: list[str]
    renamed_because: str | None = None
    notes: list[str] = dataclasses.field(default_factory=list)  # deviations every reader tolerates

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Skipped:
    source: str
    same_as: str  # the file in archive/ holding the same bytes

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Refused:
    source: str
    offset: int | None  # None: the file could not be read as a file at all
    reason: str

    def __str__(self) -> str:
        where = f"damaged at byte {self.offset}: " if self.offset is not None else ""
        return f"{self.source}: {where}{self.reason}"

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class ImportReport:
    collection: str
    imported: list[Imported] = dataclasses.field(default_factory=list)
    skipped: list[Skipped] = dataclasses.field(default_factory=list)
    refused: list[Refused] = dataclasses.field(default_factory=list)
    state: dict | None = None  # rebuild_state's figures (None when nothing was imported)
    fulltext: dict | None = None

    @property
    def damage(self) -> list[dict]:
        """Damage the rebuild found in files that were already in the collection."""
        return (self.state or {}).get("damage", [])

    def as_dict(self) -> dict:
        return {
            "collection": self.collection,
            "imported": [i.as_dict() for i in self.imported],
            "skipped": [s.as_dict() for s in self.skipped],
            "refused": [r.as_dict() for r in self.refused],
            "state": self.state,
            "fulltext": self.fulltext,
        }


@dataclasses.dataclass
class Checked:
    """What the check of one file found: enough to copy it and say what it was."""

    path: Path
    size: int
    sha256: str  # of the bytes that were checked: the copy must have the same
    format: str  # "warc" or "arc"
    gzipped: bool
    records: int
    versions: set[str]
    notes: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Placed:
    item: Checked
    tmp: Path  # the copy, in archive/ under a temporary name
    name: str  # its name in archive/ once imported
    renamed_because: str | None


def check_file(path: Path) -> Checked | Refused:
    """Every record of ``path`` read and checked as ``strata verify`` reads it, and its CDXJ lines
    made as pywb's indexer makes them: what the file is, or why it is refused. Never raises on what
    the file holds."""
    path = Path(path)
    if not path.exists():
        return Refused(str(path), None, "no such file")
    if not path.is_file():
        return Refused(str(path), None, "not a regular file")
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        return Refused(str(path), None, f"cannot be read: {exc.strerror or exc}")
    if not head:
        return Refused(str(path), 0, "the file is empty")
    hasher = hashlib.sha256()
    try:
        read = filefacts.read_file(path, path.name, hasher)  # pywb's indexer too, where the lines need it
    except OSError as exc:
        return Refused(str(path), None, f"cannot be read: {exc.strerror or exc}")
    except Exception as exc:  # noqa: BLE001 (a third-party file pywb cannot index is refused, whatever the reason)
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        return Refused(str(path), None, f"pywb's indexer cannot read it: {_ascii(first)[:160]}")
    if read.damage is not None:
        return Refused(str(path), read.damage.offset, _ascii(read.damage.reason))
    if read.records == 0:
        return Refused(str(path), 0, "no WARC or ARC record in the file")
    file_format = "arc" if read.arc else "warc"
    return Checked(
        path,
        read.size,
        hasher.hexdigest(),
        file_format,
        head[:2] == b"\x1f\x8b",
        read.records,
        read.versions,
        read.notes,
    )


def _ascii(text: str) -> str:
    return text.encode("ascii", "backslashreplace").decode("ascii")


def import_files(
    root: Path, name: str, paths: Iterable[Path], progress: ProgressFn | None = None, fulltext: bool = True
) -> ImportReport:
    """Check ``paths``, copy those that pass into collection ``name`` (created when missing, but
    only if at least one file is imported), then rebuild the collection's CDXJ index and harvest
    state. ``fulltext``: also bring the full-text index up to date."""
    paths = [Path(p) for p in paths]
    report = ImportReport(name)
    checked: list[Checked] = []
    for number, path in enumerate(paths, 1):
        if progress:
            progress({"phase": "check", "file": str(path), "done": number - 1, "files": len(paths)})
        result = check_file(path)
        if isinstance(result, Refused):
            report.refused.append(result)
        else:
            checked.append(result)
    if not checked:
        return report
    collection = Collection(root, name)
    created = not collection.path.exists()
    collection = Collection.open(root, name, create=True)
    try:
        with collection.harvest_lock():
            rebuild.finish_interrupted(collection)
            _import_checked(collection, checked, report, progress)
            if report.imported and fulltext:
                report.fulltext = index_run(collection)
    finally:
        if created and not report.imported and not report.skipped:
            shutil.rmtree(collection.path, ignore_errors=True)  # nothing came of it: as if never asked
    return report


def _import_checked(collection: Collection, checked: list[Checked], report: ImportReport, progress) -> None:
    archive = collection.archive_dir
    archive.mkdir(parents=True, exist_ok=True)
    for leftover in archive.glob(TEMP_PREFIX + "*.tmp"):  # a killed import's; the lock is ours
        leftover.unlink(missing_ok=True)
    taken: set[str] = set()
    placed: list[_Placed] = []
    try:
        for number, item in enumerate(checked, 1):
            if progress:
                progress({"phase": "copy", "file": str(item.path), "done": number - 1, "files": len(checked)})
            try:
                outcome = _copy_in(collection, item, taken)
            except ArchiveError as exc:  # this file is not imported; the others still are
                report.refused.append(Refused(str(item.path), None, exc.message))
                continue
            if isinstance(outcome, Skipped):
                report.skipped.append(outcome)
            else:
                placed.append(outcome)
        if not placed:
            return
        try:
            report.state = rebuild.rebuild_state(
                collection,
                progress=_state_progress(progress),
                extra={p.name: p.tmp for p in placed},
                before_swap=lambda: _link(collection, placed),
            )
        except Exception as exc:  # noqa: BLE001 (nothing was linked or swapped: refuse them, say why)
            if (collection.state_dir / rebuild.JOURNAL).exists():
                raise  # the files were linked: the journal finishes the import (never half of it)
            reason = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
            for p in placed:
                report.refused.append(
                    Refused(str(p.item.path), None, f"could not be indexed with the collection: {_ascii(reason)[:160]}")
                )
            return
        (collection.state_dir / rebuild.JOURNAL).unlink(missing_ok=True)
        for p in placed:
            item = p.item
            report.imported.append(
                Imported(
                    str(item.path),
                    p.name,
                    item.records,
                    item.size,
                    item.sha256,
                    item.format,
                    sorted(item.versions),
                    p.renamed_because,
                    item.notes,
                )
            )
    finally:
        for p in placed:
            p.tmp.unlink(missing_ok=True)


def _state_progress(progress: ProgressFn | None) -> ProgressFn | None:
    if progress is None:
        return None
    return lambda p: progress({"phase": "state", "file": "", "done": p["files_done"] - 1, "files": p["files"]})


def _copy_in(collection: Collection, item: Checked, taken: set[str]) -> _Placed | Skipped:
    """Copy one checked file into archive/ under a temporary name (see the module's docstring)."""
    archive = collection.archive_dir
    digest = item.sha256
    for existing in os.scandir(archive):
        if (
            existing.is_file()
            and recordscan.is_archive_name(existing.name)
            and existing.stat().st_size == item.size
            and sha256_of(Path(existing.path)) == digest
        ):
            return Skipped(str(item.path), existing.name)
    wanted = archive_name(item.path.name, item.format, item.gzipped)
    target, why = wanted, None
    if wanted != item.path.name:
        why = f"{item.path.name!r} does not end in .warc, .warc.gz, .arc or .arc.gz"
    if (archive / target).exists() or target in taken or (archive / (target + ".open")).exists():
        why = f"{wanted!r} is taken by another file"
        target = clash_name(wanted, digest, lambda n: (archive / n).exists() or n in taken)
    taken.add(target)
    tmp = archive / f"{TEMP_PREFIX}{digest[:16]}-{os.getpid()}.tmp"
    try:
        copied = _copy(item.path, tmp)
        if copied != digest:
            raise ArchiveError(
                f"{item.path} changed while it was imported (its SHA-256 is not the one checked); it was not imported"
            )
        if sha256_of(tmp) != digest:
            raise ArchiveError(
                f"the copy of {item.path} in {archive} does not have the source's bytes; it was not imported"
            )
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ArchiveError(f"could not copy {item.path} into {archive}: {exc.strerror or exc}") from None
    except ArchiveError:
        tmp.unlink(missing_ok=True)
        raise
    return _Placed(item, tmp, target, why)


def _link(collection: Collection, placed: list[_Placed]) -> None:
    """The copies under their names and in the fixity manifest (the rebuild's ``before_swap``): the
    journal first, so that a kill from here on is finished, never half done."""
    entries = [{"tmp": p.tmp.name, "name": p.name, "sha256": p.item.sha256, "size": p.item.size} for p in placed]
    rebuild.write_journal(collection, entries)
    rebuild.apply_journal(collection, entries)


def archive_name(name: str, file_format: str, gzipped: bool) -> str:
    """The file's own name when it ends like an archive file; else with the suffix its content says."""
    name = name.lstrip(".") or "imported"
    if name.endswith(".open"):  # a file another harvester had not closed yet: it parsed whole
        name = name[: -len(".open")] or "imported"
    if recordscan.is_archive_name(name):
        return name
    return name + (".arc" if file_format == "arc" else ".warc") + (".gz" if gzipped else "")


def clash_name(name: str, sha256: str, exists: Callable[[str], bool]) -> str:
    """``<stem>-<12 hex digits of the file's SHA-256><suffix>``; ``-2``, ``-3`` ... in the (never
    seen) case that this is taken too."""
    suffix = next(s for s in _SUFFIXES if name.endswith(s))
    stem = name[: -len(suffix)]
    candidate = f"{stem}-{sha256[:12]}{suffix}"
    serial = 2
    while exists(candidate):
        candidate = f"{stem}-{sha256[:12]}-{serial}{suffix}"
        serial += 1
    return candidate


def sha256_of(path: Path) -> str:
    hasher = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()


def _copy(source: Path, target: Path) -> str:
    """Copy, fsync; the SHA-256 of what was read from the source."""
    hasher = hashlib.sha256()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)  # readable like the WARCs (umask)
    with open(source, "rb") as src, os.fdopen(fd, "wb") as out:
        while chunk := src.read(_CHUNK):
            hasher.update(chunk)
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    return hasher.hexdigest()


__all__ = [
    "Checked",
    "ImportReport",
    "Imported",
    "Refused",
    "Skipped",
    "archive_name",
    "check_file",
    "clash_name",
    "import_files",
    "sha256_of",
]
