"""Holdings that travel: the WACZ package."""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "wacz",
]
