"""``strata backend``: which backend the root uses, and ``copy`` of its state to Redis or back to SQLite."""

from __future__ import annotations

import click

from cli._base import cli, root_option
from strata.errors import ConfigError, StrataError


class CopyMismatch(StrataError):
    exit_code = 1


@cli.group()
def backend() -> None:
    """The root's backend: SQLite files (default) or Redis (STRATA_REDIS, or redis in .strata/settings.toml)."""


@backend.command("show")
@root_option
def show(root) -> None:
    """Print the backend the root uses now, and whether it answers."""
    from index.storage import redisdb
    from index.storage.backend import backend_of

    chosen = backend_of(root)
    if chosen.kind == "redis":
        redisdb.connect(chosen.redis_url).close()  # BackendUnavailable (exit 1) when it does not answer
    click.echo(f"{chosen.shown} (reachable)" if chosen.kind == "redis" else "sqlite")


@backend.command("copy")
@click.option("--to", "target", required=True, help="redis://host:port/db to copy into Redis, or sqlite to copy back.")
@click.option("--from", "source", help="With --to sqlite: the Redis to read (default: the root's).")
@root_option
def copy(target, source, root) -> None:
    """Copy the root's queue, schedules, and each collection's URL state, digest index and CDX index from
    SQLite to a Redis, or from the root's Redis back to SQLite; check the counts after (exit 1 if any differ).
    The collections stay served throughout; switch the setting when it is done."""
    from harvester.jobs.queue import SQLiteQueue
    from harvester.jobs.queuecopy import copy_queue
    from harvester.jobs.redisqueue import RedisQueue
    from index.collection import Collection, list_collections
    from index.storage import backendcopy, redisdb
    from index.storage.backend import backend_of, check_redis_url

    if target == "sqlite":
        url = source or backend_of(root).redis_url
        if not url:
            raise ConfigError("--to sqlite reads a Redis: give --from redis://host:port/db or set STRATA_REDIS")
        to_redis = False
    else:
        try:
            url = check_redis_url(target)
        except ValueError as exc:
            raise ConfigError(f"--to: {exc}; or --to sqlite") from None
        if not url:
            raise ConfigError("--to needs redis://host:port/db or sqlite")
        to_redis = True
    client = redisdb.Guarded(redisdb.connect(url), url)
    sqlite_queue, redis_queue = SQLiteQueue.for_root(root), RedisQueue(url, client)
    problems = 0
    try:
        pairs = [("root", copy_queue(sqlite_queue, redis_queue) if to_redis else copy_queue(redis_queue, sqlite_queue))]
        for name in list_collections(root):
            coll = Collection(root, name)
            pairs.append((name, (backendcopy.to_redis if to_redis else backendcopy.to_sqlite)(coll, client)))
    finally:
        sqlite_queue.close()
    direction = f"SQLite -> {redisdb.shown(url)}" if to_redis else f"{redisdb.shown(url)} -> SQLite"
    click.echo(f"copied {direction}")
    for name, counts in pairs:
        for kind, (held, copied) in counts.items():
            ok = held == copied
            problems += not ok
            click.echo(f"  {name:<20} {kind:<14} {held:>9} -> {copied:<9} {'ok' if ok else 'DIFFERENT'}")
    if problems:
        raise CopyMismatch(f"{problems} count(s) differ after the copy; nothing was switched")
    if to_redis:
        click.echo(f"Now set STRATA_REDIS={redisdb.shown(url)} (or redis = ... in {root}/.strata/settings.toml).")
    else:
        click.echo("Now unset STRATA_REDIS (and redis in the root's settings file) to use SQLite.")
