"""A small collection written by warcio (not by Strata) for the diff, lasting-address and banner
tests: one page captured three times in three files (a response, a warcio revisit of it, then an
edited version, now with a viewport ``<meta>``), and embedded resources of which two were first
captured only with the third.

``mixed_archive`` (session) writes the files and derives the indexes with ``index.capture.rebuild``
(each file becomes one run, so one snapshot); ``mixed_server`` serves it with ``strata serve``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from demo.sample_site import SampleSite
from index.capture.rebuild import rebuild_state
from index.collection import Collection
from tests.support.replay_fixtures import StrataServer
from tests.support.warc_makers import Cap, write_warc

SITE = "http://reading.example"
PAGE = SITE + "/"
DATES = ("2024-01-10T09:00:00Z", "2024-02-10T09:00:00Z", "2024-03-10T09:00:00Z")
TIMESTAMPS = ("20240110090000", "20240210090000", "20240310090000")
LATER_EMBEDS = (SITE + "/b.png", SITE + "/style.css")  # first captured with the third file


def page(hours: str, responsive: bool = False) -> bytes:
    viewport = '<meta name="viewport" content="width=device-width, initial-scale=1">' if responsive else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">{viewport}<title>Reading room</title>
<link rel="stylesheet" href="/style.css"></head>
<body><nav><a href="/">Home</a> <a href="/visit.html">Visit</a></nav>
<main><h1>Reading room</h1>
<p>The reading room opens at {hours} every weekday, and readers may order up to ten items a day.</p>
<p>Bring a reader's card.</p>
<p><img src="/a.png" alt="Room" width="96" height="64"> <img src="/b.png" alt="Desk" width="96" height="64"></p>
</main></body></html>""".encode()


@dataclasses.dataclass
class MixedArchive:
    root: Path
    name: str = "mixed"

    @property
    def collection(self) -> Collection:
        return Collection(self.root, self.name)


def write_mixed(root: Path, name: str = "mixed") -> MixedArchive:
    coll = Collection.open(root, name, create=True)
    png = SampleSite.resource(1, "/img/photo.png").body
    first = Cap(PAGE, DATES[0], page("nine"))
    files = (
        [first, Cap(SITE + "/a.png", DATES[0], png, mime="image/png")],
        [Cap(PAGE, DATES[1], first.body, revisit_of=first)],
        [
            Cap(PAGE, DATES[2], page("ten", responsive=True)),  # the site became responsive meanwhile
            Cap(SITE + "/b.png", DATES[2], png, mime="image/png"),
            Cap(
                SITE + "/style.css",
                DATES[2],
                b"main { border-left: 6px solid #4a7; padding-left: 1em; }",
                mime="text/css",
            ),
        ],
    )
    for i, caps in enumerate(files, 1):
        write_warc(coll.archive_dir / f"reading-{i}.warc.gz", caps)
    rebuild_state(coll)
    return MixedArchive(root, name)


@pytest.fixture(scope="session")
def mixed_archive(tmp_path_factory) -> MixedArchive:
    root = tmp_path_factory.mktemp("mixed") / "collections"
    root.mkdir()
    return write_mixed(root)


@pytest.fixture(scope="session")
def mixed_server(mixed_archive):
    server = StrataServer(mixed_archive.root, mixed_archive.root.parent / "strata-serve.log")
    yield server
    server.stop()
