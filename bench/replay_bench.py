"""Replay benchmark: Strata against bare pywb over the same collection, and index lookup growth.

    .venv/bin/python bench/replay_bench.py             # about three minutes
    .venv/bin/python bench/replay_bench.py --quick     # fewer requests, lookup up to 100k captures

1. Builds a collection (``bench/out/replay/collections/bench``) by harvesting a generated site twice
   with Strata's harvester: ``--pages`` HTML pages; in v2 half of them change (written again as
   responses) and half do not (written as revisits: identical-payload, or server-not-modified where
   the page sends an ETag).
2. Starts ``strata serve`` and pywb's unmodified ``wayback`` on that root (child processes), a
   third server running Strata's application without TCP_NODELAY, to show where a stall comes from,
   and a fourth without the warcserver's record memo (``replay.recordmemo``): every record checked
   and parsed on every load, as a record read for the first time is. (The measured passes follow a
   warm-up, so ``strata`` serves every record from its memo, its bytes read and compared each time.)
3. After an untimed warm-up pass, asks each (``--repeats`` times, 3 by default) for ``--count`` URLs
   whose capture as of run 2 is a revisit and ``--count`` whose capture is a response, one request
   at a time (servers and URL
   kinds take turns in blocks of 10, in a shuffled order each round, so other load on the machine
   and the cost of switching servers hit them alike), with keep-alive and with
   ``Connection: close``, in two modes: the rewritten page (Strata ``/<ts>/``, pywb ``/<ts>mp_/``:
   pywb's page is framed, its ``mp_`` frame does the same work) and the raw bytes (``id_``).
   Reports requests per second, p50 and p95 latency, and each server's peak RSS (VmHWM). Every
   configuration is bounded by ``--pass-seconds``. Also the server's CPU time per request (read
   around each block of 10), which other load on the machine moves far less than wall time.
   Strata's revisit/response ratio, of throughput and of server CPU per request, is reported per
   repeat and as the median and range over the repeats, with the load average around the passes.
4. Index lookup growth: synthesises CDXJ indexes of 10k, 100k and 1M captures and times as-of
   lookups in Strata's index source and closest lookups in pywb's, in-process.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from demo.site_server import Resource, SiteServer  # noqa: E402
from harvester.job import validate_job  # noqa: E402
from harvester.run import Harvest  # noqa: E402
from index.collection import Collection  # noqa: E402
from index.storage.state import HarvestState  # noqa: E402

VENV_BIN = Path(sys.executable).parent
HTML = (("Content-Type", "text/html; charset=utf-8"),)


# -- the site and the collection --------------------------------------------------------------------
class BenchSite:
    """``pages`` article pages linked from ``/``; in v2 the even ones change. Odd pages whose number
    is a multiple of 3 send an ETag (their v2 check is a 304)."""

    def __init__(self, pages: int):
        self.pages = pages

    def resolve(self, version: int, path: str, headers) -> Resource | None:
        if path == "/":
            links = "".join(f'<li><a href="/p/{i:04d}.html">Page {i}</a></li>' for i in range(self.pages))
            return Resource(200, HTML, f"<!DOCTYPE html><title>Bench v{version}</title><ul>{links}</ul>".encode())
        if path.startswith("/p/") and path.endswith(".html"):
            try:
                i = int(path[3:-5])
            except ValueError:
                return None
            if not 0 <= i < self.pages:
                return None
            edition = version if i % 2 == 0 else 1
            body = _article(i, edition, self.pages)
            etag = f'"{hashlib.sha1(body).hexdigest()[:12]}"' if i % 2 and i % 3 == 0 else None
            return Resource(200, HTML, body, etag=etag)
        if path == "/style.css":
            return Resource(200, (("Content-Type", "text/css"),), b"body { font-family: serif; }\n" * 40)
        return None


def _article(i: int, edition: int, pages: int) -> bytes:
    rng = random.Random(i * 1000 + edition)
    words = " ".join(
        rng.choice(("archive", "harvest", "library", "snapshot", "revisit", "page", "record")) for _ in range(1200)
    )
    links = "".join(f'<a href="/p/{(i + k) % pages:04d}.html">next {k}</a> ' for k in range(1, 6))
    return (
        f'<!DOCTYPE html><html><head><title>Page {i}</title><link rel="stylesheet" href="/style.css">'
        f"</head><body><h1>Page {i}, edition {edition}</h1><p>{words}</p><p>{links}</p></body></html>"
    ).encode()


def build_collection(root: Path, pages: int) -> list[dict]:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    coll = Collection.open(root, "bench", create=True)
    summaries = []
    with SiteServer(BenchSite(pages)) as site:
        job = validate_job("bench", {"seeds": [site.base_url + "/"], "delay": 0.0, "depth": 2, "concurrency": 8})
        for version in (1, 2):
            site.version = version
            summaries.append(asyncio.run(Harvest(coll, job).run()))
    return summaries


def pick_urls(root: Path, run_id: str, count: int) -> dict[str, list[str]]:
    with HarvestState(Collection(root, "bench").db_path) as state:
        rows = [r for r in state.captures(run_id=run_id) if "/p/" in r["url"]]
    revisits = sorted(r["url"] for r in rows if r["record_type"] == "revisit")
    responses = sorted(r["url"] for r in rows if r["record_type"] == "response")
    return {"revisit": revisits[:count], "response": responses[:count]}


# -- servers ---------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, name: str, cmd: list[str], port: int, cwd: Path, log: Path):
        self.name, self.port = name, port
        self.base_url = f"http://127.0.0.1:{port}"
        self.log = open(log, "wb")
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(self.base_url + "/", timeout=2.0)
                return
            except httpx.HTTPError:
                if self.proc.poll() is not None:
                    self.log.close()
                    raise RuntimeError(f"{name} exited; see {log}") from None
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{name} did not start; see {log}")

    def peak_rss(self) -> int:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def cpu_seconds(self) -> float:
        """CPU time the server's threads have run so far (``schedstat``: nanoseconds, unlike the
        clock ticks of ``/proc/<pid>/stat``)."""
        total = 0
        try:
            tasks = os.listdir(f"/proc/{self.proc.pid}/task")
        except OSError:
            return 0.0
        for task in tasks:
            try:
                total += int(Path(f"/proc/{self.proc.pid}/task/{task}/schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                pass
        return total / 1e9

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


NO_NODELAY = """
import sys
from gevent.pywsgi import WSGIHandler, WSGIServer
from replay import create_app
class Handler(WSGIHandler):
    def get_environ(self):
        env = super().get_environ()
        env["REQUEST_URI"] = self.path
        return env
