"""Blueprints, one per area of the site: home, collection, replay (with the calendar), pywb's static
files, and the one error handler."""

from __future__ import annotations

from flask import current_app


def ext() -> dict:
    """What ``create_app`` built: settings, collections, engine."""
    from replay.app import EXTENSION

    return current_app.extensions[EXTENSION]
