"""The console's Access page and ``strata access``: rules added, listed, removed and checked; bad input
refused with the field and the reason; a takedown applied by the running replay app at its next
request; every change in the audit log; the restricted host reached only through the console."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner

from cli import cli
from replay.access_grants import COOKIE
from replay.staff import create_staff_app
from tests.support.access_fixtures import RESTRICTED
from tests.support.search_fixtures import copy_collection
from tests.support.staff_helpers import ARCHIVE_URL, STAFF_HOST, csrf_from, log_in, make_client


@pytest.fixture
def console(ruled, staff_root):
    """A staff console and a replay app on one root holding a copy of the ruled collection."""
    from replay import create_app

    copy_collection(ruled, staff_root, "ruled")
    staff_app = create_staff_app(
        staff_root,
        {"staff_hosts": [STAFF_HOST], "archive_url": ARCHIVE_URL, "restricted_url": f"http://{RESTRICTED}"},
    )
    replay_app = create_app(staff_root, {"restricted_hosts": [RESTRICTED]})
    return log_in(make_client(staff_app)), replay_app


def test_takedown_takes_effect_at_the_next_request_with_no_restart(console, ruled):
    staff, replay_app = console
    reader = replay_app.test_client()
    address = f"/ruled/{ruled.snapshot}/{ruled.url('/docs/guide.html')}"
    assert reader.get(address).status_code == 200
    assert reader.get("/api/search?q=mkguide&c=ruled").get_json()["hits"]
    page = staff.get("/access/ruled")
    assert page.status_code == 200 and "Take down" in page.text
    # the rule that allows the guide inside the blocked /docs/ must go first: a clash is refused
    refused = staff.post(
        "/access/ruled/takedown",
        data={"prefix": ruled.url("/docs/guide.html"), "reason": "req 1", "csrf_token": staff.csrf},
    )
    assert refused.status_code == 400 and "PREFIX: a rule for" in refused.text
    rule_id = ruled.rules["/docs/guide.html"].id
    removed = staff.post(f"/access/ruled/rules/{rule_id}/remove", data={"csrf_token": staff.csrf, "reason": "req 1"})
    assert removed.status_code == 302
    done = staff.post(
        "/access/ruled/takedown",
        data={
            "prefix": ruled.url("/docs/guide.html"),
            "access": "exclude",
            "reason": "req 1",
            "csrf_token": staff.csrf,
        },
    )
    assert done.status_code == 302
    assert reader.get(address).status_code == 404  # the same app object: no restart
    assert reader.get("/api/search?q=mkguide&c=ruled").get_json()["hits"] == []
    audit = staff.get("/access/ruled").text
    assert audit.count("req 1") >= 2 and "ana" in audit and "remove" in audit


def test_the_console_refuses_bad_rules_with_the_field(console, ruled):
    staff, _ = console
    checked = staff.get("/access/ruled", query_string={"check": ruled.url("/gallery.html"), "as": "staff"})
    assert "Visible: needs staff" in checked.text and ruled.rules["/gallery.html"].id in checked.text
    checked = staff.get("/access/ruled", query_string={"check": ruled.url("/gallery.html"), "as": "reading-room"})
    assert "exclude (404): needs staff" in checked.text
    assert "is not a level" in staff.get("/access/ruled", query_string={"check": "x.gov", "as": "boss"}).text
    cases = {
        ("ftp://x/", "block", "", ""): "PREFIX:",
        ("http://example.gov/", "block", "boss", ""): "--level:",
        ("http://example.gov/", "block", "", "3 parsecs"): "--embargo:",
        ("http://example.gov/", "hide", "", ""): "--access:",
    }
    for (prefix, access, level, embargo), field in cases.items():
        response = staff.post(
            "/access/ruled/rules",
            data={"prefix": prefix, "access": access, "level": level, "embargo": embargo, "csrf_token": staff.csrf},
        )
        assert response.status_code == 400 and field in response.text, (prefix, response.text[:200])
    no_token = staff.post("/access/ruled/rules", data={"prefix": "http://example.gov/", "access": "block"})
    assert no_token.status_code == 403


def test_open_restricted_host_through_the_console_and_logout_ends_it(console, ruled):
    staff, replay_app = console
    target = f"/ruled/{ruled.snapshot}/{ruled.url('/gallery.html')}"
    page = staff.get("/access")
    assert "Open on the restricted host" in page.text
    response = staff.post("/access/restricted", data={"csrf_token": csrf_from(page.text), "next": target})
    assert response.status_code == 200
    href = re.search(r'id="enter-restricted" class="button" href="([^"]+)"', response.text).group(1)
    location = urlsplit(html.unescape(href))
    assert location.netloc == RESTRICTED
    assert not any(c.key.startswith("strata_staff") and c.domain == RESTRICTED for c in staff._cookies.values())
    browser = replay_app.test_client()
    entered = browser.get(f"{location.path}?{location.query}", headers={"Host": RESTRICTED})
    assert entered.status_code == 200
    assert parse_qs(location.query)["next"] == [target]
    assert browser.get(target, headers={"Host": RESTRICTED}).status_code == 200
    listed = staff.get("/access").text
    assert 'id="sessions"' in listed and "<td>ana</td>" in listed
    assert browser.get(target).status_code == 404  # the public host: excluded for the public
    staff.post("/logout", data={"csrf_token": staff.csrf})
    assert browser.get(target, headers={"Host": RESTRICTED}).status_code == 403
    assert browser.get_cookie(COOKIE, domain=RESTRICTED) is not None  # the cookie is there, but worth nothing


def _run(root, *args):
    return CliRunner().invoke(cli, ["access", "ruled", *args, "--root", str(root)])


def test_cli_add_list_check_remove(ruled, tmp_path):
    copy = copy_collection(ruled, tmp_path / "collections", "ruled")
    root = copy.root
    added = _run(root, "add", ruled.url("/links.html"), "--access", "block", "--level", "reading-room", "--reason", "r")
    assert added.exit_code == 0, added.output
    rule_id = added.output.split()[1].rstrip(":")
    listed = json.loads(_run(root, "list", "--json").output)
    assert rule_id in [r["id"] for r in listed["rules"]] and len(listed["rules"]) == 9
    check = _run(root, "check", ruled.url("/links.html"), "--as", "public")
    assert (
        check.exit_code == 0 and check.output.startswith("block (451): needs reading-room") and rule_id in check.output
    )
    assert _run(root, "check", ruled.url("/links.html"), "--as", "reading-room").output.startswith("visible")
    old = _run(root, "check", ruled.url("/news/article-0001.html"), "--at", "2001", "--as", "public")
    assert old.output.startswith("visible"), old.output  # the embargo covers recent captures only
    assert _run(root, "remove", rule_id, "--reason", "done").exit_code == 0
    assert _run(root, "check", ruled.url("/links.html")).output.startswith("visible")


BAD_INPUT = [
    (("add", "ftp://x/", "--access", "block"), "PREFIX:"),
    (("add", "http://x.gov/ a", "--access", "block"), "PREFIX:"),
    (("add", "http://x.gov/", "--access", "block", "--level", "boss"), "--level:"),
    (("add", "http://x.gov/", "--access", "maybe"), "--access:"),
    (("add", "http://x.gov/", "--access", "block", "--embargo", "soon"), "--embargo:"),
    (("remove", "r-none"), "RULE:"),
    (("check", "http://x.gov/", "--as", "admin"), "--as:"),
    (("check", "http://x.gov/", "--at", "yesterday"), "--at:"),
]


def test_cli_refuses_bad_input_with_the_field(ruled, tmp_path):
    from strata.errors import ConfigError

    root = copy_collection(ruled, tmp_path / "collections", "ruled").root
    for args, field in BAD_INPUT:
        result = _run(root, *args)
        assert isinstance(result.exception, ConfigError), (args, result.output)
        assert result.exception.exit_code == 2 and result.exception.message.startswith(field), args


def test_cli_bad_input_exits_2_with_one_line(ruled, tmp_path):
    import subprocess
    import sys

    root = copy_collection(ruled, tmp_path / "collections", "ruled").root
    for args, field in BAD_INPUT[2:4]:
        command = [sys.executable, "-c", "from cli import main; main()", "access", "ruled", *args, "--root", str(root)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(f"Error: {field}") and result.stderr.count("\n") == 1, result.stderr
