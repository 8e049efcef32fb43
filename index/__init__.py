"""Everything derived from a collection's WARC files, all rebuildable from them
(``index.capture.rebuild``), in parts ordered from the bottom up (tests/unit/strata/test_layout.py):

- ``collection`` (a collection's directories and lock), ``payload`` (a record's payload, decoded),
  ``revisits`` (where a revisit's payload is: the one rule replay, verify, the calendar, diff and
  the WACZ export follow), ``surtkey`` (the key pywb files a URL under);
- ``collection_meta``: a collection's description (pywb's ``metadata.yaml``);
- ``storage``: the root's backend, the harvest state (SQLite, or Redis for URL state and digests);
- ``integrity``: fixity, record scanners, ``strata verify``;
- ``access``: the access rules, one verdict for every surface, and the listings counted through
  them (collection counts, holdings, a host's site map);
- ``cdx``: CDXJ lines, where a collection's lines are read from, one URL's captures and their calendar;
- ``fulltext``: the search engine behind ``fulltext.backend.SearchBackend``, its fields and facets;
- ``capture``: the capture path (the decision, revisit profiles, recording a capture) and what
  derives captures from WARCs (rebuild, import, seal, run records);
- ``compare`` (two captures, side by side) and ``export`` (WACZ).
"""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "access",
    "capture",
    "cdx",
    "collection",
    "collection_meta",
    "compare",
    "export",
    "fulltext",
    "integrity",
    "payload",
    "revisits",
    "storage",
    "surtkey",
]
