"""Fixtures for the staff console tests: a root with one user, the app, logged-in clients.

The root ``tests/conftest.py`` loads this module as a plugin; test modules never import its fixtures.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.staff import create_staff_app
from tests.support.staff_helpers import ARCHIVE_URL, STAFF_HOST, add_user, log_in, make_client


@pytest.fixture
def staff_root(tmp_path) -> Path:
    root = tmp_path / "collections"
    root.mkdir()
    add_user(root)
    return root


@pytest.fixture
def staff_app(staff_root):
    return create_staff_app(
        staff_root, {"staff_hosts": [STAFF_HOST], "archive_url": ARCHIVE_URL, "allow_networks": ["127.0.0.1/32"]}
    )


@pytest.fixture
def anon(staff_app):
    return make_client(staff_app)


@pytest.fixture
def staff(staff_app):
    return log_in(make_client(staff_app))
