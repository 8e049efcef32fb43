"""Login pacing (``replay.staff.logins``): a client that fails too often waits, alone; an account
guessed at from anywhere slows down, never locks; hashing runs off the loop, a bounded queue."""

from __future__ import annotations

import threading

import pytest

from replay.staff import logins
from replay.staff.logins import Busy, HashRunner, LoginThrottle, TooManyAttempts


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_client_that_fails_too_often_is_refused_and_nobody_else_is():
    clock = Clock()
    throttle = LoginThrottle(clock)
    for _ in range(logins.CLIENT_FAILURES):
        throttle.check_client("203.0.113.9")
        throttle.failed("203.0.113.9", "ana")
    with pytest.raises(TooManyAttempts) as info:
        throttle.check_client("203.0.113.9")
    assert 0 < info.value.retry_after <= logins.WINDOW + 1 and info.value.http_status == 429
    throttle.check_client("198.51.100.7")  # the account's owner, elsewhere: not refused
    clock.now += logins.WINDOW + 1
    throttle.check_client("203.0.113.9")


def test_an_account_guessed_at_slows_down_and_never_locks():
    clock = Clock()
    throttle = LoginThrottle(clock)
    assert throttle.account_delay("ana") == 0
    for n in range(logins.ACCOUNT_FREE + 10):
        throttle.failed(f"192.0.2.{n}", "ana")
    assert throttle.account_delay("ana") == logins.MAX_DELAY
    assert throttle.account_delay("bob") == 0
    clock.now += logins.WINDOW + 1
    assert throttle.account_delay("ana") == 0


def test_hashing_runs_in_a_thread_and_a_crowd_is_refused():
    runner = HashRunner()
    assert runner.run(threading.get_ident) != threading.get_ident()
    runner._waiting = logins.MAX_WAITING
    with pytest.raises(Busy):
        runner.run(threading.get_ident)
