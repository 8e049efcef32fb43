"""Where state is stored: the root's backend (SQLite files or one Redis), SQLite connections, the
Redis database and keys, and the harvest state (``state``: harvest.sqlite; ``redisstate``: its URL
state and digests in Redis; ``statestore``: the one the root's backend asks for)."""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "backend",
    "db",
    "redisdb",
    "state",
    "statestore",
]
