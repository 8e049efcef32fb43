"""What a harvest's processes import at start: every run pays for it, before its first request.

numpy (0.1 s) serves only the full-text index's queries and builds, and valkey (35 ms) only roots
on Redis; neither may be pulled in by importing the harvester or its fetch process.
"""

import json
import subprocess
import sys

import pytest

NOT_AT_START = ("numpy", "valkey")


@pytest.mark.parametrize("module", ["harvester.run", "harvester.fetchproc"])
def test_a_harvest_starts_without_numpy_or_the_redis_client(module):
    probe = f"import sys, json, {module}; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True).stdout)
    assert [name for name in NOT_AT_START if name in loaded] == []


def test_the_redis_errors_still_import_when_asked_for():
    from index import redisdb

    errors = redisdb.unavailable_errors()
    import valkey.exceptions

    assert valkey.exceptions.ConnectionError in errors
    assert issubclass(valkey.exceptions.BusyLoadingError, errors)
