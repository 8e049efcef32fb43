"""A collection on disk, in pywb's layout, plus Strata's derived state beside it.

<root>/<name>/archive/               WARC files (the single source of truth)
<root>/<name>/indexes/index.cdxj     sorted CDXJ (pywb's format)
<root>/<name>/jobs/<job>.toml        job files
<root>/<name>/fixity/                SHA-256 manifest of archive/, sizes, fixity events (index.integrity.fixity)
<root>/<name>/strata/harvest.sqlite  harvest state and digest index (derived)
<root>/<name>/strata/fulltext/       Whoosh index (derived)
"""

from __future__ import annotations

import fcntl
import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from strata.errors import CollectionBusy, CollectionError

_HELD = threading.local()  # state directories whose harvest lock this thread holds
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# Path segments the web application uses at its root; a collection cannot take these names.
RESERVED_NAMES = frozenset(
    {"static", "search", "api", "staff", "login", "logout", "_", "collections", "favicon.ico", "web", "id"}
)


def default_root() -> Path:
    return Path(os.environ.get("STRATA_ROOT") or "collections")


def root_state_dir(root: Path) -> Path:
    """Strata's per-root state (queue, staff accounts): not a collection (names cannot start with '.')."""
    return Path(root) / ".strata"


def check_name(name: str) -> str:
    if not NAME_RE.match(name or "") or name.endswith(".") or name.lower() in RESERVED_NAMES:
        raise CollectionError(
            f"{name!r} is not a usable collection name: use letters, digits, '_', '-' and '.', "
            f"at most 64 characters, not one of {', '.join(sorted(RESERVED_NAMES))}"
        )
    return name


class Collection:
    def __init__(self, root: Path, name: str):
        self.root = Path(root)
        self.name = check_name(name)
        self.path = self.root / name

    @classmethod
    def open(cls, root: Path, name: str, create: bool = False) -> Collection:
        coll = cls(root, name)
        if not coll.path.is_dir():
            if not create:
                known = ", ".join(list_collections(root)) or "none yet"
                raise CollectionError(
                    f"no collection {name!r} under {root}; known collections: {known}. "
                    f"Create it with: strata harvest {name} --seed URL"
                )
            coll.create()
        return coll

    def create(self) -> None:
        for sub in (self.archive_dir, self.indexes_dir, self.jobs_dir, self.state_dir):
            sub.mkdir(parents=True, exist_ok=True)

    @property
    def archive_dir(self) -> Path:
        return self.path / "archive"

    @property
    def indexes_dir(self) -> Path:
        return self.path / "indexes"

    @property
    def cdxj_path(self) -> Path:
        return self.indexes_dir / "index.cdxj"

    @property
    def fixity_dir(self) -> Path:
        return self.path / "fixity"

    @property
    def jobs_dir(self) -> Path:
        return self.path / "jobs"

    @property
    def state_dir(self) -> Path:
        return self.path / "strata"

    @property
    def db_path(self) -> Path:
        return self.state_dir / "harvest.sqlite"

    @property
    def fulltext_dir(self) -> Path:
        return self.state_dir / "fulltext"

    def job_path(self, job: str) -> Path:
        if not NAME_RE.match(job or ""):
            raise CollectionError(f"{job!r} is not a usable job name: use letters, digits, '_', '-' and '.'")
        return self.jobs_dir / f"{job}.toml"

    def warc_files(self, include_open: bool = False) -> list[str]:
        """WARC (and ARC) file names (relative to archive/), sorted by name (which sorts by time for
        Strata's own files)."""
        if not self.archive_dir.is_dir():
            return []
        names = []
        for entry in os.scandir(self.archive_dir):
            if entry.name.endswith((".warc.gz", ".warc", ".arc.gz", ".arc")) or (
                include_open and entry.name.endswith(".open")
            ):
                names.append(entry.name)
        return sorted(names)

    @contextmanager
    def harvest_lock(self) -> Iterator[None]:
        """Held for the whole of a harvest (and of recovery): one writer per collection. A thread
        that holds it may take it again (an import holds it and then rebuilds the state)."""
        key = str(self.state_dir.resolve())
        held = getattr(_HELD, "paths", None)
        if held is None:
            held = _HELD.paths = set()
        if key in held:
            yield
            return
        self.state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.state_dir / "harvest.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise CollectionBusy(
                    f"collection {self.name!r} is being harvested by another process; wait for it to finish"
                ) from None
            held.add(key)
            try:
                yield
            finally:
                held.discard(key)
        finally:
            os.close(fd)

    def is_locked(self) -> bool:
        try:
            with self.harvest_lock():
                return False
        except CollectionBusy:
            return True


def list_collections(root: Path) -> list[str]:
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and NAME_RE.match(p.name) and (p / "archive").is_dir())


def list_job_collections(root: Path) -> list[str]:
    """Collections that hold job files, whether or not anything was harvested into them yet (a
    collection set up by hand as ``<root>/<name>/jobs/<job>.toml`` has no ``archive/`` yet)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and NAME_RE.match(p.name) and (p / "jobs").is_dir())


def list_known_collections(root: Path) -> list[str]:
    """Collections harvested into, and collections with jobs only: what the staff console lists."""
    return sorted(set(list_collections(root)) | set(list_job_collections(root)))
