"""One setting picks the root's backend: STRATA_REDIS, else the root's settings file; SQLite by default."""

from __future__ import annotations

import pytest

from harvester.jobs.queue import open_queue
from index.storage import redisdb
from index.storage.backend import ROOT_SETTINGS, backend_of, settings_path
from strata.errors import BackendUnavailable, ConfigError


def test_sqlite_is_the_default(tmp_path):
    backend = backend_of(tmp_path)
    assert backend.kind == "sqlite" and backend.shown == "sqlite"
    assert type(open_queue(tmp_path)).__name__ == "SQLiteQueue"


def test_settings_file_then_environment(tmp_path, monkeypatch):
    path = settings_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('redis = "redis://:secret@127.0.0.1:6390/2"\n')
    backend = backend_of(tmp_path)
    assert backend.kind == "redis" and backend.redis_url.endswith(":6390/2")
    assert backend.shown == "redis://127.0.0.1:6390/2"  # no password shown
    monkeypatch.setenv("STRATA_REDIS", "redis://127.0.0.1:6391/0")
    assert backend_of(tmp_path).redis_url == "redis://127.0.0.1:6391/0"
    monkeypatch.setenv("STRATA_REDIS", "")  # set but empty: SQLite, whatever the file says
    assert backend_of(tmp_path).kind == "sqlite"


def test_bad_values_name_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_REDIS", "http://127.0.0.1:6379/")
    with pytest.raises(ConfigError, match="STRATA_REDIS: .* is not a Redis URL"):
        backend_of(tmp_path)
    monkeypatch.delenv("STRATA_REDIS")
    path = settings_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('redis = "redis://127.0.0.1:6379/zero"\n')
    with pytest.raises(ConfigError, match="setting 'redis': database 'zero'"):
        backend_of(tmp_path)
    path.write_text('colour = "blue"\n')
    with pytest.raises(ConfigError, match="unknown root .* setting 'colour'"):
        backend_of(tmp_path)
    path.write_text("redis = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        backend_of(tmp_path)


def test_every_root_setting_has_help_and_a_valid_default():
    for setting in ROOT_SETTINGS:
        assert len(setting.help) > 15
        setting.check(setting.default)


def test_the_redis_fixture_is_a_real_server(redis_url, tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_REDIS", redis_url)
    queue = open_queue(tmp_path)
    assert type(queue).__name__ == "RedisQueue"
    queue.enqueue("c", "j")
    client = redisdb.connect(redis_url)
    assert client.info("server")["redis_version"].startswith("7.")
    assert client.zcard("strata:queue:ids") == 1


def test_an_unreachable_redis_is_one_clear_error(tmp_path, monkeypatch):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("STRATA_REDIS", f"redis://127.0.0.1:{port}/0")
    with pytest.raises(BackendUnavailable, match=rf"Redis at redis://127.0.0.1:{port}/0 cannot be reached"):
        open_queue(tmp_path)


def test_backend_show(tmp_path, redis_url, monkeypatch):
    from click.testing import CliRunner

    from cli import cli

    assert CliRunner().invoke(cli, ["backend", "show", "--root", str(tmp_path)]).output.strip() == "sqlite"
    monkeypatch.setenv("STRATA_REDIS", redis_url)
    out = CliRunner().invoke(cli, ["backend", "show", "--root", str(tmp_path)]).output.strip()
    assert out == f"{redis_url} (reachable)"
