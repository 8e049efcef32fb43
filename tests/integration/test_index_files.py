"""Files derived from the WARCs are as readable as the WARCs: mode 0666 less the umask, not 0600."""

from __future__ import annotations

import os
import stat

import pytest

from index.capture.rebuild import rebuild_state
from index.cdx import cdxj
from index.collection import Collection
from tests.conftest import harvest


@pytest.fixture
def umask():
    """Set the process umask for one test, then put the old one back."""
    old = os.umask(0o022)
    os.umask(old)

    def set_umask(value: int) -> None:
        os.umask(value)

    yield set_umask
    os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o027, 0o640)])
def test_the_cdxj_index_gets_the_mode_the_warcs_get(root, site, umask, mask, expected):
    umask(mask)
    harvest(root, site, depth=1)
    coll = Collection.open(root, "sample")
    warcs = sorted(coll.archive_dir.glob("*.warc.gz"))
    assert warcs and {mode(w) for w in warcs} == {expected}
    assert mode(coll.cdxj_path) == expected
    rebuild_state(coll)  # the whole index written again
    assert mode(coll.cdxj_path) == expected


def test_removing_a_files_lines_keeps_the_mode_and_leaves_no_temp_file(tmp_path, umask):
    umask(0o022)
    index = tmp_path / "index.cdxj"
    cdxj.merge_lines(
        index,
        [
            b'org,example)/ 20240101000000 {"filename": "a.warc.gz"}\n',
            b'org,example)/b 20240101000000 {"filename": "b.warc.gz"}\n',
        ],
    )
    cdxj.remove_file_lines(index, "a.warc.gz")
    assert index.read_bytes() == b'org,example)/b 20240101000000 {"filename": "b.warc.gz"}\n'
    assert mode(index) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["index.cdxj"]
