"""After a harvest run: its new payloads become documents, every capture a row (``index_run``).

A single-machine run has mostly been indexed by then, by the process that followed it
(``index.fulltext.follow``): its documents are found by key and not parsed again, and ``Followed``
counts them in the run's figures. ``index_run`` alone adds a run's capture rows all together and
marks the run indexed, whoever made the documents."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from index.collection import Collection
from index.fulltext import rendered
from index.fulltext.captures import CaptureStore
from index.fulltext.documents import POOL_BYTES, IndexUnusable, Payload, ProgressFn, indexable, make_document
from index.fulltext.payloads import MISSING, Figures, PayloadCache, read_payload
from index.fulltext.postings import BulkWriter
from index.fulltext.rebuild import rebuild_locked
from index.fulltext.store import fsync_tree, open_index, write_lock
from index.storage.state import HarvestState


@dataclass(frozen=True)
class Followed:
    """A run that an indexer followed (``index.fulltext.follow``), for its figures: documents from
    ``first_docnum`` (the index's count when the indexer started) on were added for it, and the
    capture rows of a pending run's older documents can only be the indexer's, so those documents
    count as updated."""

    first_docnum: int

    def counts(self, docnum: int, old: set[str], new: set[str]) -> str:
        """``added``, ``updated`` or ``unchanged``: what this pass did to a document that exists."""
        if not old or docnum >= self.first_docnum:
            return "added"
        return "updated"


def _counts(docnum: int, old: set[str], new: set[str]) -> str:
    if not old:
        # no capture yet: added for these runs by a pass that did not mark them (the indexer that
        # follows a running run, or a crash between the two commits)
        return "added"
    return "unchanged" if new <= old else "updated"


def index_run(
    collection: Collection,
    run_id: str | None = None,
    progress: ProgressFn | None = None,
    followed: Followed | None = None,
) -> dict:
    """Add a harvest run (and any earlier run not indexed yet) to the full-text index.

    Call it after the run's WARC files are sealed. Rebuilds from the WARCs when the index is missing
    or unusable. Returns figures (``parsed``, ``added``, ``updated``, ``rebuilt`` ...); ``followed``
    counts in the documents the indexer that followed the run added or updated."""
    started = time.monotonic()
    with write_lock(collection):
        try:
            ix = open_index(collection, check=True)
        except IndexUnusable as exc:
            ix, reason = None, exc.message
        else:
            reason = "no full-text index yet"
        if ix is not None:
            try:
                figures = _index_runs(collection, ix, run_id, followed.counts if followed else _counts)
                figures.seconds = round(time.monotonic() - started, 3)
                return figures.as_dict()
            except (OSError, EOFError, ValueError, KeyError, IndexError, sqlite3.DatabaseError, IndexUnusable) as exc:
                reason = f"update failed ({type(exc).__name__}: {exc})"
        figures = rebuild_locked(collection, progress)
        figures.reason = reason
        figures.seconds = round(time.monotonic() - started, 3)
        return figures.as_dict()


def _pending_runs(collection: Collection, store: CaptureStore, run_id: str | None) -> list[str]:
    done = store.runs()
    with HarvestState(collection.db_path) as state:
        runs = [r["run_id"] for r in state.runs() if r["status"] != "running" or r["run_id"] == run_id]
    if run_id and run_id not in runs:
        runs.append(run_id)
    return [r for r in runs if r not in done]


def catch_up_rows(ix, store: CaptureStore) -> None:
    """Documents committed to Whoosh whose rows were not (a crash between the two commits)."""
    have, total = store.doc_count(), ix.doc_count_all()
    if have > total:
        raise IndexUnusable(f"the capture store knows {have} documents, the index {total}")
    if have < total:
        with ix.searcher() as searcher:
            store.add([(n, searcher.stored_fields(n)["key"]) for n in range(have, total)], [], [])


def _index_runs(collection: Collection, ix, run_id: str | None, counts) -> Figures:
    figures = Figures()
    with CaptureStore(collection.fulltext_dir) as store:
        catch_up_rows(ix, store)
        pending = _pending_runs(collection, store, run_id)
        if not pending:
            return figures
        figures.runs = pending
        with HarvestState(collection.db_path) as state:
            groups = _run_groups(state, pending)
            _add_rendered(groups, collection, state, pending)
            known = store.docnums(f"{url} {digest}" for url, digest in groups)
            new = [(key, group) for key, group in groups.items() if f"{key[0]} {key[1]}" not in known]
            rows, captures = _write_new(collection, ix, state, new, figures)
        for (url, digest), group in groups.items():
            docnum = known.get(f"{url} {digest}")
            if docnum is not None:
                captures.extend((docnum, ts) for ts in group["ts"])
        old = {docnum: set(store.captures_of(docnum)) for docnum in known.values()}
        for (url, digest), group in groups.items():
            docnum = known.get(f"{url} {digest}")
            if docnum is None:
                continue
            kind = counts(docnum, old[docnum], group["ts"])
            if kind == "added":
                figures.added += 1
            elif kind == "updated":
                figures.updated += 1
            else:
                figures.unchanged += 1
        figures.captures = store.add(rows, captures, pending)
        figures.documents = store.doc_count()
    return figures


def _run_groups(state: HarvestState, runs: list[str]) -> dict[tuple[str, str], dict]:
    """(url, digest) -> capture timestamps and one response holding the payload, over ``runs``."""
    groups: dict[tuple[str, str], dict] = {}
    for rid in runs:
        for cap in state.captures(run_id=rid):
            group_capture(groups, cap)
    return groups


def _add_rendered(groups: dict, collection: Collection, state: HarvestState, runs: list[str]) -> None:
    """The runs' rendered texts of browser-captured pages (``index.fulltext.rendered``), found in
    the CDXJ index by the runs' WARC files."""
    files = {w["filename"] for w in state.warcs() if w["run_id"] in runs}
    for key, found in rendered.run_groups(collection, files).items():
        group = groups.setdefault(key, {"ts": set(), "response": None, "refers": None})
        group["ts"] |= found["ts"]
        group["response"] = group["response"] or found["response"]


def group_capture(groups: dict[tuple[str, str], dict], cap: dict) -> dict | None:
    """Add a capture row of the harvest state to its (url, digest) group: its timestamp, and the
    response holding the payload or the original a revisit names. None when it is not indexable."""
    if not cap["digest"]:
        return None
    status = cap["status"] if cap["record_type"] == "response" or cap["status"] not in (None, 304) else None
    if not indexable(cap["url"], status):
        return None
    group = groups.setdefault((cap["url"], cap["digest"]), {"ts": set(), "response": None, "refers": None})
    group["ts"].add(cap["timestamp"])
    if cap["record_type"] == "response" and group["response"] is None:
        group["response"] = (cap["warc"], cap["offset"])
    elif cap["refers_to_uri"] and group["refers"] is None:
        group["refers"] = (cap["refers_to_uri"], cap["refers_to_date"])
    return group


def _write_new(collection: Collection, ix, state: HarvestState, new: list, figures: Figures) -> tuple[list, list]:
    """Parse and append the documents of ``new`` ((url, digest), group) pairs. Returns their rows
    and captures for the store. Segments are written as the pool fills, so memory stays bounded."""
    rows: list[tuple[int, str]] = []
    captures: list[tuple[int, str]] = []
    if not new:
        return rows, captures
    base = ix.doc_count_all()
    cache = PayloadCache()
    # responses first, so that a revisit of another URL's new payload finds it in the cache
    new.sort(key=lambda kv: kv[1]["response"] is None)
    writer = BulkWriter(ix, expected=len(new))
    try:
        with ix.searcher() as searcher:
            for (url, digest), group in new:
                payload = _payload_for(collection, state, searcher, digest, group, cache, figures)
                if payload is None:
                    figures.orphans += 1
                    continue
                if not indexable(url, payload.status):
                    continue
                docnum = base + len(rows)
                writer.add_document(**make_document(url, digest, payload))
                rows.append((docnum, f"{url} {digest}"))
                captures.extend((docnum, ts) for ts in group["ts"])
                if writer.pooled_bytes() > POOL_BYTES:
                    writer.commit()
                    writer = BulkWriter(ix, expected=len(new) - len(rows))
        writer.commit()
    except BaseException:
        if not writer.is_closed:
            writer.cancel()
        raise
    fsync_tree(collection.fulltext_dir)
    if ix.doc_count_all() != base + len(rows):  # BulkWriter keeps numbers: this would be a bug
        raise IndexUnusable(f"expected {base + len(rows)} documents after the update, found {ix.doc_count_all()}")
    figures.added = len(rows)
    return rows, captures


def _payload_for(
    collection: Collection,
    state: HarvestState,
    searcher,
    digest: str,
    group: dict,
    cache: PayloadCache,
    figures: Figures,
) -> Payload | None:
    payload = cache.get(digest)
    if payload is not MISSING:
        figures.copied += 1
        return payload
    location = group["response"]
    if location is None:
        docnum = searcher.document_number(digest=digest)
        if docnum is not None:
            figures.copied += 1
            payload = Payload.from_stored(
                searcher.stored_fields(docnum), searcher.reader().column_reader("parts")[docnum]
            )
            cache.put(digest, payload)
            return payload
        location = original_location(state, digest, group["refers"])
    if location is None:
        return None
    payload = read_payload(collection, *location)
    if payload is not None:
        figures.parsed += 1
    cache.put(digest, payload)
    return payload


def original_location(state: HarvestState, digest: str, refers: tuple[str, str] | None) -> tuple[str, int] | None:
    rows = state.response_locations(digest)
    if refers:
        rows = sorted(rows, key=lambda r: r["url"] != refers[0])
    return (rows[0]["warc"], rows[0]["offset"]) if rows else None
