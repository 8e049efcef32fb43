"""The staff console against what issue 35 found: an open redirect through ``next``, a lockout any
stranger could set off, logins hashed in the server's loop, a session cookie an archived page could
shadow from a sibling host, and no Secure or ``__Host-`` cookie behind a TLS-terminating proxy."""

from __future__ import annotations

import subprocess
import time

import httpx
import trustme

from replay.forwarded import TrustedProxyScheme
from replay.staff import create_staff_app, logins
from tests.conftest import VENV_BIN, free_port
from tests.support.processes import stop_process
from tests.support.staff_helpers import PASSWORD, STAFF_HOST, USER, csrf_from, make_client


def _login(client, password=PASSWORD, next_path=None, environ=None):
    token = csrf_from(client.get("/login", environ_base=environ or {}).text)
    data = {"name": USER, "password": password, "csrf_token": token}
    if next_path is not None:
        data["next"] = next_path
    return client.post("/login", data=data, environ_base=environ or {})


def test_next_is_only_ever_a_path_on_the_staff_host(staff_app):
    for target in ("/\t/evil.test/x", "/\n/evil.test", " //evil.test", "//evil.test", "/\\evil.test", "javascript:x"):
        response = _login(make_client(staff_app), next_path=target)
        assert response.status_code == 302 and response.headers["Location"] == "/jobs", repr(target)
    # the query form of the same attack: ?next=/%09/evil.test/x on the login page
    client = make_client(staff_app)
    page = client.get("/login?next=/%09/evil.test/x").text
    assert "evil.test" not in page
    assert _login(make_client(staff_app), next_path="/runs?x=1").headers["Location"] == "/runs?x=1"


def test_a_stranger_cannot_lock_the_owner_out(staff_app, monkeypatch):
    monkeypatch.setattr(logins, "MAX_DELAY", 0.0)  # the per-account delay, tested in the unit tests
    stranger = {"REMOTE_ADDR": "203.0.113.9"}
    client = make_client(staff_app)
    for _ in range(logins.CLIENT_FAILURES):
        assert _login(client, "wrong password!", environ=stranger).status_code == 401
    refused = _login(client, PASSWORD, environ=stranger)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0  # the stranger waits
    owner = _login(make_client(staff_app), environ={"REMOTE_ADDR": "198.51.100.7"})
    assert owner.status_code == 302 and owner.headers["Location"] == "/jobs"  # the owner does not


def test_a_shadowing_cookie_from_a_sibling_host_does_not_lock_staff_out(staff_root):
    app = create_staff_app(staff_root, {"staff_hosts": ["staff.strata.test"]})
    client = make_client(app, host="staff.strata.test")
    # what an archived page on archive.strata.test sets for the parent domain: a browser sends it
    # first (its path is longer), here it is first in the jar
    client.set_cookie(
        "strata_staff", "forged-by-an-archived-page", domain=".strata.test", path="/jobs", origin_only=False
    )
    assert _login(client).status_code == 302
    assert client.get("/jobs").status_code == 200
    assert client.get("/runs").status_code == 200


def test_behind_a_trusted_proxy_saying_https_cookies_are_secure_and_hsts_is_sent(staff_root):
    app = create_staff_app(staff_root, {"staff_hosts": [STAFF_HOST], "hsts_seconds": 3600})
    app.wsgi_app = TrustedProxyScheme(app.wsgi_app, ["127.0.0.1"])
    proxy = {"REMOTE_ADDR": "127.0.0.1"}
    client = make_client(app)
    token = csrf_from(client.get("/login", environ_base=proxy, headers={"X-Forwarded-Proto": "https"}).text)
    response = client.post(
        "/login",
        data={"name": USER, "password": PASSWORD, "csrf_token": token},
        environ_base=proxy,
        headers={"X-Forwarded-Proto": "https"},
    )
    cookie = next(c for c in response.headers.getlist("Set-Cookie") if c.startswith("__Host-strata_staff="))
    assert "Secure" in cookie and "Domain" not in cookie
    assert response.headers["Strict-Transport-Security"] == "max-age=3600"
    # from anyone else the header is the client's own words: no Secure cookie, no HSTS
    other = make_client(app).get(
        "/login", environ_base={"REMOTE_ADDR": "198.51.100.7"}, headers={"X-Forwarded-Proto": "https"}
    )
    assert "Strict-Transport-Security" not in other.headers
    assert all(not c.startswith("__Host-") for c in other.headers.getlist("Set-Cookie"))


def test_strata_serve_over_tls_gives_secure_host_cookies_and_hsts(staff_root, tmp_path):
    ca = trustme.CA()
    cert = ca.issue_cert("staff.localhost", "127.0.0.1")
    cert.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "server.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    port = free_port()
    flags = ["--tls-cert", str(tmp_path / "server.pem"), "--tls-key", str(tmp_path / "server.pem")]
    flags += ["--staff-host", STAFF_HOST, "--hsts", "600"]
    proc = subprocess.Popen(
        [str(VENV_BIN / "strata"), "serve", "--root", str(staff_root), "--port", str(port), *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with httpx.Client(verify=str(tmp_path / "ca.pem"), headers={"Host": f"{STAFF_HOST}:{port}"}) as client:
            deadline = time.monotonic() + 30
            while True:
                try:
                    page = client.get(f"https://127.0.0.1:{port}/login")
                    break
                except httpx.HTTPError:
                    assert proc.poll() is None and time.monotonic() < deadline, "strata serve did not start"
                    time.sleep(0.2)
            assert page.headers["Strict-Transport-Security"] == "max-age=600"
            login = client.post(
                f"https://127.0.0.1:{port}/login",
                data={"name": USER, "password": PASSWORD, "csrf_token": csrf_from(page.text)},
            )
            cookie = next(c for c in login.headers.get_list("Set-Cookie") if c.startswith("__Host-strata_staff="))
            assert "Secure" in cookie and "HttpOnly" in cookie
    finally:
        stop_process(proc)
