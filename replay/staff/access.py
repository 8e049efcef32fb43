"""The console's Access page: each collection's rules, add and remove, a takedown form, the audit log,
and the way to the restricted replay host.

Every change goes through ``index.access.rules.AccessRules`` (the same files and audit log as ``strata
access``), signed with the staff member's name; replay and search read the rules again at their next
request, so a takedown takes effect at once, with no restart. "Open on the restricted host" records a
grant (``replay.access_grants``) and sends the browser to the restricted replay host with a one-time
token; that host then sets its own cookie. The console's cookies never go there.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import quote, urlencode

from flask import Blueprint, abort, g, redirect, render_template, request, url_for

from index.access.rules import ACCESS, LEVELS, AccessRules, Rule, check_level, urlkey
from index.collection import Collection, list_collections
from replay.access_grants import ENTRY_PATH, Grants
from replay.staff.context import ext
from strata.errors import CollectionError, ConfigError

bp = Blueprint("access", __name__)


def _rules(collection: str) -> AccessRules:
    try:
        coll = Collection(ext()["root"], collection)
    except CollectionError:
        abort(404, f"No collection {collection!r}.")
    if not coll.path.is_dir():
        abort(404, f"No collection {collection!r}.")
    return AccessRules(coll.path)


def grants() -> Grants | None:
    settings = ext()["settings"]
    if not settings["restricted_url"]:
        return None
    return Grants(ext()["root"], settings["restricted_minutes"])


@bp.get("/access")
def index():
    granting = grants()
    sessions = granting.active() if granting is not None else []
    return render_template("staff/access_index.html", collections=list_collections(ext()["root"]), sessions=sessions)


def _check(rules: AccessRules) -> dict | None:
    """The answer to the page's "check a URL" form (a GET: it changes nothing), like ``strata access check``."""
    url = request.args.get("check", "").strip()
    if not url:
        return None
    level = request.args.get("as") or "public"
    at = (request.args.get("at") or "").strip() or datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    try:
        check_level(level, "as")
        if not re.fullmatch(r"\d{4,14}", at):
            raise ConfigError(f"at: {at!r} is not a timestamp; use 4 to 14 digits")
        target = url if "://" in url else "http://" + url
        if any(c.isspace() for c in target):
            raise ConfigError(f"URL: {url!r} is not a URL")
        verdict = rules.rules().verdict_key(urlkey(target), at.ljust(14, "0"), level)
    except ConfigError as exc:
        return {"url": url, "as": level, "at": at, "error": exc.message}
    return {"url": url, "as": level, "at": at, "verdict": verdict}


def _page(collection: str, error: str | None = None, form: dict | None = None, status: int = 200):
    rules = _rules(collection)
    listed = sorted(rules.rules().rules_with_default(), key=lambda r: r.keys, reverse=True)
    return render_template(
        "staff/access.html",
        collection=collection,
        rules=listed,
        audit=rules.audit(100),
        error=error,
        form=form or {},
        access_values=ACCESS,
        levels=LEVELS,
        restricted=bool(ext()["settings"]["restricted_url"]),
        check=_check(rules) if status == 200 else None,
    ), status


@bp.get("/access/<collection>")
def show(collection: str):
    return _page(collection)


@bp.post("/access/<collection>/rules")
def add(collection: str):
    form = request.form
    try:
        rule = Rule.new(
            form.get("prefix", ""),
            form.get("access", ""),
            form.get("level") or None,
            form.get("embargo") or None,
            form.get("reason", ""),
            g.user,
        )
        _rules(collection).add(rule)
    except ConfigError as exc:
        return _page(collection, exc.message, dict(form), 400)
    return redirect(url_for("access.show", collection=collection, notice="rule_added"))


@bp.post("/access/<collection>/takedown")
def takedown(collection: str):
    """Withdraw a URL (or a prefix) from every surface now: ``exclude`` or ``block`` for everyone."""
    form = request.form
    reason = form.get("reason", "").strip()
    try:
        if not reason:
            raise ConfigError("reason: say why (the request's reference), it goes in the audit log")
        access = form.get("access") or "exclude"
        if access not in ("block", "exclude"):
            raise ConfigError(f"access: {access!r}; a takedown is block or exclude")
        _rules(collection).add(Rule.new(form.get("prefix", ""), access, None, None, reason, g.user))
    except ConfigError as exc:
        return _page(collection, exc.message, dict(form), 400)
    return redirect(url_for("access.show", collection=collection, notice="taken_down"))


@bp.post("/access/<collection>/rules/<rule_id>/remove")
def remove(collection: str, rule_id: str):
    try:
        _rules(collection).remove(rule_id, g.user, request.form.get("reason", ""))
    except ConfigError as exc:
        return _page(collection, exc.message, None, 404)
    return redirect(url_for("access.show", collection=collection, notice="rule_removed"))


@bp.post("/access/restricted")
def open_restricted():
    """A grant for the signed-in staff member and the way onto the restricted host."""
    granting = grants()
    if granting is None:
        abort(404, "No restricted replay host is configured (strata serve --restricted-host NAME).")
    base = ext()["settings"]["restricted_url"]
    host = base.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[0]
    target = request.form.get("next", "/") or "/"
    if not target.startswith("/") or target.startswith(("//", "/\\")) or any(c in target for c in "\r\n"):
        target = "/"
    token = granting.issue(g.user, host)
    entry_url = f"{base}{ENTRY_PATH}?{urlencode({'token': token, 'next': quote(target, safe='/:?=&%*~')})}"
    # a page that moves on, not a redirect: the console's form-action policy keeps form POSTs on this
    # origin (redirects included), and the token never appears in a Referer (same-origin policy)
    return render_template(
        "staff/access_enter.html", entry_url=entry_url, next_path=target, minutes=granting.minutes
    ), 200


@bp.post("/access/restricted/revoke")
def revoke():
    """Ends the restricted-host sessions of a staff member (oneself by default) at once."""
    granting = grants()
    if granting is not None:
        granting.revoke_user(request.form.get("user") or g.user)
    return redirect(url_for("access.index", notice="revoked"))
