"""pywb's warcserver as Strata runs it: one in-process WSGI app over the collections root.

It is pywb's auto-collection handler (index ``<root>/<coll>/indexes/*.cdxj``, WARCs under
``<root>/<coll>/archive/``, pywb's fuzzy-match rules) with these differences:

- the index answers ``closest=`` as of that time (``replay.asof``), a moment during a run meaning
  the run's snapshot (``replay.snapshots``); fuzzy matches too, cache-busting parameters by a
  stated rule first (``replay.fuzzy``);
- only the WARC loader: no live-web or video loader, so nothing is ever fetched from the live web;
- the original of every revisit is the one ``index.revisits`` gives, the rule verify, ``strata
  captures``, diff and the WACZ export follow too: pywb's second CDX query (the captures of
  ``WARC-Refers-To-Target-URI`` closest to ``WARC-Refers-To-Date``, not revisits, same digest),
  with the revisit's own URI when it names none, digests compared as digests, and among equally
  close candidates the record its ``WARC-Refers-To`` names (located in the harvest state). The
  first that loads is served;
- a revisit of a redirect is served with its original's body. pywb skips loading the payload of a
  3xx revisit ("ignored by browser") and sends an empty body, so ``id_`` would not return the
  archived bytes.

Before a record is handed to pywb it is read whole and its digests checked
(``index.integrity.recordscan.check_record_at``): a record that fails raises ``DamagedCapture``, which pywb does
not catch, so the reader gets an error page instead of a torn body or, through pywb's fallback,
another capture served under this one's address (``replay.engine`` turns it into ``CaptureDamaged``).

A record of up to 1 MiB in a gzipped WARC is read once: one positioned read of its member
(``index.integrity.recordscan.read_member``), inflated once, checked (``check_member``) and parsed from those
bytes (``RecordLoader.load_member``); a larger one is checked, then read again streaming. What was
made of a small record is kept in ``replay.recordmemo`` and reused on a later request only when the
member's bytes, read again from the file every time, are equal to the ones it was made from.

Records are read by ``replay.recordload``: warcio's parser, header blocks read from the decompressed
buffer instead of line by line, same results. When a revisit carries its own HTTP headers (an
identical-payload revisit, not a 304's empty block) nothing reads its original's, so the original is
loaded for its payload only, its HTTP header block stepped over unparsed.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from pathlib import Path

from pywb.warcserver.basewarcserver import BaseWarcServer
from pywb.warcserver.handlers import ResourceHandler
from pywb.warcserver.resource.blockrecordloader import BlockArcWarcRecordLoader
from pywb.warcserver.resource.resolvingloader import ResolvingLoader
from pywb.warcserver.resource.responseloader import WARCPathLoader
from warcio.recordloader import ArchiveLoadFailed

from index.cdx.capture_index import root_cdx
from index.collection import Collection
from index.integrity.recordscan import check_member, check_record_at, read_member
from index.revisits import Candidate, Revisit, rank
from index.storage.state import indexed_original, open_readonly
from replay.asof import RAW_PARAM, AsOfIndexSource
from replay.fuzzy import SnapshotFuzzyMatcher
from replay.recordload import PayloadRecordLoader, RecordLoader
from replay.recordmemo import RecordMemo
from strata.errors import CollectionError


# Only records of indexed WARCs are in the CDXJ index: exactly the ones pywb's lookup could find.
def _bare_digest(digest: str | None) -> str:
    """``sha1:ABC`` (WARC header, harvest state) and ``ABC`` (CDXJ) compare equal."""
    digest = (digest or "").strip()
    return digest.split(":", 1)[1] if digest[:5].lower() == "sha1:" else digest


DAMAGE_MARKER = "strata-damaged-capture"


class DamagedCapture(Exception):
    """A record that does not read back whole. Deliberately not pywb's ``WbException`` or
    ``ArchiveLoadFailed``: pywb would catch those and try the next capture."""

    def __init__(self, path: str, offset: int, reason: str):
        super().__init__(f"{DAMAGE_MARKER}: {os.path.basename(path)} at {offset}: {reason}")
        self.path, self.offset, self.reason = path, offset, reason


class _DamageCheck:
    """Mixin for a pywb record loader: the record is checked before it is parsed. The failure is
    kept on the loader too, because pywb's ``_resolve_path_load`` turns every exception into
    ``ArchiveLoadFailed``. A ``RecordLoader`` reads a small record once and may reuse what it made
    of the same bytes before (``memo``, ``replay.recordmemo``)."""

    damage: DamagedCapture | None = None
    memo: RecordMemo | None = None

    def load(self, url, offset, length, no_record_parse=False):
        if os.path.isabs(url) and not url.endswith((".arc", ".arc.gz")):  # ARC records: not checked (no digests)
            length_value = int(length) if str(length).isdigit() else None
            key = (type(self), url, int(offset), length_value, no_record_parse)
            raw = inflated = None
            reason = ""
            checked_now = False
            try:
                if isinstance(self, RecordLoader):  # checked and parsed from one read, when small enough
                    raw = read_member(url, int(offset), length_value)
                if raw is not None and self.memo is not None:
                    record = self.memo.record(key, raw)
                    if record is not None:  # the same bytes as a record checked and parsed before
                        return record
                    inflated = self.memo.inflated(key, raw)
                if raw is not None and inflated is None and length_value is not None:
                    reason, inflated = check_member(raw, int(offset), length_value)
                    checked_now = True
                if inflated is None and not reason:  # not read whole: checked reading as it goes
                    reason = check_record_at(Path(url), int(offset), length_value)
            except OSError:
                reason = ""  # a file that is not there: pywb's own handling
            if reason:
                self.damage = DamagedCapture(url, int(offset), reason)
                raise self.damage
            if raw is not None and inflated is not None and isinstance(self, RecordLoader):
                record = self.load_member(raw, inflated, no_record_parse=no_record_parse)
                if checked_now and self.memo is not None:
                    self.memo.remember(key, raw, inflated, record)
                return record
        return super().load(url, offset, length, no_record_parse=no_record_parse)  # type: ignore[misc]  # a mixin before pywb's loaders, which are untyped


class _CheckedRecordLoader(_DamageCheck, RecordLoader):
    pass


class _CheckedPayloadRecordLoader(_DamageCheck, PayloadRecordLoader):
    pass


class _CheckedBlockLoader(_DamageCheck, BlockArcWarcRecordLoader):
    pass


class _CheckedResolvingLoader(ResolvingLoader):
    """pywb's loader, a damaged record raised as ``DamagedCapture`` instead of a load failure."""

    def _resolve_path_load(self, cdx, is_original, failed_files):
        self.record_loader.damage = None
        try:
            return super()._resolve_path_load(cdx, is_original, failed_files)
        except ArchiveLoadFailed:
            damage, self.record_loader.damage = self.record_loader.damage, None
            if damage is not None:
                raise damage from None
            raise


