"""Staff accounts: scrypt hashes, lockout, session expiry, and ``strata user`` on the command line."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from cli import cli
from replay.staff.users import Users, hash_password, verify_password
from strata.errors import ConfigError

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def users(tmp_path):
    u = Users.for_root(tmp_path, idle_timeout=timedelta(hours=2), session_lifetime=timedelta(hours=12))
    u.add("ana", "correct horse battery")
    yield u
    u.close()


def test_passwords_are_stored_as_scrypt_hashes(users, tmp_path):
    stored = users.conn.execute("SELECT password FROM users WHERE name='ana'").fetchone()[0]
    assert stored.startswith("scrypt$32768$8$1$") and "correct horse" not in stored
    assert verify_password("correct horse battery", stored) and not verify_password("correct horse batterY", stored)
    assert hash_password("x" * 12) != hash_password("x" * 12)  # salted
    assert not verify_password("anything", "md5$abc") and not verify_password("anything", "garbage")
    assert oct(os.stat(users.path).st_mode & 0o777) == "0o600"


def test_weak_or_duplicate_accounts_are_refused(users):
    with pytest.raises(ConfigError, match="at least 10"):
        users.add("bob", "short")
    with pytest.raises(ConfigError, match="user name"):
        users.add("bobbybobby", "BobbyBobby")
    with pytest.raises(ConfigError, match="--replace"):
        users.add("ana", "another long password")
    with pytest.raises(ConfigError, match="usable user name"):
        users.add("../x", "another long password")


def test_a_wrong_password_never_locks_the_account(users):
    # pacing is replay.staff.logins' business (a delay, never a lock a stranger could set off)
    for _ in range(8):
        assert not users.authenticate("ana", "wrong password")
    assert users.authenticate("ana", "correct horse battery")
    assert not users.authenticate("nobody", "correct horse battery")


def test_sessions_expire_and_end(users):
    token, session = users.start_session("ana", now=T0)
    assert users.session(token, now=T0 + timedelta(minutes=30)).user == "ana"
    assert users.session(token, now=T0 + timedelta(hours=2, minutes=31)) is None  # idle too long
    token, _ = users.start_session("ana", now=T0)
    for hours in range(1, 12):
        assert users.session(token, now=T0 + timedelta(hours=hours)) is not None
    assert users.session(token, now=T0 + timedelta(hours=12, minutes=1)) is None  # lifetime over
    token, _ = users.start_session("ana")
    users.end_session(token)
    assert users.session(token) is None
    token, _ = users.start_session("ana")
    users.add("ana", "a brand new password", replace=True)  # new password ends sessions
    assert users.session(token) is None
    stored = users.conn.execute("SELECT token_hash FROM sessions").fetchall()
    assert all(token not in row[0] for row in stored)


def test_user_commands(tmp_path):
    runner = CliRunner()
    root = str(tmp_path / "collections")
    out = runner.invoke(cli, ["user", "add", "ana", "--root", root], input="long enough pw\nlong enough pw\n")
    assert out.exit_code == 0 and "User ana added" in out.output and "long enough" not in out.output
    out = runner.invoke(
        cli,
        ["user", "add", "bob", "--root", root],
        input="long enough pw\nother words!!\nlong enough pw\nlong enough pw\n",
    )
    assert out.exit_code == 0 and "do not match" in out.output
    out = runner.invoke(cli, ["user", "add", "cy", "--root", root, "--password-stdin"], input="tiny\n")
    assert isinstance(out.exception, ConfigError)
    assert runner.invoke(cli, ["user", "list", "--root", root]).output.split() == ["ana", "bob"]
    assert runner.invoke(cli, ["user", "remove", "bob", "--root", root]).exit_code == 0
    assert isinstance(runner.invoke(cli, ["user", "remove", "bob", "--root", root]).exception, ConfigError)
    users = Users.for_root(tmp_path / "collections")
    assert users.authenticate("ana", "long enough pw")
    users.close()
