"""``strata captures COLL URL [--json]`` and the calendar page with its JSON form
(``/api/captures/<coll>/<url>``): every capture of a URL in time order, with kind, status, record,
digest, run, file and offset, and each revisit's original; over the real harvests of the sample
site (``tests.support.replay_fixtures``) and over imported files whose revisits do not name their original."""

from __future__ import annotations

import io
import json
import subprocess

import lxml.html
from click.testing import CliRunner
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from cli import cli
from index.capture.rebuild import rebuild_state
from index.cdx import cdxj
from index.collection import Collection
from index.state import HarvestState
from replay import create_app
from tests.conftest import VENV_BIN
from tests.support.warc_makers import DATA, Cap, write_warc

PATHS = ("/about.html", "/news/article-0002.html", "/img/photo.png", "/news/article-0004.html", "/", "/ja/index.html")


def cli_json(root, coll, url):
    result = CliRunner().invoke(cli, ["captures", coll, url, "--root", str(root), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_cli_lists_every_capture_from_the_state(archives):
    three = archives["three"]
    revisits = 0
    with HarvestState(Collection(three.root, "three").db_path) as state:
        for path in PATHS:
            url = three.url(path)
            rows = state.captures(url=url)
            got = cli_json(three.root, "three", url)
            assert [
                (
                    e["timestamp"],
                    e["kind"],
                    e["status"],
                    e["record_type"],
                    e["digest"],
                    e["run_id"],
                    e["warc"],
                    e["offset"],
                    e["length"],
                )
                for e in got
            ] == [
                (
                    r["timestamp"],
                    r["class"],
                    r["status"],
                    r["record_type"],
                    r["digest"],
                    r["run_id"],
                    r["warc"],
                    r["offset"],
                    r["length"],
                )
                for r in rows
            ]
            assert [e["timestamp"] for e in got] == sorted(e["timestamp"] for e in got)
            for entry, row in zip(got, rows, strict=True):
                if row["record_type"] != "revisit":
                    assert entry["original"] is None
                    continue
                revisits += 1
                original = entry["original"]
                assert (original["url"], original["date"]) == (row["refers_to_uri"], row["refers_to_date"])
                held = [
                    r
                    for r in state.captures(url=original["url"])
                    if r["warc"] == original["warc"] and r["offset"] == original["offset"]
                ]
                assert held and held[0]["record_type"] == "response" and held[0]["digest"] == row["digest"]
                assert original["timestamp"] == held[0]["timestamp"] < entry["timestamp"]
    assert revisits > 0


def test_cli_text_and_errors(archives):
    three = archives["three"]
    url = three.url("/ja/index.html")  # unchanged, then soft: a revisit, then a response
    entries = cli_json(three.root, "three", url)
    result = CliRunner().invoke(cli, ["captures", "three", url, "--root", str(three.root)])
    lines = result.output.splitlines()
    assert lines[0] == f"{len(entries)} captures of {url} in three"
    body = [line for line in lines[2:] if not line.startswith(" ")]
    assert len(body) == len(entries)
    for line, entry in zip(body, entries, strict=True):
        assert entry["kind"] in line and entry["run_id"] in line and f"{entry['warc']} @ {entry['offset']}" in line
    revisits = [e for e in entries if e["original"]]
    assert sum("revisit of " in line for line in lines) == len(revisits) > 0
    # without the scheme, as typed
    assert cli_json(three.root, "three", url.split("://", 1)[1]) == entries
    missing = subprocess.run(
        [str(VENV_BIN / "strata"), "captures", "three", three.url("/nope.html"), "--root", str(three.root)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        missing.returncode == 1 and missing.stderr.strip() == f"Error: no capture of {three.url('/nope.html')} in three"
    )


def test_calendar_page_and_json_show_the_same_list(client, archives):
    three = archives["three"]
    for path in PATHS:
        url = three.url(path)
        entries = cli_json(three.root, "three", url)
        response = client.get(f"/three/*/{url}")
        doc = lxml.html.fromstring(response.get_data())
        rows = doc.xpath('//tr[contains(@class, "capture")]')
        assert [
            (r.get("data-timestamp"), r.get("data-kind"), r.get("data-status"), r.get("data-run")) for r in rows
        ] == [(e["timestamp"], e["kind"], str(e["status"]), e["run_id"]) for e in entries]
        for row, entry in zip(rows, entries, strict=True):
            assert row.xpath('string(.//td[contains(@class, "run")])').strip() == entry["run_id"]
            linked = row.xpath('.//span[@class="original"]/a/@data-timestamp')
            assert linked == ([entry["original"]["timestamp"]] if entry["original"] else [])
        json_href = doc.xpath('//a[@id="captures-json"]/@href')[0]
        assert json_href == f"/api/captures/three/{url}"
        data = client.get(json_href)
        assert data.status_code == 200 and data.mimetype == "application/json"
        assert data.get_json() == {"collection": "three", "url": url, "captures": entries}


def test_json_form_errors_are_json(client, archives):
    three = archives["three"]
    r = client.get(f"/api/captures/three/{three.url('/nope.html')}")
    assert r.status_code == 404 and "not in the archive" in r.get_json()["error"]
    r = client.get(f"/api/captures/nosuch/{three.url('/')}")
    assert r.status_code == 404 and "nosuch" in r.get_json()["error"]
    r = client.get("/api/captures/three/ftp://example.org/")
    assert r.status_code == 404 and "http" in r.get_json()["error"]


def test_revisits_without_refers_to_find_their_original_by_digest(tmp_path, root):
    """wget and wpull write revisits that do not name their original's URL and date."""
    original = Cap("http://dedup.test/", "2021-02-01T00:00:00Z", b"<html>same</html>")
    copy = Cap("http://dedup.test/copy", "2021-02-01T00:00:05Z", b"<html>same</html>")
    revisit = Cap("http://dedup.test/", "2021-03-01T00:00:00Z", original.body, revisit_of=original)
    path = write_warc(tmp_path / "dedup.warc.gz", [original, copy, revisit])
    data = path.read_bytes()
    coll = Collection.open(root, "dedup", create=True)
    (coll.archive_dir / path.name).write_bytes(data)
    _strip_refers_to(coll.archive_dir / path.name)
    rebuild_state(coll)
    with HarvestState(coll.db_path) as state:
        assert [r["refers_to_uri"] for r in state.captures(url="http://dedup.test/")] == [None, None]
    entries = cli_json(root, "dedup", "http://dedup.test/")
    assert [(e["timestamp"], e["record_type"]) for e in entries] == [
        ("20210201000000", "response"),
        ("20210301000000", "revisit"),
    ]
    assert entries[1]["original"]["url"] == "http://dedup.test/"
    assert entries[1]["original"]["timestamp"] == "20210201000000" and entries[1]["original"]["warc"] == path.name
    page = create_app(root).test_client().get("/api/captures/dedup/http://dedup.test/")
    assert page.get_json()["captures"] == entries


def _strip_refers_to(path):
    """Rewrite the file without the revisits' WARC-Refers-To-Target-URI and -Date headers."""
    records = []
    with open(path, "rb") as fh:
        for record in ArchiveIterator(fh):
            record.rec_headers.remove_header("WARC-Refers-To-Target-URI")
            record.rec_headers.remove_header("WARC-Refers-To-Date")
            body = record.raw_stream.read()
            records.append((record, body))
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for record, body in records:
            new = writer.create_warc_record(
                record.rec_headers.get_header("WARC-Target-URI"),
                record.rec_type,
                payload=io.BytesIO(body),
                http_headers=record.http_headers,
                warc_headers=record.rec_headers,
            )
            writer.write_record(new)


def test_json_form_of_a_collection_without_harvest_state(root):
    """WARCs indexed by pywb alone (wb-manager): the list comes from the CDXJ, kinds unknown."""
    coll = Collection.open(root, "bare", create=True)
    lines = []
    for name in ("legacy-1998.arc", "legacy-2001.arc.gz"):
        (coll.archive_dir / name).write_bytes((DATA / name).read_bytes())
        lines += cdxj.index_warc(coll.archive_dir / name, name)
    cdxj.write_index(coll.cdxj_path, lines)
    assert not coll.db_path.exists()
    data = create_app(root).test_client().get("/api/captures/bare/http://legacy.example/").get_json()
    assert [
        (c["timestamp"], c["kind"], c["status"], c["warc"], c["offset"], c["digest"]) for c in data["captures"]
    ] == [
        ("19980301120005", None, 200, "legacy-1998.arc", 145, "sha1:CXPEU6NUOK55NX3N3FM734UR4DWXBLRY"),
        ("20010615080004", None, 200, "legacy-2001.arc.gz", 355, "sha1:VSCCRTQ5UEBBMYACMUPGLJNZLOTYFV3C"),
    ]
