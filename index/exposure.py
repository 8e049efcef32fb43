"""The one filter point for captures that leave Strata through its export surfaces.

The CDX API (``/<coll>/cdx``), the WACZ export (``strata export wacz``) and the search export
(``strata search --all``, the search page's download link) ask ``capture_filter`` once per request
or export for a predicate, then call it for every capture they would emit: ``shown(url, timestamp)``
with the archived URL and the capture's 14-digit timestamp. A capture it refuses is left out as if
never archived (a search hit whose captures are all refused is left out; a revisit whose original is
refused is left out of a WACZ with it, so the package stays self-contained).

Today every capture is shown. Access rules (per URL prefix, embargo dates, the reader's role) are
wired in here and nowhere else: ``surface`` says which surface asks (``SURFACES``), so a rule can
differ between, say, a public CDX API and a staff export.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

__all__ = ["SURFACES", "CaptureFilter", "capture_filter", "show_all"]

CaptureFilter = Callable[[str, str], bool]  # (archived URL, 14-digit timestamp) -> shown?
SURFACES = ("cdx", "wacz", "search-export")


def capture_filter(root: Path, collection: str, surface: str) -> CaptureFilter:
    """The predicate for ``collection``'s captures on ``surface``, built once per request or export."""
    if surface not in SURFACES:
        raise ValueError(f"unknown surface {surface!r}")
    return show_all


def show_all(url: str, timestamp: str) -> bool:
    """The filter that shows everything; a caller that gets it may skip the per-capture call."""
    return True
