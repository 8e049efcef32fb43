"""A sealed WARC file joins the collection's indexes: its CDXJ lines are merged into the collection
index, then its digest entries become usable (never before: a revisit must not point at a record
that a crash could still take away)."""

from __future__ import annotations

import fcntl

from index.cdx import cdxj
from index.collection import Collection
from index.state import HarvestState


def index_sealed_file(
    collection: Collection, state: HarvestState, filename: str, lines: list[bytes] | None = None
) -> None:
    """Merge a sealed file's CDXJ lines (made as it was written, else read from it) into the
    collection index; then its digests become usable."""
    if lines is None:
        lines = cdxj.index_warc(collection.archive_dir / filename, filename)
    # Several workers of one run may seal files at once: one merge of the index file at a time.
    collection.state_dir.mkdir(parents=True, exist_ok=True)
    with open(collection.state_dir / "index-merge.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cdxj.merge_lines(collection.cdxj_path, lines)
    state.cdx_indexed(lines)  # and in Redis, when the root uses it: before its digests are usable
    state.warc_state(filename, "indexed")
