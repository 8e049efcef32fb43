"""Crash recovery: bring a collection back to a consistent state after a harvest died.

Run under the collection's harvest lock, before every harvest (and by ``strata recover``):

1. every ``*.warc.gz.open`` file is truncated to the end of its last complete record (each gzip
   member decompressed and its block digest checked), sealed and renamed;
2. capture and digest rows pointing past the cut are deleted, and URLs whose payload was held there
   lose their validators (the next run fetches them in full: the safe, bigger write); records
   before the cut that have no rows (written, then killed before their rows' commit, at most
   ``harvester.run.COMMIT_INTERVAL`` later) get the rows the rebuild would derive for them
   (``index.capture.rebuild.add_missing_captures``);
3. every sealed file not yet in the CDXJ index is indexed, which makes its digest entries usable;
   a file this step or step 1 seals that is not in the fixity manifest is hashed and added to it
   (a kill between a file's rename and its manifest line leaves exactly that);
4. runs left ``running`` by a dead process are marked ``interrupted`` with figures from their captures
   and files (``index.capture.runhistory.interrupted_run``: the rebuild restores such a run the same way),
   unless the run had written its report to its last file: then it ended as the report says.
5. temp files a killed writer left (``indexes/.index.*.tmp`` from a CDXJ merge, the rebuild's
   ``strata/harvest.sqlite.rebuild*`` and ``strata/rebuild.sort/``, an import's ``archive/.import-*.tmp``)
   are removed: their writers run under the same lock, so none is live. An import or a rebuild killed
   half way through is finished before the state is opened, by whoever opens it
   (``index.capture.rebuild.rebuild_if_outdated``).
6. a browser a killed browser-capture run left under the state folder (its owner and its keeper both
   killed: ``harvester.browser.chromium.sweep``) is killed and its folder removed.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
import zlib
from collections.abc import Callable
from pathlib import Path

from harvester.browser.chromium import sweep
from harvester.warcfile import OPEN_SUFFIX, seal_file
from index.capture import rebuild
from index.capture.rebuild import add_missing_captures
from index.capture.runhistory import interrupted_run, report_in, reported_run
from index.capture.seal import index_sealed_file
from index.cdx import cdxj
from index.collection import Collection
from index.integrity.fixity import Fixity
from index.storage.state import HarvestState


@dataclasses.dataclass
class RecoveryReport:
    repaired: list[tuple[str, int, int]] = dataclasses.field(default_factory=list)  # (file, old size, new size)
    indexed: list[str] = dataclasses.field(default_factory=list)
    interrupted_runs: list[str] = dataclasses.field(default_factory=list)
    removed: list[str] = dataclasses.field(default_factory=list)  # leftover temp files, relative paths
    captures_added: int = 0  # rows for records written but not committed (index.capture.rebuild.add_missing_captures)

    def __bool__(self) -> bool:
        return bool(self.repaired or self.indexed or self.interrupted_runs or self.removed)


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
    if length < 0 or len(rest) < length + 4 or rest[length : length + 4] != b"\r\n\r\n":
        return False
    block_digest = headers.get(b"warc-block-digest")
    if block_digest and block_digest.lower().startswith(b"sha1:"):
        actual = base64.b32encode(hashlib.sha1(rest[:length]).digest())
        if actual != block_digest[5:].upper():
            return False
    return True


def leftover_temp_files(collection: Collection) -> list[Path]:
    """Temp files of writers that hold the harvest lock, which a kill can leave behind (an import's
    copies are the import journal's, finished by ``index.capture.rebuild.finish_interrupted`` first)."""
    found = sorted(collection.indexes_dir.glob(f"{cdxj.TEMP_PREFIX}*{cdxj.TEMP_SUFFIX}"))
    if not (collection.state_dir / rebuild.JOURNAL).exists():  # else the journal's, to finish the import
        found += sorted(collection.archive_dir.glob(f"{rebuild.IMPORT_TEMP_PREFIX}*.tmp"))
    sort_dir = collection.state_dir / rebuild.SORT_DIR
    found += sorted(sort_dir.iterdir()) if sort_dir.is_dir() else []
    return found + sorted(collection.state_dir.glob(collection.db_path.name + ".rebuild*"))


def recover(collection: Collection, state: HarvestState, own: Callable[[str], bool] | None = None) -> RecoveryReport:
    """Repair what a killed writer left. With ``own`` (one of several workers on a run, others still
    writing): only the ``.open`` files ``own`` accepts (the worker's label's), and neither temp files
    nor running runs, which belong to live workers."""
    report = RecoveryReport()
    for path in leftover_temp_files(collection) if own is None else []:
        path.unlink(missing_ok=True)
        report.removed.append(str(path.relative_to(collection.path)))
    archive = collection.archive_dir
    fixity = Fixity(collection.fixity_dir)
    for name in sorted(os.listdir(archive)) if archive.is_dir() else []:
        if not name.endswith(OPEN_SUFFIX) or (own is not None and not own(name)):
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
            state.forget_records(sealed_name, 0)
            state.forget_warc(sealed_name)
            report.repaired.append((sealed_name, old_size, 0))
            continue
        state.forget_records(sealed_name, good)
        seal_file(archive, sealed_name)
        fixity.adopt(archive, sealed_name, agent="recovery")
        state.add_warc(sealed_name, "sealed", good)
        state.warc_state(sealed_name, "sealed", good)
        report.captures_added += add_missing_captures(collection, state, sealed_name)
        report.repaired.append((sealed_name, old_size, good))

    # Rows for files that no longer exist at all.
    for row in state.warcs() if own is None else []:
        if not (archive / row["filename"]).exists() and not (archive / (row["filename"] + OPEN_SUFFIX)).exists():
            state.forget_records(row["filename"], 0)
            state.forget_warc(row["filename"])

    known = {row["filename"]: row["state"] for row in state.warcs()}
    in_manifest = fixity.digests()
    for name in collection.warc_files():
        if known.get(name) in ("open", "sealed") and name not in in_manifest:
            fixity.adopt(archive, name, agent="recovery")
        if known.get(name) != "indexed":
            if name not in known:
                state.add_warc(name, "sealed", (archive / name).stat().st_size)
            index_sealed_file(collection, state, name)
            report.indexed.append(name)

    for run in state.runs(statuses=("running",)) if own is None else []:
        files = [r["filename"] for r in state.warcs() if r["run_id"] == run["run_id"]]
        written = report_in(archive / files[-1], run["run_id"]) if files else None
        if written is not None:  # killed after writing its report: the run ended as it says
            ended = reported_run(written, files, sum((archive / name).stat().st_size for name in files))
            state.update_run(run["run_id"], **{k: ended[k] for k in ("status", "finished", "snapshot", "figures")})
            continue
        state.update_run(
            run["run_id"], status="interrupted", **interrupted_run(state, run["run_id"], run["started"], files, archive)
        )
        report.interrupted_runs.append(run["run_id"])
    if own is None and collection.state_dir.is_dir():
        report.removed += [str(path.relative_to(collection.path)) for path in sweep(collection.state_dir)]
    return report
