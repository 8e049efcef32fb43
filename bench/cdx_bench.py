"""Issue 11's CDX API benchmark: Strata's ``/<coll>/cdx`` against an unmodified pywb's ``/<coll>/cdx``.

One invocation writes a collection whose index holds ``--lines`` CDXJ lines (``--hosts`` hosts,
pages with 1 to 6 captures each, as pywb's indexer writes them), starts ``strata serve`` and
``wayback`` on it (each its own process on 127.0.0.1), checks that both answer every query with
the same bytes, then sends each query ``--n`` times to each server in turn, ``--repeat`` rounds
(one keep-alive connection per server, sequential requests): median and p95 latency per query and
server, and the ratio pywb / Strata (above 1: Strata answers faster).

    .venv/bin/python bench/cdx_bench.py                      # 300,000 lines
    .venv/bin/python bench/cdx_bench.py --lines 50000 --n 20 # quicker

Output: a table and JSON under ``bench/out/cdx-<time>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "out"
BIN = REPO / ".venv" / "bin"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_collection(root: Path, lines: int, hosts: int, seed: int) -> list[str]:
    """The index (sorted, as pywb's indexer writes it: SURT keys from pywb's own canonicalizer) and
    the page URLs it holds."""
    from pywb.utils.canonicalize import canonicalize

    rng = random.Random(seed)
    (root / "bench" / "archive").mkdir(parents=True)
    (root / "bench" / "indexes").mkdir()
    entries = []
    urls = []
    n = 0
    while len(entries) < lines:
        host = f"site{n % hosts}.example.org"
        path = f"/section{n % 17}/page-{n:07d}.html"
        url = f"http://{host}{path}"
        urls.append(url)
        key = canonicalize(url)
        for c in range(rng.choice((1, 1, 2, 3, 6))):
            ts = f"2024{1 + (n + c) % 12:02d}{1 + (n * 7 + c) % 28:02d}{c:02d}0000"
            revisit = c > 0 and rng.random() < 0.6
            blob = {
                "url": url,
                "mime": "warc/revisit" if revisit else "text/html",
                "status": "200",
                "digest": f"{n:032d}",
                "length": str(rng.randrange(800, 20000)),
                "offset": str(rng.randrange(0, 10**9)),
                "filename": f"bench-{c}.warc.gz",
            }
            entries.append(f"{key} {ts} {json.dumps(blob)}\n")
        n += 1
    entries.sort()
    with open(root / "bench" / "indexes" / "index.cdxj", "w") as out:
        out.writelines(entries)
    return urls


def start(cmd: list[str], cwd: Path, log: Path, url: str) -> subprocess.Popen:
    import httpx

    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=2)
            return proc
        except httpx.HTTPError:
            if proc.poll() is not None:
                raise SystemExit(f"{cmd[0]} exited: {log.read_text()[-2000:]}") from None
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"{cmd[0]} did not start")


def queries(urls: list[str], rng: random.Random) -> dict[str, list[str]]:
    picks = rng.sample(urls, 20)
    return {
        "exact": [f"url={u}" for u in picks],
        "exact, json": [f"url={u}&output=json" for u in picks],
        "prefix, limit 100": [f"url={u.rsplit('/', 1)[0]}/&matchType=prefix&limit=100" for u in picks],
        "host, limit 1000, json": [f"url={u.split('/')[2]}&matchType=host&limit=1000&output=json" for u in picks],
        "exact, filter, fl": [f"url={u}&filter=!mime:warc/revisit&fl=timestamp,url,status" for u in picks],
        "closest, limit 1": [f"url={u}&closest=20240615000000&sort=closest&limit=1" for u in picks],
    }


def main(argv: list[str] | None = None) -> None:
    import httpx

    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--lines", type=int, default=300_000)
    ap.add_argument("--hosts", type=int, default=50)
    ap.add_argument("--n", type=int, default=40, help="requests per query kind, server and round")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    out_dir = OUT / f"cdx-{time.strftime('%Y%m%d-%H%M%S')}"
    root = out_dir / "collections"
    root.mkdir(parents=True)
    urls = write_collection(root, args.lines, args.hosts, seed=5)
    size = (root / "bench" / "indexes" / "index.cdxj").stat().st_size
    sp, wp = free_port(), free_port()
    strata = start(
        [str(BIN / "strata"), "serve", "--root", str(root), "--port", str(sp)],
        out_dir,
        out_dir / "strata.log",
        f"http://127.0.0.1:{sp}/",
    )
    wayback = start(
        [str(BIN / "wayback"), "-p", str(wp), "-b", "127.0.0.1", "-d", str(out_dir)],
        out_dir,
        out_dir / "wayback.log",
        f"http://127.0.0.1:{wp}/",
    )
    servers = {"strata": f"http://127.0.0.1:{sp}/bench/cdx?", "pywb": f"http://127.0.0.1:{wp}/bench/cdx?"}
    rng = random.Random(7)
    table_q = queries(urls, rng)
    times: dict[str, dict[str, list[float]]] = {k: {s: [] for s in servers} for k in table_q}
    lines_per_query: dict[str, float] = {}
    try:
        clients = {s: httpx.Client(timeout=60) for s in servers}
        for kind, qs in table_q.items():  # same answers first, and real ones
            answered = 0
            for q in qs:
                a, b = (clients[s].get(servers[s] + q) for s in servers)
                assert a.status_code == b.status_code == 200 and a.content == b.content, (kind, q)
                answered += len(a.content.splitlines())
            lines_per_query[kind] = answered / len(qs)
            assert answered >= len(qs), (kind, "the queries find nothing")
        for _ in range(args.repeat):
            for kind, qs in table_q.items():
                for server, base in servers.items():
                    client = clients[server]
                    for i in range(args.n):
                        q = qs[i % len(qs)]
                        t0 = time.perf_counter()
                        r = client.get(base + q)
                        times[kind][server].append(time.perf_counter() - t0)
                        assert r.status_code == 200
        for c in clients.values():
            c.close()
    finally:
        for proc in (strata, wayback):
            proc.terminate()
            proc.wait(timeout=10)
    table = [
        f"index: {args.lines:,} lines ({size / 1e6:.0f} MB), {args.n} requests a query kind a server, "
        f"{args.repeat} rounds; every answer compared byte for byte first",
        "",
        "| query | lines | Strata p50 ms | p95 | pywb p50 ms | p95 | pywb / Strata (p50) | per round |",
        "|---|---|---|---|---|---|---|---|",
    ]
    figures = {}
    for kind, by in times.items():
        s, w = by["strata"], by["pywb"]
        per_round = []
        for r in range(args.repeat):
            chunk = slice(r * args.n, (r + 1) * args.n)
            per_round.append(statistics.median(w[chunk]) / statistics.median(s[chunk]))
        p = {name: (statistics.median(v) * 1000, sorted(v)[int(0.95 * (len(v) - 1))] * 1000) for name, v in by.items()}
        figures[kind] = {"strata_ms": p["strata"], "pywb_ms": p["pywb"], "ratio_per_round": per_round}
        table.append(
            f"| {kind} | {lines_per_query[kind]:.0f} | {p['strata'][0]:.1f} | {p['strata'][1]:.1f} "
            f"| {p['pywb'][0]:.1f} | {p['pywb'][1]:.1f} "
            f"| {p['pywb'][0] / p['strata'][0]:.2f} | {', '.join(f'{x:.2f}' for x in per_round)} |"
        )
    text = "\n".join(table)
    print(text)
    (out_dir / "table.md").write_text(text + "\n")
    (out_dir / "figures.json").write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    sys.exit(main())
