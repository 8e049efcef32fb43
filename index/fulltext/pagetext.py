"""What full-text search holds for a capture: its page's title and main text, by URL and payload
digest (the document's key). The WACZ export's ``pages.jsonl`` takes each page's title and text from
here, so whatever the index holds for a capture (the payload's text today; a browser capture's
rendered text when such captures are indexed) reaches other replayers without the export changing.
"""

from __future__ import annotations

from index.collection import Collection
from index.fulltext.documents import IndexUnusable
from index.fulltext.matching import IndexView

__all__ = ["PageTexts"]


class PageTexts:
    """Titles and main texts of a collection's indexed payloads; empty when it has no usable index."""

    def __init__(self, collection: Collection):
        try:
            self.view: IndexView | None = IndexView(collection, populate=False)
        except (FileNotFoundError, IndexUnusable):
            self.view = None

    @property
    def indexed(self) -> bool:
        return self.view is not None

    def get(self, url: str, digest: str | None) -> tuple[str, str] | None:
        """(title, main text) of the payload ``digest`` (base32, with or without ``sha1:``) as
        captured at ``url``; None when the index does not hold it."""
        if self.view is None or not digest or digest == "-":
            return None
        bare = digest.split(":", 1)[-1]
        keys = [f"{url} sha1:{bare}", f"{url} {bare}"]
        found = self.view.docnums(keys)
        docnum = next((found[k] for k in keys if k in found), None)
        if docnum is None or docnum >= self.view.count:
            return None
        title, _, _, text, _ = self.view.texts(docnum)
        return title, text

    def close(self) -> None:
        if self.view is not None:
            self.view.release_pages()
            self.view.close()
