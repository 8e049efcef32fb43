"""The collections under the root, as the replay application sees them (read-only)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from flask import g, has_request_context

from index.access.rules import RuleSet, rules_for
from index.collection import Collection, check_name, list_collections
from index.state import Deletion, deletion, open_readonly
from replay.errors import UnknownCollection
from strata.errors import CollectionError


class Collections:
    def __init__(self, root: Path):
        self.root = Path(root)

    def names(self) -> list[str]:
        return list_collections(self.root)

    def require(self, name: str) -> Collection:
        """The collection called ``name``, or ``UnknownCollection`` listing the known ones."""
        try:
            coll = Collection(self.root, name)
        except CollectionError:
            raise UnknownCollection(name, self.names()) from None
        if not coll.archive_dir.is_dir():
            raise UnknownCollection(name, self.names())
        return coll

    @contextlib.contextmanager
    def db(self, name: str) -> Iterator[sqlite3.Connection | None]:
        """The collection's harvest database, read-only, or None when it has none."""
        conn = open_readonly(Collection(self.root, name).db_path)
        try:
            yield conn
        finally:
            if conn is not None:
                conn.close()

    def rules(self, name: str) -> RuleSet:
        """The collection's access rules (``index.access.rules``); empty for an unknown name. Within a
        request the first answer is kept: every surface of one request sees one rule set."""
        memo = g.setdefault("strata_rules", {}) if has_request_context() else {}
        rules = memo.get(name)
        if rules is None:
            try:
                rules = rules_for(self.root / check_name(name))
            except CollectionError:
                rules = RuleSet()
            memo[name] = rules
        return rules

    def deletion(self, name: str, url: str, timestamp: str) -> Deletion | None:
        with self.db(name) as conn:
            return deletion(conn, url, timestamp) if conn is not None else None
