"""The one filter point for captures that leave Strata through its export surfaces.

The CDX API (``/<coll>/cdx``), the WACZ export (``strata export wacz``) and the search export
(``strata search --all``, the search page's download link) ask ``capture_filter`` once per request
or export for a predicate, then call it for every capture they would emit: ``shown(url, timestamp)``
with the archived URL and the capture's 14-digit timestamp. A capture it refuses is left out as if
never archived (a search hit whose captures are all refused is left out; a revisit whose original is
refused is left out of a WACZ with it, so the package stays self-contained).

The predicate is the collection's access rules (``index.access.rules``) for the reader's level: the web
surfaces pass the request's level (``replay.access.level``), the commands the level given with
``--as`` (``public`` unless told otherwise, so that nothing restricted leaves by accident). A
collection whose rules hide nothing from the level gets ``show_all``, which callers may skip.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from index.access.rules import LEVELS, rules_for

__all__ = ["SURFACES", "CaptureFilter", "capture_filter", "show_all"]

CaptureFilter = Callable[[str, str], bool]  # (archived URL, 14-digit timestamp) -> shown?
SURFACES = ("cdx", "wacz", "search-export")


def capture_filter(root: Path, collection: str, surface: str, level: str = "public") -> CaptureFilter:
    """The predicate for ``collection``'s captures on ``surface`` as ``level`` sees them, built once
    per request or export (the rules are read then: a takedown applies from the next one)."""
    if surface not in SURFACES:
        raise ValueError(f"unknown surface {surface!r}")
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}")
    return rules_for(Path(root) / collection).shown_to(level) or show_all


def show_all(url: str, timestamp: str) -> bool:
    """The filter that shows everything; a caller that gets it may skip the per-capture call."""
    return True
