"""Access rules on every replay surface, requested as each kind of client.

The collection (``tests.support.access_fixtures``) holds real harvests of the sample site under rules
of every kind; each surface is asked as the public, from the reading room, with a spoofed
``X-Forwarded-For`` from a non-proxy address, through the trusted proxy, with ``X-Pywb-ACL-User`` set
by the client, and as staff on the restricted host. Every answer must be what the rules say, and
nothing hidden may be named or counted anywhere (leaks: 0).
"""

from __future__ import annotations

import re
import shutil

import pytest

from replay.access_grants import COOKIE, ENTRY_PATH, Grants
from tests.support.access_fixtures import EXPECTED, PROXY, RESTRICTED

LEVEL_INDEX = {"public": 0, "reading-room": 1, "staff": 2}
MODIFIERS = ("", "id_", "im_", "js_", "cs_", "if_", "mp_", "fr_")
FULL = ("public", "reading-room", "staff")  # every modifier; the other kinds of client: "" and id_


def staff_cookie(app, root) -> str:
    """A restricted-host cookie got the way a browser gets it: a grant's entry token, used once."""
    token = Grants(root).issue("tester", RESTRICTED)
    client = app.test_client()
    response = client.get(f"{ENTRY_PATH}?token={token}&next=/", headers={"Host": RESTRICTED})
    assert response.status_code == 200, response.data[:300]
    cookie = client.get_cookie(COOKIE, domain=RESTRICTED)
    assert cookie is not None and cookie.http_only and cookie.same_site == "Strict"
    return cookie.value


# client kind -> (the level it must get, how the request is made)
CLIENTS = {
    "public": ("public", {"REMOTE_ADDR": "198.51.100.7"}, {}),
    "reading-room": ("reading-room", {"REMOTE_ADDR": "10.20.1.5"}, {}),
    "spoofed-xff": ("public", {"REMOTE_ADDR": "198.51.100.7"}, {"X-Forwarded-For": "10.20.1.5"}),
    "via-proxy": ("reading-room", {"REMOTE_ADDR": PROXY}, {"X-Forwarded-For": "10.20.1.5"}),
    "proxy-chain-spoof": ("public", {"REMOTE_ADDR": PROXY}, {"X-Forwarded-For": "10.20.1.5, 198.51.100.7"}),
    "acl-user-header": ("public", {"REMOTE_ADDR": "198.51.100.7"}, {"X-Pywb-ACL-User": "staff"}),
    "staff": ("staff", {"REMOTE_ADDR": "198.51.100.7"}, {"Host": RESTRICTED}),
    "staff-cookie-on-public-host": ("public", {"REMOTE_ADDR": "198.51.100.7"}, {}),
}


@pytest.fixture
def request_as(access_app, ruled):
    cookie = None

    def get(kind: str, path: str, **kwargs):
        nonlocal cookie
        _, environ, headers = CLIENTS[kind]
        headers = {**headers, **kwargs.pop("headers", {})}
        client = access_app.test_client()
        if kind in ("staff", "staff-cookie-on-public-host"):
            cookie = cookie or staff_cookie(access_app, ruled.root)
            client.set_cookie(COOKIE, cookie, domain=RESTRICTED if kind == "staff" else "localhost")
        return client.get(path, headers=headers, environ_base=environ, **kwargs)

    return get


def expected_status(kind: str, path: str) -> int:
    return EXPECTED[path][LEVEL_INDEX[CLIENTS[kind][0]]]


@pytest.mark.parametrize("kind", list(CLIENTS))
def test_replay_every_modifier_answers_as_the_rules_say(request_as, ruled, kind):
    wrong = []
    for path in EXPECTED:
        want = expected_status(kind, path)
        for mod in MODIFIERS if kind in FULL else ("", "id_"):
            response = request_as(kind, f"/{ruled.name}/{ruled.snapshot}{mod}/{ruled.url(path)}")
            got = response.status_code
            # a visible capture may answer with its own archived redirect; hidden ones never do
            if (want == 200 and got not in (200, 301, 302)) or (want != 200 and got != want):
                wrong.append((path, mod, got, want))
            if want == 451:
                assert b"mk" not in response.data, "a 451 notice names no content"
    assert wrong == []


