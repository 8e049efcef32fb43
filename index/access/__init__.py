"""Access rules: who may see which capture, on every surface (replay, search, counts, exports)."""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "counts",
    "exposure",
    "rules",
]
