"""Access rules: which captures a request may see, the ONE answer every surface asks.

Rules live with the collection, in pywb's own format, ``collections/<c>/acl/rules.aclj`` (one JSON
line per SURT key, most specific first), so an unmodified pywb given ``acl_paths`` enforces the
replay side the same way. A Strata rule is written as one or more lines sharing an ``id``:

    gov,example)/news/ - {"access": "block", "id": "r1a2b", "level": "reading-room", "prefix": ...}
    gov,example)/news/ - {"access": "allow", "user": "reading-room", "level": "reading-room", "id": ...}
    gov,example)/news/ - {"access": "allow", "user": "staff", "level": "staff", "id": ...}

The line without ``user`` is what pywb serves to anyone (it never holds ``allow`` unless the rule is
public), so pywb fails closed on every line it reads; the ``user`` lines are what pywb grants when its
``X-Pywb-ACL-User`` names them. Strata adds ``id``, ``level``, ``prefix`` (as the rule was given),
``reason``, ``by`` and ``at``, which pywb ignores. Embargoes are pywb's ``newer``/``older`` conditions
(``{"years": 1}``) on every line of the rule: outside the condition, pywb and Strata both answer the
collection's default, not the next rule.

Levels, lowest first: ``public`` < ``reading-room`` < ``staff`` < ``none`` (nobody). A capture resolves
to one level; a request has one of the first three and sees the captures at or below it. A hidden
capture answers as its rule's ``access`` says: ``exclude`` (as if never archived) or ``block`` (451).

``RuleSet.verdict(url, timestamp, level)`` is the function every surface calls (replay, TimeMap,
calendar, listings, counts, search, and at merge the CDX API, exports, diff, /web/ and permanent ids).
Lookup is a bisect in the sorted SURT keys then a walk up each key's chain of shorter keys that are
its prefixes: O(log n + depth), so 10,000 rules cost what 10 do.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import fcntl
import itertools
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

from strata.errors import ConfigError

__all__ = [
    "ACCESS",
    "LEVELS",
    "AccessRules",
    "Rule",
    "RuleSet",
    "Verdict",
    "parse_duration",
    "prefix_keys",
    "rules_for",
    "urlkey",
]

LEVELS = ("public", "reading-room", "staff")  # what a request can be
CAPTURE_LEVELS = LEVELS + ("none",)  # what a capture can need
_RANK = {name: rank for rank, name in enumerate(CAPTURE_LEVELS)}
ACCESS = ("allow", "block", "exclude")
EXACT = "###"  # pywb's suffix of a one-URL key
ANY = "*,"  # pywb's key matching any URL: the collection's default
RULES_FILE = "rules.aclj"
AUDIT_FILE = "audit.jsonl"
_DURATION = re.compile(r"(\d+)\s*(y|mo|m|w|d)", re.I)
_DURATION_UNITS = {"y": "years", "mo": "months", "m": "months", "w": "weeks", "d": "days"}
_HOST = re.compile(r"^[a-z0-9](?:[a-z0-9\-_]{0,62}\.?)*(?::\d{1,5})?$")


def check_level(value: str, name: str = "--level", allowed: tuple[str, ...] = LEVELS) -> str:
    if value not in allowed:
        raise ConfigError(f"{name}: {value!r} is not a level; use one of {', '.join(allowed)}")
    return value


def parse_duration(text: str, name: str = "--embargo") -> dict[str, int]:
    """``1y``, ``6m`` (or ``6mo``), ``2w``, ``30d``, or a sum (``1y6m``) as pywb's ``{"years": 1, ...}``."""
    compact = (text or "").strip().lower().replace(" ", "")
    if not compact or _DURATION.sub("", compact):
        raise ConfigError(f"{name}: {text!r} is not a duration; use e.g. 30d, 2w, 6m, 1y or 1y6m")
    out: dict[str, int] = {}
    for number, unit in _DURATION.findall(compact):
        key = _DURATION_UNITS[unit]
        out[key] = out.get(key, 0) + int(number)
    if not any(out.values()):
        raise ConfigError(f"{name}: {text!r} is zero; give a period such as 30d")
    return out


