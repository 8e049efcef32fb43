"""Fixtures for the access-control tests: a copy of the searched collection (real harvests of the
sample site, versions 1 to 3, full-text indexed) under rules of every kind, and the replay
application configured with a reading room, a trusted proxy and a restricted host.

``ruled`` rules (``RULES``): one URL blocked (``/contact.html``), one URL excluded (``/about.html``,
which ``/old-about`` redirects to), a prefix blocked (``/docs/``) with a more specific URL in it
allowed (``/docs/guide.html``), a reading-room prefix (``/news/page/``), a staff-only page
(``/gallery.html``, excluded for others), an embargo (``/news/article*`` newer than a year, staff
only) and a blocked embedded resource (``/img/``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from index.access.rules import AccessRules, Rule
from tests.support.search_fixtures import copy_collection

NAME = "ruled"
READING_ROOM = "10.20.0.0/16"
PROXY = "192.0.2.1"
RESTRICTED = "restricted.localhost"
RULES = (
    ("/contact.html", "block", None, None),
    ("/about.html", "exclude", None, None),
    ("/docs/", "block", None, None),
    ("/docs/guide.html", "allow", None, None),
    ("/news/page/", "allow", "reading-room", None),
    ("/gallery.html", "exclude", "staff", None),
    ("/news/article*", "block", "staff", "1y"),
    ("/img/", "block", None, None),
)
# path -> what (public, reading-room, staff) get on replay
EXPECTED = {
    "/": (200, 200, 200),
    "/contact.html": (451, 451, 451),
    "/about.html": (404, 404, 404),
    "/docs/": (451, 451, 451),
    "/docs/guide.html": (200, 200, 200),
    "/news/page/2.html": (451, 200, 200),
    "/gallery.html": (404, 404, 200),
    "/news/article-0001.html": (451, 451, 200),
    "/img/logo.png": (451, 451, 451),
}
# a word only on that page, and who may find it
MARKERS = {
    "mkcontact": (False, False, False),
    "mkabout": (False, False, False),
    "mkdocs": (False, False, False),
    "mkguide": (True, True, True),
    "mknewstwo": (False, True, True),
    "mkgallery": (False, False, True),
    "mkhome": (True, True, True),
}


@dataclasses.dataclass
class Ruled:
    root: Path
    name: str
    base_url: str
    snapshot: str  # the last run's snapshot
    rules: dict[str, Rule]

    def url(self, path: str) -> str:
        return self.base_url + path


_KEY = pytest.StashKey[Ruled]()


@pytest.fixture
def ruled(request, searched, tmp_path_factory) -> Ruled:
    store = request.config.stash
    if _KEY not in store:
        root = tmp_path_factory.mktemp("access") / "collections"
        copy = copy_collection(searched, root, NAME)
        acl = AccessRules(root / NAME)
        rules = {}
        for path, access, level, embargo in RULES:
            rule = Rule.new(copy.base_url + path, access, level, embargo, reason=f"test {path}", by="tester")
            rules[path] = acl.add(rule)
        store[_KEY] = Ruled(root, NAME, copy.base_url, searched.runs[-1]["snapshot"], rules)
    return store[_KEY]


@pytest.fixture
def access_app(ruled):
    from replay import create_app

    return create_app(
        ruled.root,
        {"reading_room": [READING_ROOM], "trusted_proxies": [PROXY], "restricted_hosts": [RESTRICTED]},
    )
