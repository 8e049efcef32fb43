"""The on-disk sort behind the WACZ export: sorted, duplicates dropped, few lines in memory."""

from __future__ import annotations

import random

from index.export.wacz.extsort import ExternalSort


def test_spilled_runs_merge_sorted_without_duplicates(tmp_path):
    rng = random.Random(3)
    lines = [f"{rng.randrange(5000):06d} line\n".encode() for _ in range(2000)]
    sorter = ExternalSort(tmp_path, chunk_lines=97)
    for line in lines:
        sorter.add(line)
    assert len(sorter.runs) == 2000 // 97 and len(sorter.buffer) < 97  # spilled, not held
    assert list(sorter) == sorted(set(lines))
    assert list(sorter) == sorted(set(lines))  # read twice: the runs stay until close
    sorter.close()
    assert not list(tmp_path.iterdir())
