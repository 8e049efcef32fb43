"""The host dispatcher (``replay.hosts.build_site``, as ``strata serve --staff-host`` runs it) in a
child process on a real socket, and an archived page whose script attacks the console: what the
Chromium tests of the console and of the restricted host share."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from demo.site_server import Resource
from tests.support.processes import stop_process

_SERVER = """
import json, sys
from pathlib import Path
from replay.hosts import build_site
from replay.server import serve
root, port = Path(sys.argv[1]), int(sys.argv[2])
options = json.loads(sys.argv[3].replace("{port}", str(port)))
app = build_site(root, "staff.localhost", archive_url=f"http://archive.localhost:{port}", **options)
serve(app, "127.0.0.1", port)
"""


@contextlib.contextmanager
def running_dispatcher(root: Path, port: int, **options) -> Iterator[subprocess.Popen]:
    """``build_site(root, "staff.localhost", archive_url=..., **options)`` served on ``port`` until the
    block ends; ``{port}`` in an option's strings is the port. Ready once the console's login page answers."""
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(root), str(port), json.dumps(options)], stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                login = httpx.get(f"http://127.0.0.1:{port}/login", headers={"Host": f"staff.localhost:{port}"})
                if login.status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                assert server.stderr is not None
                raise RuntimeError("the server did not start: " + server.stderr.read1(4000).decode())
            time.sleep(0.2)
        yield server
    finally:
        stop_process(server)


class AttackingPage:
    """An archived page (at ``/``) whose script reads ``document.cookie``, reads ``api`` on the console
    and POSTs ``fields`` to ``post`` there, and writes what it got into ``#out`` as JSON."""

    def __init__(self, staff: str, api: str, post: str, fields: dict[str, str], title: str, heading: str):
        self.staff, self.api, self.post, self.fields = staff, api, post, fields
        self.title, self.heading = title, heading

    def resolve(self, version, path, headers):
        if path != "/":
            return Resource(404, (("Content-Type", "text/plain"),), b"no")
        script = f"""
var out = {{cookie: document.cookie}};
function done(k, v) {{ out[k] = v; document.getElementById("out").textContent = JSON.stringify(out); }}
done("start", 1);
fetch("{self.staff}{self.api}", {{credentials: "include"}})
  .then(function (r) {{ return r.text(); }}).then(function (t) {{ done("api", "read: " + t.slice(0, 300)); }})
  .catch(function (e) {{ done("api", "blocked: " + e); }});
fetch("{self.staff}{self.post}", {{method: "POST", credentials: "include", mode: "no-cors",
      body: new URLSearchParams({json.dumps(self.fields)})}})
  .then(function (r) {{ done("post", "sent: " + r.type + " " + r.status); }})
  .catch(function (e) {{ done("post", "blocked: " + e); }});
"""
        html = (
            f"<!DOCTYPE html><html><head><title>{self.title}</title></head><body><h1>{self.heading}</h1>"
            f'<pre id=out style="white-space: pre-wrap"></pre><script>{script}</script></body></html>'
        )
        return Resource(200, (("Content-Type", "text/html; charset=utf-8"),), html.encode())