class _HarvestDatabases:
    """One read-only connection per collection to its harvest state, opened again when the file is
    replaced (``strata index rebuild`` swaps in a new one). Shared by the greenlets of the server's
    one thread; each query runs to completion without yielding."""

    def __init__(self, root: Path):
        self.root = root
        self._paths: dict[str, Path | None] = {}
        self._open: dict[str, tuple[int, sqlite3.Connection]] = {}

    def get(self, coll: str) -> sqlite3.Connection | None:
        db_path = self._path(coll)
        try:
            inode = os.stat(db_path).st_ino if db_path is not None else None
        except OSError:
            inode = None
        cached = self._open.get(coll)
        if cached is not None and cached[0] == inode:
            return cached[1]
        if cached is not None:
            del self._open[coll]
            cached[1].close()
        if inode is None or db_path is None:
            return None
        conn = open_readonly(db_path)
        if conn is not None:
            self._open[coll] = (inode, conn)
        return conn

    def _path(self, coll: str) -> Path | None:
        if coll not in self._paths:
            try:
                self._paths[coll] = Collection(self.root, coll).db_path
            except CollectionError:
                self._paths[coll] = None
        return self._paths[coll]


class _RevisitLoader(_CheckedResolvingLoader):
    # False: warcio's record parser for every record (pywb's own loading), for comparison in tests.
    fast_records = True
    # False: every record checked and parsed on every load, none reused from ``memo``.
    memo_records = True

    def __init__(self, path_resolvers, root: Path):
        fast = self.fast_records
        super().__init__(
            path_resolvers,
            record_loader=_CheckedRecordLoader() if fast else _CheckedBlockLoader(),
            no_record_parse=False,
        )
        self.harvest_dbs = _HarvestDatabases(root)
        self.payload_loader = (
            _CheckedResolvingLoader(path_resolvers, record_loader=_CheckedPayloadRecordLoader()) if fast else None
        )
        self.memo = RecordMemo() if fast and self.memo_records else None
        self.record_loader.memo = self.memo
        if self.payload_loader is not None:
            self.payload_loader.record_loader.memo = self.memo

    def _original_loader(self, headers_record) -> ResolvingLoader:
        """What loads the original of this revisit: ``payload_loader`` if nothing will read the
        original's HTTP headers, that is if the revisit has its own (pywb's ``WARCPathLoader``
        and ``ResolvingLoader.__call__`` then use those) and is no redirect (whose original's
        Content-Length ``load_headers_and_payload`` copies); else this loader."""
        http = headers_record.http_headers
        if self.payload_loader is not None and http and http.headers and not http.get_statuscode().startswith("3"):
            return self.payload_loader
        return self

    def load_headers_and_payload(self, cdx, failed_files, cdx_loader):
        headers, payload = super().load_headers_and_payload(cdx, failed_files, cdx_loader)
        if headers is None or headers is not payload or cdx.get("mime") != "warc/revisit":
            return headers, payload
        status = headers.http_headers.get_statuscode() if headers.http_headers else ""
        if not status.startswith("3"):
            return headers, payload
        try:
            payload = self._load_different_url_payload(cdx, headers, failed_files, cdx_loader)
        except ArchiveLoadFailed:
            return headers, headers  # pywb's behaviour: the redirect with an empty body
        length = payload.http_headers.get_header("Content-Length") if payload.http_headers else None
        if length is None:
            headers.http_headers.remove_header("Content-Length")
        else:
            headers.http_headers.replace_header("Content-Length", length)
        return headers, payload

    def _load_different_url_payload(self, cdx, headers_record, failed_files, cdx_loader):
        """The revisit's original, as ``index.revisits`` ranks the captures of the URI it names (of
        its own URI when it names none), any scheme: the first that loads. pywb's own lookup needs
        ``WARC-Refers-To-Target-URI`` and compares digests as strings; the rule is otherwise pywb's."""
        headers = {name.lower(): value for name, value in headers_record.rec_headers.headers}
        revisit = Revisit.from_headers(headers, cdx["timestamp"])
        if not revisit.digest:
            revisit = dataclasses.replace(revisit, digest=cdx.get("digest") or None)
        if revisit.empty:
            return headers_record  # pywb's: an empty payload's revisit is its own payload
        if cdx_loader is None:
            raise ArchiveLoadFailed(self.MISSING_REVISIT_MSG)
        candidates = [Candidate.from_cdx(c) for c in cdx_loader({"url": revisit.target, "matchType": "exact"})]
        named = self._named_location(cdx, revisit)
        if named is not None:
            candidates = [
                dataclasses.replace(c, record_id=revisit.refers_to) if (c.filename, c.offset) == named else c
                for c in candidates
            ]
        loader = self._original_loader(headers_record)
        for candidate in rank(revisit, candidates):
            try:
                return loader._resolve_path_load(candidate.source, False, failed_files)
            except ArchiveLoadFailed:
                continue  # pywb's: the next one (a damaged record raises DamagedCapture instead)
        raise ArchiveLoadFailed(self.MISSING_REVISIT_MSG)

    def _named_location(self, cdx, revisit: Revisit) -> tuple[str, int] | None:
        """Where the harvest state says the record the revisit's ``WARC-Refers-To`` names is."""
        formatter = getattr(cdx, "_formatter", None)
        if not revisit.refers_to or formatter is None:
            return None
        conn = self.harvest_dbs.get(formatter.format("{coll}"))
        if conn is None:
            return None
        try:
            row = indexed_original(conn, revisit.refers_to)
        except sqlite3.Error:
            return None
        return None if row is None else (row["warc"], int(row["offset"]))


