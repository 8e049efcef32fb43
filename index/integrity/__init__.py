"""Fixity and verification: the BagIt manifest and its log, record scanners that find where a file
stops being whole and check every record's digests, `strata verify` (``verify``) and its quick
check of the manifest against each file's ingest (``fixitycheck``, which reads no WARC)."""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "fixity",
    "fixitycheck",
    "recordscan",
    "verify",
    "warcscan",
]