def _canonical(url: str) -> str:
    from pywb.utils.canonicalize import canonicalize  # pywb's urlkey, exactly as the CDXJ index holds it

    return canonicalize(url)


@lru_cache(maxsize=65536)
def urlkey(url: str) -> str:
    return _canonical(url)


def prefix_keys(prefix: str) -> list[str]:
    """The SURT keys a prefix covers, as pywb matches them (string prefix, or ``###`` for one URL).

    ``*``: every URL (the collection default). ``*.example.gov``: the host and every subdomain.
    ``example.gov`` or ``http://example.gov/``: the host. ``http://example.gov/news/``: that path and
    below. ``http://example.gov/news/a.html``: that URL only; ``.../a*``: every URL starting so."""
    text = (prefix or "").strip()
    if text == "*":
        return [ANY]
    if not text or any(c.isspace() or c in '<>"{}|\\^`' for c in text):
        raise ConfigError(f"PREFIX: {prefix!r} is not a URL prefix; give e.g. http://example.gov/news/")
    wildcard_host = text.startswith("*.")
    scheme_match = re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://", text)
    if scheme_match and scheme_match.group(1).lower() not in ("http", "https"):
        raise ConfigError(f"PREFIX: only http and https URLs are archived, not {scheme_match.group(1)}:")
    rest = text[scheme_match.end() :] if scheme_match else text
    if rest.startswith("*."):
        wildcard_host, rest = True, rest[2:]
    host, slash, path = rest.partition("/")
    host = host.lower().rstrip(".")
    if not host or not _HOST.match(host) or "*" in host:
        raise ConfigError(f"PREFIX: {prefix!r} has no valid host name; give e.g. example.gov or *.example.gov")
    if wildcard_host:
        if slash and path:
            raise ConfigError(f"PREFIX: {prefix!r}: a *.host prefix covers whole sites; leave out the path")
        base = _canonical(f"http://{host}/").split(")", 1)[0]
        return [base + ")", base + ","]
    if not path:
        return [_canonical(f"http://{host}/")]
    url = f"http://{host}/{path}"
    if url.endswith("*"):
        return [_canonical(url[:-1]) if len(url) > len(f"http://{host}/") + 1 else _canonical(f"http://{host}/")]
    key = _canonical(url)
    if url.endswith("/"):  # the path and below: pywb's urlkey of ".../news/" is ".../news"
        return [key + EXACT, key + "/"]
    return [key + EXACT]


# -- rules ----------------------------------------------------------------------------------------


def new_rule_id() -> str:
    """A rule's id: short enough to type (``strata access COLL remove r1a2b3c4d``), so not unique by
    itself (32 random bits: among 10,000 rules two share one about once in 90 collections);
    ``AccessRules.add`` draws again until it is unique in its collection."""
    return "r" + secrets.token_hex(4)


