"""Two captures of one URL compared: identical (same payload digest), or what changed.

``compare(collection, url, ts1, ts2)`` picks the capture a reader sees at each time (as replay
does: the latest at or before it), then:

- same payload digest: ``identical``, read from the index alone (no body is fetched); when one
  record is a revisit, which capture it is a revisit of: its original as replay finds it
  (``index.revisits``: the capture of the URI its ``WARC-Refers-To-*`` headers name, else of its
  own, any scheme, with that digest, closest to the date named);
- HTML or plain text: the main text of each (``index.fulltext.text.extract``: no scripts, menus,
  page header or footer) compared line by line with ``difflib``, changed lines word by word, as
  ``Chunk`` rows (equal, insert, delete) that a page shows side by side or inline;
- images: both versions (the page shows them at their natural size; here their sizes and dimensions);
- anything else: that the payloads differ, with their sizes.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections import Counter
from collections.abc import Mapping

from index.access.rules import rules_for
from index.cdx.pid import capture_pid
from index.cdx.versions import NoSuchCapture, Version, as_of, original_finder, read_versions
from index.collection import Collection
from index.compare.image_size import image_size
from index.fulltext.text import extract, mime_group
from index.payload import read_record
from index.revisits import Candidate, Revisit
from strata.errors import ArchiveError

MAX_LINES = 5000  # per side: difflib is quadratic in the worst case
# Tokens of the word-level comparison: a CJK character (those scripts do not space words), a word,
# or a punctuation mark, each with the space after it.
_CJK = re.compile(r"[\u3000-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
_WORDS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]\s*|\w+\s*|[^\w\s]\s*|\s+")


@dataclasses.dataclass
class Side:
    version: Version
    pid: str
    record: str  # response | revisit
    original: dict | None = None  # a revisit's original: {"url", "timestamp"}
    original_hidden: bool = False  # the reader may not see it: never named (the payload still read)
    size: int | None = None  # payload bytes (when read)
    title: str = ""
    dimensions: tuple[int, int] | None = None  # an image's width and height in pixels (when read)
    payload: Candidate | None = None  # a revisit's original: the record its payload is read from

    def as_dict(self) -> dict:
        v = self.version
        return {
            "timestamp": v.timestamp,
            "url": v.url,
            "digest": v.digest,
            "mime": v.mime,
            "status": v.status,
            "record": self.record,
            "original": None if self.original_hidden else self.original,
            "pid": self.pid,
            "size": self.size,
            "title": self.title,
            "dimensions": list(self.dimensions) if self.dimensions else None,
        }


@dataclasses.dataclass
class Chunk:
    op: str  # equal | insert | delete
    text: str
    line: bool = True  # a chunk that ends its line (the inline view breaks after it)
    gap: bool = False  # a deletion followed by its insertion: shown apart by a space (never in CJK text)


@dataclasses.dataclass
class Comparison:
    collection: str
    url: str
    old: Side
    new: Side
    identical: bool
    kind: str  # identical | text | image | other
    relation: str = ""  # identical captures: which was a revisit of which
    old_chunks: list[Chunk] = dataclasses.field(default_factory=list)  # left side: equal + delete
    new_chunks: list[Chunk] = dataclasses.field(default_factory=list)  # right side: equal + insert
    inline: list[Chunk] = dataclasses.field(default_factory=list)
    inserted_words: int = 0
    deleted_words: int = 0
    note: str = ""

    def as_dict(self) -> dict:
        return {
            "collection": self.collection,
            "url": self.url,
            "from": self.old.as_dict(),
            "to": self.new.as_dict(),
            "identical": self.identical,
            "kind": self.kind,
            "relation": self.relation,
            "inserted_words": self.inserted_words,
            "deleted_words": self.deleted_words,
            "changes": [dataclasses.asdict(c) for c in self.inline],
            "note": self.note,
        }


def sides(collection: Collection, url: str, ts1: str, ts2: str, viewer: Mapping | None = None) -> tuple[Side, Side]:
    """The two captures a reader sees at ``ts1`` and ``ts2``, oldest first, as ``viewer`` may see
    them (``index.cdx.versions.filter_captures``)."""
    versions = read_versions(collection, url, viewer=viewer)
    if not versions:
        raise NoSuchCapture(f"{url} is not archived in {collection.name}")
    old, new = _pick(collection, versions, url, ts1), _pick(collection, versions, url, ts2)
    if new.timestamp < old.timestamp:
        old, new = new, old
    left, right = _side(collection, old, versions), _side(collection, new, versions)
    shown = rules_for(collection.path).shown_to((viewer or {}).get("level") or "public")
    for side in (left, right):
        o = side.original
        side.original_hidden = bool(shown and o and not shown(o["url"], o["timestamp"] or side.version.timestamp))
    return left, right


def payload(collection: Collection, side: Side):
    """(HTTP headers, payload bytes) of what a side shows: its own record's, or a revisit's original's."""
    return _read(collection, side, read_versions(collection, side.version.url, filtered=False))


