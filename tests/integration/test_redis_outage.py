"""Redis away: the staff console says so (503, one clear line), replay keeps serving what it reads
from the collection's own files, and both are back to normal once Redis is."""

from __future__ import annotations

import lxml.html

from demo.sample_site import SampleSite
from replay import create_app
from tests.conftest import harvest


def test_console_answers_503_with_a_clear_page_while_redis_is_away(redis_server, redis_url, staff, monkeypatch):
    monkeypatch.setenv("STRATA_REDIS", redis_url)
    assert staff.get("/jobs").status_code == 200
    redis_server.stop()
    try:
        page = staff.get("/jobs")
        assert page.status_code == 503
        text = lxml.html.fromstring(page.text).text_content()
        assert f"Redis at redis://127.0.0.1:{redis_server.port}/0 cannot be reached" in text
        assert "Traceback" not in page.text
    finally:
        redis_server.start()
    assert staff.get("/jobs").status_code == 200


def test_replay_serves_from_the_collection_files_while_redis_is_away(root, site, redis_server, redis_url, monkeypatch):
    monkeypatch.setenv("STRATA_REDIS", redis_url)
    run = harvest(root, site)
    redis_server.stop()
    try:
        client = create_app(root).test_client()
        page = client.get(f"/sample/{run['snapshot']}id_/{site.base_url}/")
        assert page.status_code == 200 and page.data == SampleSite.resource(1, "/").body
    finally:
        redis_server.start()