@dataclasses.dataclass(frozen=True)
class Rule:
    """One rule as staff gave it. ``level``: who sees the covered captures (``none``: nobody);
    ``access``: what those below it get (``allow`` only for a public rule); ``embargo``: pywb's
    ``newer`` condition; ``older``/``before``/``after`` read from hand-written pywb lines."""

    id: str
    prefix: str
    access: str
    level: str
    embargo: dict | None = None
    reason: str = ""
    by: str = ""
    at: str = ""
    keys: tuple[str, ...] = ()
    dates: tuple[tuple[str, object], ...] = ()  # pywb date conditions other than the embargo

    @classmethod
    def new(
        cls,
        prefix: str,
        access: str,
        level: str | None = None,
        embargo: str | None = None,
        reason: str = "",
        by: str = "",
    ) -> Rule:
        if access not in ACCESS:
            raise ConfigError(f"--access: {access!r} is not an access; use one of {', '.join(ACCESS)}")
        if level is not None:
            check_level(level)
        level = level or ("public" if access == "allow" else "none")
        keys = tuple(prefix_keys(prefix))
        if keys == (ANY,) and embargo:
            raise ConfigError("--embargo: the collection's default (*) takes no embargo; give a prefix")
        if access == "allow" and level == "public" and embargo:
            raise ConfigError("--embargo: an embargo restricts; give --access block or exclude, or a --level")
        deny = access if access != "allow" else "block"
        if level == "public":
            deny = "allow"
        if len(reason) > 500:
            raise ConfigError("--reason: longer than 500 characters; shorten it")
        return cls(
            id=new_rule_id(),
            prefix=prefix.strip(),
            access=deny,
            level=level,
            embargo=parse_duration(embargo) if embargo else None,
            reason=reason.strip(),
            by=by,
            at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            keys=keys,
        )

    def lines(self) -> list[tuple[str, dict]]:
        """The rule as pywb lines (key, JSON): the line for everyone, then one per user level."""
        extra = {"id": self.id, "prefix": self.prefix, "level": self.level, "reason": self.reason, "by": self.by}
        extra["at"] = self.at
        dates: dict = {"newer": self.embargo} if self.embargo else {}
        dates.update(dict(self.dates))
        out = []
        for key in self.keys:
            out.append((key, {"access": self.access, **dates, **extra}))
            if self.level in ("reading-room", "staff"):
                for user in LEVELS[_RANK[self.level] :]:
                    out.append((key, {"access": "allow", "user": user, **dates, **extra, "level": user}))
        return out

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "prefix": self.prefix,
            "access": self.access,
            "level": self.level,
            "embargo": self.embargo,
            "reason": self.reason,
            "by": self.by,
            "at": self.at,
            "keys": list(self.keys),
        }

    def describe(self) -> str:
        who = "everyone" if self.level == "public" else "nobody" if self.level == "none" else f"{self.level} and up"
        text = f"{self.prefix}: visible to {who}"
        if self.level != "public":
            text += f", {self.access} for others"
        if self.embargo:
            text += ", for captures newer than " + " ".join(f"{v} {k}" for k, v in self.embargo.items())
        return text


@dataclasses.dataclass(frozen=True)
class Verdict:
    visible: bool
    access: str  # what this request gets: allow | block | exclude
    level: str  # the level the capture needs: public | reading-room | staff | none
    rule: Rule | None  # the rule that decided; None: the collection's default (no rule)

    @property
    def status(self) -> int:
        return 200 if self.visible else 451 if self.access == "block" else 404


_DEFAULT = Verdict(True, "allow", "public", None)
_SERIALS = itertools.count(1)


def _date_cutoff(condition: dict, now: datetime) -> str:
    from dateutil.relativedelta import relativedelta  # pywb's own arithmetic (installed with it)

    delta = relativedelta(**{k: int(v) for k, v in condition.items() if k in ("years", "months", "weeks", "days")})
    return (now - delta).strftime("%Y%m%d%H%M%S")


class _Node:
    """Everything the lines of one SURT key say: the line for everyone and the levels granted."""

    __slots__ = ("key", "rule", "grants", "parent", "conditions")

    def __init__(self, key: str):
        self.key = key
        self.rule: Rule | None = None  # from the line without user
        self.grants: set[str] = set()  # levels a user line allows
        self.parent: _Node | None = None
        self.conditions: dict = {}


