"""What a harvest's processes import at start: every run pays for it, before its first request.

numpy (0.1 s) serves only the full-text index's queries and builds, and valkey (35 ms) only roots
on Redis; neither may be pulled in by importing the harvester or its fetch process. The HTTP client
(httpx, httpcore, h11: 70 ms) is the fetch process's: the main process of a harvest that has one
reads its answers and never imports it.
"""

import json
import subprocess
import sys

import pytest

NOT_AT_START = ("numpy", "valkey")
HTTP_CLIENT = ("httpx", "httpcore", "h11")


@pytest.mark.parametrize("module", ["harvester.run", "harvester.fetchproc"])
def test_a_harvest_starts_without_numpy_or_the_redis_client(module):
    probe = f"import sys, json, {module}; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True).stdout)
    assert [name for name in NOT_AT_START if name in loaded] == []


def test_the_redis_errors_still_import_when_asked_for():
    from index.storage import redisdb

    errors = redisdb.unavailable_errors()
    import valkey.exceptions

    assert valkey.exceptions.ConnectionError in errors
    assert issubclass(valkey.exceptions.BusyLoadingError, errors)


def test_the_main_process_imports_no_http_client_at_start():
    probe = "import sys, json, cli, cli.harvesting, harvester.run; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, check=True).stdout)
    assert [name for name in HTTP_CLIENT if name in loaded] == []


def test_a_harvest_with_a_fetch_process_never_imports_the_http_client_in_its_main_process(site, tmp_path):
    """A whole run, robots.txt and its end included: the fetch process did every fetch."""
    root = tmp_path / "collections"
    probe = (
        "import atexit, json, sys\n"
        f"loaded = lambda: [m for m in {HTTP_CLIENT!r} if m in sys.modules]\n"
        "atexit.register(lambda: print(json.dumps(loaded()), file=sys.stderr))\n"
        "from cli import main\n"
        "main()\n"
    )
    seed = ["--seed", site.base_url + "/", "--delay", "0", "--depth", "2"]
    args = ["harvest", "c", *seed, "--root", str(root), "--json"]
    done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["urls_fetched"] > 10 and not summary["notes"], summary["notes"]
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []
