"""Two captures compared: ``strata diff`` and ``/<coll>/diff/<ts1>/<ts2>/<url>``, over WARCs written by
warcio (``mixed_archive``: a response, warcio's revisit of it, an edited version) and over Strata's
own harvests of the sample site (``archives``: its revisits, a changed article, a changed image)."""

from __future__ import annotations

import json
import subprocess

import lxml.html
import pytest
from click.testing import CliRunner

from cli import cli
from demo.sample_site import SampleSite
from tests.conftest import VENV_BIN

PAGE = "http://reading.example/"
FIRST, REVISIT, EDITED = "20240110090000", "20240210090000", "20240310090000"


def strata_diff(root, *args: str):
    return CliRunner().invoke(cli, ["diff", *args, "--root", str(root)])


@pytest.fixture(scope="module")
def mixed_client(mixed_archive):
    from replay import create_app

    return create_app(mixed_archive.root).test_client()


def test_a_revisit_pair_is_identical_from_the_index_alone(mixed_archive, monkeypatch):
    from index.compare import diff as compare

    reads: list[str] = []
    real = compare.read_record
    monkeypatch.setattr(compare, "read_record", lambda path, offset: reads.append(path.name) or real(path, offset))
    result = strata_diff(mixed_archive.root, "mixed", PAGE, FIRST, REVISIT, "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["identical"] is True and out["kind"] == "identical"
    assert out["from"]["record"] == "response" and out["to"]["record"] == "revisit"
    assert out["to"]["original"] == {"url": PAGE, "timestamp": FIRST}
    assert out["relation"] == f"the capture of {REVISIT} is a revisit of the capture of {FIRST}"
    assert out["changes"] == [] and out["from"]["size"] is None  # no body was read...
    assert reads == ["reading-2.warc.gz"]  # ...only the revisit record's own headers (its WARC-Refers-To-*)


def test_the_edited_sentence_is_shown(mixed_archive):
    result = strata_diff(mixed_archive.root, "mixed", PAGE, FIRST, EDITED)
    assert result.exit_code == 0, result.output
    assert "The reading room opens at [-nine-] {+ten+} every weekday" in result.output
    assert "Bring a reader's card." in result.output  # unchanged text is shown, unmarked
    assert "Home" not in result.output  # the menu is not main text
    out = json.loads(strata_diff(mixed_archive.root, "mixed", PAGE, EDITED, FIRST, "--json").output)
    assert out["from"]["timestamp"] == FIRST  # given in either order, compared oldest first
    assert (out["deleted_words"], out["inserted_words"]) == (1, 1)
    assert {"op": "delete", "text": "nine", "line": False, "gap": True} in out["changes"]
    assert {"op": "insert", "text": "ten", "line": False, "gap": False} in out["changes"]


def test_the_diff_page_inline_and_side_by_side(mixed_client):
    r = mixed_client.get(f"/mixed/diff/{FIRST}/{EDITED}/{PAGE}")
    assert r.status_code == 200
    doc = lxml.html.fromstring(r.data)
    inline = doc.get_element_by_id("diff-inline")
    assert [d.text_content() for d in inline.iter("del")] == ["nine"]
    assert [i.text_content() for i in inline.iter("ins")] == ["ten"]
    assert "opens at nine ten every weekday" in " ".join(inline.text_content().split())
    old, new = doc.xpath('//div[@class="diff-old"]')[0], doc.xpath('//div[@class="diff-new"]')[0]
    assert [d.text for d in old.iter("del")] == ["nine"] and not list(old.iter("ins"))
    assert [i.text for i in new.iter("ins")] == ["ten"] and not list(new.iter("del"))
    links = [a.get("href") for a in doc.xpath('//div[@class="diff-side"]/a')]
    assert links == [f"/mixed/{FIRST}/{PAGE}", f"/mixed/{EDITED}/{PAGE}"]

    same = lxml.html.fromstring(mixed_client.get(f"/mixed/diff/{FIRST}/{REVISIT}/{PAGE}").data)
    assert "is a revisit of the capture of" in same.get_element_by_id("diff-identical").text_content()


def test_the_calendar_offers_compare(mixed_client):
    doc = lxml.html.fromstring(mixed_client.get(f"/mixed/*/{PAGE}").data)
    form = doc.get_element_by_id("compare")
    assert form.get("action") == "/mixed/diff"
    chosen = {s.get("name"): s.xpath("option[@selected]/@value")[0] for s in form.iter("select")}
    assert chosen == {"from": REVISIT, "to": EDITED}
    r = mixed_client.get("/mixed/diff", query_string={"url": PAGE, **chosen})
    assert r.status_code == 303 and r.headers["Location"] == f"/mixed/diff/{REVISIT}/{EDITED}/{PAGE}"
    assert doc.xpath('//a[@class="compare-link"]/@href') == [
        f"/mixed/diff/{FIRST}/{REVISIT}/{PAGE}",
        f"/mixed/diff/{REVISIT}/{EDITED}/{PAGE}",
    ]


def test_harvested_revisits_and_a_changed_image(archives, client):
    three = archives["three"]
    runs = three.snapshots
    contact = three.url("/contact.html")  # unchanged in every run: Strata's own revisits
    out = json.loads(strata_diff(three.root, "three", contact, runs[0], runs[2], "--json").output)
    assert out["identical"] and out["to"]["record"] == "revisit" and "is a revisit of the capture of" in out["relation"]

    photo = three.url("/img/photo.png")  # changed between versions 1 and 2
    out = json.loads(strata_diff(three.root, "three", photo, runs[0], runs[1], "--json").output)
    assert out["kind"] == "image" and not out["identical"]
    assert out["to"]["size"] == len(SampleSite.resource(2, "/img/photo.png").body)
    doc = lxml.html.fromstring(client.get(f"/three/diff/{runs[0]}/{runs[1]}/{photo}").data)
    srcs = doc.xpath('//div[@id="diff-images"]//img/@src')
    assert len(srcs) == 2 and all(s.endswith("im_/" + photo) for s in srcs)
    for src in srcs:
        assert client.get(src).data[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "args, message",
    [
        (("mixed", PAGE, "2024x", EDITED), "'2024x' is not a timestamp"),
        (("mixed", PAGE, "20241301", EDITED), "'20241301' is not a valid date"),
        (("mixed", PAGE, "2023", EDITED), "no capture in mixed at or before 2023; its first is 20240110090000"),
        (("mixed", "http://reading.example/never.html", FIRST, EDITED), "is not archived in mixed"),
        (("nosuch", PAGE, FIRST, EDITED), "no collection 'nosuch'"),
        (("mixed", "http://[bad", FIRST, EDITED), "is not archived in mixed"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(mixed_archive, args, message):
    done = subprocess.run(
        [str(VENV_BIN / "strata"), "diff", *args, "--root", str(mixed_archive.root)], capture_output=True, text=True
    )
    assert done.returncode == 2, done
    assert message in done.stderr and "Traceback" not in done.stderr and not done.stdout
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "path, status",
    [
        (f"/mixed/diff/2024x/{EDITED}/{PAGE}", 404),
        (f"/mixed/diff/{FIRST}/20241301/{PAGE}", 404),
        (f"/mixed/diff/2023/{EDITED}/{PAGE}", 404),
        (f"/mixed/diff/{FIRST}/{EDITED}/http://reading.example/never.html", 404),
        (f"/mixed/diff/{FIRST}/{EDITED}/ftp://reading.example/", 404),
        (f"/mixed/diff/{FIRST}/", 404),
        ("/mixed/diff?url=http://reading.example/&from=x&to=y", 404),
        (f"/nosuch/diff/{FIRST}/{EDITED}/{PAGE}", 404),
    ],
)
def test_bad_addresses_are_4xx_pages(mixed_client, path, status):
    r = mixed_client.get(path)
    assert r.status_code == status and b"Traceback" not in r.data
    assert lxml.html.fromstring(r.data).xpath('//p[@class="notice"]')