def compare(collection: Collection, url: str, ts1: str, ts2: str, viewer: Mapping | None = None) -> Comparison:
    """``viewer``: who asks, for ``index.cdx.versions.filter_captures`` (None on the command line)."""
    left, right = sides(collection, url, ts1, ts2, viewer)
    old, new = left.version, right.version
    versions = read_versions(collection, url, filtered=False)  # where payloads are, not what is shown
    if old.same_payload(new):
        return Comparison(collection.name, old.url, left, right, True, "identical", relation=_relation(left, right))
    out = Comparison(collection.name, old.url, left, right, False, "other")
    group_old, group_new = (mime_group(_payload_mime(collection, s, versions)) for s in (left, right))
    if "image" in (group_old, group_new):
        out.kind = "image"
        _sizes(collection, versions, left, right)
        return out
    if {group_old, group_new} <= {"html", "text"}:
        out.kind = "text"
        old_text, new_text = _text(collection, versions, left), _text(collection, versions, right)
        _diff_texts(out, old_text, new_text)
        if not out.inserted_words and not out.deleted_words:
            out.note = "The main text is the same; the payloads differ elsewhere (markup, menus, header or footer)."
        return out
    _sizes(collection, versions, left, right)
    out.note = "The payloads differ; only text and images are compared."
    return out


def _pick(collection: Collection, versions: list[Version], url: str, ts: str) -> Version:
    found = as_of(versions, ts)
    if found is None:
        raise NoSuchCapture(
            f"{url} has no capture in {collection.name} at or before {ts}; its first is {versions[0].timestamp}"
        )
    return found


def _side(collection: Collection, version: Version, versions: list[Version]) -> Side:
    side = Side(version, capture_pid(collection.name, version.url, version.timestamp), "response")
    if version.revisit:
        side.record = "revisit"
        revisit = _revisit(collection, version)
        side.payload = original_finder(collection)(revisit)
        if side.payload is not None:
            side.original = {"url": side.payload.url, "timestamp": side.payload.timestamp}
        elif revisit.refers_to_uri and revisit.refers_to_date:
            side.original = {"url": revisit.refers_to_uri, "timestamp": revisit.when}
    return side


def _revisit(collection: Collection, version: Version) -> Revisit:
    """What the revisit record says of its original (its WARC headers only: no payload is read)."""
    try:
        rec_headers, _, _ = read_record(collection.archive_dir / version.filename, version.offset)
    except (OSError, ValueError, EOFError):
        return Revisit(version.url, version.timestamp, version.digest)
    headers = {name.lower(): value for name, value in rec_headers.headers}
    return Revisit.from_headers(headers, version.timestamp, url=version.url)


def _relation(left: Side, right: Side) -> str:
    def of(side: Side) -> str:
        o = None if side.original_hidden else side.original
        if o is None:
            return f"the capture of {side.version.timestamp} is a revisit of an earlier capture with the same payload"
        if o["timestamp"] == left.version.timestamp and o["url"] == left.version.url:
            return f"the capture of {side.version.timestamp} is a revisit of the capture of {o['timestamp']}"
        where = "" if o["url"] == side.version.url else f" of {o['url']}"
        return f"the capture of {side.version.timestamp} is a revisit of the capture{where} of {o['timestamp']}"

    said = [of(s) for s in (left, right) if s.record == "revisit"]
    if not said:
        return "both are full responses with the same payload digest"
    return "; ".join(said)


def _payload_location(collection: Collection, side: Side, versions: list[Version]) -> Version | Candidate | None:
    """The record holding the side's payload: itself, or a revisit's original (``_side``)."""
    return side.version if not side.version.revisit else side.payload


