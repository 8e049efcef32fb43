"""Revisit profiles: what a ``revisit`` record's ``WARC-Profile`` says, declared once.

A profile is known by its URIs (WARC 1.1's first: the one Strata writes; then the ones other tools
write: WARC 1.0's, the 0.18 draft's) and says what the revisit means for its capture:

- ``identical-payload-digest``: the payload was identical to an earlier record's; the revisit
  keeps the HTTP headers it was answered with, and its status is theirs.
- ``server-not-modified``: the server answered ``304 Not Modified`` to a conditional request; the
  revisit holds no HTTP message, the capture's status is 304, and replay shows the original's.
- ``uri-agnostic-identical-payload-digest`` (Heritrix): as ``identical-payload-digest``, the
  original being any URL's.

``profile_of(uri)`` finds a profile by an exact URI. A URI no profile lists is read as
``identical-payload-digest`` (``UNKNOWN``), as pywb replays one. A new profile is one declaration in
``PROFILES`` and its tests: the harvest writes a profile's ``uri``, the rebuild and the decision
ask ``profile_of``.
"""

from __future__ import annotations

import dataclasses

_WARC = "http://netpreserve.org/warc/"


@dataclasses.dataclass(frozen=True)
class RevisitProfile:
    name: str
    uris: tuple[str, ...]  # the first is the one Strata writes
    not_modified: bool = False  # a 304: no HTTP message of its own; the capture's status is 304

    @property
    def uri(self) -> str:
        return self.uris[0]


IDENTICAL_PAYLOAD = RevisitProfile(
    "identical-payload-digest",
    tuple(f"{_WARC}{version}/revisit/identical-payload-digest" for version in ("1.1", "1.0", "0.18")),
)
SERVER_NOT_MODIFIED = RevisitProfile(
    "server-not-modified",
    tuple(f"{_WARC}{version}/revisit/server-not-modified" for version in ("1.1", "1.0", "0.18")),
    not_modified=True,
)
URI_AGNOSTIC = RevisitProfile(
    "uri-agnostic-identical-payload-digest", (f"{_WARC}1.0/revisit/uri-agnostic-identical-payload-digest",)
)
PROFILES = (IDENTICAL_PAYLOAD, SERVER_NOT_MODIFIED, URI_AGNOSTIC)
UNKNOWN = IDENTICAL_PAYLOAD

_BY_URI = {uri: profile for profile in PROFILES for uri in profile.uris}


def profile_of(uri: str | None) -> RevisitProfile:
    """The profile a ``WARC-Profile`` names (``UNKNOWN`` for one no profile lists, or none)."""
    return _BY_URI.get((uri or "").strip(), UNKNOWN)
