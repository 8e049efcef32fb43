"""Every surface that names a capture names only what the reader may see, and a collection whose rules
cannot be read serves nothing (503, exit 1) while the others go on.

The collection (written by warcio, imported): ``/secret.html`` (excluded), ``/public.html`` a revisit
of it (another URL: its original is the hidden page), ``/go`` a redirect to it, and ``/`` a page. The
surfaces: the TimeGate and every replay address of the redirect, the calendar and the captures API
(a revisit's original), the diff (web and ``strata diff``), and a public WACZ export.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import zipfile
from pathlib import Path

import pytest

from index.access.rules import AccessRules, Rule
from tests.conftest import VENV_BIN
from tests.support.warc_makers import Cap, write_warc

STRATA = str(VENV_BIN / "strata")
SITE = "http://names.example"
SECRET = f"{SITE}/secret.html"
HIDDEN_WORDS = ("secret.html",)


def strata(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([STRATA, *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def named(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("names") / "collections"
    root.mkdir()
    secret = Cap(SECRET, "2024-01-02T00:00:00Z", b"<html><title>the same words</title><p>one body</p></html>")
    caps = [
        Cap(f"{SITE}/", "2024-01-01T00:00:00Z", b'<html><a href="/public.html">public</a></html>'),
        secret,
        Cap(f"{SITE}/public.html", "2024-01-03T00:00:00Z", secret.body, revisit_of=secret),
        Cap(f"{SITE}/public.html", "2024-01-04T00:00:00Z", b"<html><title>the same words</title><p>two</p></html>"),
        Cap(
            f"{SITE}/go",
            "2024-01-05T00:00:00Z",
            b"",
            status="301 Moved Permanently",
            headers=(("Location", "/secret.html"),),
        ),
    ]
    for name in ("named", "other"):
        warc = write_warc(tmp_path_factory.mktemp("w") / f"{name}.warc.gz", caps)
        done = strata("import", name, str(warc), "--root", str(root), "--no-fulltext")
        assert done.returncode == 0, done.stderr
    AccessRules(root / "named").add(Rule.new(SECRET, "exclude", reason="takedown", by="t"))
    return root


@pytest.fixture
def client(named):
    from replay import create_app

    return create_app(named).test_client()


def _clean(text: str | bytes, where: str) -> None:
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    for word in HIDDEN_WORDS:
        assert word not in text, (where, text[:400])


def test_the_timegate_and_replay_of_a_redirect_never_name_an_excluded_target(client):
    for address in (f"/named/{SITE}/go", "/named/2024/" + f"{SITE}/go", "/named/2024id_/" + f"{SITE}/go"):
        response = client.get(address)
        assert response.status_code == 404, address
        _clean(response.headers.get("Location", ""), address)
        _clean(response.data, address)
    # the same redirect in a collection without the rule is served, naming its target
    assert "secret.html" in client.get(f"/other/{SITE}/go").headers["Location"]


def test_calendar_and_captures_api_never_name_a_hidden_original(client):
    page = client.get(f"/named/*/{SITE}/public.html")
    assert page.status_code == 200 and b"revisit" in page.data
    _clean(page.data, "calendar")
    api = client.get(f"/api/captures/named/{SITE}/public.html")
    assert api.status_code == 200
    captures = api.get_json()["captures"]
    assert [c["record_type"] for c in captures] == ["revisit", "response"] and captures[0]["original"] is None
    _clean(api.data, "api")
    shown = client.get(f"/api/captures/other/{SITE}/public.html").get_json()["captures"]
    assert shown[0]["original"]["url"] == SECRET  # named where nothing hides it


def test_the_diff_never_names_a_hidden_original(client, named):
    web = client.get(f"/named/diff/20240103/20240104/{SITE}/public.html")
    assert web.status_code == 200
    _clean(web.data, "diff page")
    cli = strata("diff", "named", f"{SITE}/public.html", "20240103", "20240104", "--json", "--root", str(named))
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["from"]["original"] is None
    _clean(cli.stdout, "strata diff")


def test_a_public_wacz_names_nothing_hidden(named, tmp_path):
    out = tmp_path / "named.wacz"
    done = strata("export", "wacz", "named", "--out", str(out), "--json", "--root", str(named))
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["withheld"] == 1 and figures["revisits_without_original"] == 1
    with zipfile.ZipFile(out) as package:
        for name in package.namelist():
            data = package.read(name)
            _clean(gzip.decompress(data) if name.endswith(".gz") else data, name)


@pytest.mark.parametrize("damage", ["directory", "undecodable", "unparsable"])
def test_unreadable_rules_close_that_collection_and_no_other(named, client, damage, tmp_path):
    rules = named / "named" / "acl" / "rules.aclj"
    kept = rules.read_bytes()
    rules.unlink()
    if damage == "directory":
        rules.mkdir()
    elif damage == "undecodable":
        rules.write_bytes(kept + b'com,example)/x - {"access": "exclude", "reason": "\xff"}\n')
    else:
        rules.write_bytes(kept + b'com,example)/x - {"access": "exclude"\n')
    try:
        for address in (
            f"/named/2024/{SITE}/",
            f"/named/2024id_/{SITE}/",
            f"/named/{SITE}/go",
            f"/named/*/{SITE}/public.html",
            f"/api/captures/named/{SITE}/public.html",
            f"/named/cdx?url={SITE}/",
            f"/named/diff/20240103/20240104/{SITE}/public.html",
            "/named/",
        ):
            response = client.get(address)
            assert response.status_code == 503, (damage, address, response.status_code)
            assert b"access rules" in response.data, address
        assert client.get(f"/other/2024/{SITE}/").status_code == 200
        home = client.get("/")
        assert home.status_code == 200 and b"access rules cannot be read" in home.data
        for args in (
            ("diff", "named", f"{SITE}/public.html", "20240103", "20240104"),
            ("export", "wacz", "named", "--out", str(tmp_path / f"{damage}.wacz")),
        ):
            done = strata(*args, "--root", str(named))
            assert done.returncode == 1 and "access rules" in done.stderr and "Traceback" not in done.stderr, args
    finally:
        if rules.is_dir():
            rules.rmdir()
        else:
            rules.unlink()
        rules.write_bytes(kept)
