"""Fixity and verification: the BagIt manifest and its log, record scanners that find where a file
stops being whole and check every record's digests, `strata verify`."""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "digestscan",
    "fixity",
    "verify",
    "warcscan",
]
