"""Origins by authority (``replay.origins``): with a content host, archived content is served there
and nowhere else, Strata's pages everywhere but there, and links go straight to the right host.

One replay application answers three host names, as ``strata serve --content-host`` runs it; the
``archives`` collections are the sample site's harvests."""

from __future__ import annotations

import pytest

from replay import create_app

PAGES = "http://archive.localhost:8080"
CONTENT = "http://content.localhost:8080"


@pytest.fixture
def origins_app(replay_root):
    return create_app(replay_root, {"content_url": CONTENT, "pages_url": PAGES})


def _get(app, base: str, path: str):
    return app.test_client().get(path, base_url=base, environ_base={"REQUEST_URI": path})


def test_replay_addresses_belong_to_the_content_host(origins_app, archives):
    three = archives["three"]
    for mod in ("", "id_", "mp_", "im_"):
        address = f"/three/{three.snapshots[-1]}{mod}/{three.url('/')}"
        moved = _get(origins_app, PAGES, address)
        assert moved.status_code == 302 and moved.headers["Location"] == CONTENT + address, mod
        served = _get(origins_app, CONTENT, address)
        assert served.status_code == 200 and "Content-Security-Policy" in served.headers, mod
    timegate = f"/three/{three.url('/')}"
    assert _get(origins_app, PAGES, timegate).headers["Location"] == CONTENT + timegate


def test_the_content_host_holds_nothing_else(origins_app, archives):
    three = archives["three"]
    for path in ("/", "/three/", "/search?q=x", "/api/search?q=x", f"/three/*/{three.url('/')}"):
        response = _get(origins_app, CONTENT, path)
        assert response.status_code == 302 and response.headers["Location"] == PAGES + path, path
    assert _get(origins_app, CONTENT, "/static/pywb/wombat.js").status_code == 200
    calendar = _get(origins_app, PAGES, f"/three/*/{three.url('/')}")
    assert calendar.status_code == 200
    assert f'href="{CONTENT}/three/' in calendar.text  # straight to the content host, no extra hop


def test_the_banner_links_back_to_the_pages_host(origins_app, archives):
    three = archives["three"]
    page = _get(origins_app, CONTENT, f"/three/{three.snapshots[-1]}/{three.url('/')}").text
    assert f"{PAGES}/three/" in page and f"{PAGES}/" in page


def test_the_content_host_is_public_whatever_the_client(replay_root):
    settings = {"content_url": CONTENT, "pages_url": PAGES, "reading_room": ["127.0.0.0/8"]}
    policy = create_app(replay_root, {**settings, "reading_room_hosts": ["room.localhost"]}).extensions["strata_access"]
    here = {"REMOTE_ADDR": "127.0.0.1"}  # a reading-room client
    assert policy.resolve({"HTTP_HOST": "content.localhost:8080", **here}, {}).level == "public"
    assert policy.resolve({"HTTP_HOST": "archive.localhost:8080", **here}, {}).level == "public"
    assert policy.resolve({"HTTP_HOST": "room.localhost:8080", **here}, {}).level == "reading-room"
    # one host for pages and the reading room (no reading_room_hosts): by client range, not on content
    single = create_app(replay_root, settings).extensions["strata_access"]
    assert single.resolve({"HTTP_HOST": "archive.localhost:8080", **here}, {}).level == "reading-room"
    assert single.resolve({"HTTP_HOST": "content.localhost:8080", **here}, {}).level == "public"
