"""The harvest state of a collection on the root's backend (``index.storage.backend``): ``HarvestState``
over the collection's SQLite file, or ``RedisHarvestState`` (URL state and digest index in Redis,
written through to that file) when the root uses Redis."""

from __future__ import annotations

from index.collection import Collection
from index.state import HarvestState
from index.storage.backend import backend_of
from index.storage.redisstate import RedisHarvestState


def open_harvest_state(collection: Collection) -> HarvestState:
    backend = backend_of(collection.root)
    if backend.kind == "redis":
        return RedisHarvestState(collection.db_path, collection.name, backend.redis_url)
    return HarvestState(collection.db_path)