@pytest.mark.parametrize("kind", ["public", "reading-room", "staff", "acl-user-header", "spoofed-xff"])
def test_timegate_and_timemaps(request_as, ruled, kind):
    never = ruled.url("/never-archived.html")
    for path in EXPECTED:
        want = expected_status(kind, path)
        url = ruled.url(path)
        gate = request_as(kind, f"/{ruled.name}/{url}")
        assert (gate.status_code in (200, 302)) if want == 200 else gate.status_code == want, (path, gate.status_code)
        for fmt in ("link", "json", "cdxj"):
            shown = request_as(kind, f"/{ruled.name}/timemap/{fmt}/{url}")
            absent = request_as(kind, f"/{ruled.name}/timemap/{fmt}/{never}")
            if want == 200:
                assert shown.status_code == 200 and ruled.snapshot[:8].encode() in shown.data, (path, fmt)
            else:  # blocked or excluded: the TimeMap of a URL never archived, status and body
                assert shown.status_code == absent.status_code, (path, fmt)
                assert shown.data.replace(url.encode(), b"U") == absent.data.replace(never.encode(), b"U")


@pytest.mark.parametrize("kind", ["public", "reading-room", "staff", "via-proxy", "acl-user-header"])
def test_calendar_and_capture_api(request_as, ruled, kind):
    for path in EXPECTED:
        want = expected_status(kind, path)
        url = ruled.url(path)
        calendar = request_as(kind, f"/{ruled.name}/*/{url}")
        api = request_as(kind, f"/api/captures/{ruled.name}/{url}")
        if want == 200:
            assert calendar.status_code == 200 and api.status_code == 200, path
            assert api.get_json()["captures"]
        else:
            assert calendar.status_code == 404 and api.status_code == 404, path


def _listed_paths(ruled, html: str) -> set[str]:
    """Archived URLs a page links to (the URL asked for may be echoed as text; links name captures)."""
    return set(re.findall(r'href="[^"]*?' + re.escape(ruled.base_url) + r'(/[^"*]*)"', html))


@pytest.mark.parametrize("kind", ["public", "reading-room", "staff", "spoofed-xff"])
def test_prefix_listing_names_and_counts_only_what_the_level_sees(request_as, ruled, kind):
    response = request_as(kind, f"/{ruled.name}/*/{ruled.base_url}/*")
    assert response.status_code == 200
    listed = _listed_paths(ruled, response.get_data(as_text=True))
    leaks = [p for p in EXPECTED if expected_status(kind, p) != 200 and p in listed]
    assert leaks == []
    assert "/docs/guide.html" in listed and "/" in listed  # an allowed URL inside a blocked prefix stays
    assert ("/gallery.html" in listed) == (CLIENTS[kind][0] == "staff")
    counts = [int(n) for n in re.findall(r'<td class="num">(\d+)</td>', response.get_data(as_text=True))]
    level = CLIENTS[kind][0]
    visible = [c for c in _captures(ruled) if _visible_at(ruled, c["url"], c["timestamp"], level)]
    assert sum(counts) == len(visible)  # count leaks: 0
    # the URL lookup by prefix on the collection page leads to the same listing
    lookup = request_as(kind, f"/{ruled.name}/?url={ruled.base_url}/docs/&match=prefix")
    assert lookup.status_code == 303
    docs = request_as(kind, lookup.headers["Location"])
    assert "/docs/guide.html" in _listed_paths(ruled, docs.get_data(as_text=True))
    assert "/docs/" not in _listed_paths(ruled, docs.get_data(as_text=True))


def _cell(html: str, row_attr: str, index: int) -> str:
    row = re.search(row_attr + r".*?</tr>", html, re.S)
    assert row, row_attr
    return re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)[index].strip()


@pytest.mark.parametrize("kind", ["public", "reading-room", "staff"])
def test_collection_and_home_counts(request_as, ruled, kind):
    level = CLIENTS[kind][0]
    visible = [c for c in _captures(ruled) if _visible_at(ruled, c["url"], c["timestamp"], level)]
    home = request_as(kind, "/").get_data(as_text=True)
    assert _cell(home, f'data-collection="{ruled.name}"', 1) == str(len(visible))
    assert _cell(home, f'data-collection="{ruled.name}"', 2) == str(len({c["url"] for c in visible}))
    page = request_as(kind, f"/{ruled.name}/").get_data(as_text=True)
    host = ruled.base_url.split("://")[1]
    assert _cell(page, f'data-host="{host.split(":")[0]}', 5) == str(len(visible))
    for path in EXPECTED:
        if EXPECTED[path][LEVEL_INDEX[level]] != 200:
            assert ruled.url(path) + '"' not in page  # no seed or snapshot link names it
    fetched = re.findall(r'data-run="[^"]+".*?</td>.*?</td>.*?</td>\s*<td class="num">(\d+)</td>', page, re.S)
    assert sum(map(int, fetched)) == len(visible)


