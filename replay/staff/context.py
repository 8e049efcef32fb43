"""What ``create_staff_app`` built (root, settings, network policy), reached from inside a request."""

from __future__ import annotations

from flask import current_app

EXTENSION = "strata_staff"


def ext() -> dict:
    return current_app.extensions[EXTENSION]
