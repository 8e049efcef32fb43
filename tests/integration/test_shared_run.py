"""Several `strata worker` processes on one run, sharing its frontier in a real Redis: v1 then v2 of
the sample site, right URL by URL, no URL captured twice; one worker killed mid-run, the run still
completes right."""

from __future__ import annotations

import collections
import os
import select
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from demo.sample_site import SampleSite
from harvester.job import validate_job
from harvester.jobs.queue import open_queue
from index.capture import runhistory
from index.collection import Collection
from index.state import HarvestState
from index.storage import redisdb
from tests.conftest import VENV_BIN, harvest

STRATA = str(VENV_BIN / "strata")


def _job(root, site, **extra):
    coll = Collection.open(root, "sample", create=True)
    job = validate_job("news", {"seeds": [site.base_url + "/"], "delay": 0.0, "depth": 6, "timeout": 10.0, **extra})
    coll.job_path("news").write_text(job.to_toml())
    return coll


def _workers(root, redis_url, labels, *extra):
    env = {**os.environ, "STRATA_REDIS": redis_url}
    return {
        label: subprocess.Popen(
            [STRATA, "worker", "--once", "--poll", "0.1", "--label", label, "--root", str(root)]
            + ["--allow-network", "127.0.0.1/32", *extra],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for label in labels
    }


def _wait(procs, timeout=120):
    out = {}
    for label, proc in procs.items():
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for p in procs.values():
                p.kill()
            said = {name: p.communicate()[1] for name, p in procs.items()}
            pytest.fail(f"worker {label} did not end in {timeout} s; they said: {said}")
        out[label] = (proc.returncode, err)
    return out


def _read_until(proc, needle: str, timeout: float) -> str:
    """What ``proc`` wrote to its stderr pipe until a line holds ``needle`` (or ``timeout``)."""
    fd, data = proc.stderr.fileno(), b""
    deadline = time.monotonic() + timeout
    while needle.encode() not in data and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.1)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
    return data.decode(errors="replace")


def _all_ended_well(done):
    """Every worker exited 0 and none logged a failure (a helper's failure is logged, not fatal)."""
    failed = {label: (code, err) for label, (code, err) in done.items() if code != 0 or "Traceback" in err}
    if failed:
        pytest.fail("\n".join(f"worker {label} exited {code}:\n{err}" for label, (code, err) in failed.items()))


def _enqueue(root, mode):
    queue = open_queue(root)
    entry, _ = queue.enqueue("sample", "news", mode)
    queue.close()
    return entry


def _run_of(root, entry_id, redis_url, monkeypatch):
    monkeypatch.setenv("STRATA_REDIS", redis_url)
    queue = open_queue(root)
    entry = queue.get(entry_id)
    queue.close()
    return entry


def _captures(root, run_id):
    with HarvestState(Collection(root, "sample").db_path) as state:
        return state.captures(run_id=run_id)


def _by_path(caps):
    return {urlsplit(c["url"]).path: (c["record_type"], c["class"]) for c in caps}


