"""Sorting more lines than fit in memory: sorted runs spilled to temporary files, merged on reading."""

from __future__ import annotations

import contextlib
import heapq
import tempfile
from collections.abc import Iterator
from pathlib import Path

CHUNK_LINES = 100_000


class ExternalSort:
    """Add byte lines (each ending in ``\\n``) in any order, then iterate them sorted, duplicates dropped.
    At most ``chunk_lines`` lines are held in memory; the runs live in ``workdir`` until ``close``."""

    def __init__(self, workdir: Path, chunk_lines: int = CHUNK_LINES):
        self.workdir = Path(workdir)
        self.chunk_lines = chunk_lines
        self.buffer: list[bytes] = []
        self.runs: list[Path] = []
        self.count = 0

    def add(self, line: bytes) -> None:
        self.buffer.append(line)
        self.count += 1
        if len(self.buffer) >= self.chunk_lines:
            self._spill()

    def _spill(self) -> None:
        self.buffer.sort()
        with tempfile.NamedTemporaryFile("wb", dir=self.workdir, suffix=".run", delete=False) as out:
            out.writelines(self.buffer)
        self.runs.append(Path(out.name))
        self.buffer = []

    def __iter__(self) -> Iterator[bytes]:
        self.buffer.sort()
        with contextlib.ExitStack() as stack:
            files = [stack.enter_context(open(path, "rb")) for path in self.runs]
            last = None
            for line in heapq.merge(*files, iter(self.buffer)):
                if line != last:
                    yield line
                    last = line

    def close(self) -> None:
        for path in self.runs:
            path.unlink(missing_ok=True)
        self.runs, self.buffer = [], []