WSGIServer(("127.0.0.1", int(sys.argv[2])), create_app(sys.argv[1]), handler_class=Handler, log=None).serve_forever()
"""

# Strata's server with every record checked and parsed on every load, none reused from the
# warcserver's memo (``replay.recordmemo``): the memo's effect, measured in the same invocation.
NO_MEMO = """
import sys
from replay import create_app
from replay.server import make_server
from replay.warcserver import _RevisitLoader
_RevisitLoader.memo_records = False
make_server(create_app(sys.argv[1]), port=int(sys.argv[2]), log_requests=False).serve_forever()
"""


def _start(name: str, make_cmd, cwd: Path, log: Path) -> Server:
    """Start a server on a free port, again on another port if one was taken meanwhile."""
    for attempt in range(3):
        port = free_port()
        try:
            return Server(name, make_cmd(port), port, cwd, log)
        except RuntimeError:
            if attempt == 2 or "Address already in use" not in log.read_text(errors="replace"):
                raise
    raise AssertionError("unreachable")


def start_servers(root: Path, out: Path, nodelay_check: bool, memo_check: bool) -> dict[str, Server]:
    servers: dict[str, Server] = {}
    try:
        servers["strata"] = _start(
            "strata",
            lambda port: [str(VENV_BIN / "strata"), "serve", "--root", str(root), "--port", str(port)],
            REPO,
            out / "strata.log",
        )
        servers["pywb"] = _start(
            "pywb",
            lambda port: [str(VENV_BIN / "wayback"), "-p", str(port), "-b", "127.0.0.1", "-d", str(root.parent)],
            root.parent,
            out / "pywb.log",
        )
        # Strata patched in one respect, to show what that respect is worth
        for wanted, name, script in ((memo_check, "no-memo", NO_MEMO), (nodelay_check, "no-nodelay", NO_NODELAY)):
            if wanted:
                servers[f"strata-{name}"] = _start(
                    f"strata-{name}",
                    lambda port, script=script: [sys.executable, "-c", script, str(root), str(port)],
                    REPO,
                    out / f"{name}.log",
                )
    except BaseException:
        for server in servers.values():
            server.stop()
        raise
    return servers


# -- load ------------------------------------------------------------------------------------------
def _client(server: Server, keep_alive: bool) -> httpx.Client:
    headers = {} if keep_alive else {"Connection": "close"}
    limits = httpx.Limits(max_keepalive_connections=1 if keep_alive else 0, max_connections=1)
    return httpx.Client(base_url=server.base_url, headers=headers, limits=limits, timeout=30.0)


def warm_up(servers: dict[str, Server], paths_by_server: dict[str, list[str]]) -> None:
    """One untimed pass per server: first imports, template compilation, the page cache."""
    for name, server in servers.items():
        with _client(server, keep_alive=False) as client:
            for path in paths_by_server[name]:
                client.get(path)


def run_config(
    servers: dict[str, Server],
    series: dict[tuple[str, str], list[str]],
    keep_alive: bool,
    seconds: float,
    block: int = 10,
) -> dict[tuple[str, str], dict]:
    """Every series (server, URL kind) takes its turn, ``block`` requests at a time, in an order
    shuffled afresh each round (seeded), so that load from other processes on the machine, and the
    cost of following another server's turn, fall on all of them alike. (A rotating order put
    Strata's revisit turn after another server's nearly every round and its response turn after its
    own revisit turn, on a warm process: that alone moved revisit/response by 0.1.)
    Requests are sequential: throughput is 1 / mean latency. The server's CPU time is read around
    each block, so each series also gets the server CPU per request, which other load on the
    machine moves far less than wall time."""
    clients = {(name, kind): _client(servers[name], keep_alive) for name, kind in series}
    latencies: dict[tuple[str, str], list[float]] = {key: [] for key in series}
    cpu = dict.fromkeys(series, 0.0)
    errors = dict.fromkeys(series, 0)
    keys = list(series)
    rng = random.Random(20261130)
    started = time.perf_counter()
    try:
        total = max(len(p) for p in series.values())
        for offset in range(0, total, block):
            order = keys[:]
            rng.shuffle(order)
            for key in order:
                server = servers[key[0]]
                cpu_before = server.cpu_seconds()
                for path in series[key][offset : offset + block]:
                    t0 = time.perf_counter()
                    r = clients[key].get(path)
                    latencies[key].append(time.perf_counter() - t0)
                    errors[key] += r.status_code != 200
                cpu[key] += server.cpu_seconds() - cpu_before
            if time.perf_counter() - started > seconds:
                break
    finally:
        for client in clients.values():
            client.close()
    out = {}
    for key, lat in latencies.items():
        out[key] = {
            "requests": len(lat),
            "errors": errors[key],
            "rps": len(lat) / sum(lat) if lat else 0.0,
            "p50_ms": 1000 * statistics.median(lat),
            "p95_ms": 1000 * statistics.quantiles(lat, n=20)[-1] if len(lat) >= 20 else float("nan"),
            "server_cpu_us": 1e6 * cpu[key] / len(lat) if lat else float("nan"),
        }
    return out


def replay_paths(server_name: str, mode: str, snapshot: str, urls: list[str]) -> list[str]:
    if mode == "raw":
        mod = "id_"
    else:
        mod = "mp_" if server_name == "pywb" else ""
    return [f"/bench/{snapshot}{mod}/{url}" for url in urls]


def replay_bench(servers: dict[str, Server], snapshot: str, urls: dict[str, list[str]], seconds: float) -> list[dict]:
    for mode in ("page", "raw"):
        warm_up(servers, {n: replay_paths(n, mode, snapshot, urls["revisit"] + urls["response"]) for n in servers})
    results = []
    for mode in ("page", "raw"):
        for keep_alive in (True, False):
            series = {
                (name, kind): replay_paths(name, mode, snapshot, urls[kind])
                for name in servers
                for kind in ("revisit", "response")
                if name != "strata-no-nodelay" or (keep_alive and mode == "page")
            }
            measured = run_config(servers, series, keep_alive, seconds)
            for (name, kind), res in measured.items():
                res.update(server=name, mode=mode, kind=kind, connection="keep-alive" if keep_alive else "close")
                results.append(res)
                print(
                    f"  {name:<18} {mode:<4} {kind:<8} {res['connection']:<10} {res['requests']:>4} req "
                    f"{res['rps']:>7.1f}/s  p50 {res['p50_ms']:6.1f} ms  p95 {res['p95_ms']:6.1f} ms"
                    f"  server CPU {res['server_cpu_us']:6.0f} us/req"
                    f"{'  errors ' + str(res['errors']) if res['errors'] else ''}",
                    flush=True,
                )
    return results


# -- index lookup growth ----------------------------------------------------------------------------
def synth_index(path: Path, captures: int, per_url: int = 5) -> list[str]:
    """``captures`` CDXJ lines, ``per_url`` captures of each URL, already in sorted order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    urls = []
    n_urls = captures // per_url
    stamps = [f"2024{m:02d}15120000" for m in range(1, per_url + 1)]
    with open(path, "w", encoding="ascii") as fh:
        for i in range(n_urls):
            host, page = i // 1000, i % 1000
            url = f"http://site{host:05d}.example/page/{page:04d}.html"
            key = f"example,site{host:05d})/page/{page:04d}.html"
            for j, ts in enumerate(stamps):
                revisit = j and (i + j) % 2
                fields = {
                    "url": url,
                    "mime": "warc/revisit" if revisit else "text/html",
                    "digest": f"D{i:09d}",
                    "length": "1000",
                    "offset": str(1000 * j),
                    "filename": f"bench-{j}.warc.gz",
                }
                if not revisit:
                    fields["status"] = "200"
                fh.write(f"{key} {ts} {json.dumps(fields)}\n")
            if i % (n_urls // 200 or 1) == 0:
                urls.append(url)
    return urls


def lookup_growth(out: Path, sizes: list[int], lookups: int) -> list[dict]:
    from pywb.warcserver.index.aggregator import DirectoryIndexSource

    from replay.asof import AsOfIndexSource

    results = []
    for size in sizes:
        base = out / f"lookup-{size}"
        index = base / "c" / "indexes" / "index.cdxj"
        t0 = time.perf_counter()
        urls = synth_index(index, size)
        built = time.perf_counter() - t0
        sources = {
            "strata as-of": AsOfIndexSource(base_prefix=str(base) + "/", base_dir="{coll}/indexes/"),
            "pywb closest": DirectoryIndexSource(base_prefix=str(base) + "/", base_dir="{coll}/indexes/"),
        }
        rng = random.Random(size)
        sample = [rng.choice(urls) for _ in range(lookups)]
        row = {"captures": size, "index_mb": index.stat().st_size / 1e6, "build_s": built}
        for name, source in sources.items():
            times = []
            for url in sample:
                t = time.perf_counter()
                cdx_iter, _ = source({"url": url, "closest": "20240401000000", "matchType": "exact", "param.coll": "c"})
                first = next(iter(cdx_iter))
                times.append(time.perf_counter() - t)
                assert first["url"] == url
            row[name] = {
                "p50_us": 1e6 * statistics.median(times),
                "p95_us": 1e6 * statistics.quantiles(times, n=20)[-1],
            }
        results.append(row)
        print(
            f"  {size:>9,} captures ({row['index_mb']:.0f} MB index): "
            + "  ".join(
                f"{n} p50 {v['p50_us']:.0f} us p95 {v['p95_us']:.0f} us" for n, v in row.items() if isinstance(v, dict)
            ),
            flush=True,
        )
        shutil.rmtree(base)
    return results


# -- report ----------------------------------------------------------------------------------------
def ratios(results: list[dict]) -> list[str]:
    def get(server, mode, kind, conn):
        for r in results:
            if (r["server"], r["mode"], r["kind"], r["connection"]) == (server, mode, kind, conn):
                return r
        return None

    lines = []
    for mode in ("page", "raw"):
        for conn in ("close", "keep-alive"):
            for kind in ("revisit", "response"):
                s, p = get("strata", mode, kind, conn), get("pywb", mode, kind, conn)
                if s and p and p["rps"]:
                    target = {"close": 0.9, "keep-alive": 3.0}[conn]
                    verdict = "ok" if s["rps"] / p["rps"] >= target else "BELOW TARGET"
                    lines.append(
                        f"  Strata/pywb {mode:<4} {kind:<8} {conn:<10} x{s['rps'] / p['rps']:.2f} "
                        f"(target >= {target}) {verdict}"
                    )
        for conn in ("close", "keep-alive"):
            rv, rs = get("strata", mode, "revisit", conn), get("strata", mode, "response", conn)
            if rv and rs and rs["rps"]:
                verdict = "ok" if rv["rps"] / rs["rps"] >= 0.95 else "BELOW TARGET"
                lines.append(
                    f"  Strata revisit/response {mode:<4} {conn:<10} x{rv['rps'] / rs['rps']:.2f} "
                    f"(target >= 0.95, issue 14) {verdict}"
                )
    worst = max((r["p95_ms"] for r in results if r["server"] == "strata"), default=float("nan"))
    lines.append(f"  Strata worst p95: {worst:.1f} ms (target < 30 ms) {'ok' if worst < 30 else 'BELOW TARGET'}")
    return lines


def revisit_spread(results: list[dict], server: str = "strata") -> list[str]:
    """Strata's revisit/response in each mode, of throughput and of the throughput its server CPU
    per request allows: the median over the repeats (what the target is checked against) and the
    lowest and highest."""
    lines = []
    for mode in ("page", "raw"):
        for conn in ("close", "keep-alive"):
            found: dict[tuple[int, str], dict] = {}
            for r in results:
                if (r["server"], r["mode"], r["connection"]) == (server, mode, conn):
                    found[(r["repeat"], r["kind"])] = r
            pairs = [(found[key], found[(key[0], "response")]) for key in found if key[1] == "revisit"]
            pairs = [(rv, rs) for rv, rs in pairs if rs["rps"] and rv["server_cpu_us"]]
            if not pairs:
                continue
            wall = sorted(rv["rps"] / rs["rps"] for rv, rs in pairs)
            # throughput the server's CPU allows: 1 / CPU per request
            cpu = sorted(rs["server_cpu_us"] / rv["server_cpu_us"] for rv, rs in pairs)
            for label, values in (("wall", wall), ("server CPU", cpu)):
                median = statistics.median(values)
                verdict = "ok" if median >= 0.95 else "BELOW TARGET"
                lines.append(
                    f"  {server} revisit/response {mode:<4} {conn:<10} {label:<10} median x{median:.3f} "
                    f"(x{values[0]:.3f}-x{values[-1]:.3f} over {len(values)}; target >= 0.95) {verdict}"
                )
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="50 URLs per set, lookups up to 100k captures")
    parser.add_argument("--count", type=int, default=200, help="URLs per set (revisit, response)")
    parser.add_argument("--pages", type=int, default=None, help="pages of the generated site (default 2.2 x count)")
    parser.add_argument("--pass-seconds", type=float, default=90.0, help="time bound of each measured configuration")
    parser.add_argument("--repeats", type=int, default=3, help="replay passes over the same servers (spread)")
    parser.add_argument("--lookup-sizes", default="10000,100000,1000000")
    parser.add_argument("--lookups", type=int, default=300, help="lookups timed per index size")
    parser.add_argument("--no-nodelay-check", action="store_true", help="skip the server without TCP_NODELAY")
    parser.add_argument("--no-memo-check", action="store_true", help="skip the server without the record memo")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "replay")
    args = parser.parse_args(argv)
    if args.quick:
        args.count, args.lookup_sizes, args.lookups = 50, "10000,100000", 200
    pages = args.pages or int(args.count * 2.2) + 10
    args.out.mkdir(parents=True, exist_ok=True)
    root = args.out / "collections"
    started = time.monotonic()

    print(f"Harvesting a {pages}-page site twice into {root} ...", flush=True)
    run1, run2 = build_collection(root, pages)
    urls = pick_urls(root, run2["run_id"], args.count)
    print(
        f"  run 2: {run2['revisits']} revisits ({run2['not_modified']} not-modified), {run2['changed']} changed; "
        f"measuring {len(urls['revisit'])} revisit and {len(urls['response'])} response URLs as of "
        f"{run2['snapshot']}",
        flush=True,
    )

    servers = start_servers(root, args.out, not args.no_nodelay_check, not args.no_memo_check)
    load_before = os.getloadavg()
    try:
        results = []
        for repeat in range(args.repeats):
            print(f"Replay (one request at a time), repeat {repeat + 1} of {args.repeats}:", flush=True)
            for res in replay_bench(servers, run2["snapshot"], urls, args.pass_seconds):
                res["repeat"] = repeat
                results.append(res)
        rss = {name: s.peak_rss() for name, s in servers.items()}
    finally:
        for server in servers.values():
            server.stop()
    load_after = os.getloadavg()
    print("Peak RSS: " + ", ".join(f"{n} {v / 1e6:.0f} MB" for n, v in rss.items()))
    print(f"Load average (1 min) before / after the replay passes: {load_before[0]:.2f} / {load_after[0]:.2f}")
    for repeat in range(args.repeats):
        print(f"Ratios, repeat {repeat + 1}:")
        for line in ratios([r for r in results if r["repeat"] == repeat]):
            print(line)
    print("Revisit/response over the repeats:")
    for line in revisit_spread(results):
        print(line)
    if "strata-no-memo" in servers:
        print("The same without the record memo (every record checked and parsed on every load):")
        for line in revisit_spread(results, "strata-no-memo"):
            print(line)

    print("Index lookup (in-process, exact URL, as of / closest to 2024-04-01):", flush=True)
    growth = lookup_growth(args.out, [int(s) for s in args.lookup_sizes.split(",")], args.lookups)
    if len(growth) > 1:
        for name in ("strata as-of", "pywb closest"):
            first, last = growth[0], growth[-1]
            print(
                f"  {name}: p50 x{last[name]['p50_us'] / first[name]['p50_us']:.2f} from "
                f"{first['captures']:,} to {last['captures']:,} captures"
            )
    report = {
        "pages": pages,
        "runs": [run1, run2],
        "replay": results,
        "peak_rss": rss,
        "load_average": {"before": load_before, "after": load_after},
        "lookup": growth,
        "seconds": time.monotonic() - started,
    }
    (args.out / "results.json").write_text(json.dumps(report, indent=1, default=str))
    print(f"Done in {time.monotonic() - started:.0f} s; figures in {args.out / 'results.json'}")


if __name__ == "__main__":
    main()