class _StrataWARCPathLoader(WARCPathLoader):
    def __init__(self, paths, cdx_source, root: Path):
        super().__init__(paths, cdx_source)
        self.resolve_loader = _RevisitLoader(self.resolvers, root)

    def raise_on_self_redirect(self, params, cdx, status_code, location_url):
        """pywb refuses a redirect to the URL asked for (``http://x`` to ``https://x`` is one: the
        index does not tell the schemes apart), because a replayed page would follow its rewritten
        ``Location`` back to itself. The archived bytes (``id_``) are not rewritten and lead nowhere
        but where they say: served as they are (they answered 400 when no other capture was there)."""
        if params.get(RAW_PARAM):
            return
        super().raise_on_self_redirect(params, cdx, status_code, location_url)


def make_warcserver(root: Path, rules_for=None) -> tuple[BaseWarcServer, AsOfIndexSource]:
    """The WSGI app routing ``/<coll>/index`` (CDX queries) and ``/<coll>/resource/postreq``
    (replay), and its index source (for the application's own lookups)."""
    root_dir = os.path.join(os.path.abspath(root), "")
    index = AsOfIndexSource(
        base_prefix=root_dir,
        base_dir=os.path.join("{coll}", "indexes", ""),
        rules_for=rules_for,
        redis=root_cdx(Path(root_dir)),  # on a Redis root, index.cdxj's lines from the shared set
    )
    archive_paths = os.path.join(root_dir, "{coll}", "archive", "")
    loader = _StrataWARCPathLoader(archive_paths, index, Path(root_dir))
    handler = ResourceHandler(index, [loader])
    handler.fuzzy = SnapshotFuzzyMatcher()  # the cache-buster rule, and the requested time kept
    server = BaseWarcServer(debug=False)
    server.add_route("/<path_param_value>", handler, path_param_name="param.coll")
    return server, index
