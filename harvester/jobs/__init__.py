"""Harvest jobs run by machines rather than by hand: the run queue (console and CLI put runs in it),
the worker that takes them, and the scheduler that queues each job when its frequency comes due."""
