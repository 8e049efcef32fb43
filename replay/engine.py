"""The replay engine: pywb's rewriter and warcserver wired together in one process.

This is the only module that imports pywb's replay machinery (``create_app`` imports it lazily).
It knows nothing about Flask: it takes a WSGI environ and an ``Address`` and returns a status
line, headers and a body iterable, or raises a ``replay.errors`` / pywb ``WbException``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import quote, urljoin, urlsplit

from pywb.rewrite.templateview import JinjaEnv
from pywb.utils.wbexception import NotFoundException, UpstreamException, WbException

from replay.access import CaptureBlocked
from replay.address import Address
from replay.asof import ACCESS_MARKER, ACCESS_PARAM, pad_as_of
from replay.errors import CaptureDamaged, NotArchived
from replay.headers import replay_headers
from replay.rewriter import FuzzyMatch, StrataRewriterApp
from replay.transport import LocalClient
from replay.warcserver import DAMAGE_MARKER, make_warcserver

TEMPLATES = Path(__file__).parent / "templates" / "pywb"
STATIC_PREFIX = "static/pywb"
_PRINTABLE = "".join(map(chr, range(0x21, 0x7F)))  # a Location keeps these; an IRI's others are escaped


class ReplayEngine:
    def __init__(self, root: Path, config: dict, deletion_lookup: Callable, rules_for: Callable | None = None):
        self.root = Path(root)
        self.config = config
        self.rules_for = rules_for  # coll -> index.access.rules.RuleSet; None: no access control (tests of pywb parts)
        self.warcserver, self._index = make_warcserver(self.root, rules_for)
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
    def _rules(self, coll: str, level: str | None):
        """The collection's rules when they hide something from ``level``; else None (fast path)."""
        if level is None or self.rules_for is None:
            return None
        rules = self.rules_for(coll)
        return rules if rules.hides_from(level) else None

    def replay(
        self, environ: dict, addr: Address, template_params: dict, level: str | None = None
    ) -> tuple[str, list, Iterable[bytes]]:
        env = dict(environ)
        env.pop("HTTP_X_PYWB_ACL_USER", None)  # pywb would forward it to select access rules
        self.rewriter.prepare_env(env)  # host and static prefixes, before the collection is shifted
        env["SCRIPT_NAME"] = env.get("SCRIPT_NAME", "") + "/" + addr.coll
        env["PATH_INFO"] = "/" + addr.pywb_path()
        env["pywb.template_params"] = template_params
        kwargs: dict = {"coll": addr.coll, "type": "replay", "mod": addr.mod, "metadata": {}, "ui": {}}
        rules = self._rules(addr.coll, level)
        if rules is not None:
            kwargs[ACCESS_PARAM] = level
        if addr.kind == "timemap":
            kwargs["output"] = addr.output
        try:
            response = self.rewriter.render_content(addr.pywb_path(), kwargs, env)
        except NotFoundException:
            raise self.not_archived(addr, level) from None
        except FuzzyMatch as match:  # a capture of another URL: shown under its own address
            if rules is not None and not rules.visible(match.url, match.timestamp, level or "public"):
                raise self.not_archived(addr, level) from None  # the redirect would name it
            location = quote(f"{env['SCRIPT_NAME']}/{match.timestamp}{addr.mod}/{match.url}", safe=_PRINTABLE)
            return "302 Found", [("Location", location), ("Content-Length", "0")], []
        except UpstreamException as exc:
            if DAMAGE_MARKER in str(exc.msg):  # the warcserver's answer for a damaged record
                raise CaptureDamaged(addr.coll, addr.url) from None
            if ACCESS_MARKER in str(exc.msg):
                raise CaptureBlocked(addr.coll, addr.url, str(exc.msg).rsplit(" ", 1)[-1]) from None
            raise
        headers = replay_headers(
            response.status_headers.headers, self.config["strip_headers"], addr.mod, self.config["raw_csp"]
        )
        if rules is not None and response.status_headers.statusline[:1] == "3":
            self._check_redirect(addr, headers, rules, level or "public", response)
        return response.status_headers.statusline, headers, response.body

    def _check_redirect(self, addr: Address, headers: list, rules, level: str, response) -> None:
        """An archived redirect to a URL the level may not see would name it: answered as that
        URL's own verdict (404 as if never archived, or the 451 notice)."""
        location = next((v for k, v in headers if k.lower() == "location"), "")
        if not location:
            return
        # rewritten (/coll/<ts><mod>/<url>) or, in id_ mode, as archived (relative to the page)
        target = _archived_target(location, addr.coll) or urljoin(addr.url, location)
        verdict = rules.verdict(target, pad_as_of(addr.timestamp) if addr.timestamp else "99991231235959", level)
        if verdict.visible:
            return
        close = getattr(response.body, "close", None)
        if close:
            close()
        if verdict.access == "block":
            raise CaptureBlocked(addr.coll, addr.url, verdict.level)
        raise self.not_archived(addr, level)

    def not_archived(self, addr: Address, level: str | None = None) -> NotArchived:
        later = []
        if addr.timestamp:
            as_of = pad_as_of(addr.timestamp)
            later = [c for c in self.captures(addr.coll, addr.url, limit=50, level=level) if c["timestamp"] > as_of][:1]
        return NotArchived(addr.coll, addr.url, addr.timestamp, self.nearby(addr.coll, addr.url, level), later)

    # -- index questions -----------------------------------------------------------------------
    def captures(self, coll: str, url: str, limit: int | None = None, level: str | None = None) -> list:
        """Every capture of ``url`` (pywb's canonical match) that ``level`` may see, oldest first
        (``level`` None: every capture)."""
        rules = self._rules(coll, level)
        if rules is None:
            return self._query(coll, {"url": url, "matchType": "exact"}, limit)
        shown = rules.filter_cdx(self._query(coll, {"url": url, "matchType": "exact"}, None, lazy=True), level)
        return list(itertools.islice(shown, limit) if limit else shown)

    def prefix(self, coll: str, url: str, limit: int, level: str | None = None) -> list[dict]:
        """Distinct archived URLs starting with ``url`` that ``level`` may see: url, first and last
        visible capture, count of visible captures."""
        seen: dict[str, dict] = {}
        rows = self._query(coll, {"url": url, "matchType": "prefix"}, None, lazy=True)
        rules = self._rules(coll, level)
        if rules is not None:
            rows = rules.filter_cdx(rows, level)
        for cdx in rows:
            entry = seen.get(cdx["urlkey"])
            if entry is None:
                if len(seen) >= limit:
                    break
                entry = seen[cdx["urlkey"]] = {"url": cdx["url"], "first": cdx["timestamp"], "count": 0}
            entry["last"] = cdx["timestamp"]
            entry["count"] += 1
        return list(seen.values())

    def nearby(self, coll: str, url: str, level: str | None = None) -> list[dict]:
        """Archived URLs under the closest parent path of ``url`` that has any ``level`` may see."""
        limit = self.config["nearby_limit"]
        if not limit:
            return []
        for prefix in _parents(url):
            found = self.prefix(coll, prefix, limit, level)
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


def _archived_target(location: str, coll: str) -> str | None:
    """The archived URL a rewritten ``Location`` (``/coll/<ts><mod>/<url>``, maybe absolute) names."""
    path = location
    if location.startswith(("http://", "https://")):
        parts = urlsplit(location)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
    marker = f"/{coll}/"
    at = path.find(marker)
    if at < 0:
        return None
    rest = path[at + len(marker) :]
    stamp, _, url = rest.partition("/")
    return url if stamp[:1].isdigit() and url else None


def _parents(url: str) -> list[str]:
    parts = urlsplit(url)
    base = f"{parts.scheme}://{parts.netloc}"
    segments = parts.path.split("/")[1:-1]
    out = [base + "/" + "/".join(segments[:i]) + ("/" if i else "") for i in range(len(segments), -1, -1)]
    return list(dict.fromkeys(out))
