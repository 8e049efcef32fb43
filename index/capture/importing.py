"""Taking WARC and ARC files written by other tools into a collection (``strata import``).

Each file is checked whole before anything of it enters the collection: every record parsed and
checked by ``index.integrity.warcscan`` (lengths, block digests, gzip members), then read by pywb's own
indexer, which replay will use. A file that fails is refused with the file, the byte offset and
the reason; the other files are still imported. A file that passes is copied, never modified: to a
temporary name in ``archive/``, synced, and linked under its final name (a link never replaces a
file) only once both the bytes read for the copy and the copy itself have the SHA-256 of the bytes
that were checked. Its name is kept unless a
different file already has it; then it gets ``<stem>-<first 12 hex digits of its SHA-256><suffix>``,
the same name at every import of the same bytes. A file whose bytes are already in the collection
is skipped.

Then the collection's CDXJ index and harvest state are derived again from all its files
(``index.capture.rebuild.rebuild_state``), under the harvest lock held since the copy, so that an import
gives exactly the state ``strata index rebuild`` gives over the same files: runs from each file's
``warcinfo`` (one run per file without one), capture kinds from the captures themselves.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from index.capture.rebuild import rebuild_state
from index.cdx import cdxj
from index.collection import Collection
from index.fulltext.update import index_run
from index.integrity import warcscan
from index.integrity.fixity import Fixity
from index.integrity.warcscan import Scan
from strata.errors import ArchiveError

ProgressFn = Callable[[dict], None]
_CHUNK = 1 << 20
_SUFFIXES = (".warc.gz", ".arc.gz", ".warc", ".arc")


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
class _Checked:
    path: Path
    scan: Scan
    sha256: str  # of the bytes that were checked: the copy must have the same


def check_file(path: Path) -> Scan | Refused:
    """Every record of ``path`` parsed and checked, then indexed by pywb's indexer: the file's
    ``Scan``, or why it is refused."""
    path = Path(path)
    if not path.exists():
        return Refused(str(path), None, "no such file")
    if not path.is_file():
        return Refused(str(path), None, "not a regular file")
    scan = warcscan.scan_file(path, path.name)
    if scan.damage is not None:
        return Refused(str(path), scan.damage.offset, scan.damage.reason)
    try:
        cdxj.index_warc(path, path.name)
    except Exception as exc:  # noqa: BLE001 (a third-party file pywb cannot index is refused, whatever the reason)
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        return Refused(str(path), None, f"pywb's indexer cannot read it: {first[:160]}")
    return scan


def import_files(
    root: Path, name: str, paths: Iterable[Path], progress: ProgressFn | None = None, fulltext: bool = True
) -> ImportReport:
    """Check ``paths``, copy those that pass into collection ``name`` (created when missing, but
    only if at least one file passes), then rebuild the collection's CDXJ index and harvest state.
    ``fulltext``: also bring the full-text index up to date."""
    paths = [Path(p) for p in paths]
    report = ImportReport(name)
    checked: list[_Checked] = []
    for number, path in enumerate(paths, 1):
        if progress:
            progress({"phase": "check", "file": str(path), "done": number - 1, "files": len(paths)})
        result = check_file(path)
        if isinstance(result, Refused):
            report.refused.append(result)
        else:
            checked.append(_Checked(path, result, sha256_of(path)))
    if not checked:
        return report
    collection = Collection.open(root, name, create=True)
    with collection.harvest_lock():
        for leftover in collection.archive_dir.glob(".import-*.tmp"):  # a killed import's; the lock is ours
            leftover.unlink(missing_ok=True)
        taken: set[str] = set()
        for number, item in enumerate(checked, 1):
            if progress:
                progress({"phase": "copy", "file": str(item.path), "done": number - 1, "files": len(checked)})
            try:
                outcome = _place(collection, item, taken)
            except ArchiveError as exc:  # this file is not imported; the others still are
                report.refused.append(Refused(str(item.path), None, exc.message))
                continue
            if isinstance(outcome, Skipped):
                report.skipped.append(outcome)
            else:
                report.imported.append(outcome)
        if report.imported:
            report.state = rebuild_state(collection, progress=_state_progress(progress))
            if fulltext:
                report.fulltext = index_run(collection)
    return report


def _state_progress(progress: ProgressFn | None) -> ProgressFn | None:
    if progress is None:
        return None
    return lambda p: progress({"phase": "state", "file": "", "done": p["files_done"] - 1, "files": p["files"]})


def _place(collection: Collection, item: _Checked, taken: set[str]) -> Imported | Skipped:
    """Copy one checked file into archive/ (see the module's docstring)."""
    archive = collection.archive_dir
    archive.mkdir(parents=True, exist_ok=True)
    size = item.scan.size
    digest = item.sha256
    for existing in os.scandir(archive):
        if (
            existing.is_file()
            and warcscan.is_archive_name(existing.name)
            and existing.stat().st_size == size
            and sha256_of(Path(existing.path)) == digest
        ):
            return Skipped(str(item.path), existing.name)
    wanted = archive_name(item.path.name, item.scan)
    target, why = wanted, None
    if wanted != item.path.name:
        why = f"{item.path.name!r} does not end in .warc, .warc.gz, .arc or .arc.gz"
    if (archive / target).exists() or target in taken or (archive / (target + ".open")).exists():
        why = f"{wanted!r} is taken by another file"
        target = clash_name(wanted, digest, lambda n: (archive / n).exists() or n in taken)
    taken.add(target)
    tmp = archive / f".import-{digest[:16]}-{os.getpid()}.tmp"
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
        os.link(tmp, archive / target)  # never replaces a file
        _fsync_dir(archive)
        # into the fixity manifest with the digest checked before the copy (the copy's own, verified above)
        Fixity(collection.fixity_dir).add(target, size, digest, "import")
    except OSError as exc:
        raise ArchiveError(f"could not copy {item.path} into {archive}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return Imported(
        str(item.path), target, item.scan.records, size, digest, item.scan.format, sorted(item.scan.versions), why
    )


def archive_name(name: str, scan: Scan) -> str:
    """The file's own name when it ends like an archive file; else with the suffix its content says."""
    name = name.lstrip(".") or "imported"
    if name.endswith(".open"):  # a file another harvester had not closed yet: it parsed whole
        name = name[: -len(".open")] or "imported"
    if warcscan.is_archive_name(name):
        return name
    return name + (".arc" if scan.format == "arc" else ".warc") + (".gz" if scan.gzipped else "")


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


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = [
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