def _payload_mime(collection: Collection, side: Side, versions: list[Version]) -> str:
    where = _payload_location(collection, side, versions)
    return where.mime if where is not None else ""


def _read(collection: Collection, side: Side, versions: list[Version]):
    where = _payload_location(collection, side, versions)
    if where is None:
        raise ArchiveError(f"the payload of the capture of {side.version.timestamp} is not in {collection.name}")
    try:
        _, http_headers, raw = read_record(collection.archive_dir / where.filename, where.offset)
    except (OSError, ValueError, EOFError) as exc:
        raise ArchiveError(f"the record of the capture of {side.version.timestamp} could not be read: {exc}") from None
    side.size = len(raw)
    return http_headers, raw


def _sizes(collection: Collection, versions: list[Version], *sides: Side) -> None:
    for side in sides:
        _, raw = _read(collection, side, versions)
        side.dimensions = image_size(raw[:65536])


def _text(collection: Collection, versions: list[Version], side: Side) -> list[str]:
    http_headers, raw = _read(collection, side, versions)
    get = http_headers.get_header if http_headers else (lambda _name: None)
    extracted = extract(raw, get("Content-Type") or side.version.mime, get("Content-Encoding"))
    side.title = extracted.title
    return extracted.text.split("\n")[:MAX_LINES] if extracted.text else []


def _diff_texts(out: Comparison, old: list[str], new: list[str]) -> None:
    lines = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for op, i1, i2, j1, j2 in lines.get_opcodes():
        if op == "equal":
            for line in old[i1:i2]:
                _add(out, "equal", line)
        elif op == "delete":
            for line in old[i1:i2]:
                _add(out, "delete", line)
        elif op == "insert":
            for line in new[j1:j2]:
                _add(out, "insert", line)
        else:
            _diff_words(out, "\n".join(old[i1:i2]), "\n".join(new[j1:j2]))


def _diff_words(out: Comparison, old: str, new: str) -> None:
    a, b = _WORDS.findall(old), _WORDS.findall(new)
    # words compared without the space after them (the last word of a line has none)
    words = difflib.SequenceMatcher(None, [w.rstrip() for w in a], [w.rstrip() for w in b], autojunk=False)
    for op, i1, i2, j1, j2 in words.get_opcodes():
        if op == "equal":  # the same words; each side keeps its own line breaks between them
            _add(out, "equal", "".join(b[j1:j2]), line=False, old_text="".join(a[i1:i2]))
            continue
        gone, came = "".join(a[i1:i2]), "".join(b[j1:j2])
        if gone:
            _add(out, "delete", gone.rstrip(), line=False)
            # "<del>nine</del> <ins>ten</ins>" reads apart; "<del>北京</del><ins>上海</ins>" must not
            out.inline[-1].gap = bool(came) and not (_CJK.match(gone.rstrip()[-1:]) or _CJK.match(came[:1]))
        if came:
            _add(out, "insert", came.rstrip(), line=False)
        tail = came[len(came.rstrip()) :] if came else gone[len(gone.rstrip()) :]
        if tail:  # the space after a changed word is not part of the change
            _add(out, "equal", tail, line=False)
    for chunks in (out.inline, out.old_chunks, out.new_chunks):
        if chunks:
            chunks[-1].line = True


def _add(out: Comparison, op: str, text: str, line: bool = True, old_text: str | None = None) -> None:
    chunk = Chunk(op, text, line)
    out.inline.append(chunk)
    if op != "insert":
        out.old_chunks.append(chunk if old_text is None else Chunk(op, old_text, line))
    if op != "delete":
        out.new_chunks.append(chunk)
    if op == "insert":
        out.inserted_words += len(text.split())
    elif op == "delete":
        out.deleted_words += len(text.split())


def words_changed(old: str, new: str) -> tuple[int, int]:
    """(words added, words removed) between two main texts, counted as multisets of words (a CJK
    character a word): how much changed, without the order ``difflib`` would weigh, so that a URL's
    many changes can be measured in one page (``replay.views.changes``)."""
    a = Counter(w.rstrip() for w in _WORDS.findall(old) if w.strip() and (w[0].isalnum() or _CJK.match(w[0])))
    b = Counter(w.rstrip() for w in _WORDS.findall(new) if w.strip() and (w[0].isalnum() or _CJK.match(w[0])))
    return sum((b - a).values()), sum((a - b).values())
