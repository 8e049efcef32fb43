"""Strata: an incremental web archive (harvest, index, replay, search).

``strata.settings`` holds the one table of job settings, ``strata.errors`` the exception
hierarchy; ``demo.site_server`` serves a content model over HTTP/1.1 on 127.0.0.1 and
``demo.sample_site`` is the versioned fixture site that the quick start and the tests harvest.
"""

__version__ = "0.1.0"

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "__version__",
    "charset",
    "errors",
    "eventloop",
    "media",
    "pageuris",
    "ports",
    "public_suffix",
    "query_encoding",
    "regex",
    "settings",
    "times",
    "urls",
]