class RuleSet:
    """A compiled rule set: ``verdict(url, timestamp, level)``. Built once per change of the files."""

    def __init__(self, rules: Iterable[Rule] = (), default: Rule | None = None, grants: Iterable = ()):
        self.rules = list(rules)
        self.default = default
        exact: dict[str, _Node] = {}
        prefix: dict[str, _Node] = {}
        for rule in self.rules:
            for key in rule.keys:
                table = exact if key.endswith(EXACT) else prefix
                node = table.setdefault(key.removesuffix(EXACT), _Node(key))
                node.rule = rule
                node.conditions = _conditions(rule)
        for key, levels, conditions in grants:  # hand-written user lines without a line for everyone
            table = exact if key.endswith(EXACT) else prefix
            node = table.setdefault(key.removesuffix(EXACT), _Node(key))
            node.grants.update(levels)
            node.conditions = node.conditions or conditions
        self._exact = exact
        self._keys = sorted(prefix)
        self._nodes = [prefix[k] for k in self._keys]
        stack: list[_Node] = []  # the chain of keys that are prefixes of the current one
        for node in self._nodes:
            while stack and not node.key.startswith(stack[-1].key):
                stack.pop()
            node.parent = stack[-1] if stack else None
            stack.append(node)
        self._cutoffs: dict[int, tuple[float, str]] = {}
        self.serial = next(_SERIALS)  # tells rule sets apart for caches (never id(), which is reused)
        self.dated = any(n.conditions for n in self._nodes) or any(n.conditions for n in exact.values())

    def __len__(self) -> int:
        return len(self.rules)

    def rules_with_default(self) -> list[Rule]:
        return self.rules + ([self.default] if self.default else [])

    @property
    def restricts(self) -> bool:
        """False when nothing is hidden from anyone: surfaces may take their fast path."""
        return bool(self.rules) or bool(self._exact) or bool(self._keys) or self.default is not None

    def hides_from(self, level: str) -> bool:
        if not self.restricts:
            return False
        if level == "staff":
            return any(r.level == "none" for r in self.rules) or self._default_rank() > _RANK["staff"]
        return True

    def _default_rank(self) -> int:
        return _RANK[self.default.level] if self.default else 0

    def verdict(self, url: str, timestamp: str, level: str) -> Verdict:
        """What ``level`` may do with the capture of ``url`` at ``timestamp`` (14 digits)."""
        if not self.restricts:
            return _DEFAULT
        return self.verdict_key(urlkey(url), timestamp, level)

    def visible(self, url: str, timestamp: str, level: str) -> bool:
        return self.verdict(url, timestamp, level).visible

    def shown_to(self, level: str) -> Callable[[str, str], bool] | None:
        """``level``'s predicate on (URL, 14-digit timestamp) for a surface that filters captures one by
        one, or None when these rules hide nothing from it (the caller's fast path)."""
        if not self.hides_from(level):
            return None
        return lambda url, timestamp: self.verdict(url, timestamp, level).visible

    def verdict_key(self, key: str, timestamp: str, level: str) -> Verdict:
        """The same for a CDXJ urlkey (pywb's canonical SURT form), without canonicalising again."""
        if not self.restricts:
            return _DEFAULT
        node = self._exact.get(key)
        if node is None or not self._decides(node, level):
            node = self._longest_prefix(key, level)
        if node is None or node.rule is None and level not in node.grants:
            return self._default_verdict(level)
        if node.conditions and not self._applies(node, timestamp):
            return self._default_verdict(level)
        if level in node.grants or (node.rule is not None and _RANK[level] >= _RANK[node.rule.level]):
            return Verdict(True, "allow", node.rule.level if node.rule else level, node.rule)
        assert node.rule is not None
        return Verdict(False, node.rule.access, node.rule.level, node.rule)

    def _decides(self, node: _Node, level: str) -> bool:
        return node.rule is not None or level in node.grants

    def _longest_prefix(self, key: str, level: str) -> _Node | None:
        i = bisect.bisect_right(self._keys, key) - 1
        node = self._nodes[i] if i >= 0 else None
        while node is not None and not (key.startswith(node.key) and self._decides(node, level)):
            node = node.parent
        return node

    def _default_verdict(self, level: str) -> Verdict:
        rule = self.default
        if rule is None:
            return _DEFAULT
        if _RANK[level] >= _RANK[rule.level]:
            return Verdict(True, "allow", rule.level if rule else "public", rule)
        return Verdict(False, rule.access, rule.level, rule)

    def _applies(self, node: _Node, timestamp: str) -> bool:
        """pywb's ``check_date_access``: the first condition present decides."""
        ts = (timestamp or "")[:14].ljust(14, "0")
        cond = node.conditions
        if "before" in cond:
            return ts < str(cond["before"]).ljust(14, "0")
        if "after" in cond:
            return ts > str(cond["after"]).ljust(14, "9")
        for name, newer in (("newer", True), ("older", False)):
            if name in cond:
                cutoff = self._cutoff(id(node), cond[name])
                return ts > cutoff if newer else ts < cutoff
        return True

    def _cutoff(self, key: int, condition: dict) -> str:
        now = time.time()
        cached = self._cutoffs.get(key)
        if cached is None or now - cached[0] > 30:  # "now" moves on; 30 s is close enough for an embargo
            cached = (now, _date_cutoff(condition, datetime.now(UTC)))
            self._cutoffs[key] = cached
        return cached[1]

    def filter_cdx(self, cdx_iter: Iterable, level: str, hidden: list | None = None) -> Iterator:
        """The CDX lines ``level`` may see; hidden ones' verdicts appended to ``hidden`` if given."""
        if not self.hides_from(level):
            yield from cdx_iter
            return
        for cdx in cdx_iter:
            key = cdx.get("urlkey") or urlkey(cdx["url"])
            verdict = self.verdict_key(key, cdx.get("timestamp", ""), level)
            if verdict.visible:
                yield cdx
            elif hidden is not None:
                hidden.append(verdict)