def _captures(ruled) -> list[dict]:
    from index.collection import Collection
    from index.state import HarvestState

    with HarvestState(Collection(ruled.root, ruled.name).db_path) as state:
        return state.captures()


def _visible_at(ruled, url: str, ts: str, level: str) -> bool:
    from index.access.rules import rules_for

    return rules_for(ruled.root / ruled.name).visible(url, ts, level)


def test_not_archived_page_of_an_excluded_url_is_that_of_a_url_never_archived(request_as, ruled):
    excluded, never = ruled.url("/about.html"), ruled.url("/never.html")
    for mod in ("", "id_"):
        one = request_as("public", f"/{ruled.name}/{ruled.snapshot}{mod}/{excluded}")
        other = request_as("public", f"/{ruled.name}/{ruled.snapshot}{mod}/{never}")
        assert one.status_code == other.status_code == 404
        assert one.data.replace(excluded.encode(), b"U") == other.data.replace(never.encode(), b"U")
        assert dict(one.headers).keys() == dict(other.headers).keys()
    # and the nearby list of a URL never archived names no hidden one
    nearby = request_as("public", f"/{ruled.name}/{ruled.snapshot}/{ruled.url('/docs/nothing.html')}")
    listed = _listed_paths(ruled, nearby.get_data(as_text=True))
    assert "/docs/" not in listed and "/about.html" not in listed and "/contact.html" not in listed


def test_a_redirect_to_an_excluded_url_does_not_name_it(request_as, ruled):
    for mod in ("", "id_", "mp_"):
        response = request_as("public", f"/{ruled.name}/{ruled.snapshot}{mod}/{ruled.url('/old-about')}")
        assert response.status_code == 404
        assert b"about.html" not in response.headers.get("Location", "").encode()
        assert b"/about.html" not in response.data
    # a redirect to a visible URL is served as archived (/go -> /old-about)
    go = request_as("public", f"/{ruled.name}/{ruled.snapshot}id_/{ruled.url('/go')}")
    assert go.status_code == 302 and go.headers["Location"].endswith("/old-about")


def test_a_blocked_embedded_resource_is_not_served_the_page_still_is(request_as, ruled):
    page = request_as("public", f"/{ruled.name}/{ruled.snapshot}/{ruled.url('/')}")
    assert page.status_code == 200
    assert b"/img/logo.png" in page.data  # the page is as archived
    image = request_as("public", f"/{ruled.name}/{ruled.snapshot}im_/{ruled.url('/img/logo.png')}")
    assert image.status_code == 451 and not image.data.startswith(b"\x89PNG")


def test_restricted_host_without_a_valid_session_serves_nothing(access_app, ruled):
    client = access_app.test_client()
    forged = Grants(ruled.root).issue("tester", "restricted.localhost")  # an entry token, not a cookie
    target = f"/{ruled.name}/{ruled.snapshot}/{ruled.url('/gallery.html')}"
    for cookie in (None, "garbage", forged, forged + "x"):
        client = access_app.test_client()
        if cookie:
            client.set_cookie(COOKIE, cookie, domain=RESTRICTED)
        for path in (target, "/", f"/{ruled.name}/", "/api/search?q=mkgallery"):
            response = client.get(path, headers={"Host": RESTRICTED})
            assert response.status_code == 403, (cookie, path)
            assert b"mkgallery" not in response.data
    # a used entry token does not work twice; a revoked grant's cookie stops working at once
    client = access_app.test_client()
    token = Grants(ruled.root).issue("revoked-user", RESTRICTED)
    assert client.get(f"{ENTRY_PATH}?token={token}", headers={"Host": RESTRICTED}).status_code == 200
    assert client.get(f"{ENTRY_PATH}?token={token}", headers={"Host": RESTRICTED}).status_code == 403
    cookie = client.get_cookie(COOKIE, domain=RESTRICTED).value
    assert client.get(target, headers={"Host": RESTRICTED}).status_code == 200
    Grants(ruled.root).revoke_user("revoked-user")
    assert client.get(target, headers={"Host": RESTRICTED}).status_code == 403
    # the same cookie sent to another host name (public replay) raises nothing
    client.set_cookie(COOKIE, cookie, domain="restricted2.localhost")
    assert client.get(target, headers={"Host": "restricted2.localhost"}).status_code == 404


