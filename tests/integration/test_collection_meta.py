"""A collection's description (``strata collection COLL set``, the console's form) and its holdings
overview, on the collection whose captures are known: shown on the public pages, written into the
WACZ ``datapackage.json``, counted per month and per site (charts, tables, CSV)."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import lxml.html
import pytest
from click.testing import CliRunner

from cli import cli
from index.collection import Collection
from index.collection_meta import read_metadata
from replay import create_app
from tests.support.history_fixtures import write_known
from tests.support.staff_helpers import csrf_from


@pytest.fixture
def described(tmp_path):
    root = tmp_path / "collections"
    root.mkdir()
    write_known(root)
    return root


def strata(root, *args):
    result = CliRunner().invoke(cli, [*args, "--root", str(root)])
    message = getattr(result.exception, "message", "")
    return result.exit_code, result.stdout + result.stderr + message


def test_set_show_and_the_public_pages(described):
    code, _ = strata(
        described, "collection", "known", "set", "--title", "Municipal sites", "--description", "Two towns' sites.",
        "--curator", "A. Curator", "--organisation", "Test Library", "--rights", "CC BY 4.0",
        "--subject", "towns", "--subject", "新闻", "--language", "zh-Hant",
    )  # fmt: skip
    assert code == 0
    code, out = strata(described, "collection", "known", "show", "--json")
    assert json.loads(out)["subjects"] == ["towns", "新闻"]
    assert (described / "known" / "metadata.yaml").is_file()  # pywb's own file
    code, out = strata(described, "collection", "known", "set", "--language", "english!")
    assert code != 0 and "language tag" in out
    assert read_metadata(Collection(described, "known"))["language"] == "zh-Hant"  # nothing half-written

    client = create_app(described).test_client()
    page = lxml.html.fromstring(client.get("/known/").data)
    assert page.xpath("string(//h1)") == "Municipal sites"
    assert page.get_element_by_id("coll-rights").text == "CC BY 4.0"
    assert "新闻" in page.get_element_by_id("coll-meta").text_content()
    home = lxml.html.fromstring(client.get("/").data)
    assert "Municipal sites" in home.get_element_by_id("collections").text_content()

    strata(described, "collection", "known", "set", "--clear", "curator")
    assert read_metadata(Collection(described, "known"))["curator"] == ""


def test_the_description_goes_into_the_wacz(described, tmp_path):
    strata(described, "collection", "known", "set", "--title", "Towns", "--rights", "CC0", "--curator", "Cu")
    out = tmp_path / "k.wacz"
    assert strata(described, "export", "wacz", "known", "--out", str(out))[0] == 0
    with zipfile.ZipFile(out) as zf:
        package = json.loads(zf.read("datapackage.json"))
    assert package["title"] == "Towns" and package["rights"] == "CC0"
    assert package["contributors"] == [{"title": "Cu", "role": "maintainer"}]


def test_the_console_form_checks_each_field_where_it_is(described):
    from replay.staff import create_staff_app
    from tests.support.staff_helpers import add_user, log_in, make_client

    add_user(described)
    app = create_staff_app(described, {"staff_hosts": ["staff.test"], "archive_url": "http://archive.test"})
    staff = log_in(make_client(app, host="staff.test"))
    page = staff.get("/collections/known")
    assert page.status_code == 200 and 'id="in-rights"' in page.text
    form = {"csrf_token": csrf_from(page.text), "title": "From the console", "language": "not a tag!"}
    bad = staff.post("/collections/known", data=form)
    assert bad.status_code == 400
    field = lxml.html.fromstring(bad.text).get_element_by_id("field-language")
    assert "invalid" in field.get("class") and "language tag" in field.text_content()
    good = staff.post("/collections/known", data={**form, "language": "en", "subjects": "a; b"})
    assert good.status_code == 302
    assert read_metadata(Collection(described, "known"))["subjects"] == ("a", "b")
    assert "From the console" in staff.get("/collections").text


def test_holdings_per_month_and_per_site(described):
    client = create_app(described).test_client()
    page = lxml.html.fromstring(client.get("/known/holdings").data)
    months = {
        tr.get("data-month"): {
            k: int(tr.get(f"data-{k}")) for k in ("captures", "new", "changed", "unchanged", "deleted")
        }
        for tr in page.xpath('//table[@id="months-chart"]/tbody/tr')
    }
    assert months == {
        "202305": {"captures": 1, "new": 1, "changed": 0, "unchanged": 0, "deleted": 0},
        "202311": {"captures": 2, "new": 1, "changed": 0, "unchanged": 1, "deleted": 0},
        "202401": {"captures": 3, "new": 1, "changed": 1, "unchanged": 1, "deleted": 0},
        "202403": {"captures": 6, "new": 2, "changed": 2, "unchanged": 1, "deleted": 1},
    }
    rows = list(csv.DictReader(io.StringIO(client.get("/known/holdings.csv?by=site").text)))
    assert [(r["site"], r["urls"], r["captures"], r["new"], r["deleted"]) for r in rows] == [
        ("other.test", "1", "1", "1", "0"),
        ("site.test", "4", "11", "4", "1"),
    ]
    by_month = list(csv.DictReader(io.StringIO(client.get("/known/holdings.csv?by=month").text)))
    assert [r["month"] for r in by_month] == ["2023-05", "2023-11", "2024-01", "2024-03"]
    assert sum(int(r["bytes"]) for r in by_month) == sum(int(r["bytes"]) for r in rows) > 0
    assert client.get("/known/holdings.csv?by=year").status_code == 404


def test_holdings_count_no_hidden_capture(described):
    from index.access.rules import AccessRules, Rule

    AccessRules(described / "known").add(Rule.new("http://site.test/news/a.html", "exclude", reason="t", by="t"))
    client = create_app(described).test_client()
    rows = {r["site"]: r for r in csv.DictReader(io.StringIO(client.get("/known/holdings.csv?by=site").text))}
    assert (rows["site.test"]["urls"], rows["site.test"]["captures"], rows["site.test"]["deleted"]) == ("3", "8", "0")
