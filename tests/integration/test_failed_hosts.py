"""A run where every request to a host failed says so and exits non-zero, even when other hosts answered."""

from __future__ import annotations

import json
import subprocess

from tests.conftest import VENV_BIN, free_port
from tests.support.wire_server import WireServer, http_response

STRATA = str(VENV_BIN / "strata")
HTML = [(b"Content-Type", b"text/html")]


def run(root, *args):
    return subprocess.run([STRATA, *args, "--root", str(root)], capture_output=True, text=True, timeout=90)


def test_a_host_that_never_answered_fails_the_run(root):
    dead = f"127.0.0.1:{free_port()}"  # nothing listens there
    routes = {
        "/": http_response(200, HTML, b'<a href="/a.html">a</a>'),
        "/a.html": http_response(200, HTML, b"<p>a</p>"),
    }
    with WireServer(routes) as server:
        seeds = ["--seed", server.base_url + "/", "--seed", f"http://{dead}/"]
        out = run(root, "harvest", "c", *seeds, "--delay", "0", "--json")
        assert out.returncode == 1, out.stdout + out.stderr
        summary = json.loads(out.stdout)
        assert summary["failed_hosts"] == [dead]
        assert summary["urls_fetched"] == 3 and summary["errors"] >= 1  # the live host: robots, /, /a.html
        assert dead in out.stderr  # the one error line names it (here: its robots.txt was unreachable too)
        assert any(
            note.startswith(f"every request to {dead} failed") and "connection failed" in note
            for note in summary["notes"]
        )
        assert "Traceback" not in out.stderr

        text = run(root, "harvest", "c", *seeds, "--delay", "0")  # the summary for people says it too
        assert text.returncode == 1
        assert f"note: every request to {dead} failed" in text.stdout
        assert "Error: " in text.stderr and dead in text.stderr.split("Error: ", 1)[1]  # after the progress lines
    runs = json.loads(run(root, "runs", "c", "--json").stdout)
    assert [r["failed_hosts"] for r in runs] == [[dead], [dead]]
    report = run(root, "report", "c", "--json")
    assert [r["failed_hosts"] for r in json.loads(report.stdout)["runs"]] == [[dead], [dead]]
    assert f"every request failed to: {dead}" in run(root, "report", "c").stdout


def test_a_run_whose_hosts_all_answered_names_none(root):
    with WireServer({"/": http_response(200, HTML, b"<p>home</p>")}) as server:
        out = run(root, "harvest", "c", "--seed", server.base_url + "/", "--delay", "0", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["failed_hosts"] == []
