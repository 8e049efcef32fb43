"""Helpers for the staff console tests (the fixtures are in ``tests.support.staff_fixtures``)."""

from __future__ import annotations

import re
from pathlib import Path

from flask.testing import FlaskClient

from harvester.job import validate_job
from index.collection import Collection
from replay.staff.users import Users

STAFF_HOST = "staff.localhost"
ARCHIVE_URL = "http://archive.localhost:8080"
USER, PASSWORD = "ana", "correct horse battery"
_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def add_user(root: Path, name: str = USER, password: str = PASSWORD) -> None:
    users = Users.for_root(root)
    try:
        users.add(name, password)
    finally:
        users.close()


def write_job(root: Path, collection: str, name: str, **fields) -> None:
    coll = Collection.open(root, collection, create=True)
    job = validate_job(name, {"seeds": ["http://127.0.0.1:9/"], **fields})
    coll.job_path(name).write_text(job.to_toml())


def csrf_from(html: str) -> str:
    match = _TOKEN.search(html)
    assert match, "no CSRF token in the page"
    return match.group(1)


class StaffClient(FlaskClient):
    """A test client that talks to the staff host (over HTTPS when ``https``)."""

    host = STAFF_HOST
    https = False

    def open(self, *args, **kwargs):
        if args and isinstance(args[0], str) and "base_url" not in kwargs:
            kwargs["base_url"] = f"{'https' if self.https else 'http'}://{self.host}"
        return super().open(*args, **kwargs)


def make_client(app, https: bool = False, host: str = STAFF_HOST):
    app.test_client_class = StaffClient
    client = app.test_client()
    client.https, client.host = https, host
    return client


def log_in(client, name: str = USER, password: str = PASSWORD):
    token = csrf_from(client.get("/login").text)
    response = client.post("/login", data={"name": name, "password": password, "csrf_token": token, "next": "/jobs"})
    assert response.status_code == 302, response.text
    client.csrf = csrf_from(client.get("/jobs").text)
    return client
