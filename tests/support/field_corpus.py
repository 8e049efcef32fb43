"""Where the field WARC corpus is (WARC and ARC files from other tools, with ``manifest.json``):
not part of the repository, so it is read from ``STRATA_FIELD_WARCS`` or, by default,
``shared/field-warcs`` beside the repository or one level up; tests skip without it."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import REPO


def field_corpus() -> Path | None:
    given = os.environ.get("STRATA_FIELD_WARCS")
    candidates = [Path(given)] if given else [p / "shared" / "field-warcs" for p in (REPO.parent, REPO.parent.parent)]
    return next((p for p in candidates if (p / "manifest.json").is_file()), None)
