"""Each collection's last fixity verification (``strata verify``), read from its events log."""

from __future__ import annotations

from pathlib import Path

from index.collection import Collection, list_collections
from index.integrity.fixity import Fixity


def last_verifications(root: Path) -> list[dict]:
    """One row per collection: its name and its last ``verification`` event (None if never)."""
    rows = []
    for name in list_collections(root):
        event = Fixity(Collection(root, name).fixity_dir).last_verification()
        rows.append({"collection": name, "last": event})
    return rows
