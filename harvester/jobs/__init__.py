"""Harvest jobs run by machines rather than by hand: the run queue (console and CLI put runs in it),
the worker that takes them, and the scheduler that queues each job when its frequency comes due."""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "origin",
    "queue",
    "queuecopy",
    "redisqueue",
    "scheduler",
    "worker",
]
