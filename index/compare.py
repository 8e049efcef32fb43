"""Two captures of one URL compared: identical (same payload digest), or what changed.

``compare(collection, url, ts1, ts2)`` picks the capture a reader sees at each time (as replay
does: the latest at or before it), then:

- same payload digest: ``identical``, read from the index alone (no body is fetched); when one
  record is a revisit, which capture it is a revisit of (its ``WARC-Refers-To-*`` headers, else
  the latest response with that digest before it);
- HTML or plain text: the main text of each (``index.fulltext.text.extract``: no scripts, menus,
  page header or footer) compared line by line with ``difflib``, changed lines word by word, as
  ``Chunk`` rows (equal, insert, delete) that a page shows side by side or inline;
- images: both versions (the page shows them; here their types and sizes);
- anything else: that the payloads differ, with their sizes.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Mapping

from index.cdx.pid import capture_pid
from index.cdx.versions import NoSuchCapture, Version, as_of, read_versions
from index.collection import Collection
from index.fulltext.text import extract, mime_group
from index.payload import read_record
from strata.errors import ArchiveError

MAX_LINES = 5000  # per side: difflib is quadratic in the worst case
# Tokens of the word-level comparison: a CJK character (those scripts do not space words), a word,
# or a punctuation mark, each with the space after it.
_WORDS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]\s*|\w+\s*|[^\w\s]\s*|\s+")


@dataclasses.dataclass
class Side:
    version: Version
    pid: str
    record: str  # response | revisit
    original: dict | None = None  # a revisit's original: {"url", "timestamp"}
    size: int | None = None  # payload bytes (when read)
    title: str = ""

    def as_dict(self) -> dict:
        v = self.version
        return {
            "timestamp": v.timestamp,
            "url": v.url,
            "digest": v.digest,
            "mime": v.mime,
            "status": v.status,
            "record": self.record,
            "original": self.original,
            "pid": self.pid,
            "size": self.size,
            "title": self.title,
        }


@dataclasses.dataclass
class Chunk:
    op: str  # equal | insert | delete
    text: str
    line: bool = True  # a chunk that ends its line (the inline view breaks after it)


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


def compare(collection: Collection, url: str, ts1: str, ts2: str, viewer: Mapping | None = None) -> Comparison:
    """``viewer``: who asks, for ``index.cdx.versions.filter_captures`` (None on the command line)."""
    versions = read_versions(collection, url, viewer=viewer)
    if not versions:
        raise NoSuchCapture(f"{url} is not archived in {collection.name}")
    old, new = _pick(collection, versions, url, ts1), _pick(collection, versions, url, ts2)
    if new.timestamp < old.timestamp:
        old, new = new, old
    left, right = _side(collection, old, versions), _side(collection, new, versions)
    versions = read_versions(collection, url)  # where payloads are, not what is shown: unfiltered
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
        side.original = _original(collection, version, versions)
    return side


def _original(collection: Collection, version: Version, versions: list[Version]) -> dict | None:
    """What the revisit refers to: its WARC-Refers-To-Target-URI and -Date (headers only, no
    payload is read), else the latest response of this URL with the same digest before it."""
    try:
        rec_headers, _, _ = read_record(collection.archive_dir / version.filename, version.offset)
        uri, date = rec_headers.get_header("WARC-Refers-To-Target-URI"), rec_headers.get_header("WARC-Refers-To-Date")
    except (OSError, ValueError, EOFError):
        uri = date = None
    if uri and date:
        return {"url": uri, "timestamp": "".join(ch for ch in date if ch.isdigit())[:14]}
    earlier = [v for v in versions if not v.revisit and v.same_payload(version) and v.timestamp <= version.timestamp]
    return {"url": earlier[-1].url, "timestamp": earlier[-1].timestamp} if earlier else None


def _relation(left: Side, right: Side) -> str:
    def of(side: Side) -> str:
        o = side.original
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


def _payload_location(collection: Collection, side: Side, versions: list[Version]) -> Version | None:
    """The response record holding the side's payload: itself, or a revisit's original."""
    v = side.version
    if not v.revisit:
        return v
    candidates = [c for c in versions if not c.revisit and c.same_payload(v)]
    if side.original and side.original["url"] != v.url:
        candidates = [c for c in read_versions(collection, side.original["url"]) if not c.revisit and c.same_payload(v)]
    if not candidates:
        return None
    at = (side.original or {}).get("timestamp") or v.timestamp
    before = [c for c in candidates if c.timestamp <= at]
    return (before or candidates)[-1]


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
        _read(collection, side, versions)


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
