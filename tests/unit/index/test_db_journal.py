"""index.storage.db.connect with a rollback journal (a root several machines share): a connection made while
another process writes waits for it, as any SQLite connection does, instead of failing."""

from __future__ import annotations

import sqlite3
import threading
import time

from index.storage.db import connect

SCHEMA = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);"


def test_a_connection_made_during_another_writers_transaction_waits_for_it(tmp_path, caplog):
    path = tmp_path / "harvest.sqlite"
    first = connect(path, SCHEMA, 1, journal="delete")
    assert first.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    first.execute("BEGIN EXCLUSIVE")  # as while a writer commits: no reader gets in
    first.execute("INSERT OR REPLACE INTO meta VALUES ('k', 'v')")
    threading.Timer(0.5, lambda: first.execute("COMMIT")).start()
    started = time.monotonic()
    second = connect(path, SCHEMA, 1, journal="delete")  # the schema script needs the write lock
    assert time.monotonic() - started >= 0.4
    assert second.execute("SELECT value FROM meta WHERE key='k'").fetchone()[0] == "v"
    assert "WAL" not in caplog.text  # already out of WAL: nothing to say
    second.close()
    first.close()


def test_a_wal_file_open_elsewhere_stays_wal_until_the_next_open(tmp_path, caplog):
    path = tmp_path / "harvest.sqlite"
    wal = connect(path, SCHEMA, 1)  # a SQLite root's file
    reader = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    reader.execute("SELECT count(*) FROM meta").fetchone()
    shared = connect(path, SCHEMA, 1, journal="delete")
    assert shared.execute("PRAGMA journal_mode").fetchone()[0] == "wal" and "stays in WAL" in caplog.text
    for conn in (shared, reader, wal):
        conn.close()
    again = connect(path, SCHEMA, 1, journal="delete")
    assert again.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    again.close()
