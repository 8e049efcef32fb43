"""Crash recovery: bring a collection back to a consistent state after a harvest died.

Run under the collection's harvest lock, before every harvest (and by ``strata recover``):

1. every ``*.warc.gz.open`` file is truncated to the end of its last complete record (each gzip
   member decompressed and its block digest checked), sealed and renamed;
2. capture and digest rows pointing past the cut are deleted, and URLs whose payload was held there
   lose their validators (the next run fetches them in full: the safe, bigger write);
3. every sealed file not yet in the CDXJ index is indexed, which makes its digest entries usable;
   a file this step or step 1 seals that is not in the fixity manifest is hashed and added to it
   (a kill between a file's rename and its manifest line leaves exactly that);
4. runs left ``running`` by a dead process are marked ``interrupted`` with figures from their captures.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
import zlib
from pathlib import Path

from harvester.warcfile import OPEN_SUFFIX, seal_file
from index.collection import Collection
from index.fixity import Fixity
from index.state import HarvestState


@dataclasses.dataclass
class RecoveryReport:
    repaired: list[tuple[str, int, int]] = dataclasses.field(default_factory=list)  # (file, old size, new size)
    indexed: list[str] = dataclasses.field(default_factory=list)
    interrupted_runs: list[str] = dataclasses.field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.repaired or self.indexed or self.interrupted_runs)


def complete_prefix(path: Path) -> int:
    """Byte length of the longest prefix of ``path`` made of whole, verified WARC records (one gzip
    member each). A member that does not inflate, or whose block digest does not match, ends it.
    Streams the file; only one record is held in memory at a time."""
    good_end = 0
    with open(path, "rb") as fh:
        pending = fh.read(1 << 20)
        while pending:
            decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
            record = bytearray()
            consumed = 0
            data = pending
            while True:
                try:
                    record += decoder.decompress(data)
                except zlib.error:
                    return good_end
                if decoder.eof:
                    consumed += len(data) - len(decoder.unused_data)
                    pending = decoder.unused_data or fh.read(1 << 20)
                    break
                consumed += len(data)
                data = fh.read(1 << 20)
                if not data:
                    return good_end
            if not _record_verifies(bytes(record)):
                return good_end
            good_end += consumed
    return good_end


def _record_verifies(record: bytes) -> bool:
    head, sep, rest = record.partition(b"\r\n\r\n")
    if not sep or not head.startswith(b"WARC/"):
        return False
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    try:
        length = int(headers.get(b"content-length", b"-1"))
    except ValueError:
        return False
    if length < 0 or len(rest) < length + 4 or rest[length:length + 4] != b"\r\n\r\n":
        return False
    block_digest = headers.get(b"warc-block-digest")
    if block_digest and block_digest.lower().startswith(b"sha1:"):
        actual = base64.b32encode(hashlib.sha1(rest[:length]).digest())
        if actual != block_digest[5:].upper():
            return False
    return True


def recover(collection: Collection, state: HarvestState) -> RecoveryReport:
    report = RecoveryReport()
    archive = collection.archive_dir
    fixity = Fixity(collection.fixity_dir)
    for name in sorted(os.listdir(archive)) if archive.is_dir() else []:
        if not name.endswith(OPEN_SUFFIX):
            continue
        sealed_name = name[: -len(OPEN_SUFFIX)]
        path = archive / name
        old_size = path.stat().st_size
        good = complete_prefix(path)
        if good < old_size:
            with open(path, "r+b") as fh:
                fh.truncate(good)
                fh.flush()
                os.fsync(fh.fileno())
        if good == 0:
            path.unlink()
            _forget_records(state, sealed_name, 0)
            state.conn.execute("DELETE FROM warcs WHERE filename=?", (sealed_name,))
            report.repaired.append((sealed_name, old_size, 0))
            continue
        _forget_records(state, sealed_name, good)
        seal_file(archive, sealed_name)
        fixity.adopt(archive, sealed_name, agent="recovery")
        if state.conn.execute("SELECT 1 FROM warcs WHERE filename=?", (sealed_name,)).fetchone() is None:
            state.conn.execute("INSERT INTO warcs VALUES (?,?,?,?)", (sealed_name, None, "sealed", good))
        state.warc_state(sealed_name, "sealed", good)
        report.repaired.append((sealed_name, old_size, good))

    # Rows for files that no longer exist at all.
    for row in state.warcs():
        if not (archive / row["filename"]).exists() and not (archive / (row["filename"] + OPEN_SUFFIX)).exists():
            _forget_records(state, row["filename"], 0)
            state.conn.execute("DELETE FROM warcs WHERE filename=?", (row["filename"],))

    from harvester.run import index_sealed_file

    known = {row["filename"]: row["state"] for row in state.warcs()}
    in_manifest = fixity.digests()
    for name in collection.warc_files():
        if known.get(name) in ("open", "sealed") and name not in in_manifest:
            fixity.adopt(archive, name, agent="recovery")
        if known.get(name) != "indexed":
            if name not in known:
                state.conn.execute("INSERT INTO warcs VALUES (?,?,?,?)", (name, None, "sealed",
                                                                          (archive / name).stat().st_size))
            index_sealed_file(collection, state, name)
            report.indexed.append(name)

    for run in state.runs(statuses=("running",)):
        figures = run["figures"] or {}
        for cls, count in state.conn.execute(
            "SELECT class, COUNT(*) FROM captures WHERE run_id=? GROUP BY class", (run["run_id"],)
        ):
            figures[cls if cls != "error" else "errors"] = count
        files = [r["filename"] for r in state.warcs() if r["run_id"] == run["run_id"]]
        figures["warc_files"] = files
        last = state.conn.execute("SELECT MAX(timestamp) FROM captures WHERE run_id=?", (run["run_id"],)).fetchone()[0]
        state.update_run(run["run_id"], status="interrupted", figures=figures,
                         snapshot=last or run["started"].replace("-", "").replace(":", "").replace("T", "")[:14])
        report.interrupted_runs.append(run["run_id"])
    return report


def _forget_records(state: HarvestState, filename: str, good_end: int) -> None:
    """Delete capture and digest rows for records at or past ``good_end`` of ``filename``."""
    lost = [
        row["record_id"]
        for row in state.conn.execute("SELECT record_id FROM captures WHERE warc=? AND offset>=?", (filename, good_end))
    ]
    with state.transaction():
        state.conn.execute("DELETE FROM captures WHERE warc=? AND offset>=?", (filename, good_end))
        state.conn.execute("DELETE FROM digests WHERE warc=? AND record_id NOT IN "
                           "(SELECT record_id FROM captures WHERE warc=?)", (filename, filename))
        for record_id in lost:
            state.conn.execute(
                "UPDATE urls SET digest=NULL, orig_uri=NULL, orig_date=NULL, orig_record_id=NULL, orig_warc=NULL, "
                "etag=NULL, last_modified=NULL WHERE orig_record_id=?", (record_id,))
        # Revisits elsewhere that refer to a lost original would not resolve; none can exist, because
        # digests become usable only once their file is indexed, and 304s only point at sealed originals.
