"""Access rules on the surfaces built beside them: the CDX API, the WACZ and search exports, diff,
permanent ids, the banner's list of captures and the publications page. The collection and its rules
are ``tests.support.access_fixtures``; what each level may see is its ``EXPECTED`` table (200:
visible). Each surface must list exactly the visible captures: hidden ones are never named."""

from __future__ import annotations

import gzip
import json
import subprocess
import zipfile
from urllib.parse import quote

from index.cdx.pid import capture_pid
from index.cdx.versions import read_versions
from index.collection import Collection
from tests.conftest import VENV_BIN
from tests.support.access_fixtures import EXPECTED

STRATA = str(VENV_BIN / "strata")
LEVELS = ("public", "reading-room", "staff")
CLIENT = {"public": {"REMOTE_ADDR": "198.51.100.7"}, "reading-room": {"REMOTE_ADDR": "10.20.1.5"}}


def visible_paths(level: str) -> set[str]:
    return {path for path, statuses in EXPECTED.items() if statuses[LEVELS.index(level)] == 200}


def hidden_paths(level: str) -> set[str]:
    return set(EXPECTED) - visible_paths(level)


def strata(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([STRATA, *args], capture_output=True, text=True, timeout=120)


def test_the_cdx_api_lists_only_what_the_level_may_see(access_app, ruled):
    for level, environ in CLIENT.items():
        # a client's X-Pywb-ACL-User is never believed
        response = access_app.test_client().get(
            f"/{ruled.name}/cdx?url={quote(ruled.url('/'))}&matchType=prefix&output=json",
            environ_base=environ,
            headers={"X-Pywb-ACL-User": "staff"},
        )
        assert response.status_code == 200
        assert response.headers["Cache-Control"] == ("no-cache" if level == "public" else "private, no-store")
        urls = {json.loads(line)["url"] for line in response.data.decode().splitlines()}
        assert urls, level
        for path in hidden_paths(level):
            assert ruled.url(path) not in urls, (level, path)
        for path in visible_paths(level):
            assert ruled.url(path) in urls, (level, path)
        assert all(json.loads(line)["access"] == "allow" for line in response.data.decode().splitlines())


def test_the_wacz_export_holds_only_what_its_level_may_see(ruled, tmp_path):
    for level in ("public", "staff"):
        out = tmp_path / f"{level}.wacz"
        done = strata("export", "wacz", ruled.name, "--out", str(out), "--as", level, "--root", str(ruled.root))
        assert done.returncode == 0, done.stderr
        with zipfile.ZipFile(out) as package:
            pages = {json.loads(line).get("url") for line in package.read("pages/pages.jsonl").decode().splitlines()}
            index = b"".join(
                package.read(name) for name in package.namelist() if name.startswith("indexes/") and ".cdx" in name
            )
        lines = gzip.decompress(index).decode() if index[:2] == b"\x1f\x8b" else index.decode()
        for path in hidden_paths(level):
            assert ruled.url(path) not in pages and f'"{ruled.url(path)}"' not in lines, (level, path)
        assert f'"{ruled.url("/docs/guide.html")}"' in lines
    assert f'"{ruled.url("/gallery.html")}"' in lines  # the staff package has the staff-only page


def test_search_and_its_exports_find_nothing_hidden(access_app, ruled):
    for word, path in (("mkgallery", "/gallery.html"), ("mkcontact", "/contact.html"), ("mkguide", "/docs/guide.html")):
        for level in LEVELS:
            want = path in visible_paths(level)
            found = strata("search", ruled.name, word, "--all", "--as", level, "--root", str(ruled.root))
            assert found.returncode == 0, found.stderr
            assert (ruled.url(path) in found.stdout) is want, (word, level)
            page = strata("search", ruled.name, word, "--json", "--as", level, "--root", str(ruled.root))
            assert json.loads(page.stdout)["total"] == int(want), (word, level)
            if level in CLIENT:
                web = access_app.test_client().get(f"/search/export.jsonl?q={word}", environ_base=CLIENT[level])
                assert web.status_code == 200
                assert (ruled.url(path) in web.data.decode()) is want, (word, level)


def test_diff_permanent_ids_and_the_banner_list_see_only_visible_captures(access_app, ruled):
    coll = Collection.open(ruled.root, ruled.name)
    gallery = ruled.url("/gallery.html")
    staff = read_versions(coll, gallery, viewer={"level": "staff"})
    assert len(staff) >= 2
    assert read_versions(coll, gallery, viewer={"level": "public"}) == []
    assert read_versions(coll, gallery) == []  # nobody said who asks: public
    first, last = staff[0].timestamp, staff[-1].timestamp
    client = access_app.test_client()
    web_diff = client.get(f"/{ruled.name}/diff/{first}/{last}/{gallery}", environ_base=CLIENT["public"])
    assert web_diff.status_code == 404 and b"gallery" not in web_diff.data.split(b"<title>")[0]
    public = strata("diff", ruled.name, gallery, first, last, "--root", str(ruled.root))
    assert public.returncode == 2
    seen = strata("diff", ruled.name, gallery, first, last, "--as", "staff", "--json", "--root", str(ruled.root))
    assert seen.returncode == 0, seen.stderr
    pid = capture_pid(ruled.name, gallery, last)
    never = capture_pid(ruled.name, ruled.url("/never-archived.html"), last)
    hidden, unknown = (client.get(f"/id/{p}", environ_base=CLIENT["public"]) for p in (pid, never))
    assert hidden.status_code == unknown.status_code == 404
    assert "Location" not in hidden.headers
    shown = client.get(f"/id/{capture_pid(ruled.name, ruled.url('/docs/guide.html'), last)}")
    assert shown.status_code in (301, 302, 303, 307, 308) or shown.status_code == 200


def test_the_publications_page_lists_no_hidden_pdf(access_app, ruled, searched):
    from replay import create_app

    host = "127.0.0.1"  # the index's host column holds the name without the port
    unruled = create_app(searched.root).test_client().get(f"/api/publications/{searched.name}/{host}").get_json()
    assert ruled.url("/docs/report.pdf") in {e["url"] for e in unruled["entries"]}
    for environ in CLIENT.values():
        listing = access_app.test_client().get(f"/api/publications/{ruled.name}/{host}", environ_base=environ)
        assert listing.status_code == 200
        assert listing.get_json()["total"] == 0 and listing.get_json()["entries"] == []
