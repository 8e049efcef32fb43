"""Every command and console page over four collections: ``harvested`` (the sample site, v1 full then
v2 incremental), ``imported`` (other tools' files: warcio, Debian's wget, ARC), ``rebuilt`` (the
harvested one with its index and state rebuilt from its WARCs) and ``mixed`` (harvested, then other
tools' files imported into it).

Each command's text output is compared with the expectation committed in
``tests/data/expected/four_collections/`` once what varies between runs is taken out (ports,
times, run ids, sizes, offsets, hashes, the root): no ``None``, no traceback, the same words every
time. A changed output is a changed expectation: ``STRATA_UPDATE_EXPECTED=1`` writes them anew, and
the diff is read before it is committed. Every console page, staff and public, answers 200 without
a ``None`` in its tables.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import lxml.html
import pytest

from demo.sample_site import serve_sample_site
from harvester.job import validate_job
from harvester.run import Harvest
from index.collection import Collection
from replay.staff import create_staff_app
from tests.conftest import REPO, VENV_BIN
from tests.support.staff_helpers import ARCHIVE_URL, STAFF_HOST, add_user, log_in, make_client
from tests.support.warc_makers import DATA

STRATA = str(VENV_BIN / "strata")
EXPECTED = REPO / "tests" / "data" / "expected" / "four_collections"
COLLECTIONS = ("harvested", "imported", "rebuilt", "mixed")
OTHER_TOOLS = ("tiny-revisits.warc.gz", "wget-1.21-contact.warc.gz", "legacy-1998.arc", "legacy-2001.arc.gz")


def strata(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([STRATA, *args, "--root", str(root)], capture_output=True, text=True, timeout=300)


def _harvest(root: Path, name: str, site) -> None:
    job = validate_job("sample", {"seeds": [site.base_url + "/"], "delay": 0.0, "depth": 6, "timeout": 10.0})
    coll = Collection.open(root, name, create=True)
    summary = asyncio.run(Harvest(coll, job, adhoc=True).run())
    assert summary["status"] == "finished", summary


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    root = tmp_path_factory.mktemp("four") / "collections"
    root.mkdir()
    with serve_sample_site(version=1) as site:
        for name in ("harvested", "mixed"):
            site.version = 1
            _harvest(root, name, site)
            site.version = 2
            _harvest(root, name, site)
        port = site.port
    for name in ("imported", "mixed"):
        done = strata(root, "import", name, *(str(DATA / f) for f in OTHER_TOOLS))
        assert done.returncode == 0, done.stderr
    shutil.copytree(root / "harvested", root / "rebuilt")
    rebuilt = Collection.open(root, "rebuilt")
    rebuilt.db_path.unlink()
    rebuilt.cdxj_path.unlink()
    shutil.rmtree(rebuilt.fulltext_dir)
    assert strata(root, "index", "rebuild", "rebuilt").returncode == 0
    add_user(root)
    return root, port


# -- what varies between runs, taken out of the text ------------------------------------------------
_VARIES = [
    (re.compile(r"\b[0-9a-f]{64}\b"), "<sha256>"),
    (re.compile(r"\b\d{14}-[0-9a-f]{4}\b"), "<run>"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?Z?"), "<time>"),
    (re.compile(r"\b\d{14}\b"), "<ts>"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
    (re.compile(r"\b\d+(\.\d+)? (B|KB|MB|GB)\b"), "<size>"),
    (re.compile(r"@ ?\d+"), "@<offset>"),
    (re.compile(r"\b\d+\.\d+ ?s\b"), "<secs>"),
    (re.compile(r"\b\d+ ms\b"), "<ms>"),
    (re.compile(r"x\d+\.\d+"), "x<ratio>"),
    (re.compile(r"(?<![\w.-])\d+\.\d+(?![\w.-])"), "<n.n>"),  # durations, ratios (not a file's version)
    (re.compile(r"\b[A-Z2-7]{32}\b"), "<digest>"),
    (re.compile(r"(?<=\bid )[0-9a-z]{15}\b"), "<pid>"),  # a permanent id: of the capture's second
    (re.compile(r"-\d{5}(-[^.\s/]+)?\.warc\.gz"), "-<n>-<host>.warc.gz"),  # the worker's label: the host's name
    (re.compile(r"[ \t]+"), " "),
]


def normalized(text: str, root: Path, port: int) -> str:
    text = text.replace(str(root), "<root>").replace(f":{port}", ":<port>")
    for rx, mark in _VARIES:
        text = rx.sub(mark, text)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def _url(port: int) -> str:
    return f"http://127.0.0.1:{port}/"


IMPORTED_URL = "http://legacy.example/"  # a URL of the other tools' files, captured twice


def _first_and_last(root: Path, coll: str, url: str) -> list[str]:
    captures = json.loads(strata(root, "captures", coll, url, "--json").stdout)
    return [captures[0]["timestamp"], captures[-1]["timestamp"]]


def _first_run(root: Path, coll: str) -> str:
    return json.loads(strata(root, "runs", coll, "--json").stdout)[0]["run_id"]


COMMANDS = {
    "runs": lambda root, coll, url: ["runs", coll],
    "report": lambda root, coll, url: ["report", coll],
    "report-run": lambda root, coll, url: ["report", coll, "--run", _first_run(root, coll)],
    "captures": lambda root, coll, url: ["captures", coll, url],
    "diff": lambda root, coll, url: ["diff", coll, url, *_first_and_last(root, coll, url)],
    "verify": lambda root, coll, url: ["verify", coll],
    "verify-quick": lambda root, coll, url: ["verify", coll, "--quick"],
    # every hit (more than the page of 20): which of two equal hits makes the page depends on ports
    "search": lambda root, coll, url: ["search", coll, "sample", "--limit", "100"],
    "access-list": lambda root, coll, url: ["access", coll, "list"],
    "export-wacz": lambda root, coll, url: ["export", "wacz", coll, "--out", str(root.parent / f"{coll}.wacz")],
    "recover": lambda root, coll, url: ["recover", coll],
}


@pytest.mark.slow
@pytest.mark.parametrize("coll", COLLECTIONS)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_says_what_it_said_before(four, coll, command):
    root, port = four
    args = COMMANDS[command](root, coll, IMPORTED_URL if coll == "imported" else _url(port))
    done = strata(root, *args)
    assert "Traceback" not in done.stderr and "None" not in done.stdout, done.stdout + done.stderr
    assert done.returncode in (0, 1), done.stderr  # 1: a search without hits in the imported files
    out = done.stdout
    if command == "search":  # hits of equal score come in URL order, and ports differ run to run
        head, *hits = out.split("\n\n")
        out = "\n\n".join([head, *sorted(normalized(h, root, port) for h in hits)])
    text = normalized(f"$ strata {' '.join(args)} (exit {done.returncode})\n{out}", root, port)
    text = text.replace(str(root.parent), "<tmp>")
    expected = EXPECTED / f"{coll}__{command}.txt"
    if os.environ.get("STRATA_UPDATE_EXPECTED"):
        expected.parent.mkdir(parents=True, exist_ok=True)
        expected.write_text(text, encoding="utf-8")
    assert text == expected.read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("coll", COLLECTIONS)
def test_the_json_of_runs_and_report_holds_every_figure(four, coll):
    root, _ = four
    runs = json.loads(strata(root, "runs", coll, "--json").stdout)
    assert runs and all(r["mode"] in ("full", "incremental", "imported") for r in runs)
    assert all(r["status"] == "finished" and r["started_by"] in ("command line", "import") for r in runs)
    report = json.loads(strata(root, "report", coll, "--json").stdout)
    for run in report["runs"]:
        assert None not in (run["mode"], run["requests"], run["bytes_stored"], run["full_estimate"])
    if coll != "imported":
        # the rebuild gives the runs back as they were, jobs (none: --seed-like runs) included
        harvested = [(r["job"], r["mode"]) for r in runs if r["mode"] != "imported"]
        assert harvested == [(None, "full"), (None, "incremental")]


@pytest.mark.slow
@pytest.mark.parametrize("coll", COLLECTIONS)
def test_every_public_page_answers_without_none(four, coll):
    from replay import create_app

    root, port = four
    client = create_app(root).test_client()
    url = IMPORTED_URL if coll == "imported" else _url(port)
    pages = ["/", f"/{coll}/", f"/{coll}/*/{url}", f"/search?q=sample&c={coll}", f"/api/captures/{coll}/{url}"]
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        if response.mimetype == "text/html":
            cells = lxml.html.fromstring(response.get_data(as_text=True)).xpath("//td//text()")
            assert "None" not in [c.strip() for c in cells], page
        else:
            assert "null, null" not in response.get_data(as_text=True)
    rows = lxml.html.fromstring(client.get(f"/{coll}/").get_data(as_text=True)).xpath("//table//tr/td[1]")
    assert rows  # the collection page lists its runs


@pytest.mark.slow
def test_every_console_page_answers_without_none(four):
    root, _ = four
    app = create_staff_app(root, {"staff_hosts": [STAFF_HOST], "archive_url": ARCHIVE_URL})
    staff = log_in(make_client(app))
    for page in ("/jobs", "/runs", "/access", *(f"/access/{c}" for c in COLLECTIONS)):
        response = staff.get(page)
        assert response.status_code == 200, page
        cells = [c.strip() for c in lxml.html.fromstring(response.text).xpath("//td//text()")]
        assert "None" not in cells, (page, [c for c in cells if "None" in c])
    runs = lxml.html.fromstring(staff.get("/runs").text)
    modes = {c.strip() for c in runs.xpath("//td[position()=5]//text()") if c.strip()}
    assert "imported" in {c.strip() for c in runs.xpath("//td//text()")}, modes
