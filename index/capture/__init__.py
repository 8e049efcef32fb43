"""The capture path: the one decision a capture is given (``decision``, its revisit ``profiles``),
the one function that records it (``record``), and what derives captures from WARC files (rebuild
and import, from one read of each file: ``filefacts``; run records, sealing a file) or copies what
was derived to another backend (``backendcopy``)."""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "backendcopy",
    "decision",
    "importing",
    "profiles",
    "rebuild",
    "record",
    "runhistory",
    "seal",
]
