"""What the replay application reports to a reader, rendered by one handler (``views/errors.py``).

    StrataError (strata.errors)
     └── ReplayError              a replay address that leads nowhere         (HTTP 404)
          ├── UnknownCollection   no such collection under the root
          ├── BadAddress          malformed timestamp, modifier or URL
          ├── NotArchived         the URL has no capture in the collection (nearby URLs offered)
          ├── CaptureDeleted      the capture as of the time asked is a recorded deletion
          └── CaptureDamaged      the capture's record fails its digests (HTTP 502): nothing of it is sent

pywb's own ``WbException`` (e.g. an archive file that cannot be read: 503) is rendered by the same
handler with its status. Anything else becomes a plain 500 page, never a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

from strata.errors import StrataError


def public_message(message: str, root: Path | str | None) -> str:
    """A message fit for any reader: the collections root's place on the server (as given, absolute
    or resolved) never appears in a page or an API answer."""
    if root is None:
        return message
    forms = {str(root), os.path.abspath(root), str(Path(root).resolve())}
    for form in sorted(forms, key=len, reverse=True):
        if len(form) > 1 and form in message:
            message = message.replace(form, "the archive")
    return message


class ReplayError(StrataError):
    http_status = 404
    template = "errors/not_found.html"

    def context(self) -> dict:
        return {}


class UnknownCollection(ReplayError):
    template = "errors/unknown_collection.html"

    def __init__(self, name: str, known: list[str]):
        super().__init__(f"There is no collection named {name!r}.")
        self.name, self.known = name, known

    def context(self) -> dict:
        return {"name": self.name, "known": self.known}


class BadAddress(ReplayError):
    template = "errors/bad_address.html"

    def __init__(self, coll: str, message: str, hint: str):
        super().__init__(message)
        self.coll, self.hint = coll, hint

    def context(self) -> dict:
        return {"coll": self.coll, "hint": self.hint}


class NotArchived(ReplayError):
    template = "errors/not_archived.html"

    def __init__(self, coll: str, url: str, timestamp: str | None, nearby: list[dict], later: list | None = None):
        super().__init__(f"{url} is not in the archive of {coll}" + (" at or before that time." if later else "."))
        self.coll, self.url, self.timestamp, self.nearby, self.later = coll, url, timestamp, nearby, later or []

    def context(self) -> dict:
        return {
            "coll": self.coll,
            "url": self.url,
            "timestamp": self.timestamp,
            "nearby": self.nearby,
            "later": self.later,
        }


class CaptureDeleted(ReplayError):
    template = "replay/deleted.html"

    def __init__(self, coll: str, deletion):
        super().__init__(f"{deletion.url} was removed from the live site before {deletion.removed_seen}.")
        self.coll, self.deletion = coll, deletion

    def context(self) -> dict:
        return {"coll": self.coll, "deletion": self.deletion}


class CaptureDamaged(ReplayError):
    """The record chosen for the address does not read back whole (``index.integrity.recordscan``): the page says
    so and names nothing of its content; pywb's fallback to another capture is not taken."""

    http_status = 502
    template = "errors/damaged.html"

    def __init__(self, coll: str, url: str):
        super().__init__(f"This capture of {url} is damaged in the archive.")
        self.coll, self.url = coll, url

    def context(self) -> dict:
        return {"coll": self.coll, "url": self.url}
