"""Blueprints, one per area of the site: home, collection, replay (with the calendar), pywb's static
files, and the one error handler."""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "capture_api",
    "cdx",
    "changes",
    "collection",
    "diff",
    "errors",
    "holdings",
    "home",
    "lasting",
    "publications",
    "pywb_static",
    "replay",
    "sitemap",
]
