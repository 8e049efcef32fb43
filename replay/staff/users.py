"""Staff accounts and their sessions, for the staff console.

Kept in ``<root>/.strata/staff.sqlite`` (file mode 0600). Passwords are hashed with scrypt from the
standard library (``hashlib.scrypt``, N=2**15, r=8, p=1, a 16-byte salt; stored as
``scrypt$N$r$p$salt$hash``), so verifying one costs ~0.3 s and 32 MiB (measured here): fine for a
login, dear for a guesser. How often one client or one account may try is ``replay.staff.logins``'
business (a delay, never a lock a stranger could set off).

A session is a random 256-bit token in a cookie; the database keeps only its SHA-256, with the
user, a per-session CSRF token, and expiry times. Logging out deletes the row, so a copied cookie
stops working; a forged one was never in the table.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import os
import re
import secrets
import sqlite3
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from index.collection import root_state_dir
from strata.errors import ConfigError
from strata.times import iso_micro as _iso
from strata.times import parse_iso_micro as _parse
from strata.times import utc_now as _now

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
MIN_PASSWORD = 10
MAX_PASSWORD = 1024
SCRYPT = {"n": 2**15, "r": 8, "p": 1}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    name TEXT PRIMARY KEY, password TEXT NOT NULL, created TEXT NOT NULL,
    failures INTEGER NOT NULL DEFAULT 0, locked_until TEXT
);
CREATE TABLE IF NOT EXISTS sessions (
    token_hash TEXT PRIMARY KEY, user TEXT NOT NULL, csrf TEXT NOT NULL,
    created TEXT NOT NULL, last_seen TEXT NOT NULL, expires TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_user ON sessions (user);
"""


def hash_password(
    password: str, *, salt: bytes | None = None, n: int = SCRYPT["n"], r: int = SCRYPT["r"], p: int = SCRYPT["p"]
) -> str:
    salt = salt or os.urandom(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=128 * 1024 * 1024, dklen=32)
    b64 = base64.b64encode
    return f"scrypt${n}${r}${p}${b64(salt).decode()}${b64(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        got = hashlib.scrypt(
            password.encode("utf-8"),
            salt=base64.b64decode(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            maxmem=128 * 1024 * 1024,
            dklen=len(expected),
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, expected)


_DUMMY_HASH = None


def _dummy_hash() -> str:
    global _DUMMY_HASH
    if _DUMMY_HASH is None:
        _DUMMY_HASH = hash_password(secrets.token_hex(16))
    return _DUMMY_HASH


def check_new_password(name: str, password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise ConfigError(f"the password must have at least {MIN_PASSWORD} characters")
    if len(password) > MAX_PASSWORD:
        raise ConfigError(f"the password must have at most {MAX_PASSWORD} characters")
    if password.strip().lower() == name.lower():
        raise ConfigError("the password must not be the user name")


@dataclasses.dataclass(frozen=True)
class Session:
    user: str
    csrf: str
    expires: datetime


class Users:
    def __init__(
        self,
        path: Path,
        session_lifetime: timedelta = timedelta(hours=12),
        idle_timeout: timedelta = timedelta(hours=2),
    ):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not self.path.exists()
        self.conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False)
        if fresh:
            os.chmod(self.path, 0o600)
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA busy_timeout=30000")
        self.conn.executescript(_SCHEMA)
        self.session_lifetime = session_lifetime
        self.idle_timeout = idle_timeout

    @classmethod
    def for_root(cls, root: Path, **kwargs) -> Users:
        return cls(root_state_dir(root) / "staff.sqlite", **kwargs)

    def close(self) -> None:
        self.conn.close()

    # -- accounts ----------------------------------------------------------------------------------
    def add(self, name: str, password: str, replace: bool = False) -> None:
        if not NAME_RE.match(name or ""):
            raise ConfigError(
                f"{name!r} is not a usable user name: letters, digits, '_', '.', '@', '-', at most 64 characters"
            )
        check_new_password(name, password)
        exists = self.conn.execute("SELECT 1 FROM users WHERE name=?", (name,)).fetchone()
        if exists and not replace:
            raise ConfigError(f"user {name!r} exists; to set a new password: strata user add {name} --replace")
        self.conn.execute(
            "INSERT OR REPLACE INTO users (name, password, created, failures) VALUES (?,?,?,0)",
            (name, hash_password(password), _iso(_now())),
        )
        if exists:
            self.conn.execute("DELETE FROM sessions WHERE user=?", (name,))

    def remove(self, name: str) -> bool:
        self.conn.execute("DELETE FROM sessions WHERE user=?", (name,))
        return self.conn.execute("DELETE FROM users WHERE name=?", (name,)).rowcount == 1

    def names(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM users ORDER BY name")]

    def authenticate(self, name: str, password: str, verify: Callable[[str, str], bool] = verify_password) -> bool:
        """True for the right password. Costs one scrypt either way, run by ``verify`` (the console
        passes one that runs it outside the server's loop: ``replay.staff.logins``)."""
        row = self.conn.execute("SELECT password FROM users WHERE name=?", (name,)).fetchone()
        if row is None or len(password) > MAX_PASSWORD:
            verify(password[:MAX_PASSWORD], _dummy_hash())
            return False
        return verify(password, row["password"])

    # -- sessions ----------------------------------------------------------------------------------
    @staticmethod
    def _hash(token: str) -> str:
        return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()

    def start_session(self, name: str, now: datetime | None = None) -> tuple[str, Session]:
        now = now or _now()
        token = secrets.token_urlsafe(32)
        session = Session(name, secrets.token_urlsafe(32), now + self.session_lifetime)
        self.conn.execute("DELETE FROM sessions WHERE expires < ?", (_iso(now),))
        self.conn.execute(
            "INSERT INTO sessions VALUES (?,?,?,?,?,?)",
            (self._hash(token), name, session.csrf, _iso(now), _iso(now), _iso(session.expires)),
        )
        return token, session

    def session(self, token: str | None, now: datetime | None = None) -> Session | None:
        if not token or len(token) > 200:
            return None
        now = now or _now()
        row = self.conn.execute(
            "SELECT s.*, u.name AS account FROM sessions s JOIN users u ON u.name = s.user WHERE s.token_hash=?",
            (self._hash(token),),
        ).fetchone()
        if row is None:
            return None
        expires, last_seen = _parse(row["expires"]), _parse(row["last_seen"])
        assert expires is not None and last_seen is not None  # NOT NULL columns
        if expires <= now or last_seen + self.idle_timeout <= now:
            self.conn.execute("DELETE FROM sessions WHERE token_hash=?", (row["token_hash"],))
            return None
        if now - last_seen > timedelta(minutes=1):
            self.conn.execute("UPDATE sessions SET last_seen=? WHERE token_hash=?", (_iso(now), row["token_hash"]))
        return Session(row["user"], row["csrf"], expires)

    def end_session(self, token: str | None) -> None:
        if token:
            self.conn.execute("DELETE FROM sessions WHERE token_hash=?", (self._hash(token),))
