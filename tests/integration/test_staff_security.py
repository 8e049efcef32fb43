"""The staff console's doors: every route needs a login, every state change a CSRF token, forged
cookies and other sites' pages get nowhere, GET changes nothing, requests are capped in size."""

from __future__ import annotations

import secrets

import pytest

from harvester.jobs.queue import open_queue
from index.collection import Collection
from replay.hosts import HostDispatcher, build_site
from replay.staff import create_staff_app
from replay.staff.security import PUBLIC_ENDPOINTS
from strata.errors import ConfigError
from tests.support.staff_helpers import STAFF_HOST, csrf_from, log_in, make_client, write_job

SAMPLE_ARGS = {
    "collection": "c",
    "name": "j",
    "entry_id": 1,
    "filename": "staff.css",
    "rule_id": "r1",
    "run_id": "20240101000000-abcd",
}


def _queue_size(root) -> int:
    queue = open_queue(root)
    try:
        return len(queue.entries())
    finally:
        queue.close()


def test_every_route_refuses_anonymous_users(staff_app, anon, staff_root):
    """Walk the URL map: each endpoint but the login page and static files, each method, refuses."""
    write_job(staff_root, "c", "j")
    queue = open_queue(staff_root)
    queue.enqueue("c", "j")
    queue.close()
    endpoints = set()
    with staff_app.test_request_context(base_url=f"http://{STAFF_HOST}"):
        rules = list(staff_app.url_map.iter_rules())
    for rule in rules:
        if rule.endpoint in PUBLIC_ENDPOINTS:
            continue
        endpoints.add(rule.endpoint)
        path = rule.build({k: SAMPLE_ARGS[k] for k in rule.arguments}, append_unknown=False)[1]
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            response = anon.open(path, method=method, data={"mode": "full", "confirm_name": "j"})
            if method == "GET" and not path.startswith("/api/"):
                assert response.status_code == 302, (method, path)
                assert response.headers["Location"].startswith("/login?next="), (method, path)
            else:
                assert response.status_code == 401, (method, path, response.status_code)
    assert {
        "jobs.index",
        "jobs.new",
        "jobs.edit",
        "jobs.delete",
        "jobs.harvest",
        "jobs.pause",
        "jobs.show",
        "runs.show",
        "runs.api_show",
        "runs.cancel",
        "auth.logout",
        "access.index",
        "access.add",
        "access.takedown",
        "access.remove",
        "access.open_restricted",
        "access.revoke",
    } <= endpoints
    assert (Collection(staff_root, "c").job_path("j")).exists()
    queue = open_queue(staff_root)
    assert [e.status for e in queue.entries()] == ["queued"] and queue.schedule("c", "j") is None
    queue.close()
    assert anon.get("/login").status_code == 200


def test_login_sets_a_strict_cookie_and_logout_ends_the_session(staff_app):
    client = make_client(staff_app)
    token = csrf_from(client.get("/login").text)
    response = client.post("/login", data={"name": "ana", "password": "correct horse battery", "csrf_token": token})
    cookie = next(c for c in response.headers.getlist("Set-Cookie") if c.startswith("strata_staff="))
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/" in cookie
    assert "Secure" not in cookie and "Domain" not in cookie
    value = cookie.split(";")[0].split("=", 1)[1]
    assert client.get("/jobs").status_code == 200
    csrf = csrf_from(client.get("/jobs").text)
    assert client.post("/logout", data={"csrf_token": csrf}).status_code == 302
    assert client.get("/jobs").status_code == 302
    replay = make_client(staff_app)
    replay.set_cookie("strata_staff", value, domain=STAFF_HOST)
    assert replay.get("/jobs").status_code == 302  # the old cookie is dead server-side


def test_over_https_the_cookie_is_secure_and_host_prefixed(staff_app):
    client = make_client(staff_app, https=True)
    token = csrf_from(client.get("/login").text)
    response = client.post("/login", data={"name": "ana", "password": "correct horse battery", "csrf_token": token})
    cookie = next(c for c in response.headers.getlist("Set-Cookie") if c.startswith("__Host-strata_staff="))
    assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert client.get("/jobs").status_code == 200


def test_wrong_passwords_and_forged_cookies_get_nowhere(staff_app, anon):
    token = csrf_from(anon.get("/login").text)
    bad = anon.post("/login", data={"name": "ana", "password": "wrong password!", "csrf_token": token})
    assert bad.status_code == 401 and not any("strata_staff=" in c for c in bad.headers.getlist("Set-Cookie"))
    unknown = anon.post("/login", data={"name": "nobody", "password": "whatever it is", "csrf_token": token})
    assert unknown.status_code == 401
    for forged in (secrets.token_urlsafe(32), "", "x" * 3000, "' OR 1=1 --", "..%2f..%2f"):
        client = make_client(staff_app)
        client.set_cookie("strata_staff", forged, domain=STAFF_HOST)
        assert client.get("/jobs").status_code == 302
        assert client.get("/api/runs/1").status_code == 401


