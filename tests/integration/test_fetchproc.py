"""The fetch process: same captures as fetching in-process, large bodies, a dying child, no orphans."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from harvester.fetchproc import INLINE_MAX, FetchProcess
from index.collection import Collection
from index.storage.state import HarvestState
from tests.conftest import VENV_BIN, free_port, harvest


def _captures(root: Path, name: str) -> dict[str, list[tuple]]:
    with HarvestState(Collection(root, name).db_path) as state:
        out: dict[str, list[tuple]] = {}
        for row in state.captures():
            out.setdefault(row["url"], []).append((row["record_type"], row["class"], row["status"], row["digest"]))
        return out


def test_two_runs_capture_the_same_with_and_without_the_fetch_process(root, site):
    for name, enabled in (("child", True), ("inproc", False)):
        site.version = 1
        first = harvest(root, site, name=name, fetch_process=enabled)
        site.version = 2
        second = harvest(root, site, name=name, fetch_process=enabled)
        assert first["errors"] == second["errors"] == 0
    assert _captures(root, "child") == _captures(root, "inproc")
    assert len(_captures(root, "child")) > 20


def _spool_files() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("strata-body-*")}


def test_bodies_small_large_and_errors_come_back(site):
    async def go():
        before = _spool_files()
        fetcher = await FetchProcess(2, 5.0, 10.0, "strata-test").start()
        try:
            page, huge, refused = await asyncio.gather(
                fetcher.fetch(site.base_url + "/", {}, 10.0, 10**8),
                fetcher.fetch(site.base_url + "/hostile/huge", {}, 20.0, INLINE_MAX + 500_000),
                fetcher.fetch(f"http://127.0.0.1:{free_port()}/", {}, 5.0, 10**6),
            )
            assert page.status == 200 and b"<html" in page.read_body().lower()
            assert page.request_headers and page.digest.startswith("sha1:")
            assert huge.truncated == "length" and huge.body_length == INLINE_MAX + 500_000
            assert len(huge.read_body()) == huge.body_length  # travelled as a temporary file
            assert refused.status is None and refused.error.startswith("connection failed")
            for result in (page, huge, refused):
                result.close()
            assert _spool_files() <= before  # the temporary file is gone
        finally:
            await fetcher.close()

    asyncio.run(go())


def test_a_dead_child_fails_fetches_in_flight_and_later_ones_can_tell(site):
    site.latency = 1.0

    async def go():
        fetcher = await FetchProcess(2, 5.0, 10.0, "strata-test").start()
        try:
            slow = asyncio.create_task(fetcher.fetch(site.base_url + "/", {}, 10.0, 10**6))
            await asyncio.sleep(0.5)
            fetcher._proc.kill()
            result = await asyncio.wait_for(slow, 5)
            assert result.error == "the fetch process has exited"
            assert not fetcher.alive  # the harvest then fetches in its own process
        finally:
            await fetcher.close()

    asyncio.run(go())


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return state != "Z"


@contextlib.contextmanager
def _harvest_started(root: Path, site, name: str, delay: float, env: dict | None = None):
    """``strata harvest NAME --json`` on the site, given 20 s to start its fetch process: the
    process and the fetch process's pids; killed on the way out if it is still running."""
    proc = subprocess.Popen(
        [str(VENV_BIN / "strata"), "harvest", name, "--seed", site.base_url + "/", "--delay", str(delay)]
        + ["--root", str(root), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        children: list[int] = []
        while time.monotonic() < deadline and not children:
            children = _children(proc.pid)
            time.sleep(0.02)
        assert children, "the harvest started no fetch process"
        yield proc, children
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_a_killed_harvest_leaves_no_fetch_process_behind(root, site):
    site.latency = 0.05
    with _harvest_started(root, site, "c", 0.05) as (proc, children):
        time.sleep(0.5)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(c) for c in children):
            time.sleep(0.05)
        assert not any(_alive(c) for c in children)


def test_urls_in_hand_outnumber_connections_but_connections_stay_at_concurrency(root, site):
    site.latency = 0.02
    for enabled in (True, False):
        site.reset_counters()
        summary = harvest(root, site, name=f"c{int(enabled)}", concurrency=2, fetch_process=enabled)
        assert summary["errors"] == 0 and summary["urls_fetched"] > 20
        assert site.most_open_connections <= 2


class _CookieSite:
    """``/`` sets a session cookie and links to ``/next.html``."""

    def resolve(self, version, path, headers):
        from demo.site_server import Resource

        html = (("Content-Type", "text/html"),)
        if path == "/":
            return Resource(200, html + (("Set-Cookie", "session=abc; Path=/"),), b'<a href="/next.html">next</a>')
        if path == "/next.html":
            return Resource(200, html, b"<p>next</p>")
        return None


def test_a_cookie_the_site_sets_is_sent_back_with_and_without_the_fetch_process(root):
    from demo.site_server import SiteServer
    from harvester.job import validate_job
    from harvester.run import Harvest

    for enabled in (True, False):
        with SiteServer(_CookieSite()) as server:
            job = validate_job(
                "t", {"seeds": [server.base_url + "/"], "delay": 0.0, "robots": "ignore", "fetch_process": enabled}
            )
            asyncio.run(Harvest(Collection.open(root, f"k{int(enabled)}", create=True), job).run())
            (second,) = [r for r in server.request_log if r.path == "/next.html"]
            assert "session=abc" in dict((k.lower(), v) for k, v in second.headers).get("cookie", "")


def test_the_child_processes_run_strata_s_modules_not_ones_in_the_working_directory(root, site, tmp_path):
    """``python -m`` puts the working directory first on the path: a folder of any other project's
    ``harvester`` or ``index`` package there must not become the fetch process or the indexer."""
    here = tmp_path / "elsewhere"
    marker = tmp_path / "impostor-ran"
    impostor = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    for package, module in (("harvester", "fetchproc"), ("index", "fulltext/follow")):
        path = here / package / f"{module}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(impostor)
        (path.parent / "__init__.py").write_text("")
        (here / package / "__init__.py").write_text("")
    done = subprocess.run(
        [str(VENV_BIN / "strata"), "harvest", "c", "--seed", site.base_url + "/", "--delay", "0", "--depth", "1"]
        + ["--root", str(root), "--json", "--wait-for-index"],
        cwd=here,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), marker.read_text()
    assert '"errors": 0' in done.stdout and '"added": ' in done.stdout


def _loads_uvloop(pid: int) -> bool:
    """Whether the process mapped uvloop's module: it is imported only where strata.eventloop makes
    the loop (a process left on asyncio.run does not load it)."""
    return "/uvloop/" in Path(f"/proc/{pid}/maps").read_text()


def test_both_processes_run_on_uvloop_and_capture_the_same_on_asyncio_where_it_is_missing(root, site, tmp_path):
    """The harvest and its fetch process run on uvloop; with uvloop not importable (shadowed by a
    module that raises ImportError) both run on asyncio's loop, and the captures are the same."""
    shadow = tmp_path / "no-uvloop"
    shadow.mkdir()
    (shadow / "uvloop.py").write_text("raise ImportError('uvloop is not installed here')\n")
    site.latency = 0.02
    loaded = {}
    for name, extra_path in (("on-uvloop", None), ("on-asyncio", shadow)):
        env = dict(os.environ)
        if extra_path:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(extra_path), env.get("PYTHONPATH")) if p)
        site.reset_counters()
        with _harvest_started(root, site, name, 0.02, env) as (proc, children):
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and site.request_count == 0:
                time.sleep(0.02)  # the fetch process asks once its loop runs: what it runs on is imported
            assert site.request_count > 0, "the fetch process sent no request"
            loaded[name] = (_loads_uvloop(proc.pid), _loads_uvloop(children[0]))
            out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert '"errors": 0' in out
    assert loaded == {"on-uvloop": (True, True), "on-asyncio": (False, False)}
    assert _captures(root, "on-uvloop") == _captures(root, "on-asyncio")
