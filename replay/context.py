"""What ``create_app`` built (settings, collections, engine), reached from inside a request."""

from __future__ import annotations

from flask import current_app

EXTENSION = "strata_replay"


def ext() -> dict:
    return current_app.extensions[EXTENSION]
