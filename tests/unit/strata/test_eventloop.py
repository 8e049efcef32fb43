"""strata.eventloop: uvloop's loop where it is installed, asyncio's where it is not."""

from __future__ import annotations

import asyncio
import builtins

import uvloop

from strata import eventloop


async def _loop_and(value):
    await asyncio.sleep(0)
    return type(asyncio.get_running_loop()), value


def test_run_runs_on_uvloop_and_returns_the_coroutine_s_value():
    loop_type, value = eventloop.run(_loop_and(42))
    assert loop_type is uvloop.Loop and value == 42


def test_without_uvloop_the_same_runs_on_asyncio_s_loop(monkeypatch):
    real_import = builtins.__import__

    def no_uvloop(name, *args, **kwargs):
        if name == "uvloop":
            raise ImportError("No module named 'uvloop'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_uvloop)
    assert eventloop.loop_factory() is None
    loop_type, value = eventloop.run(_loop_and("x"))
    assert issubclass(loop_type, asyncio.BaseEventLoop) and not issubclass(loop_type, uvloop.Loop)
    assert value == "x"
