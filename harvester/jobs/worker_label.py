"""A worker's label: its name in the WARC files it writes and in a shared run's figures, unique on
its machine (a lock file under the root's ``.strata/``), and what lets the next worker started with
it repair the torn files a killed one left."""

from __future__ import annotations

import contextlib
import fcntl
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harvester.shared_run import SharedRun
from index.collection import root_state_dir
from strata.errors import ConfigError, HarvestError

_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]{0,39}$")


def host_label() -> str:
    return re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname() or "localhost")[:40].strip("-.") or "localhost"


def check_label(label: str) -> str:
    if not _LABEL.match(label or ""):
        raise ConfigError(
            f"{label!r} is not a usable worker label: letters, digits, '.' and '-', at most 40, e.g. --label w1"
        )
    return label


@contextlib.contextmanager
def label_lock(root: Path, label: str) -> Iterator[None]:
    """Hold ``label`` on this machine for the block; a second worker with it is refused."""
    state = root_state_dir(Path(root))
    state.mkdir(parents=True, exist_ok=True)
    with open(state / f"worker-{label}.lock", "a+b") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HarvestError(
                f"another worker on this machine uses the label {label!r}; give this one another: --label NAME"
            ) from None
        yield


def joinable_runs(client: Any) -> list[tuple[str, str | None, str]]:
    return SharedRun.joinable(client)
