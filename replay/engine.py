"""The replay engine: pywb's rewriter and warcserver wired together in one process.

This is the only module that imports pywb's replay machinery (``create_app`` imports it lazily).
It knows nothing about Flask: it takes a WSGI environ and an ``Address`` and returns a status
line, headers and a body iterable, or raises a ``replay.errors`` / pywb ``WbException``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import quote, urlsplit

from pywb.rewrite.templateview import JinjaEnv
from pywb.utils.wbexception import NotFoundException, UpstreamException, WbException

from replay.address import Address
from replay.asof import pad_as_of
from replay.errors import CaptureDamaged, NotArchived
from replay.headers import replay_headers
from replay.rewriter import FuzzyMatch, StrataRewriterApp
from replay.transport import LocalClient
from replay.warcserver import DAMAGE_MARKER, make_warcserver

TEMPLATES = Path(__file__).parent / "templates" / "pywb"
STATIC_PREFIX = "static/pywb"
_PRINTABLE = "".join(map(chr, range(0x21, 0x7F)))  # a Location keeps these; an IRI's others are escaped


class ReplayEngine:
    def __init__(self, root: Path, config: dict, deletion_lookup: Callable):
        self.root = Path(root)
        self.config = config
        self.warcserver, self._index = make_warcserver(self.root)
        jinja_env = JinjaEnv(
            paths=[str(TEMPLATES)], packages=["pywb"], globals={"static_path": "static"}, extensions=["jinja2.ext.i18n"]
        )
        jinja_env.jinja_env.install_null_translations()
        pywb_config = {
            "enable_memento": True,
            "static_prefix": STATIC_PREFIX,
            "redirect_to_exact": False,
            "framed_replay": False,
            "use_js_obj_proxy": True,
        }
        self.rewriter = StrataRewriterApp(LocalClient(self.warcserver), deletion_lookup, jinja_env, pywb_config)

    # -- replay --------------------------------------------------------------------------------
    def replay(self, environ: dict, addr: Address, template_params: dict) -> tuple[str, list, Iterable[bytes]]:
        env = dict(environ)
        env.pop("HTTP_X_PYWB_ACL_USER", None)  # pywb would forward it to select access rules
        self.rewriter.prepare_env(env)  # host and static prefixes, before the collection is shifted
        env["SCRIPT_NAME"] = env.get("SCRIPT_NAME", "") + "/" + addr.coll
        env["PATH_INFO"] = "/" + addr.pywb_path()
        env["pywb.template_params"] = template_params
        kwargs = {"coll": addr.coll, "type": "replay", "mod": addr.mod, "metadata": {}, "ui": {}}
        if addr.kind == "timemap":
            kwargs["output"] = addr.output
        try:
            response = self.rewriter.render_content(addr.pywb_path(), kwargs, env)
        except NotFoundException:
            raise self.not_archived(addr) from None
        except FuzzyMatch as match:  # a capture of another URL: shown under its own address
            location = quote(f"{env['SCRIPT_NAME']}/{match.timestamp}{addr.mod}/{match.url}", safe=_PRINTABLE)
            return "302 Found", [("Location", location), ("Content-Length", "0")], []
        except UpstreamException as exc:
            if DAMAGE_MARKER in str(exc.msg):  # the warcserver's answer for a damaged record
                raise CaptureDamaged(addr.coll, addr.url) from None
            raise
        headers = replay_headers(
            response.status_headers.headers, self.config["strip_headers"], addr.mod, self.config["raw_csp"]
        )
        return response.status_headers.statusline, headers, response.body

    def not_archived(self, addr: Address) -> NotArchived:
        later = []
        if addr.timestamp:
            as_of = pad_as_of(addr.timestamp)
            later = [c for c in self.captures(addr.coll, addr.url, limit=50) if c["timestamp"] > as_of][:1]
        return NotArchived(addr.coll, addr.url, addr.timestamp, self.nearby(addr.coll, addr.url), later)

    # -- index questions -----------------------------------------------------------------------
    def captures(self, coll: str, url: str, limit: int | None = None) -> list:
        """Every capture of ``url`` (pywb's canonical match), oldest first."""
        return self._query(coll, {"url": url, "matchType": "exact"}, limit)

    def prefix(self, coll: str, url: str, limit: int) -> list[dict]:
        """Distinct archived URLs starting with ``url``: url, first and last capture, count."""
        seen: dict[str, dict] = {}
        for cdx in self._query(coll, {"url": url, "matchType": "prefix"}, None, lazy=True):
            entry = seen.get(cdx["urlkey"])
            if entry is None:
                if len(seen) >= limit:
                    break
                entry = seen[cdx["urlkey"]] = {"url": cdx["url"], "first": cdx["timestamp"], "count": 0}
            entry["last"] = cdx["timestamp"]
            entry["count"] += 1
        return list(seen.values())

    def nearby(self, coll: str, url: str) -> list[dict]:
        """Archived URLs under the closest parent path of ``url`` that has any."""
        limit = self.config["nearby_limit"]
        if not limit:
            return []
        for prefix in _parents(url):
            found = self.prefix(coll, prefix, limit)
            if found:
                return found
        return []

    def _query(self, coll: str, params: dict, limit: int | None, lazy: bool = False):
        params = {**params, "param.coll": coll}
        try:
            cdx_iter, _ = self._index(params)
            cdx_iter = itertools.islice(cdx_iter, limit) if limit else cdx_iter
            return cdx_iter if lazy else list(cdx_iter)
        except WbException:
            return iter(()) if lazy else []


def _parents(url: str) -> list[str]:
    parts = urlsplit(url)
    base = f"{parts.scheme}://{parts.netloc}"
    segments = parts.path.split("/")[1:-1]
    out = [base + "/" + "/".join(segments[:i]) + ("/" if i else "") for i in range(len(segments), -1, -1)]
    return list(dict.fromkeys(out))
