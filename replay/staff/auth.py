"""Log in and log out. Accounts are made on the command line: ``strata user add NAME``."""

from __future__ import annotations

from flask import Blueprint, g, redirect, render_template, request, url_for

from replay.staff.access import grants
from replay.staff.context import ext
from replay.staff.security import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    clear_cookie,
    client_id,
    cookie_name,
    set_cookie,
    users,
)
from replay.staff.users import verify_password
from strata.times import utc_now
from strata.urls import local_path

bp = Blueprint("auth", __name__)


def safe_next(target: str | None) -> str:
    """Only a path on this site: never ``//other.host``, ``https://...`` or what a browser reads so
    (``/<tab>/other.host``: ``strata.urls.local_path``), so the login is no open redirect."""
    return local_path(target) or url_for("jobs.index")


@bp.route("/login", methods=["GET", "POST"])
def login():
    if g.user is not None and request.method == "GET":
        return redirect(safe_next(request.args.get("next")))
    error = None
    name = ""
    if request.method == "POST":
        name = request.form.get("name", "").strip()
        password = request.form.get("password", "")
        if name and password and _authenticate(name, password):
            token, session = users().start_session(name)
            response = redirect(safe_next(request.form.get("next")))
            set_cookie(response, SESSION_COOKIE, token, max_age=int((session.expires - _now()).total_seconds()))
            clear_cookie(response, LOGIN_COOKIE)
            return response
        error = "Unknown user name or wrong password (repeated failures make the next attempts wait)."
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


def _authenticate(name: str, password: str) -> bool:
    """One paced attempt (``replay.staff.logins``): refused outright when this client failed too
    often, delayed when the account did, the hash run outside the server's loop."""
    throttle, hasher = ext()["throttle"], ext()["hasher"]
    client = client_id()
    throttle.check_client(client)
    ok = users().authenticate(
        name,
        password,
        verify=lambda p, stored: hasher.run(verify_password, p, stored, delay=throttle.account_delay(name)),
    )
    (throttle.succeeded if ok else throttle.failed)(client, name)
    return ok


def _now():
    return utc_now()
