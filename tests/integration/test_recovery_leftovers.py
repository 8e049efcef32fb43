"""Temp files a kill leaves behind (a CDXJ merge's ``indexes/.index.*.tmp``, a rebuild's database)
are removed by recovery: by ``strata recover`` and before every harvest."""

from __future__ import annotations

import subprocess

from index.cdx import cdxj
from index.collection import Collection
from tests.conftest import VENV_BIN, harvest

STRATA = str(VENV_BIN / "strata")


def leave_temp_files(coll: Collection) -> list:
    """What a kill in the middle of a merge and of a rebuild leaves: half-written files."""
    merge = coll.indexes_dir / f"{cdxj.TEMP_PREFIX}k1ll3d{cdxj.TEMP_SUFFIX}"
    merge.write_bytes(coll.cdxj_path.read_bytes()[:100])
    rebuild = coll.state_dir / "harvest.sqlite.rebuild"
    rebuild.write_bytes(b"SQLite format 3\x00")
    return [merge, rebuild]


def test_strata_recover_removes_a_killed_merges_temp_file(root, site):
    harvest(root, site, name="c", depth=1)
    coll = Collection.open(root, "c")
    index_before = coll.cdxj_path.read_bytes()
    left = leave_temp_files(coll)
    out = subprocess.run([STRATA, "recover", "c", "--root", str(root)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "removed leftover temp file indexes/.index.k1ll3d.tmp" in out.stdout
    assert "removed leftover temp file strata/harvest.sqlite.rebuild" in out.stdout
    assert not any(p.exists() for p in left)
    assert [p.name for p in coll.indexes_dir.iterdir()] == ["index.cdxj"]
    assert coll.cdxj_path.read_bytes() == index_before
    out = subprocess.run([STRATA, "recover", "c", "--root", str(root)], capture_output=True, text=True, timeout=60)
    assert "nothing to recover" in out.stdout


def test_the_next_harvest_removes_them_too(root, site):
    harvest(root, site, name="c", depth=0)
    coll = Collection.open(root, "c")
    left = leave_temp_files(coll)
    harvest(root, site, name="c", depth=0)
    assert not any(p.exists() for p in left)
    assert not list(coll.indexes_dir.glob(".index.*"))
