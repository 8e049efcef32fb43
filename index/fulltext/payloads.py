"""Payloads read back from the WARC files for indexing, and the figures an index update reports."""

from __future__ import annotations

from dataclasses import dataclass, field

from index.collection import Collection
from index.fulltext import rendered
from index.fulltext.documents import Payload
from index.payload import read_record


@dataclass
class Figures:
    runs: list[str] = field(default_factory=list)
    parsed: int = 0  # payloads read from WARCs and parsed
    copied: int = 0  # documents whose payload was already indexed under another URL
    added: int = 0  # documents added
    updated: int = 0  # documents that got new capture timestamps
    unchanged: int = 0
    captures: int = 0  # capture rows added
    orphans: int = 0  # revisits whose original payload could not be found
    rebuilt: bool = False
    reason: str = ""
    documents: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def read_payload(collection: Collection, warc: str, offset: int) -> Payload | None:
    path = collection.archive_dir / warc
    if not path.exists() and (collection.archive_dir / (warc + ".open")).exists():
        path = collection.archive_dir / (warc + ".open")
    try:
        rec_headers, http_headers, raw = read_record(path, offset)
    except (OSError, ValueError, EOFError):
        return None
    if rendered.page_of(rec_headers.get_header("WARC-Target-URI")) is not None:
        return rendered.payload(rec_headers, raw)  # a browser-captured page's text (urn:text:)
    return Payload.from_record(http_headers, raw)


MISSING = object()


class PayloadCache:
    """The last 256 payloads parsed, by digest: copies of one payload under several URLs are
    usually written together (the rebuild goes through the WARCs in order)."""

    def __init__(self, size: int = 256):
        self.size = size
        self.items: dict[str, Payload | None] = {}

    def get(self, digest: str):
        return self.items.get(digest, MISSING)

    def put(self, digest: str, payload: Payload | None) -> None:
        self.items[digest] = payload
        if len(self.items) > self.size:
            del self.items[next(iter(self.items))]
