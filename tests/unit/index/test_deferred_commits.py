"""HarvestState.commits_deferred: the transactions of one turn of the event loop share one commit,
made before the loop waits for anything; one that fails is rolled back alone."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from index.storage.state import HarvestState


def _seen(db_path) -> set[str]:
    """What another connection (a reader, or the next process after a kill) sees committed."""
    conn = sqlite3.connect(db_path)
    try:
        return {row[0] for row in conn.execute("SELECT url FROM urls")}
    finally:
        conn.close()


def _see(state: HarvestState, url: str) -> None:
    with state.transaction():
        state.see_url(url, "a.test", "r", "2026-01-01T00:00:00Z", None, 0, "navigation")


def test_one_turn_one_commit_before_the_loop_waits(tmp_path):
    db = tmp_path / "h.sqlite"
    state = HarvestState(db)

    async def run() -> None:
        with state.commits_deferred(asyncio.get_running_loop().call_soon):
            for n in range(5):
                _see(state, f"http://a.test/{n}")
            assert _seen(db) == set()  # not yet: the commit is scheduled
            await asyncio.sleep(0.05)  # the loop waits: the commit came first
            assert len(_seen(db)) == 5
            _see(state, "http://a.test/later")
        assert "http://a.test/later" in _seen(db)  # leaving commits what is open

    asyncio.run(run())
    assert (state.deferred_units, state.deferred_commits) == (6, 2)
    state.close()


def test_a_failing_transaction_is_rolled_back_alone(tmp_path):
    db = tmp_path / "h.sqlite"
    state = HarvestState(db)

    async def run() -> None:
        with state.commits_deferred(asyncio.get_running_loop().call_soon):
            _see(state, "http://a.test/kept")
            with pytest.raises(RuntimeError), state.transaction():
                state.see_url("http://a.test/lost", "a.test", "r", "2026-01-01T00:00:00Z", None, 0, "navigation")
                raise RuntimeError("a bug while following links")
            _see(state, "http://a.test/after")
            await asyncio.sleep(0)

    asyncio.run(run())
    assert _seen(db) == {"http://a.test/kept", "http://a.test/after"}
    state.close()


def test_without_deferral_each_transaction_commits_at_once(tmp_path):
    db = tmp_path / "h.sqlite"
    state = HarvestState(db)
    _see(state, "http://a.test/")
    assert _seen(db) == {"http://a.test/"}
    assert state.deferred_commits == 0
    state.close()
