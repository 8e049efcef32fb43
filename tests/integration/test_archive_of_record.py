"""An archive of record on the paths a new user takes: imports that never half-happen, a revisit
found the same way everywhere, deviations every reader tolerates noted but not called damage.

- a ``response`` whose block is not HTTP, a record written twice, a file of resources or of
  revisits only: each imports (no traceback), its CDXJ is pywb's, and later imports still work;
- the revisit of an ``http://`` original that names ``https://`` (Heritrix, pywb's ``iana.warc.gz``)
  resolves in verify, ``strata captures``, replay, diff and the WACZ export alike;
- a warcinfo record without its final CRLF pair is a note of ``verify`` (exit 0), a problem only with
  ``--strict``;
- an import killed after linking its files and before swapping in its index is finished by the next
  ``strata recover`` (or import, or harvest), never left half done;
- search across collections holding no document answers, and no page shows the server's path.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import zipfile
from pathlib import Path

import pytest

from index.capture import rebuild
from index.capture.importing import import_files
from index.collection import Collection
from tests.conftest import VENV_BIN
from tests.support.warc_makers import gzip_records, pywb_cdxj, raw_record, sha1_digest

STRATA = str(VENV_BIN / "strata")


def strata(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([STRATA, *args, "--root", str(root)], capture_output=True, text=True, timeout=300)


record = raw_record
_sha1 = sha1_digest


HTTP = "application/http; msgtype=response"
BODY = b"<html><title>page</title><p>the same payload</p></html>"


def response(url: str, date: str, body: bytes = BODY) -> bytes:
    http = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    return record("response", url, date, http + body, HTTP, **{"WARC-Payload-Digest": _sha1(body)})


gz_file = gzip_records


def index_lines(coll: Collection) -> list[str]:
    return sorted(line for line in coll.cdxj_path.read_text().splitlines() if line.strip())


def test_awkward_records_import_index_as_pywb_and_leave_later_imports_working(tmp_path, root):
    not_http = record(
        "response", "http://example.test/text", "2020-01-01T00:00:00Z", b"just text, no HTTP\r\n\r\nat all", HTTP
    )
    resource = record("resource", "http://example.test/r.json", "2020-01-02T00:00:00Z", b'{"a": 1}', "application/json")
    revisit_of_resource = record(
        "revisit",
        "http://example.test/copy.json",
        "2020-01-03T00:00:00Z",
        b"",
        HTTP,
        **{
            "WARC-Payload-Digest": _sha1(b'{"a": 1}'),
            "WARC-Refers-To-Target-URI": "http://example.test/r.json",
            "WARC-Refers-To-Date": "2020-01-02T00:00:00Z",
            "WARC-Profile": "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
        },
    )
    page = response("http://example.test/", "2020-01-04T00:00:00Z")
    files = [
        gz_file(tmp_path / "not-http.warc.gz", not_http),
        gz_file(tmp_path / "twice.warc.gz", page, page),  # a record written twice (its id too)
        gz_file(tmp_path / "resources.warc.gz", resource, revisit_of_resource),
    ]
    for path in files:
        done = strata(root, "import", "c", str(path))
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    coll = Collection.open(root, "c")
    assert index_lines(coll) == pywb_cdxj(*files)
    captures = json.loads(strata(root, "captures", "c", "http://example.test/copy.json", "--json").stdout)
    assert captures[0]["original"]["url"] == "http://example.test/r.json" and captures[0]["original"]["warc"]
    assert strata(root, "verify", "c").returncode == 0
    twice = json.loads(strata(root, "captures", "c", "http://example.test/", "--json").stdout)
    assert [c["kind"] for c in twice] == ["new", "unchanged"]  # the second copy: the same payload again
    # a collection of resources and revisits only has no document to search: no 500 anywhere
    strata(root, "import", "r", str(files[2]))
    from replay import create_app

    client = create_app(root).test_client()
    for page in ("/search?q=page", "/api/search?q=page", "/search?q=page&c=r", "/api/search?q=page&c=r"):
        assert client.get(page).status_code == 200, page


def test_a_revisit_naming_https_of_an_original_taken_over_http_resolves_everywhere(tmp_path, root):
    original = response("http://www.example.test/style.css", "2014-01-26T20:06:25Z")
    revisit = record(
        "revisit",
        "https://www.example.test/style.css",
        "2014-01-27T20:06:25Z",
        b"HTTP/1.1 200 OK\r\nContent-Type: text/css\r\n\r\n",
        HTTP,
        **{
            "WARC-Payload-Digest": _sha1(BODY),
            "WARC-Refers-To-Target-URI": "https://www.example.test/style.css",
            "WARC-Refers-To-Date": "2014-01-26T20:06:25Z",
            "WARC-Profile": "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
            "WARC-Truncated": "length",
        },
    )
    path = gz_file(tmp_path / "iana-like.warc.gz", original, revisit)
    assert strata(root, "import", "c", str(path)).returncode == 0
    verified = json.loads(strata(root, "verify", "c", "--json").stdout)
    assert verified["intact"] and verified["revisits"] == 1, verified["problems"]
    (entry,) = json.loads(strata(root, "captures", "c", "https://www.example.test/style.css", "--json").stdout)
    assert entry["original"]["url"] == "http://www.example.test/style.css" and entry["original"]["offset"] == 0
    from replay import create_app

    served = create_app(root).test_client().get("/c/20140127200625id_/https://www.example.test/style.css")
    assert (served.status_code, served.data) == (200, BODY)
    diff = json.loads(
        strata(root, "diff", "c", "https://www.example.test/style.css", "20140126", "20140127", "--json").stdout
    )
    assert diff["identical"] and diff["relation"] == (
        "the capture of 20140127200625 is a revisit of the capture of 20140126200625"
    )  # the capture over http, one of the https URL's: the index does not tell schemes apart
    out = tmp_path / "c.wacz"
    exported = json.loads(strata(root, "export", "wacz", "c", "--out", str(out), "--json").stdout)
    assert exported["revisits_without_original"] == 0
    with zipfile.ZipFile(out) as package:
        assert package.read("indexes/index.cdx.gz")


def test_a_warcinfo_without_its_final_crlf_pair_is_a_note_not_damage(tmp_path, root):
    warcinfo = record("warcinfo", "", "2020-01-01T00:00:00Z", b"software: a tool\r\n", "application/warc-fields")
    path = tmp_path / "no-crlf.warc.gz"
    path.write_bytes(
        gzip.compress(warcinfo, mtime=0)
        + gz_file(tmp_path / "x", response("http://a.test/", "2020-01-01T00:00:01Z")).read_bytes()
    )
    imported = strata(root, "import", "c", str(path))
    assert imported.returncode == 0 and "note: @0: record not followed by CRLF CRLF" in imported.stdout
    done = strata(root, "verify", "c")
    assert done.returncode == 0 and "c: intact" in done.stdout
    assert "note: no-record-separator archive/no-crlf.warc.gz @0" in done.stdout
    strict = strata(root, "verify", "c", "--strict")
    assert strict.returncode == 1 and "problem: no-record-separator" in strict.stdout


def test_an_import_killed_after_linking_its_files_is_finished_by_recover(tmp_path, root, monkeypatch):
    first = gz_file(tmp_path / "first.warc.gz", response("http://a.test/", "2020-01-01T00:00:00Z"))
    assert import_files(root, "c", [first], fulltext=False).imported
    second = gz_file(tmp_path / "second.warc.gz", response("http://a.test/b", "2020-02-01T00:00:00Z", b"other"))

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # the process dies between linking the files and swapping in the index

    monkeypatch.setattr(rebuild, "_swap_in", killed)
    with pytest.raises(KeyboardInterrupt):
        import_files(root, "c", [second], fulltext=False)
    coll = Collection.open(root, "c")
    assert (coll.state_dir / rebuild.JOURNAL).exists() and (coll.archive_dir / "second.warc.gz").exists()
    assert "second.warc.gz" not in coll.cdxj_path.read_text()  # half done: linked, not indexed
    monkeypatch.undo()
    done = strata(root, "recover", "c")
    assert done.returncode == 0 and "an interrupted import or index rebuild was finished" in done.stdout
    assert not (coll.state_dir / rebuild.JOURNAL).exists()
    assert index_lines(coll) == pywb_cdxj(first, second)
    assert strata(root, "verify", "c").returncode == 0
    assert not list(coll.archive_dir.glob(".import-*"))


def test_the_search_page_for_an_unknown_collection_shows_no_server_path(root):
    from replay import create_app

    Collection.open(root, "known", create=True)
    client = create_app(root).test_client()
    for page in ("/search?q=library&c=nope", "/api/search?q=library&c=nope", "/search/export.csv?q=library&c=nope"):
        response = client.get(page)
        text = response.get_data(as_text=True)
        assert response.status_code in (400, 404) and "nope" in text, page
        assert str(root) not in text and str(root.resolve()) not in text and "strata harvest" not in text, page