def test_posts_without_the_csrf_token_are_refused(staff, staff_root, staff_app):
    write_job(staff_root, "c", "j")
    assert staff.post("/jobs/c/j/harvest", data={"mode": "full"}).status_code == 403
    assert staff.post("/jobs/c/j/harvest", data={"mode": "full", "csrf_token": "guess"}).status_code == 403
    other = log_in(make_client(staff_app))  # a valid token, but another session's
    assert staff.post("/jobs/c/j/harvest", data={"mode": "full", "csrf_token": other.csrf}).status_code == 403
    assert staff.post("/jobs/c/j/pause", data={}).status_code == 403
    assert staff.post("/logout", data={}).status_code == 403
    cross = staff.post(
        "/jobs/c/j/harvest",
        data={"mode": "full", "csrf_token": staff.csrf},
        headers={"Origin": "http://archive.localhost:8080"},
    )
    assert cross.status_code == 403
    assert (
        staff.post(
            "/jobs/c/j/harvest", data={"mode": "full", "csrf_token": staff.csrf}, headers={"Origin": "null"}
        ).status_code
        == 403
    )
    assert _queue_size(staff_root) == 0
    ok = staff.post(
        "/jobs/c/j/harvest", data={"mode": "full", "csrf_token": staff.csrf}, headers={"Origin": f"http://{STAFF_HOST}"}
    )
    assert ok.status_code == 302 and _queue_size(staff_root) == 1
    header = staff.post("/runs/1/cancel", headers={"X-CSRF-Token": staff.csrf})
    assert header.status_code == 302


def test_the_login_form_needs_its_token_too(anon):
    assert anon.post("/login", data={"name": "ana", "password": "correct horse battery"}).status_code == 403
    fresh = anon.get("/login")
    token = csrf_from(fresh.text)
    anon.delete_cookie("strata_login", domain=STAFF_HOST)
    assert (
        anon.post("/login", data={"name": "ana", "password": "correct horse battery", "csrf_token": token}).status_code
        == 403
    )


def test_background_requests_from_other_sites_are_refused(staff, staff_root):
    write_job(staff_root, "c", "j")
    headers = {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "cors"}
    assert staff.get("/api/runs/1", headers=headers).status_code == 403
    assert staff.get("/jobs", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}).status_code == 403
    assert (
        staff.post(
            "/jobs/c/j/harvest",
            data={"mode": "full", "csrf_token": staff.csrf},
            headers={"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate"},
        ).status_code
        == 403
    )
    assert _queue_size(staff_root) == 0
    # a staff member following a link from elsewhere still gets the page
    assert staff.get("/jobs", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}).status_code == 200


def test_get_changes_nothing(staff, staff_root):
    write_job(staff_root, "c", "j")
    page = staff.get("/jobs/c/j/delete")
    assert page.status_code == 200 and "Type the job" in page.text
    assert Collection(staff_root, "c").job_path("j").exists()
    for path in ("/jobs/c/j/harvest", "/jobs/c/j/pause", "/jobs/c/j/resume", "/runs/1/cancel", "/logout"):
        assert staff.get(path).status_code == 405, path
    assert _queue_size(staff_root) == 0


def test_requests_are_capped_and_hosts_checked(staff, staff_app):
    big = staff.post("/jobs/new", data={"csrf_token": staff.csrf, "seeds": "x" * 100_000})
    assert big.status_code == 413
    stranger = make_client(staff_app, host="archive.localhost")
    assert stranger.get("/login").status_code == 400


def test_security_headers_on_every_page(staff, anon):
    for response in (anon.get("/login"), staff.get("/jobs"), staff.get("/api/runs/99")):
        assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
        assert "script-src 'self'" in response.headers["Content-Security-Policy"]
        assert response.headers["X-Frame-Options"] == "DENY"
        assert response.headers["Cache-Control"] == "no-store"


def test_login_redirects_only_to_local_paths(staff_app):
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
        anon = make_client(staff_app)
        token = csrf_from(anon.get("/login").text)
        response = anon.post(
            "/login", data={"name": "ana", "password": "correct horse battery", "csrf_token": token, "next": target}
        )
        assert response.headers["Location"] == "/jobs", target


def test_the_host_dispatcher_keeps_the_two_apps_apart(staff_root, staff_app):
    from replay import create_app

    site = HostDispatcher(create_app(staff_root), staff_app, [STAFF_HOST])
    from werkzeug.test import Client

    client = Client(site)
    staff_page = client.get("/login", headers={"Host": f"{STAFF_HOST}:8080"})
    assert staff_page.status_code == 200 and "Log in" in staff_page.text
    archive_page = client.get("/login", headers={"Host": "archive.localhost:8080"})
    assert "csrf_token" not in archive_page.text
    assert client.get("/", headers={"Host": "archive.localhost:8080"}).status_code == 200
    assert "strata_staff" not in str(client.get("/", headers={"Host": "archive.localhost"}).headers)
    for path in ("/.strata/staff.sqlite", "/.strata/", "/%2Estrata/queue.sqlite", "/.strata/2024/http://x/"):
        leak = client.get(path, headers={"Host": "archive.localhost"})
        assert leak.status_code == 404 and b"SQLite" not in leak.data, path
    with pytest.raises(ConfigError, match="must differ"):
        build_site(staff_root, "staff.localhost", archive_url="http://staff.localhost:8080")
    with pytest.raises(ConfigError, match="host name of its own"):
        HostDispatcher(None, None, [])


def test_unknown_staff_settings_are_named(staff_root):
    with pytest.raises(ConfigError, match="unknown staff setting 'colour'"):
        create_staff_app(staff_root, {"colour": "red"})
    with pytest.raises(ConfigError, match="allow_networks"):
        create_staff_app(staff_root, {"allow_networks": ["everywhere"]})
