"""Issue 12's replay benchmark: Strata's replay reading a collection's CDX from Redis against the
local CDXJ file, at 1,000,000 captures, through Strata's own replay path.

One collection: the sample site harvested twice here (v1, then v2 incremental with revisits: real
WARC records to load), its index padded with synthetic captures of other URLs to ``--captures``
lines in all, and copied to a Redis (Debian's redis-server, started here on a free port, stopped by
PID) by ``index.storage.backendcopy.to_redis``, what ``strata backend copy`` runs. Then, per backend (the
root on SQLite, or with ``STRATA_REDIS`` set: ``index.cdx.capture_index`` reads ``index.cdxj``'s lines
from the sorted set), in alternating order, ``--repeat`` times:

- index: ``--lookups`` as-of lookups of random URLs through the replay index source
  (``replay.warcserver.make_warcserver``'s ``AsOfIndexSource``: listing, range read, parsing,
  as-of ordering, the first capture taken);
- replay: ``--requests`` requests through the replay application (``replay.create_app``, Flask's
  test client: routing, access checks, the index lookups pywb makes, the record loaded from its
  WARC, headers) for real captures, raw (``id_``) at each run's snapshot.

Each figure: median and p95 of the per-call wall time, and this process's CPU per call (the Redis
server's own CPU is not in it); the spread is the range over the repeats.

    .venv/bin/python bench/redis_replay_bench.py            # 1,000,000 captures, 3 repeats
    .venv/bin/python bench/redis_replay_bench.py --quick    # 100,000 captures, 1 repeat

Output (the table, and every figure as JSON) goes to ``bench/out/redis-replay-<time>/``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from bench.common import start_redis  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
BACKENDS = ("local CDXJ", "Redis")


def harvest_sample(root: Path) -> None:
    """The sample site, v1 then v2, into collection ``big`` (SQLite backend): real records."""
    from demo.sample_site import serve_sample_site
    from harvester.job import validate_job
    from harvester.run import Harvest
    from index.collection import Collection

    coll = Collection.open(root, "big", create=True)
    with serve_sample_site(1) as site:
        for version in (1, 2):
            site.version = version
            job = validate_job("bench", {"seeds": [site.base_url + "/"], "delay": 0.0, "depth": 6, "timeout": 10.0})
            asyncio.run(Harvest(coll, job).run())


def synthetic_lines(count: int) -> tuple[list[bytes], list[str]]:
    """``count`` CDXJ lines of other URLs (5 captures each, one in two a revisit), and their URLs."""
    lines, urls = [], []
    stamps = [f"2024{m:02d}15120000" for m in range(1, 6)]
    for i in range(count // len(stamps) + 1):
        host, page = i // 1000, i % 1000
        url = f"http://site{host:05d}.example/page/{page:04d}.html"
        key = f"example,site{host:05d})/page/{page:04d}.html"
        urls.append(url)
        for j, ts in enumerate(stamps):
            fields = {"url": url, "mime": "warc/revisit" if j % 2 else "text/html", "digest": f"D{i:027d}"}
            fields |= {"length": "1000", "offset": str(1000 * j), "filename": f"synthetic-{j}.warc.gz", "status": "200"}
            lines.append(f"{key} {ts} {json.dumps(fields)}\n".encode())
            if len(lines) == count:
                return lines, urls
    return lines, urls


def build(root: Path, captures: int, redis_url: str) -> tuple[list[str], list[str], dict]:
    """The padded collection, copied to Redis; the real replay paths and a sample of all URLs."""
    from index.cdx import cdxj
    from index.collection import Collection
    from index.storage import backendcopy, redisdb

    harvest_sample(root)
    coll = Collection(root, "big")
    real = list(cdxj.iter_index(coll.cdxj_path))
    lines, urls = synthetic_lines(captures - len(real))
    cdxj.merge_lines(coll.cdxj_path, lines)
    client = redisdb.connect(redis_url)
    counts = backendcopy.to_redis(coll, client)
    memory = int(client.info("memory")["used_memory"])
    client.close()
    assert counts["CDX lines"][0] == counts["CDX lines"][1] == captures, counts
    real_urls = sorted({c["url"] for c in real if not c["url"].startswith("urn:")})
    # every real capture at its own time (revisits too: their originals are loaded)
    paths = [f"/big/{c['timestamp']}id_/{c['url']}" for c in real if c["url"] in real_urls and c.get("status") == "200"]
    return paths, urls + real_urls, {"captures": captures, "redis_used_memory": memory, "real_captures": len(real)}


def _summary(walls: list[float], cpus: list[float]) -> dict:
    walls = sorted(walls)
    return {
        "median_us": statistics.median(walls) * 1e6,
        "p95_us": walls[int(len(walls) * 0.95)] * 1e6,
        "cpu_us": statistics.mean(cpus) * 1e6,
    }


def _timed(calls) -> dict:
    walls, cpus = [], []
    for call in calls:
        t, c = time.perf_counter(), time.process_time()
        call()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return _summary(walls, cpus)


def measure(root: Path, backend: str, redis_url: str, paths: list[str], urls: list[str], args, seed: int) -> dict:
    from index.cdx.redis_cdx import shared_cdx
    from replay import create_app
    from replay.warcserver import make_warcserver

    os.environ["STRATA_REDIS"] = redis_url if backend == "Redis" else ""
    shared_cdx.cache_clear()
    _, index = make_warcserver(root)
    assert (index.redis is not None) == (backend == "Redis")
    rng = random.Random(seed)
    sample = [rng.choice(urls) for _ in range(args.lookups)]

    def lookup(url: str):
        def call() -> None:
            found, _ = index({"url": url, "closest": "20240401000000", "matchType": "exact", "param.coll": "big"})
            assert next(iter(found))["url"] == url

        return call

    for url in sample[:50]:
        lookup(url)()  # warm: file pages cached, connection open
    result = {"index": _timed(lookup(url) for url in sample)}
    client = create_app(root).test_client()
    requests = [rng.choice(paths) for _ in range(args.requests)]

    def get(path: str):
        def call() -> None:
            resp = client.get(path)
            assert resp.status_code == 200, (path, resp.status_code)
            resp.close()

        return call

    for path in requests[:20]:
        get(path)()
    result["replay"] = _timed(get(path) for path in requests)
    return result


def table(results: list[dict], meta: dict, args) -> str:
    out = [
        f"Replay lookups at {meta['captures']:,} captures ({meta['real_captures']} real, the rest synthetic), "
        f"{args.repeat} repeat(s); Redis used_memory {meta['redis_used_memory'] / 1e6:.0f} MB",
        "",
        f"{'path':<8} {'backend':<11} {'median us (range)':>22} {'p95 us (range)':>22} {'CPU us/call':>12}",
    ]
    for kind in ("index", "replay"):
        for backend in BACKENDS:
            rows = [r[backend][kind] for r in results]
            med = [r["median_us"] for r in rows]
            p95 = [r["p95_us"] for r in rows]
            cpu = statistics.median(r["cpu_us"] for r in rows)
            out.append(
                f"{kind:<8} {backend:<11} {statistics.median(med):>8.0f} ({min(med):.0f}-{max(med):.0f})"
                f"{'':>4} {statistics.median(p95):>8.0f} ({min(p95):.0f}-{max(p95):.0f}){'':>4} {cpu:>10.0f}"
            )
        ratio = [r["Redis"][kind]["median_us"] / r["local CDXJ"][kind]["median_us"] for r in results]
        out.append(
            f"{kind:<8} Redis / local median: {statistics.median(ratio):.2f} ({min(ratio):.2f}-{max(ratio):.2f})"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/redis_replay_bench.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100,000 captures, one repeat")
    parser.add_argument("--captures", type=int, default=None, help="CDXJ lines in the collection (default 1,000,000)")
    parser.add_argument("--repeat", type=int, default=None, help="default 3")
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    args.captures = args.captures or (100_000 if args.quick else 1_000_000)
    args.repeat = args.repeat or (1 if args.quick else 3)
    out = args.out or BENCH_DIR / "out" / f"redis-replay-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    out.mkdir(parents=True, exist_ok=True)
    root = out / "root"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    saved = os.environ.get("STRATA_REDIS")
    proc, url = start_redis(out / "redis")
    try:
        os.environ["STRATA_REDIS"] = ""
        paths, urls, meta = build(root, args.captures, url)
        print(f"built {meta['captures']:,} captures, {len(paths)} replay paths", file=sys.stderr, flush=True)
        results = []
        for n in range(args.repeat):
            order = BACKENDS if n % 2 == 0 else BACKENDS[::-1]  # drift on a noisy machine hits both
            results.append({b: measure(root, b, url, paths, urls, args, seed=n) for b in order})
            print(f"repeat {n + 1}/{args.repeat} done", file=sys.stderr, flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if saved is None:
            os.environ.pop("STRATA_REDIS", None)
        else:
            os.environ["STRATA_REDIS"] = saved
    text = table(results, meta, args)
    (out / "table.txt").write_text(text)
    (out / "results.json").write_text(
        json.dumps({"meta": meta, "args": vars(args) | {"out": str(out)}, "runs": results}, indent=2, default=str)
    )
    shutil.rmtree(root, ignore_errors=True)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