def test_an_expired_session_is_refused(access_app, ruled):
    import sqlite3

    client = access_app.test_client()
    token = Grants(ruled.root).issue("expiring", RESTRICTED)
    client.get(f"{ENTRY_PATH}?token={token}", headers={"Host": RESTRICTED})
    target = f"/{ruled.name}/{ruled.snapshot}/{ruled.url('/gallery.html')}"
    assert client.get(target, headers={"Host": RESTRICTED}).status_code == 200
    with sqlite3.connect(ruled.root / ".strata" / "access.sqlite") as conn:
        conn.execute("UPDATE grants SET expires = 0 WHERE user = 'expiring'")
    assert client.get(target, headers={"Host": RESTRICTED}).status_code == 403


def test_a_date_condition_hides_some_captures_of_a_url(searched, tmp_path):
    """pywb's ``before`` condition: the captures of /contact.html before the second run are hidden,
    later ones shown; replay as of the first run falls back to a visible capture (never the hidden one),
    and its id_ (no fallback) is the 451 notice; the calendar and TimeMap list the visible ones only."""
    from replay import create_app
    from tests.support.search_fixtures import copy_collection

    copy = copy_collection(searched, tmp_path / "collections", "dated")
    second_start, _ = searched.window(2)
    first_snapshot = searched.runs[0]["snapshot"]
    url = searched.base_url + "/contact.html"
    acl = copy.root / "dated" / "acl"
    acl.mkdir()
    (acl / "rules.aclj").write_text(f'{_key(url)} - {{"access": "block", "before": "{second_start}"}}\n')
    client = create_app(copy.root).test_client()
    page = client.get(f"/dated/{first_snapshot}/{url}")
    assert page.status_code == 200
    shown = re.search(rb'data-capture="(\d+)"', page.data).group(1).decode()
    assert shown >= second_start  # the earliest later capture, named as such by the banner
    assert client.get(f"/dated/{first_snapshot}id_/{url}").status_code == 451
    calendar = client.get(f"/api/captures/dated/{url}").get_json()["captures"]
    assert calendar and all(c["timestamp"] >= second_start for c in calendar)
    timemap = client.get(f"/dated/timemap/json/{url}").get_data(as_text=True)
    stamps = re.findall(r'"timestamp": "(\d+)"', timemap)
    assert stamps and all(ts >= second_start for ts in stamps)


def _key(url: str) -> str:
    from index.access.rules import urlkey

    return urlkey(url) + "###"


def test_a_host_wide_rule_empties_every_public_listing(ruled, tmp_path):
    from index.access.rules import AccessRules, Rule
    from replay import create_app
    from tests.support.search_fixtures import copy_collection

    copy = copy_collection(ruled, tmp_path / "collections", "site")
    shutil.rmtree(copy.root / "site" / "acl")
    app = create_app(copy.root, {"reading_room": ["10.20.0.0/16"]})
    public, room = {"REMOTE_ADDR": "198.51.100.7"}, {"REMOTE_ADDR": "10.20.1.5"}
    client = app.test_client()
    before = _cell(client.get("/", environ_base=public).get_data(as_text=True), 'data-collection="site"', 1)
    assert int(before) > 0
    host = ruled.base_url.split("://", 1)[1]
    rule = AccessRules(copy.root / "site").add(Rule.new(host, "allow", "reading-room", reason="legal deposit"))
    home = client.get("/", environ_base=public).get_data(as_text=True)
    assert _cell(home, 'data-collection="site"', 1) == "0" and _cell(home, 'data-collection="site"', 2) == "0"
    page = client.get("/site/", environ_base=public).get_data(as_text=True)
    assert 'id="sites"' not in page and 'data-run="' not in page and ruled.base_url not in page
    assert client.get(f"/site/{ruled.snapshot}/{ruled.url('/')}", environ_base=public).status_code == 451
    assert client.get(f"/site/*/{ruled.base_url}/*", environ_base=public).status_code == 404
    assert client.get("/api/search?q=sample&c=site", environ_base=public).get_json()["total_urls"] == 0
    # the reading room sees it all, counted as with no rule
    assert _cell(client.get("/", environ_base=room).get_data(as_text=True), 'data-collection="site"', 1) == before
    assert client.get(f"/site/{ruled.snapshot}/{ruled.url('/')}", environ_base=room).status_code == 200
    AccessRules(copy.root / "site").remove(rule.id, "tester", "")
    assert _cell(client.get("/", environ_base=public).get_data(as_text=True), 'data-collection="site"', 1) == before
