"""A Set-Cookie with bytes beyond ASCII does not make later requests to its host fail."""

from __future__ import annotations

import json
import subprocess

import pytest
from warcio.archiveiterator import ArchiveIterator

from index.collection import Collection
from tests.conftest import VENV_BIN
from tests.support.wire_server import WireServer, http_response

STRATA = str(VENV_BIN / "strata")
HTML = [(b"Content-Type", b"text/html; charset=utf-8")]
PAGES = ["/a.html", "/b.html", "/c.html"]


def routes() -> dict[str, bytes]:
    home = "".join(f'<a href="{p}">{p}</a>' for p in PAGES).encode()
    cookies = [
        (b"Set-Cookie", b"name=caf\xc3\xa9; Path=/"),  # UTF-8
        (b"Set-Cookie", b"raw=\xff\xfe; Path=/"),  # not UTF-8 at all
        (b"Set-Cookie", b"ok=1; Path=/"),
    ]
    out = {"/": http_response(200, HTML + cookies, home)}
    out.update({p: http_response(200, HTML, f"<p>page {p}</p>".encode()) for p in PAGES})
    return out


@pytest.mark.parametrize("fetch_process", ["true", "false"])
def test_later_requests_to_the_host_go_out_and_keep_the_ascii_cookie(root, fetch_process):
    with WireServer(routes()) as server:
        jobs = root / "c" / "jobs"
        jobs.mkdir(parents=True)
        (jobs / "j.toml").write_text(
            f'seeds = ["{server.base_url}/"]\ndelay = 0\ndepth = 1\nfetch_process = {fetch_process}\n'
        )
        out = subprocess.run(
            [STRATA, "harvest", "c", "--job", "j", "--json", "--root", str(root)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        log = list(server.log)
    assert out.returncode == 0, out.stdout + out.stderr
    summary = json.loads(out.stdout)
    assert summary["errors"] == 0 and summary["urls_fetched"] == 2 + len(PAGES), summary["recent_errors"]
    for request in log:
        if request.path in PAGES:
            assert request.headers.get("cookie") == b"ok=1", request
    # the pages are archived with their own bytes; the Set-Cookie headers are archived too
    stored = {}
    for path in Collection.open(root, "c").archive_dir.glob("*.warc.gz"):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type == "response":
                    stored[record.rec_headers.get_header("WARC-Target-URI")[len(server.base_url) :]] = (
                        record.content_stream().read(),
                        record.http_headers,
                    )
    for page in PAGES:
        assert stored[page][0] == f"<p>page {page}</p>".encode()
    set_cookies = [v for k, v in stored["/"][1].headers if k.lower() == "set-cookie"]
    assert set_cookies == ["name=caf%C3%A9; Path=/", "raw=%FF%FE; Path=/", "ok=1; Path=/"]
