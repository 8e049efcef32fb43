"""The event loop a Strata process runs its coroutines on: uvloop's where it is installed.

A harvest is two event loops, the main process's and the fetch process's, each woken for every
answer, every pipe frame and every socket read. asyncio's own loop is Python; uvloop's is libuv in
C, with the same interface (protocols, pipes, subprocesses, signal handlers, ``start_tls``), so the
same code spends less CPU between its own lines. Where uvloop is not installed (it does not build
on Windows) asyncio's loop runs the same code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's ``new_event_loop``, or None (asyncio's default loop) where uvloop is missing."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the loop ``loop_factory`` chooses."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
