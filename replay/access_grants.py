"""Restricted-host grants: how a staff member signed in to the console reaches restricted captures.

The console never shares an origin with replay. To see a capture above the public and reading-room
levels, a staff member follows the console's "open on the restricted host" link: the console records
a grant (``.strata/access.sqlite``, this module's table) and sends the browser to the restricted
replay host with a one-time entry token valid for a minute. The restricted host checks the token,
marks it used, and sets its own cookie: signed, ``HttpOnly``, ``SameSite=Strict``, host-only (no
``Domain``, so no other host ever receives it), with a short lifetime. Every request checks the
cookie's signature, age and host, and that its grant is neither expired nor revoked; logging out of
the console, or "revoke" in its access page, revokes the grants at once. Public and reading-room
hosts never read the cookie.

Tokens and cookies are signed with itsdangerous (installed with Flask) under a key kept in
``.strata/access-secret`` (created on first use, mode 0600).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from itsdangerous import BadSignature, URLSafeTimedSerializer

SCHEMA = """
CREATE TABLE IF NOT EXISTS grants (
    id TEXT PRIMARY KEY, user TEXT NOT NULL, host TEXT NOT NULL,
    issued REAL NOT NULL, expires REAL NOT NULL, entered REAL, revoked REAL
);
CREATE INDEX IF NOT EXISTS grants_user ON grants (user);
"""
COOKIE = "strata_restricted"
ENTRY_SECONDS = 60
ENTRY_PATH = "/_strata/restricted/enter"


def _secret(root: Path) -> bytes:
    path = Path(root) / ".strata" / "access-secret"
    try:
        return path.read_bytes()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        key = secrets.token_bytes(32)
        with contextlib.suppress(FileExistsError):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(key)
        return path.read_bytes()


class Grants:
    """The grants table and the two signed forms of a grant (entry token, cookie)."""

    def __init__(self, root: Path, minutes: int = 15):
        self.root = Path(root)
        self.minutes = minutes
        self._secret = _secret(self.root)
        self.db_path = self.root / ".strata" / "access.sqlite"

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.db_path, timeout=10)
        try:
            conn.executescript(SCHEMA)
            yield conn
            conn.commit()
        finally:
            conn.close()

    def _signer(self, purpose: str) -> URLSafeTimedSerializer:
        return URLSafeTimedSerializer(self._secret, salt=f"strata-restricted-{purpose}")

    # -- the console's side -------------------------------------------------------------------
    def issue(self, user: str, host: str) -> str:
        """A new grant for ``user`` on ``host``; returns its one-time entry token."""
        grant_id = secrets.token_urlsafe(18)
        now = time.time()
        with self._db() as conn:
            conn.execute(
                "INSERT INTO grants (id, user, host, issued, expires) VALUES (?, ?, ?, ?, ?)",
                (grant_id, user, host.lower(), now, now + self.minutes * 60),
            )
        return self._signer("entry").dumps({"g": grant_id, "h": host.lower()})

    def revoke_user(self, user: str) -> int:
        with self._db() as conn:
            cur = conn.execute("UPDATE grants SET revoked = ? WHERE user = ? AND revoked IS NULL", (time.time(), user))
            return cur.rowcount

    def active(self) -> list[dict]:
        now = time.time()
        with self._db() as conn:
            conn.row_factory = sqlite3.Row
            rows = conn.execute(
                "SELECT * FROM grants WHERE revoked IS NULL AND expires > ? ORDER BY issued DESC", (now,)
            ).fetchall()
        return [dict(r) for r in rows]

    # -- the restricted host's side -----------------------------------------------------------
    def enter(self, token: str, host: str) -> str | None:
        """The cookie value for a valid, unused entry token for ``host``; None otherwise."""
        try:
            data = self._signer("entry").loads(token, max_age=ENTRY_SECONDS)
        except BadSignature:
            return None
        if not isinstance(data, dict) or data.get("h") != host.lower():
            return None
        with self._db() as conn:
            cur = conn.execute(
                "UPDATE grants SET entered = ? WHERE id = ? AND entered IS NULL AND revoked IS NULL AND expires > ?",
                (time.time(), data.get("g"), time.time()),
            )
            if cur.rowcount != 1:
                return None
        return self._signer("cookie").dumps({"g": data["g"], "h": host.lower()})

    def user_for_cookie(self, value: str | None, host: str) -> str | None:
        """The staff member a restricted-host cookie stands for, or None (forged, expired, for
        another host, or revoked)."""
        if not value:
            return None
        try:
            data = self._signer("cookie").loads(value, max_age=self.minutes * 60)
        except BadSignature:
            return None
        if not isinstance(data, dict) or data.get("h") != host.lower():
            return None
        try:
            with self._db() as conn:
                row = conn.execute(
                    "SELECT user FROM grants WHERE id = ? AND host = ? AND revoked IS NULL AND expires > ?",
                    (data.get("g"), host.lower(), time.time()),
                ).fetchone()
        except sqlite3.Error:
            return None
        return row[0] if row else None
