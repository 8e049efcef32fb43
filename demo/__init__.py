"""The demo's sample site and the small HTTP server that serves it (and the benchmarks' generated sites)."""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "sample_site",
    "site_server",
]
