"""Fixity of a collection's WARC files: a BagIt manifest, recorded sizes, and a log of every check.

    <collection>/fixity/manifest-sha256.txt   one ``<sha256 hex>  archive/<file>`` line per sealed file
                                               (BagIt's payload manifest: ``sha256sum -c`` run from the
                                               collection directory checks it as it is)
    <collection>/fixity/sizes.tsv              ``<bytes>\\tarchive/<file>``, what ``--quick`` compares
    <collection>/fixity/events.jsonl           one JSON object per event, appended, never rewritten:
                                               ``time``, ``type`` (``ingest``, ``fixity-check``,
                                               ``verification``), ``file``, ``algorithm``, ``outcome``

A line is added when a file is sealed (its digest computed over the bytes as they were written,
``HashingFile``), when recovery seals a torn file, and when ``strata verify --adopt`` takes in a file
written before the manifest existed. Each addition is one ``write(2)`` of whole lines to a file
opened with ``O_APPEND``, under an exclusive ``flock`` and followed by ``fsync``: readers see a line
entirely or not at all, and two writers never interleave. The sizes line is written first, so a
manifest line never lacks its size. Nothing here imports the harvester.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

ALGORITHM = "sha256"
MANIFEST_NAME = "manifest-sha256.txt"
SIZES_NAME = "sizes.tsv"
EVENTS_NAME = "events.jsonl"
PAYLOAD_DIR = "archive"
READ_SIZE = 1 << 22


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def sha256_file(path: Path) -> tuple[str, int]:
    """(hex digest, size) of a file, streamed."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb", buffering=0) as fh:
        buf = bytearray(READ_SIZE)
        view = memoryview(buf)
        while n := fh.readinto(buf):
            digest.update(view[:n])
            size += n
    return digest.hexdigest(), size


class HashingFile:
    """A binary file that hashes what is written through it: the digest of a WARC at no extra read.
    Only what the WARC roller uses of a file is offered. The position is counted here, not asked of
    the file: a buffered file's ``tell()`` is an ``lseek`` system call, two or three a record."""

    def __init__(self, fh):
        self._fh = fh
        self.sha256 = hashlib.sha256()
        self._position = fh.tell()

    def write(self, data) -> int:
        self.sha256.update(data)
        written = self._fh.write(data)
        self._position += written
        return written

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        self._fh.flush()

    def fileno(self) -> int:
        return self._fh.fileno()

    def close(self) -> None:
        self._fh.close()

    def hexdigest(self) -> str:
        return self.sha256.hexdigest()


@dataclasses.dataclass(frozen=True)
class ManifestEntry:
    line_no: int
    name: str | None  # the file's name in archive/, None for a line that does not parse
    sha256: str | None
    text: str  # the line as written (for a malformed line's report)


def _payload_path(name: str) -> str:
    return f"{PAYLOAD_DIR}/{name}"


def parse_manifest_line(line: str, line_no: int) -> ManifestEntry:
    text = line.rstrip("\n")
    digest, sep, path = text.partition("  ")
    if sep and path.startswith("*"):  # sha256sum's binary-mode marker is allowed by BagIt readers
        path = path[1:]
    name = path[len(PAYLOAD_DIR) + 1 :] if path.startswith(PAYLOAD_DIR + "/") else ""
    if not sep or len(digest) != 64 or not _is_hex(digest) or not name or "/" in name:
        return ManifestEntry(line_no, None, None, text)
    return ManifestEntry(line_no, name, digest.lower(), text)


def _is_hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


class Fixity:
    """The fixity files of one collection directory (``Collection.fixity_dir``)."""

    def __init__(self, fixity_dir: Path):
        self.dir = Path(fixity_dir)
        self.manifest_path = self.dir / MANIFEST_NAME
        self.sizes_path = self.dir / SIZES_NAME
        self.events_path = self.dir / EVENTS_NAME

    # -- reading -------------------------------------------------------------------------------
    def entries(self) -> Iterator[ManifestEntry]:
        if not self.manifest_path.exists():
            return
        with open(self.manifest_path, encoding="utf-8", errors="replace", newline="\n") as fh:
            for line_no, line in enumerate(fh, 1):
                if line.strip():
                    yield parse_manifest_line(line, line_no)

    def digests(self) -> dict[str, str]:
        """File name -> recorded SHA-256 (one line per WARC file: small)."""
        return {e.name: e.sha256 or "" for e in self.entries() if e.name}

    def sizes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        if not self.sizes_path.exists():
            return out
        with open(self.sizes_path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                size, sep, path = line.rstrip("\n").partition("\t")
                if sep and size.isdigit() and path.startswith(PAYLOAD_DIR + "/"):
                    out[path[len(PAYLOAD_DIR) + 1 :]] = int(size)
        return out

    # -- writing -------------------------------------------------------------------------------
    def add(self, name: str, size: int, sha256: str, agent: str) -> bool:
        """Record a sealed file's digest and size (and log it). False, nothing written, if the
        manifest already lists ``name``."""
        if "/" in name or "\n" in name or not name:
            raise ValueError(f"not a file name in archive/: {name!r}")
        with self._locked():
            if name in self.digests():
                return False
            _append(self.sizes_path, f"{size}\t{_payload_path(name)}\n")
            _append(self.manifest_path, f"{sha256}  {_payload_path(name)}\n")
        self.log(
            [
                {
                    "type": "ingest",
                    "file": _payload_path(name),
                    "algorithm": ALGORITHM,
                    "outcome": "recorded",
                    "digest": sha256,
                    "size": size,
                    "agent": agent,
                }
            ]
        )
        return True

    def adopt(self, archive_dir: Path, name: str, agent: str) -> bool:
        """Hash a file as it is now and record it (recovery, or files from before the manifest)."""
        digest, size = sha256_file(Path(archive_dir) / name)
        return self.add(name, size, digest, agent)

    def log(self, events: list[dict]) -> None:
        """Append events (each gets a ``time`` if it has none) in one write."""
        if not events:
            return
        stamp = now_iso()
        data = "".join(json.dumps({"time": stamp, **e}, ensure_ascii=False, sort_keys=True) + "\n" for e in events)
        self.dir.mkdir(parents=True, exist_ok=True)
        _append(self.events_path, data)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    # -- the log, newest first -----------------------------------------------------------------
    def events_reversed(self) -> Iterator[dict]:
        """Events newest first, read backwards from the end of the log in blocks."""
        if not self.events_path.exists():
            return
        with open(self.events_path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            pos = fh.tell()
            tail = b""
            while pos > 0:
                step = min(1 << 16, pos)
                pos -= step
                fh.seek(pos)
                block = fh.read(step) + tail
                lines = block.split(b"\n")
                tail = lines[0] if pos > 0 else b""
                for line in reversed(lines if pos == 0 else lines[1:]):
                    event = _event(line)
                    if event is not None:
                        yield event

    def last_verification(self) -> dict | None:
        for event in self.events_reversed():
            if event.get("type") == "verification":
                return event
        return None


def _event(line: bytes) -> dict | None:
    if not line.strip():
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _append(path: Path, text: str) -> None:
    data = text.encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        written = os.write(fd, data)
        while written < len(data):  # a regular file takes it in one write; never leave half a line
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)
