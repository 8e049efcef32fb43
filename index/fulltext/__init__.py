"""The full-text engine: the collection's Whoosh index, one document per distinct payload of a URL.

A document is keyed ``(url, payload digest)`` and holds the payload's text and metadata; the
timestamps at which that payload was captured (the response that stored it and every later revisit,
identical payload or ``304 Not Modified``) are rows of ``index.fulltext.captures`` beside it, keyed
by the document's Whoosh number (the Whoosh engine's own store: ``whooshindex``). A date-range query
therefore finds an unchanged page at every harvest in the range, and a harvest that finds a page
unchanged adds a row, not a document.

The text is indexed by ``index.fulltext.postings`` (Whoosh segments whose posting lists are written and
read as arrays) in one field, ``content``: the words and CJK bigrams of the title (weight 3),
meta description and keywords (1.5) and body (1), no positions. The four texts are kept in one
column, ``parts`` (UTF-8, uncompressed: phrases are checked on the bytes of the candidates ranked;
compressing it cost indexing 5% and each check a decompression), for snippets and phrases.

Two ways in, one writer at a time (``fulltext.lock`` beside the index, then Whoosh's own lock):

- ``index_run(collection, run_id)``, at the end of each harvest run: reads the run's captures from
  the harvest state, parses only payloads the index does not hold under that URL (a payload
  already indexed under another URL is copied from its document), appends their documents, and
  adds every capture's row. Its cost follows the new payloads, not the unchanged ones. It also
  catches up runs the index has not seen (a crash before indexing) and is idempotent: a run
  whose captures are in is recorded in ``captures.runs``, committed with them.
- ``rebuild(collection, progress)``, from the WARC files alone: a first pass reads record headers
  (which keys exist, all their timestamps, where each payload is stored), a second reads and parses
  each payload once, into a new directory that replaces the old one by rename. A crash leaves the
  old index in place.

Whoosh commits by renaming a new table of contents over the old one, so a killed process leaves
the previous commit readable; the captures are committed after it (``index.fulltext.captures`` says how
a crash between the two is caught up). After a power loss segment files may be torn:
``open_index`` checks what it opens, and ``index_run`` rebuilds from the WARCs when the index is
missing, of an older format, or fails to open or to update.

The search asks an engine only what ``backend.SearchBackend`` declares, keyed by URL and capture
timestamps: the Whoosh engine (``whooshindex``) keeps its document numbers to itself, so another
engine could sit behind the same search, export and publications (``engine.open_backend``).

Modules, from the bottom up: ``fields`` (the search's declared fields and facets), ``cjk``
(analysis), ``text`` (text extraction from payloads), ``postings`` and ``mapfile`` (segments as
arrays, memory-mapped), ``captures`` (capture dates as rows), ``documents`` (schema, one document),
``store`` (open, check, lock), ``payloads``, ``rebuild`` and ``update`` (the two ways in),
``matching``, ``filters``, ``params`` (the query language, ``SearchParams``), ``access``, ``backend``,
``whooshindex`` and ``engine`` (the engine behind the seam), ``snippets``, ``query``, ``export``
and ``publications`` (the ways out). Import from the module itself: importing the package imports
nothing.
"""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "export",
    "fields",
    "followproc",
    "pagetext",
    "params",
    "publications",
    "query",
    "rebuild",
    "text",
    "update",
]
