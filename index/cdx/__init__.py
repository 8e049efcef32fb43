"""The CDXJ index and what reads it: pywb's lines (keyed by ``index.surtkey``), where a collection's
lines are read from (files or Redis), one URL's captures and their calendar, permanent capture
ids; lines sorted on disk (``extsort``, for the rebuild and the WACZ export)."""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "capture_calendar",
    "capture_index",
    "cdxj",
    "extsort",
    "pid",
    "redis_cdx",
    "versions",
]
