"""Access rules in search: a word only on a hidden page finds nothing, is counted nowhere and quoted
nowhere, for each level; the search page and the JSON API agree; takedowns apply at the next query."""

from __future__ import annotations

import re
import shutil

import pytest

from index.access.rules import AccessRules, Rule
from index.fulltext.query import SearchParams, search
from tests.support.access_fixtures import MARKERS, PROXY, RESTRICTED
from tests.support.search_fixtures import copy_collection

LEVELS = ("public", "reading-room", "staff")
ENVIRON = {
    "public": {"REMOTE_ADDR": "198.51.100.7"},
    "reading-room": {"REMOTE_ADDR": "10.20.1.5"},
    "spoofed": {"REMOTE_ADDR": "198.51.100.7", "HTTP_X_FORWARDED_FOR": "10.20.1.5"},
    "proxied": {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "10.20.1.5"},
    "acl-user": {"REMOTE_ADDR": "198.51.100.7", "HTTP_X_PYWB_ACL_USER": "staff"},
}
LEVEL_OF = {"public": "public", "reading-room": "reading-room", "spoofed": "public", "proxied": "reading-room"}
LEVEL_OF["acl-user"] = "public"


def _facet_total(result: dict) -> int:
    return sum(b["count"] for facet in result["facets"].values() for b in facet) + sum(
        b["count"] for b in result["histogram"]["buckets"]
    )


@pytest.mark.parametrize("level", LEVELS)
def test_a_word_only_on_a_hidden_page_finds_nothing(ruled, level):
    for word, allowed in MARKERS.items():
        visible = allowed[LEVELS.index(level)]
        result = search(ruled.root, SearchParams(q=word, collections=[ruled.name]), access_level=level)
        if visible:
            assert result["hits"], (word, level)
            continue
        assert result["hits"] == [] and result["total_urls"] == 0 and result["total_documents"] == 0, word
        assert _facet_total(result) == 0, word
    # unfiltered (the operator's command line), every marker is found: the test can fail
    for word in MARKERS:
        assert search(ruled.root, SearchParams(q=word, collections=[ruled.name]))["hits"], word


@pytest.mark.parametrize("level", LEVELS)
def test_a_common_word_lists_counts_and_quotes_only_visible_pages(ruled, level):
    from index.access.rules import rules_for

    rules = rules_for(ruled.root / ruled.name)
    result = search(ruled.root, SearchParams(q="sample", collections=[ruled.name], per_page=100), access_level=level)
    everything = search(ruled.root, SearchParams(q="sample", collections=[ruled.name], per_page=100))
    assert everything["total_urls"] > result["total_urls"] > 0
    for hit in result["hits"]:
        assert hit["captures"] and all(rules.visible(hit["url"], ts, level) for ts in hit["captures"]), hit["url"]
        hidden_words = [w for w, ok in MARKERS.items() if not ok[LEVELS.index(level)]]
        assert not any(w in (hit["snippet"] + hit["title"]).lower() for w in hidden_words)
    stamps = sum(len(h["captures"]) for h in result["hits"])
    assert sum(b["count"] for b in result["histogram"]["buckets"]) == stamps
    assert sum(b["count"] for b in result["facets"]["year"]) <= stamps
    assert sum(b["count"] for b in result["facets"]["site"]) == result["total_urls"]
    assert result["total_documents"] >= result["total_urls"]


@pytest.mark.parametrize("kind", list(ENVIRON))
def test_search_page_and_api_as_each_client(access_app, ruled, kind):
    level = LEVEL_OF[kind]
    client = access_app.test_client()
    for word, allowed in MARKERS.items():
        visible = allowed[LEVELS.index(level)]
        api = client.get(f"/api/search?q={word}&c={ruled.name}", environ_base=ENVIRON[kind]).get_json()
        assert bool(api["hits"]) == visible, (word, kind)
        page = client.get(f"/search?q={word}&c={ruled.name}", environ_base=ENVIRON[kind]).get_data(as_text=True)
        if not visible:
            assert api["total_urls"] == 0 and _facet_total(api) == 0
            assert not re.search(r'class="hit', page) and f"<mark>{word}</mark>" not in page, (word, kind)


def test_search_as_staff_on_the_restricted_host(access_app, ruled):
    from replay.access_grants import COOKIE, ENTRY_PATH, Grants

    client = access_app.test_client()
    token = Grants(ruled.root).issue("tester", RESTRICTED)
    client.get(f"{ENTRY_PATH}?token={token}", headers={"Host": RESTRICTED})
    api = client.get(f"/api/search?q=mkgallery&c={ruled.name}", headers={"Host": RESTRICTED}).get_json()
    assert api["hits"] and api["hits"][0]["url"].endswith("/gallery.html")
    client.delete_cookie(COOKIE, domain=RESTRICTED)
    assert client.get(f"/api/search?q=mkgallery&c={ruled.name}", headers={"Host": RESTRICTED}).status_code == 403


def test_a_takedown_applies_to_the_next_search(ruled, tmp_path):
    copy = copy_collection(ruled, tmp_path / "collections", "takedown")
    shutil.rmtree(copy.root / "takedown" / "acl")  # no rules: everything public
    params = SearchParams(q="mkguide", collections=["takedown"])
    assert search(copy.root, params, access_level="public")["hits"]
    rules = AccessRules(copy.root / "takedown")
    rule = rules.add(Rule.new(ruled.url("/docs/guide.html"), "exclude", reason="request 42", by="tester"))
    assert search(copy.root, params, access_level="public")["hits"] == []
    rules.remove(rule.id, "tester", "request withdrawn")
    assert search(copy.root, params, access_level="public")["hits"]


def test_a_date_condition_hides_some_captures_of_a_document(searched, tmp_path):
    """pywb's ``before`` condition on a page captured in every run: the captures before the second
    run are hidden, the later ones found; each range counts only what it may show."""
    copy = copy_collection(searched, tmp_path / "collections", "dated")
    second_start, _ = searched.window(2)
    key = Rule.new(searched.base_url + "/docs/guide.html", "block").keys[0]
    acl = copy.root / "dated" / "acl"
    acl.mkdir()
    (acl / "rules.aclj").write_text(f'{key} - {{"access": "block", "before": "{second_start}"}}\n')
    found = search(copy.root, SearchParams(q="mkguide", collections=["dated"]), access_level="public")
    everything = search(copy.root, SearchParams(q="mkguide", collections=["dated"]))
    assert found["hits"] and everything["hits"]
    assert all(ts >= second_start for ts in found["hits"][0]["captures"])
    assert len(found["hits"][0]["captures"]) < len(everything["hits"][0]["captures"])
    assert sum(b["count"] for b in found["histogram"]["buckets"]) == len(found["hits"][0]["captures"])
    first = searched.window(1)
    hidden = search(
        copy.root,
        SearchParams(q="mkguide", collections=["dated"], date_from=first[0], date_to=first[1]),
        access_level="public",
    )
    assert hidden["hits"] == [] and hidden["total_documents"] == 0 and _facet_total(hidden) == 0
