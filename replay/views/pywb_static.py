"""pywb's client-side files (wombat.js and friends) at /static/pywb/, as the head insert expects."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, send_from_directory

bp = Blueprint("pywb_static", __name__)

_PYWB_STATIC = None


def _static_dir() -> Path:
    global _PYWB_STATIC
    if _PYWB_STATIC is None:
        import pywb

        _PYWB_STATIC = Path(pywb.__file__).parent / "static"
    return _PYWB_STATIC


@bp.get("/static/pywb/<path:filename>")
def static(filename: str):
    return send_from_directory(_static_dir(), filename, max_age=3600)