def _writers(root, run_id):
    """worker label of each WARC file of the run, from its warcinfo, and the file name's label."""
    out = {}
    for path in sorted((root / "sample" / "archive").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            info = next(iter(ArchiveIterator(fh)))
            fields = dict(
                line.split(": ", 1) for line in info.content_stream().read().decode().splitlines() if ": " in line
            )
        if fields.get("run-id") == run_id:
            out[path.name] = fields.get("worker")
    return out


@pytest.mark.slow
def test_three_workers_share_one_run_v1_then_v2(tmp_path, root, site, redis_url, monkeypatch):
    reference = tmp_path / "reference" / "collections"
    reference.mkdir(parents=True)
    ref1 = harvest(reference, site)
    site.version = 2
    ref2 = harvest(reference, site)

    site.latency = 0.01  # each URL takes a while: all three workers get some
    _job(root, site)
    monkeypatch.setenv("STRATA_REDIS", redis_url)
    results = []
    for version, mode, ref in ((1, "full", ref1), (2, "incremental", ref2)):
        site.version = version
        entry = _enqueue(root, mode)
        done = _wait(_workers(root, redis_url, ["w1", "w2", "w3"]))
        _all_ended_well(done)
        finished = _run_of(root, entry.id, redis_url, monkeypatch)
        assert finished.status == "finished", finished.error
        summary = finished.summary
        caps = _captures(root, summary["run_id"])
        counts = collections.Counter(c["url"] for c in caps)
        assert [u for u, n in counts.items() if n > 1] == [] and summary["captured_twice"] == []
        assert _by_path(caps) == _by_path(_captures(reference, ref["run_id"]))  # URL by URL as one harvester
        writers = _writers(root, summary["run_id"])
        assert set(writers.values()) == {"w1", "w2", "w3"}, writers  # every worker wrote, each its own files
        assert all(name.endswith(f"-{label}.warc.gz") for name, label in writers.items())
        assert sorted(summary["warc_files"]) == sorted(writers)
        assert summary["bytes_stored"] == sum((root / "sample" / "archive" / f).stat().st_size for f in writers)
        for cls in ("new", "changed", "unchanged", "not_modified", "redirect"):
            assert summary[cls] == ref[cls], cls  # the sum of the workers' figures
        assert summary["revisits"] == ref["revisits"]
        results.append(summary)
    assert results[1]["mode"] == "incremental" and results[1]["revisits"] > 0


@pytest.mark.slow
def test_a_host_is_never_asked_more_at_once_than_the_jobs_concurrency(root, site, redis_url, monkeypatch):
    """Three workers of two connections each on a one-host site, with a job of concurrency 2: the
    server never has more than two requests to answer at one time, yet the workers share the run."""
    site.latency = 0.03
    _job(root, site, concurrency=2)
    monkeypatch.setenv("STRATA_REDIS", redis_url)
    entry = _enqueue(root, "full")
    site.reset_counters()
    _all_ended_well(_wait(_workers(root, redis_url, ["w1", "w2", "w3"])))
    summary = _run_of(root, entry.id, redis_url, monkeypatch).summary
    assert site.request_count >= summary["urls_fetched"] > 20
    assert site.most_requests_at_once == 2
    assert len(set(_writers(root, summary["run_id"]).values())) >= 2


def _slow_run_queued(tmp_path, root, site, redis_url, monkeypatch):
    """A reference harvest, then a full run queued on a site 0.25 s a URL, one connection a worker."""
    reference = tmp_path / "reference" / "collections"
    reference.mkdir(parents=True)
    ref = harvest(reference, site)
    site.latency = 0.25
    _job(root, site, concurrency=1)
    monkeypatch.setenv("STRATA_REDIS", redis_url)
    entry = _enqueue(root, "full")
    return reference, ref, entry


def _deleted(root, run_id):
    with HarvestState(Collection(root, "sample").db_path) as state:
        return sorted(urlsplit(c["url"]).path for c in state.checks(run_id) if c["outcome"] == "deleted")


@pytest.mark.slow
def test_three_workers_tell_vanished_pages_as_one_harvester_does(tmp_path, root, site, redis_url, monkeypatch):
    """The index/content strategy with vanished pages recorded: listings are read by whichever worker
    takes them, and the lead tells the pages gone from all of them, the same as one harvester."""
    strategy = {
        "index_patterns": list(SampleSite.INDEX_PATTERNS),
        "content_patterns": list(SampleSite.CONTENT_PATTERNS),
        "default_page_kind": "content",
        "min_interval": "1h",
        "check_deleted_links": True,
    }
    reference = tmp_path / "reference" / "collections"
    reference.mkdir(parents=True)
    harvest(reference, site, **strategy)
    site.version = 2
    ref2 = harvest(reference, site, **strategy)
    expected = _deleted(reference, ref2["run_id"])
    assert expected and ref2["deleted"] == len(expected)

    site.version, site.latency = 1, 0.01
    _job(root, site, **strategy)
    monkeypatch.setenv("STRATA_REDIS", redis_url)
    for version, mode in ((1, "full"), (2, "incremental")):
        site.version = version
        entry = _enqueue(root, mode)
        done = _wait(_workers(root, redis_url, ["w1", "w2", "w3"]))
        _all_ended_well(done)
    summary = _run_of(root, entry.id, redis_url, monkeypatch).summary
    assert _deleted(root, summary["run_id"]) == expected
    assert summary["deleted"] == ref2["deleted"]


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_nothing(tmp_path, root, site, redis_url, monkeypatch):
    # One connection a worker, 0.25 s a URL, until the first worker has written: then 2 s a URL, so
    # the run is still going, whatever the machine's load, when the second worker has written too
    # and the lead is killed (a worker that starts slowly once found the run over, its file sealed).
    reference, ref, entry = _slow_run_queued(tmp_path, root, site, redis_url, monkeypatch)
    procs = _workers(root, redis_url, ["w1", "w2"], "--lease", "3")
    archive = root / "sample" / "archive"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(archive.glob("*.warc.gz.open")):
        time.sleep(0.02)
    site.latency = 2.0  # under the job's 10 s timeout: slow answers, not failed ones
    while time.monotonic() < deadline and len(list(archive.glob("*.warc.gz.open"))) < 2:
        time.sleep(0.02)
    assert len(list(archive.glob("*.warc.gz.open"))) == 2, sorted(p.name for p in archive.iterdir())
    # The lead (the worker that claimed the entry) dies: the hardest case, its run must be resumed.
    queue = open_queue(root)
    lead_pid = int(queue.get(entry.id).worker.split(":")[1])
    queue.close()
    lead, other = sorted(procs, key=lambda label: procs[label].pid != lead_pid)
    client = redisdb.connect(redis_url)
    deadline = time.monotonic() + 20
    leased = False
    while time.monotonic() < deadline:  # kill it while it holds a lease (a URL in hand)
        keys = list(client.scan_iter(match="strata:sample:run:*:leases"))
        if keys and any(m.startswith(f"{lead}:") for m in client.zrange(keys[0], 0, -1)):
            leased = True
            break
        time.sleep(0.005)
    client.close()
    procs[lead].send_signal(signal.SIGKILL)
    procs[lead].wait()
    site.latency = 0.05  # the rest of the run at speed (answers already waiting keep their 2 s)
    torn = list(archive.glob(f"*-{lead}.warc.gz.open"))
    # it died with its file open (what was there, if not)
    assert torn, (
        lead,
        lead_pid,
        {k: p.pid for k, p in procs.items()},
        leased,
        sorted(p.name for p in archive.iterdir()),
    )
    queue = open_queue(root)  # the queue's recovery (any worker's) retries the entry at once: its worker is dead
    assert [e.id for e in queue.recover(stale_after=60.0)] == [entry.id]
    queue.close()
    time.sleep(0.5)  # the helper polls the queue meanwhile: it must not lead the run it helps (one label, two roles)
    again = _workers(root, redis_url, [lead], "--lease", "3")  # started again with its label: repairs, resumes
    done = _wait({other: procs[other], **again})
    _all_ended_well(done)
    assert not list(archive.glob("*.open"))
    assert all((archive / p.name.removesuffix(".open")).is_file() for p in torn)  # repaired and sealed
    for path in archive.glob("*.warc.gz"):
        checked = subprocess.run([str(VENV_BIN / "fastwarc"), "check", str(path)], capture_output=True, text=True)
        assert checked.returncode == 0, (path.name, checked.stdout)
    queue = open_queue(root)
    first, retry = queue.get(entry.id), queue.entries(collection="sample")[0]
    queue.close()
    assert first.status == "interrupted" and (retry.retry_of, retry.status) == (entry.id, "finished"), retry.error
    summary = retry.summary
    with HarvestState(Collection(root, "sample").db_path) as state:
        assert [r["run_id"] for r in state.runs()] == [summary["run_id"]]  # the retry resumed it: one run
    assert {p.name.removesuffix(".open") for p in torn} <= set(_writers(root, summary["run_id"]))
    caps = _captures(root, summary["run_id"])
    assert set(_by_path(caps)) == set(_by_path(_captures(reference, ref["run_id"])))  # every URL captured
    twice = sorted(u for u, n in collections.Counter(c["url"] for c in caps).items() if n > 1)
    assert twice == summary["captured_twice"]
    assert summary["expired_leases"] >= 1, summary  # w2 died holding URLs; they came back to w1 or the new w2
    assert len(twice) <= summary["expired_leases"]  # only URLs whose lease expired
    verified = subprocess.run([STRATA, "verify", "sample", "--root", str(root)], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def _run_reports(root, run_id):
    """How many run reports (``index.capture.runhistory``) the collection's WARC files hold for ``run_id``."""
    found = 0
    for path in sorted((root / "sample" / "archive").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                uri = record.rec_headers.get_header("WARC-Target-URI")
                found += runhistory.is_run_record(record) and uri == runhistory.run_uri(run_id)
    return found


@pytest.mark.slow
def test_a_lead_cut_off_longer_than_the_queue_trusts_hands_its_run_over(tmp_path, root, site, redis_url, monkeypatch):
    """A lead frozen (SIGSTOP: as cut off from Redis) past the queue's trust: its entry is retried, the
    retry's worker resumes the run and leads it; the old lead, back, leaves as a helper. One run,
    closed once, with one report, every URL in it."""
    reference, ref, entry = _slow_run_queued(tmp_path, root, site, redis_url, monkeypatch)
    first = _workers(root, redis_url, ["w1"], "--lease", "2")
    archive = root / "sample" / "archive"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not list(archive.glob("*-w1.warc.gz.open")):
        time.sleep(0.02)
    time.sleep(0.5)
    first["w1"].send_signal(signal.SIGSTOP)
    try:
        queue = open_queue(root)
        # The queue's own recovery, eleven minutes on: a silent worker is trusted ten at most.
        later = datetime.now(UTC) + timedelta(minutes=11)
        assert [e.id for e in queue.recover(now=later, stale_after=60.0)] == [entry.id]
        queue.close()
        second = _workers(root, redis_url, ["w2"], "--lease", "2")
        client = redisdb.connect(redis_url)
        meta_key = f"strata:sample:run:{_run_id_of(client)}:meta"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not client.hget(meta_key, "lead").startswith("w2:"):
            time.sleep(0.02)
        assert client.hget(meta_key, "lead").startswith("w2:")  # the retry resumed the run and leads it
        client.close()
        time.sleep(0.3)
    finally:
        first["w1"].send_signal(signal.SIGCONT)
    done = _wait({**first, **second})
    _all_ended_well(done)
    assert "another worker resumed the run" in done["w1"][1]
    queue = open_queue(root)
    old, retry = queue.get(entry.id), queue.entries(collection="sample")[0]
    queue.close()
    assert old.status == "interrupted" and (retry.retry_of, retry.status) == (entry.id, "finished"), retry.error
    summary = retry.summary
    run_id = summary["run_id"]
    with HarvestState(Collection(root, "sample").db_path) as state:
        assert [(r["run_id"], r["status"]) for r in state.runs()] == [(run_id, "finished")]
    assert _run_reports(root, run_id) == 1  # closed once
    assert set(_writers(root, run_id).values()) == {"w1", "w2"}
    caps = _captures(root, run_id)
    assert set(_by_path(caps)) == set(_by_path(_captures(reference, ref["run_id"])))
    twice = sorted(u for u, n in collections.Counter(c["url"] for c in caps).items() if n > 1)
    assert twice == summary["captured_twice"] and len(twice) <= summary["expired_leases"]
    assert summary["urls_fetched"] == len(caps)  # the old lead's URLs are in the run's figures
    verified = subprocess.run([STRATA, "verify", "sample", "--root", str(root)], capture_output=True, text=True)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def _run_id_of(client):
    keys = list(client.scan_iter(match="strata:sample:run:*:meta"))
    assert len(keys) == 1, keys
    return keys[0].split(":")[3]


@pytest.mark.slow
def test_redis_stopped_and_restarted_mid_run(tmp_path, root, site, redis_server, redis_url, monkeypatch):
    """Workers wait for Redis (with backoff) and go on from what its append-only file kept: the
    run finishes once, every URL captured once."""
    reference = tmp_path / "reference" / "collections"
    reference.mkdir(parents=True)
    ref = harvest(reference, site)
    site.latency = 0.05
    _job(root, site)
    monkeypatch.setenv("STRATA_REDIS", redis_url)
    entry = _enqueue(root, "full")
    procs = _workers(root, redis_url, ["w1", "w2"])
    archive = root / "sample" / "archive"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(list(archive.glob("*.open"))) < 2:
        time.sleep(0.02)
    time.sleep(0.5)
    client = redisdb.connect(redis_url)
    lead = client.hget(f"strata:sample:run:{_run_id_of(client)}:meta", "lead").split(":")[0]
    client.close()
    redis_server.stop()  # by its PID
    time.sleep(2.0)
    # Redis stays away until the lead's run has waited for it (a loaded machine may keep the lead
    # from asking for 2 s): its report then has the note
    said = _read_until(procs[lead], f"worker {lead}: Redis at", 30.0)
    assert all(p.poll() is None for p in procs.values())  # waiting, not gone
    redis_server.start()
    done = _wait(procs)
    done[lead] = (done[lead][0], said + done[lead][1])
    _all_ended_well(done)
    assert any("Redis at" in err and "cannot be reached" in err for _, err in done.values()), done  # said so
    finished = _run_of(root, entry.id, redis_url, monkeypatch)
    assert any("cannot be reached" in note for note in finished.summary["notes"]), finished.summary["notes"]
    assert finished.status == "finished" and finished.attempt == 1, finished.error
    queue = open_queue(root)
    assert [e.id for e in queue.entries()] == [entry.id]  # no retry queued: the run was not done twice
    queue.close()
    caps = _captures(root, finished.summary["run_id"])
    assert _by_path(caps) == _by_path(_captures(reference, ref["run_id"]))
    assert len(caps) == len({c["url"] for c in caps})
