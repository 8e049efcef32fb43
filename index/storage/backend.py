"""Which backend holds a collections root's shared state: SQLite files (the default) or one Redis.

One setting for the whole root: ``STRATA_REDIS=redis://host:port/db`` in the environment, else
``redis = "redis://..."`` in the root's settings file ``<root>/.strata/settings.toml``
(``ROOT_SETTINGS``). Unset, every store stays in SQLite beside the collections, as before. Set, the
run queue and job schedule, the digest index, the per-URL harvest state and the CDX index pywb
reads live in that Redis database too (``index.storage.redisdb`` holds the key layout), so several
workers and replay servers over one root share them.

The client is ``valkey`` (the maintained fork of redis-py under another import name): pywb pins
the 2017 ``redis==2.10.6``, which keeps the name ``redis`` in the same environment.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from index.collection import root_state_dir
from strata.errors import ConfigError
from strata.settings import Setting, apply_settings

ENV = "STRATA_REDIS"
SETTINGS_FILE = "settings.toml"


def check_redis_url(value: Any) -> str:
    """``""`` (no Redis) or ``redis://[user:password@]host[:port][/db]`` / ``unix:///path.sock``."""
    if value in ("", None):
        return ""
    if not isinstance(value, str):
        raise ValueError("expected a URL such as redis://127.0.0.1:6379/0")
    parts = urlsplit(value.strip())
    if parts.scheme not in ("redis", "rediss", "unix"):
        raise ValueError(f"{value!r} is not a Redis URL; use redis://host:port/db")
    if parts.scheme != "unix" and not parts.hostname:
        raise ValueError(f"{value!r} names no host; use redis://host:port/db")
    db = parts.path.strip("/")
    if parts.scheme != "unix" and db and not db.isdigit():
        raise ValueError(f"database {db!r} in {value!r} is not a number; use redis://host:port/0")
    try:
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError:
        raise ValueError(f"{value!r} has a bad port number") from None
    return value.strip()


ROOT_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "redis",
        "",
        check_redis_url,
        "Redis URL (redis://host:port/db) holding the root's queue, schedule, digest index, URL state and CDX "
        f"index; empty: SQLite files beside the collections. {ENV} in the environment overrides it.",
    ),
)


def settings_path(root: Path) -> Path:
    return root_state_dir(root) / SETTINGS_FILE


def root_settings(root: Path) -> dict[str, Any]:
    """The root's settings file, checked against ``ROOT_SETTINGS`` (defaults when there is none).
    Asked on every capture lookup (``index.cdx.capture_index``): read again only when the file changes."""
    path = settings_path(root)
    try:
        st = path.stat()
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        stamp = None
    return dict(_checked_settings(str(path), stamp))


@functools.lru_cache(maxsize=64)
def _checked_settings(path_name: str, stamp: tuple | None) -> dict[str, Any]:
    path = Path(path_name)
    values: dict = {}
    if stamp is not None and path.is_file():
        try:
            values = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path} is not valid TOML ({exc}); fix or remove it") from None
    return apply_settings(ROOT_SETTINGS, values, f"root ({path})")


@dataclasses.dataclass(frozen=True)
class Backend:
    """The root's backend: ``redis_url`` set means Redis, else SQLite."""

    root: Path
    redis_url: str = ""

    @property
    def kind(self) -> str:
        return "redis" if self.redis_url else "sqlite"

    @property
    def shown(self) -> str:
        """The backend as the console and the CLI show it (no password)."""
        if not self.redis_url:
            return "sqlite"
        parts = urlsplit(self.redis_url)
        netloc = parts.hostname or ""
        if parts.port:
            netloc += f":{parts.port}"
        return f"redis://{netloc}{parts.path}"


def backend_of(root: Path) -> Backend:
    """The root's backend: ``STRATA_REDIS`` when set (an empty value means SQLite), else its settings file."""
    env = os.environ.get(ENV)
    if env is not None:
        try:
            return Backend(Path(root), check_redis_url(env))
        except ValueError as exc:
            raise ConfigError(f"{ENV}: {exc}") from None
    return Backend(Path(root), root_settings(root)["redis"])
