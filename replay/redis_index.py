"""pywb's view of a collection index part read from Redis (``index.cdx.capture_index``).

``AsOfIndexSource`` lists a collection's index files as pywb's directory source does; on a root
that uses Redis, the entry of ``index.cdxj`` is replaced by a ``RedisPartSource`` under the same
name, so the lines replay, timemaps and the CDX API see come from the collection's sorted set (or,
when there is none or Redis cannot be reached, from that file) and every field pywb derives from
the source's name (``source``, ``source-coll``) stays what it is on a SQLite root.
"""

from __future__ import annotations

from pywb.warcserver.index.cdxobject import CDXObject

from index.cdx.capture_index import IndexPart


class RedisPartSource:
    """A pywb index source (``load_index(params)``: CDXObjects from ``params['key']`` up to
    ``params['end_key']``) over one ``IndexPart``."""

    def __init__(self, part: IndexPart):
        self.part = part

    def load_index(self, params: dict):
        # read now, not lazily: a failure is decided (and the file read instead) before pywb merges
        lines = list(self.part.lines(params["key"], params["end_key"]))
        return (CDXObject(line) for line in lines)

    def __str__(self) -> str:
        return "redis"

    def __repr__(self) -> str:
        return f"RedisPartSource({self.part.coll}, fallback={self.part.path})"
