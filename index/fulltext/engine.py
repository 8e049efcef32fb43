"""Which search engine a collection's full text is in: Whoosh (``index.fulltext.whooshindex``), the
one engine today. The search (``index.fulltext.query``), its export and the publications lists
open a collection's through ``open_backend`` and ask it only what ``index.fulltext.backend``
declares."""

from __future__ import annotations

from index.collection import Collection
from index.fulltext.backend import SearchBackend
from index.fulltext.whooshindex import WhooshBackend, settle

__all__ = ["open_backend", "settle"]


def open_backend(collection: Collection, private: bool = False) -> SearchBackend | None:
    """The collection's full-text index (None: it has none yet). ``private``: opened for one long
    export in a process that ends with it, its pages released as the rows go out."""
    return WhooshBackend.open(collection, private)
