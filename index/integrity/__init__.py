"""Fixity and verification: the BagIt manifest and its log, the record scanner (``recordscan``: every
record's digests checked, where a file stops being whole, one record at an offset; ARC files through
warcio's reader, ``arcscan``), `strata verify` (``verify``) and its quick check of the manifest
against each file's ingest (``fixitycheck``, which reads no WARC)."""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "fixity",
    "fixitycheck",
    "recordscan",
    "verify",
]