def _conditions(rule: Rule) -> dict:
    out: dict = dict(rule.dates)
    if rule.embargo:
        out["newer"] = rule.embargo
    return out


# -- files ----------------------------------------------------------------------------------------


def parse_line(line: str) -> tuple[str, dict] | None:
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    key, _, rest = line.partition(" ")
    rest = rest.strip()
    if rest.startswith("- "):
        rest = rest[2:]
    try:
        data = json.loads(rest)
    except ValueError:
        return None
    return (key, data) if isinstance(data, dict) else None


def _line_level(data: dict) -> str | None:
    level = data.get("level") if data.get("user") else None
    user = data.get("user")
    for name in (level, user):
        if name in LEVELS:
            return name
    return None


def compile_lines(lines: Iterable[tuple[str, dict]]) -> RuleSet:
    """Rules from pywb lines: Strata's (grouped by ``id``) and hand-written ones (one rule per key)."""
    rules: dict[str, dict] = {}
    grants: dict[str, tuple[set, dict]] = {}
    for key, data in lines:
        access = data.get("access")
        dates = {k: data[k] for k in ("newer", "older", "before", "after") if k in data}
        if data.get("user"):
            level = _line_level(data)
            if access in ("allow", "allow_ignore_embargo") and level:
                grants.setdefault(key, (set(), dates))[0].add(level)
            continue  # a user Strata does not know never raises a level
        rid = str(data.get("id") or f"pywb:{key}")
        entry = rules.setdefault(rid, {"data": data, "keys": [], "dates": dates})
        entry["keys"].append(key)
    compiled: list[Rule] = []
    default = None
    for rid, entry in rules.items():
        rule = _rule_from_line(rid, entry["data"], entry["keys"], entry["dates"])
        if rule.keys == (ANY,):
            default = rule
        else:
            compiled.append(rule)
    # user lines beside a Strata rule's line for everyone are part of it (its level says the same);
    # pywb's own user lines grant their level and those above it
    own = {k for r in compiled if not r.id.startswith("pywb:") for k in r.keys}
    if default is not None and not default.id.startswith("pywb:"):
        own.add(ANY)
    for levels, _ in grants.values():
        levels.update(LEVELS[min(_RANK[lv] for lv in levels) :])
    loose = [(key, levels, dates) for key, (levels, dates) in grants.items() if key not in own]
    return RuleSet(compiled, default, loose)


def _rule_from_line(rid: str, data: dict, keys: list[str], dates: dict) -> Rule:
    access = data.get("access")
    if access in ("allow", "allow_ignore_embargo"):
        level, access = "public", "allow"
    else:
        access = access if access in ("block", "exclude") else "exclude"  # unknown: fail closed
        given = str(data.get("level") or "")
        level = given if given in CAPTURE_LEVELS and given != "public" else "none"
    embargo = dates.pop("newer", None) if "id" in data else None
    return Rule(
        id=rid,
        prefix=str(data.get("prefix") or keys[0]),
        access=access,
        level=level,
        embargo=embargo,
        reason=str(data.get("reason") or ""),
        by=str(data.get("by") or ""),
        at=str(data.get("at") or ""),
        keys=tuple(keys),
        dates=tuple(dates.items()),
    )


