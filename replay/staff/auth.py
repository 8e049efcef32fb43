"""Log in and log out. Accounts are made on the command line: ``strata user add NAME``."""

from __future__ import annotations

from flask import Blueprint, g, redirect, render_template, request, url_for

from replay.staff.access import grants
from replay.staff.security import LOGIN_COOKIE, SESSION_COOKIE, clear_cookie, cookie_name, set_cookie, users
from strata.times import utc_now

bp = Blueprint("auth", __name__)


def safe_next(target: str | None) -> str:
    """Only a path on this site: never ``//other.host`` or ``https://...`` (open redirects)."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")) or "\n" in target or "\r" in target:
        return url_for("jobs.index")
    return target


@bp.route("/login", methods=["GET", "POST"])
def login():
    if g.user is not None and request.method == "GET":
        return redirect(safe_next(request.args.get("next")))
    error = None
    name = ""
    if request.method == "POST":
        name = request.form.get("name", "").strip()
        password = request.form.get("password", "")
        if name and password and users().authenticate(name, password):
            token, session = users().start_session(name)
            response = redirect(safe_next(request.form.get("next")))
            set_cookie(response, SESSION_COOKIE, token, max_age=int((session.expires - _now()).total_seconds()))
            clear_cookie(response, LOGIN_COOKIE)
            return response
        error = "Unknown user name or wrong password (after 5 failures the account waits 15 minutes)."
    status = 401 if error else 200
    return render_template(
        "staff/login.html", error=error, name=name, next=safe_next(request.values.get("next"))
    ), status


@bp.post("/logout")
def logout():
    users().end_session(request.cookies.get(cookie_name(SESSION_COOKIE)))
    granting = grants()
    if granting is not None and g.user:
        granting.revoke_user(g.user)  # the restricted host's sessions end with the console's
    response = redirect(url_for("auth.login"))
    clear_cookie(response, SESSION_COOKIE)
    return response


def _now():
    return utc_now()
