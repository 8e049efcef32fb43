"""An unmodified pywb given the same ``.aclj`` file with ``acl_paths`` blocks what Strata blocks.

pywb's ``wayback`` (its own server, warcserver and access checker) replays a copy of the ruled
collection configured with ``acl_paths: [rules/rules.aclj]``, the file Strata wrote, moved out of the
collection. Without a user it must answer every path as Strata answers the public (451, 404 or a
capture), dates (the embargo) included: it fails closed on every line it reads. With
``X-Pywb-ACL-User`` (which pywb takes from the client, and Strata never does), pywb grants what
Strata grants that level.
"""

from __future__ import annotations

import httpx

from tests.support.access_fixtures import EXPECTED
from tests.support.search_fixtures import copy_collection

CONFIG = """\
collections:
  ruled:
    index_paths: ./collections/ruled/indexes/
    archive_paths: ./collections/ruled/archive/
    acl_paths:
      - ./rules/rules.aclj
"""


def _status(response: httpx.Response) -> int:
    return 200 if response.status_code in (200, 301, 302) else response.status_code


def test_unmodified_pywb_enforces_the_same_files(ruled, tmp_path, wayback_factory):
    root = tmp_path / "peer" / "collections"
    copy_collection(ruled, root, "ruled")
    # the file Strata wrote, moved out of the collection: pywb finds it only through acl_paths
    (root.parent / "rules").mkdir()
    (root / "ruled" / "acl" / "rules.aclj").rename(root.parent / "rules" / "rules.aclj")
    (root.parent / "config.yaml").write_text(CONFIG)
    wayback = wayback_factory(root)
    got, strata_public = {}, {}
    with httpx.Client(base_url=wayback.base_url, timeout=30, follow_redirects=False) as client:
        for path, (public, reading_room, staff) in EXPECTED.items():
            address = f"/ruled/{ruled.snapshot}id_/{ruled.url(path)}"
            got[path] = _status(client.get(address))
            strata_public[path] = public
            as_reading_room = _status(client.get(address, headers={"X-Pywb-ACL-User": "reading-room"}))
            as_staff = _status(client.get(address, headers={"X-Pywb-ACL-User": "staff"}))
            assert (as_reading_room, as_staff) == (reading_room, staff), path
        assert got == strata_public
        # pywb's own listing of the host leaves out what it excludes (and lists blocked ones, which Strata does not)
        listing = client.get(f"/ruled/timemap/json/{ruled.url('/about.html')}")
        assert ruled.url("/about.html").encode() not in listing.content
