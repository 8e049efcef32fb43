"""What ``create_app`` built (settings, collections, engine), reached from inside a request."""

from __future__ import annotations

from flask import current_app

EXTENSION = "strata_replay"


def ext() -> dict:
    return current_app.extensions[EXTENSION]


def public(message: str) -> str:
    """``message`` as a reader may see it (``replay.errors.public_message``: no server path)."""
    from replay.errors import public_message

    replay = current_app.extensions.get(EXTENSION)
    root = replay["collections"].root if replay is not None else current_app.config.get("STRATA_ROOT")
    return public_message(message, root)