class AccessRules:
    """A collection's rule files: read, compiled, and compiled again when a file changes (the next
    request after a change sees it; no restart). Writes go through ``add``/``remove``, under a lock,
    by atomic rename, with an audit line for each."""

    def __init__(self, collection_path: Path):
        self.dir = Path(collection_path) / "acl"
        self._stamp: tuple | None = None
        self._listing: tuple[tuple, list[Path]] | None = None
        self._compiled = RuleSet()

    @property
    def path(self) -> Path:
        return self.dir / RULES_FILE

    def _files(self) -> list[Path]:
        try:
            return sorted(p for p in self.dir.iterdir() if p.suffix == ".aclj")
        except OSError:
            return []

    def _current_stamp(self) -> tuple:
        """The directory's and each rule file's identity: the directory is listed again only when it
        changes (a file added, removed or replaced by rename), the files are stat'ed every time (an
        edit in place)."""
        try:
            st = os.stat(self.dir)
        except OSError:
            return ()
        dir_stamp = (st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
        if self._listing is None or self._listing[0] != dir_stamp:
            self._listing = (dir_stamp, self._files())
        return dir_stamp + tuple((p.name, *_stat(p)) for p in self._listing[1])

    def rules(self) -> RuleSet:
        stamp = self._current_stamp()
        if stamp != self._stamp:
            self._compiled = compile_lines(self._read_lines())
            self._stamp = stamp
        return self._compiled

    def _read_lines(self) -> Iterator[tuple[str, dict]]:
        for path in self._files():
            with contextlib.suppress(OSError), open(path, encoding="utf-8") as fh:
                for line in fh:
                    parsed = parse_line(line)
                    if parsed:
                        yield parsed

    def _own_lines(self) -> list[tuple[str, dict]]:
        if not self.path.exists():
            return []
        with open(self.path, encoding="utf-8") as fh:
            return [p for p in map(parse_line, fh) if p]

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self, lines: list[tuple[str, dict]]) -> None:
        # pywb binary-searches the file in reverse order: most specific (greatest) key first
        text = sorted(
            (f"{key} - {json.dumps(data, ensure_ascii=False, sort_keys=True)}\n" for key, data in lines), reverse=True
        )
        tmp = self.path.with_suffix(".aclj.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.writelines(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)

    def _audit(self, action: str, rule: Rule, by: str, reason: str) -> None:
        entry = {
            "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "by": by,
            "action": action,
            "reason": reason,
            "rule": rule.as_dict(),
        }
        with open(self.dir / AUDIT_FILE, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")

    def add(self, rule: Rule) -> Rule:
        with self._locked():
            lines = self._own_lines()
            existing = compile_lines(lines).rules_with_default()
            taken = {k for r in existing for k in r.keys}
            clash = taken.intersection(rule.keys)
            if clash:
                raise ConfigError(
                    f"PREFIX: a rule for {rule.prefix!r} exists already ({sorted(clash)[0]}); remove it first"
                )
            # lines are grouped into rules by id: a rule sharing another's would be merged into it
            ids = {r.id for r in existing}
            while rule.id in ids:
                rule = dataclasses.replace(rule, id=new_rule_id())
            self._write(lines + rule.lines())
            self._audit("add", rule, rule.by, rule.reason)
        return rule

    def remove(self, ident: str, by: str = "", reason: str = "") -> Rule:
        with self._locked():
            lines = self._own_lines()
            found = [r for r in compile_lines(lines).rules_with_default() if ident in (r.id, r.prefix)]
            if not found:
                raise ConfigError(f"RULE: no rule {ident!r}; `strata access COLL list` shows their ids")
            rule = found[0]
            keep = [(k, d) for k, d in lines if str(d.get("id") or f"pywb:{k}") != rule.id]
            self._write(keep)
            self._audit("remove", rule, by, reason)
        return rule

    def audit(self, limit: int = 200) -> list[dict]:
        try:
            with open(self.dir / AUDIT_FILE, encoding="utf-8") as fh:
                entries = [json.loads(line) for line in fh if line.strip()]
        except (OSError, ValueError):
            return []
        return entries[::-1][:limit]


_registry: dict[str, AccessRules] = {}
_registry_lock = threading.Lock()


def rules_for(collection_path: Path) -> RuleSet:
    """The collection's compiled rules, shared by every caller in the process and compiled again
    when a rule file changes: the one entry point for any surface that lists or serves captures."""
    key = str(collection_path)
    rules = _registry.get(key)
    if rules is None:
        with _registry_lock:
            rules = _registry.setdefault(key, AccessRules(Path(collection_path)))
    return rules.rules()


def _stat(path: Path) -> tuple:
    try:
        st = path.stat()
        return (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        return ()
