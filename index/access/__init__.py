"""Access rules: who may see which capture, on every surface (replay, search, counts, exports); and
the listings counted as a level sees them (``counts``: collections, sites, runs, holdings;
``sitemap``: a host's URLs one folder at a time)."""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "counts",
    "exposure",
    "rules",
    "sitemap",
]
