"""Issue 12's benchmark: several `strata worker` processes on one run through Redis, and replay
lookups from Redis against the local CDXJ file.

Harvest: four generated sites (``bench/sitegen.py``), each on its own loopback address
(127.0.0.1 to 127.0.0.4: four hosts to the politeness rules) with ``--latency`` before every
response, at least 5,000 URLs in all. A job with the four seeds and ``concurrency = 1`` (one
connection per worker, and at most one lease per host across all workers) is queued, then 1, 2
and 4 `strata worker` processes (labels w1..wN) run it over one root and one Redis (Debian's
redis-server, started here on a free port with its own data directory, stopped by PID). The job
has ``fulltext = false``: full-text indexing is one pass at the run's end whatever the number of
workers (``--fulltext`` keeps it). Per worker count, repeated: wall time (spawn to the last
worker's exit), speed-up against one worker, the latency floor (URLs x latency / workers) and the
wall's distance from it, Redis commands per URL fetched (``total_commands_processed`` before and
after: pipelines and scripts count as their commands), each worker's peak RSS, CPU per URL of
everything that serves the harvest (workers with their children, the site servers in this
process, redis-server), URLs captured twice (must be 0), and the load average.

Replay lookup: ``--cdx-lines`` synthetic CDXJ lines (default 1,000,000) written sorted to a file and
added to a sorted set; pywb's own index sources (``FileIndexSource``, binary search in the file, and
``RedisIndexSource``, ZRANGEBYLEX) answer the same random exact-URL lookups; median and p95.

    .venv/bin/python bench/redis_bench.py               # 4 x ~1,300 URLs, 20 ms, workers 1 2 4, twice
    .venv/bin/python bench/redis_bench.py --quick       # 4 x ~350 URLs, 100,000 CDX lines, once

Output (the table, and every figure as JSON) goes to ``bench/out/redis-<time>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from bench.common import REDIS_SERVER, run_measured, start_redis  # noqa: E402
from bench.sitegen import GeneratedSite, SiteSpec  # noqa: E402
from demo.site_server import SiteServer, _Handler, _HTTPServer  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
STRATA = str(Path(sys.executable).parent / "strata")


class HostServer(SiteServer):
    """A SiteServer on another loopback address: another host for politeness."""

    def __init__(self, model, address: str, **kwargs):
        super().__init__(model, **kwargs)
        self.address = address

    def start(self) -> HostServer:
        self._stop_event.clear()
        self._httpd = _HTTPServer((self.address, self._port), _Handler, self)
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    @property
    def base_url(self) -> str:
        return f"http://{self.address}:{self._port}"


def _redis_cpu(client) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def harvest_once(args, servers, url: str, workers: int, out: Path) -> dict:
    from harvester.jobs.queue import open_queue
    from index.collection import Collection
    from index.state import HarvestState
    from index.storage import redisdb

    root = out / f"root-{workers}"
    shutil.rmtree(root, ignore_errors=True)
    coll = Collection.open(root, "bench", create=True)
    seeds = ", ".join(f'"{s.base_url}/"' for s in servers)
    coll.job_path("bench").write_text(
        f"seeds = [{seeds}]\ndepth = 100\ndelay = 0.0\nconcurrency = 1\n"
        + ("" if args.fulltext else "fulltext = false\n")
    )
    client = redisdb.connect(url)
    client.flushall()
    os.environ["STRATA_REDIS"] = url
    queue = open_queue(root)
    entry, _ = queue.enqueue("bench", "bench", "full")
    commands_before = int(client.info("stats")["total_commands_processed"])
    redis_cpu_before = _redis_cpu(client)
    servers_cpu_before = _own_cpu()
    results: dict[str, object] = {}

    def one(label: str) -> None:
        cmd = [STRATA, "worker", "--once", "--label", label, "--root", str(root)]  # the default poll (1 s)
        cmd += ["--allow-network", "127.0.0.0/8"]
        results[label] = run_measured(cmd, args.timeout, out / f"{label}-{workers}.out", out / f"{label}-{workers}.err")

    started = time.monotonic()
    threads = [threading.Thread(target=one, args=(f"w{i + 1}",)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - started
    commands = int(client.info("stats")["total_commands_processed"]) - commands_before
    redis_cpu = _redis_cpu(client) - redis_cpu_before
    servers_cpu = _own_cpu() - servers_cpu_before  # this process: the four site servers (and the bench's threads)
    done = queue.get(entry.id)
    queue.close()
    client.close()
    with HarvestState(coll.db_path) as state:
        caps = state.captures(run_id=done.run_id) if done.run_id else []
    urls = [c["url"] for c in caps]
    fetched = (done.summary or {}).get("urls_fetched") or 0
    return {
        "workers": workers,
        "status": done.status,
        "wall": wall,
        "urls_fetched": fetched,
        "captures": len(caps),
        "captured_twice": len(urls) - len(set(urls)),
        "expired_leases": (done.summary or {}).get("expired_leases"),
        "redis_commands": commands,
        "commands_per_url": commands / fetched if fetched else None,
        "load": os.getloadavg()[0],
        "redis_cpu": redis_cpu,
        "servers_cpu": servers_cpu,
        "latency_floor": fetched * args.latency / workers if fetched else None,
        "rss": {label: m.maxrss for label, m in sorted(results.items())},
        "cpu": {label: m.cpu for label, m in sorted(results.items())},
        "exit": {label: m.returncode for label, m in sorted(results.items())},
    }


def round_trips(args, servers, url: str, workers: int, out: Path) -> dict:
    """One more run with a MONITOR client counting what the workers send: every command outside a
    script and a MULTI block is a round trip, a MULTI ... EXEC block is one (a pipeline is sent as one
    write too, but MONITOR does not tell; so this counts high for pipelines without MULTI)."""
    from index.storage import redisdb

    client = redisdb.connect(url)
    conn = client.connection_pool.get_connection("MONITOR")
    conn.send_command("MONITOR")
    assert conn.read_response() in (b"OK", "OK")
    counts = {"round_trips": 0, "in_scripts": 0}
    stop = threading.Event()

    def listen() -> None:
        in_multi = set()
        while not stop.is_set():
            if not conn.can_read(timeout=0.2):
                continue
            line = conn.read_response()
            line = line.decode() if isinstance(line, bytes) else str(line)
            head, _, rest = line.partition("] ")
            who = head.rsplit(" ", 1)[-1]
            command = rest.split(" ", 1)[0].strip('"').upper()
            if who == "lua":
                counts["in_scripts"] += 1
            elif command == "MULTI":
                in_multi.add(who)
            elif command in ("EXEC", "DISCARD"):
                in_multi.discard(who)
                counts["round_trips"] += 1
            elif who not in in_multi and command not in ("INFO", "FLUSHALL"):
                counts["round_trips"] += 1

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    try:
        r = harvest_once(args, servers, url, workers, out)
    finally:
        stop.set()
        listener.join(timeout=5)
        conn.disconnect()
        client.close()
    urls = r["urls_fetched"] or 1
    return {"workers": workers, "urls": urls, **counts, "per_url": counts["round_trips"] / urls}


def lookup_bench(args, url: str, out: Path) -> dict:
    from pywb.warcserver.index.indexsource import FileIndexSource, RedisIndexSource

    from index.storage import redisdb

    rng = random.Random(12)
    hosts = [f"gov,example,h{h}" for h in range(4)]
    keys = []
    path = out / "lookup.cdxj"
    lines = []
    for i in range(args.cdx_lines):
        host = hosts[i % 4]
        key = f"{host})/section/{i // 4 % 5000}/content_{i}.htm"
        ts = 20240101000000 + i % 86400
        lines.append(
            f'{key} {ts} {{"url": "http://h{i % 4}.example.gov/section/{i // 4 % 5000}/content_{i}.htm", '
            f'"mime": "text/html", "status": "200", "digest": "SHA{i:028d}", "length": "{1000 + i % 9000}", '
            f'"offset": "{i * 900}", "filename": "bench-{i // 20000:05d}.warc.gz"}}'
        )
        keys.append(key)
    lines.sort()
    path.write_text("\n".join(lines) + "\n")
    client = redisdb.connect(url)
    client.flushall()
    zkey = "pywb:lookup:cdxj"
    for i in range(0, len(lines), 20000):
        client.zadd(zkey, dict.fromkeys(lines[i : i + 20000], 0))
    memory = int(client.info("memory")["used_memory"])
    client.close()
    sources = {"local CDXJ (FileIndexSource)": FileIndexSource(str(path)), "Redis (RedisIndexSource)": None}
    sources["Redis (RedisIndexSource)"] = RedisIndexSource(f"{url}/{zkey}")
    sample = rng.sample(keys, args.lookups)
    out_times = {}
    for name, source in sources.items():
        times = []
        for key in sample:
            params = {"key": key.encode(), "end_key": key.encode() + b"!"}
            t = time.perf_counter()
            found = list(source.load_index(params))
            times.append(time.perf_counter() - t)
            assert len(found) == 1, (name, key, found)
        times.sort()
        out_times[name] = {
            "median_us": statistics.median(times) * 1e6,
            "p95_us": times[int(len(times) * 0.95)] * 1e6,
            "min_us": times[0] * 1e6,
        }
    path.unlink()
    return {"lines": args.cdx_lines, "lookups": args.lookups, "redis_memory": memory, "sources": out_times}


def _cpu_per_url(r: dict) -> float:
    total = sum(r["cpu"].values()) + r["servers_cpu"] + r["redis_cpu"]
    return total / r["urls_fetched"] * 1000 if r["urls_fetched"] else 0.0


def table(runs: list[dict], lookups: dict, args, urls_total: int) -> str:
    by: dict[int, list[dict]] = {}
    for r in runs:
        by.setdefault(r["workers"], []).append(r)
    base = statistics.median(r["wall"] for r in by[min(by)])
    rows = [
        f"Harvest: {urls_total} URLs over 4 hosts, {args.latency * 1000:g} ms latency, "
        "concurrency 1 (a connection a worker, a lease a host), "
        f"{args.repeat} run(s) each",
        f"{'workers':>7} {'wall s (median, min-max)':>26} {'speed-up':>8} {'Redis cmds/URL':>14} "
        f"{'peak RSS/worker MB':>18} {'CPU s/worker':>12} {'twice':>5} {'expired':>7} {'wall/floor':>10} "
        f"{'CPU ms/URL (workers+servers+redis)':>34}",
    ]
    for n, rs in sorted(by.items()):
        walls = [r["wall"] for r in rs]
        med = statistics.median(walls)
        cmds = statistics.median(r["commands_per_url"] or 0 for r in rs)
        rss = max(max(r["rss"].values()) for r in rs) / 1e6
        cpu = statistics.median(statistics.mean(r["cpu"].values()) for r in rs)
        rows.append(
            f"{n:>7} {med:>12.1f} ({min(walls):.1f}-{max(walls):.1f}) {base / med:>8.2f} {cmds:>14.1f} "
            f"{rss:>18.0f} {cpu:>12.1f} {max(r['captured_twice'] for r in rs):>5} "
            f"{max(r['expired_leases'] or 0 for r in rs):>7} "
            f"{statistics.median(r['wall'] / r['latency_floor'] for r in rs):>10.2f} "
            f"{statistics.median(_cpu_per_url(r) for r in rs):>34.1f}"
        )
    loads = [r["load"] for r in runs]
    rows.append(f"load average (1 min) at the runs: {min(loads):.2f}-{max(loads):.2f}")
    rows.append("")
    rows.append(
        f"Replay lookup, {lookups['lines']:,} captures, {lookups['lookups']} random exact-URL lookups "
        f"(Redis memory {lookups['redis_memory'] / 1e6:.0f} MB)"
    )
    for name, t in lookups["sources"].items():
        rows.append(f"  {name:<30} median {t['median_us']:8.0f} us   p95 {t['p95_us']:8.0f} us")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/redis_bench.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sites, 100,000 CDX lines, one repeat")
    parser.add_argument("--articles", type=int, default=None, help="articles per site (default 720: ~1,300 URLs)")
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--no-round-trips", dest="round_trips", action="store_false", help="skip the run under MONITOR")
    parser.add_argument(
        "--fulltext",
        action="store_true",
        help="index full text at the run's end too (off: a fixed cost, not the harvest's)",
    )
    parser.add_argument("--cdx-lines", type=int, default=None)
    parser.add_argument("--lookups", type=int, default=2000)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    args.articles = args.articles or (150 if args.quick else 720)
    args.repeat = args.repeat or (1 if args.quick else 2)
    args.cdx_lines = args.cdx_lines or (100_000 if args.quick else 1_000_000)
    if not shutil.which(REDIS_SERVER):
        parser.error(f"{REDIS_SERVER} not found: apt-get install redis-server")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = (args.out or BENCH_DIR / "out" / f"redis-{stamp}").resolve()
    out.mkdir(parents=True, exist_ok=False)
    sites = [GeneratedSite(SiteSpec.preset("quick", seed=h + 1, articles=args.articles)) for h in range(4)]
    urls_total = sum(site.stats()["urls_v1"] for site in sites)
    print(f"4 sites generated: {urls_total} URLs in v1 -> {out}", flush=True)
    redis_proc, url = start_redis(out / "redis")
    runs: list[dict] = []
    try:
        servers = [HostServer(site, f"127.0.0.{h + 1}", latency=args.latency).start() for h, site in enumerate(sites)]
        try:
            for _ in range(args.repeat):
                for n in [int(w) for w in args.workers.split(",")]:
                    print(f"{n} worker(s) ...", end=" ", flush=True)
                    r = harvest_once(args, servers, url, n, out)
                    runs.append(r)
                    print(
                        f"{r['wall']:.1f} s, {r['urls_fetched']} URLs, {r['status']}, "
                        f"{r['commands_per_url'] or 0:.1f} Redis commands/URL",
                        flush=True,
                    )
            trips = None
            if args.round_trips:
                n = max(int(w) for w in args.workers.split(","))
                print(f"round trips, {n} worker(s), Redis MONITOR on ...", end=" ", flush=True)
                trips = round_trips(args, servers, url, n, out)
                print(f"{trips['per_url']:.1f} a URL", flush=True)
        finally:
            for server in servers:
                server.stop()
        print("replay lookups ...", flush=True)
        lookups = lookup_bench(args, url, out)
    finally:
        redis_proc.terminate()
        redis_proc.wait(timeout=10)
    text = table(runs, lookups, args, urls_total)
    if trips:
        text += (
            f"\nRedis round trips a URL ({trips['workers']} workers, one untimed run under MONITOR): "
            f"{trips['per_url']:.1f} ({trips['round_trips']} for {trips['urls']} URLs; a MULTI block or "
            f"a script is one; {trips['in_scripts']} commands ran inside scripts)"
        )
    print()
    print(text)
    (out / "report.txt").write_text(text + "\n")
    (out / "results.json").write_text(
        json.dumps(
            {
                "runs": runs,
                "lookups": lookups,
                "round_trips": trips,
                "args": {k: str(v) for k, v in vars(args).items()},
            },
            indent=2,
        )
        + "\n"
    )
    for n in {r["workers"] for r in runs}:
        shutil.rmtree(out / f"root-{n}", ignore_errors=True)
    shutil.rmtree(out / "redis", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
