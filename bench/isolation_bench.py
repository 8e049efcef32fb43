"""What the replay isolation of issue 35 costs, and what it saves: two trees served side by side.

One invocation builds a collection (``replay_bench.build_collection``: two harvests of a generated
site) and starts ``strata serve`` from each tree given (``PYTHONPATH`` pointing at it, as
``tree_ab_bench.py`` runs trees), on the same root, each with a staff host and one account. Then:

1. **Replay**: rounds of sequential requests, each round a block per (tree, mode) in a shuffled
   order (``page``: the top-level page, rewritten with its banner; ``raw``: ``id_``), on kept-alive
   connections. Per round: requests a second, p50 and p99; then the median of the rounds and their
   spread (min-max), and each tree's median against the first tree's.
2. **Beside an attack**: a steady replay client (``raw``) for ``--attack-seconds`` while
   ``--attackers`` clients send (a) a catastrophic CDX filter, ``~urlkey:^.{1}([^!]+)+!`` (each
   added character of a key doubles Python's ``re``), (b) a login flood (wrong passwords on the
   staff host). The steady client's p50 and p99, and the attack's answers. A tree that backtracks
   holds its one loop for the whole query: the attack client gives up after ``--cdx-timeout``
   seconds, and the server is stopped after that run (it would go on for hours).

    git worktree add /tmp/before <commit>
    .venv/bin/python bench/isolation_bench.py /tmp/before . --rounds 5

Output: the tables on stdout, and every figure as JSON in ``bench/out/isolation-<time>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from bench.replay_bench import build_collection, free_port, pick_urls  # noqa: E402
from replay.staff.users import Users  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
CATASTROPHIC = "~urlkey:^.{1}([^!]+)+!"
STAFF = "staff.localhost"


class Tree:
    """``strata serve`` from one source tree."""

    def __init__(self, tree: Path, root: Path, out: Path, n: int):
        self.tree = tree.resolve()
        self.name = f"{n}:{self.tree.name}"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        strata = Path(sys.executable).parent / "strata"
        env = {**os.environ, "PYTHONPATH": str(self.tree), "PYTHONWARNINGS": "ignore"}
        self.log = open(out / f"serve-{n}.log", "wb")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [str(strata), "serve", "--root", str(root), "--port", str(self.port), "--staff-host", STAFF],
            cwd=self.tree,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(self.base + "/", timeout=2)
                return
            except httpx.HTTPError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"{self.tree}: strata serve did not start (see {self.log.name})") from None
                time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


def _stats(latencies: list[float]) -> dict:
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "rps": len(ordered) / sum(ordered) if ordered else 0.0,
        "p50_ms": 1000 * statistics.median(ordered) if ordered else float("nan"),
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else float("nan"),
    }


def replay_rounds(trees: list[Tree], paths: dict[str, list[str]], rounds: int, block: int) -> dict:
    """Per (tree, mode): the figures of every round."""
    keys = [(t.name, mode) for t in trees for mode in paths]
    clients = {t.name: httpx.Client(base_url=t.base, timeout=30) for t in trees}
    by_name = {t.name: t for t in trees}
    figures: dict = {f"{name} {mode}": [] for name, mode in keys}
    rng = random.Random(35)
    try:
        for name, mode in keys:  # warm: imports, templates, the page cache
            for path in paths[mode][:20]:
                clients[name].get(path)
        for _ in range(rounds):
            latencies: dict = {key: [] for key in keys}
            for offset in range(0, max(len(p) for p in paths.values()), block):
                order = keys[:]
                rng.shuffle(order)
                for name, mode in order:
                    for path in paths[mode][offset : offset + block]:
                        t0 = time.perf_counter()
                        response = clients[name].get(path)
                        latencies[(name, mode)].append(time.perf_counter() - t0)
                        assert response.status_code == 200, (by_name[name].tree, path, response.status_code)
            for (name, mode), lat in latencies.items():
                figures[f"{name} {mode}"].append(_stats(lat))
    finally:
        for client in clients.values():
            client.close()
    return figures


def beside(tree: Tree, steady_path: str, attack, attackers: int, seconds: float) -> dict:
    """The steady client's figures while ``attackers`` threads run ``attack(tree, stop, results)``."""
    stop = threading.Event()
    results: list = []
    threads = [threading.Thread(target=attack, args=(tree, stop, results), daemon=True) for _ in range(attackers)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    latencies: list[float] = []
    with httpx.Client(base_url=tree.base, timeout=seconds + 5) as client:
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            t0 = time.perf_counter()
            try:
                client.get(steady_path)
            except httpx.HTTPError:
                pass
            latencies.append(time.perf_counter() - t0)
    stop.set()
    for t in threads:
        t.join(15)
    return {"steady": _stats(latencies), "attack": results[:2000]}


def cdx_attack(timeout: float, prefix: str):
    def attack(tree: Tree, stop: threading.Event, results: list) -> None:
        with httpx.Client(base_url=tree.base, timeout=timeout) as client:
            while not stop.is_set():
                t0 = time.perf_counter()
                try:
                    status = client.get(
                        "/bench/cdx",
                        params={"url": prefix, "matchType": "prefix", "filter": CATASTROPHIC, "limit": "5"},
                    ).status_code
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                results.append((status, round(time.perf_counter() - t0, 4)))

    return attack


def login_attack(tree: Tree, stop: threading.Event, results: list) -> None:
    with httpx.Client(base_url=tree.base, timeout=60, headers={"Host": f"{STAFF}:{tree.port}"}) as client:
        page = client.get("/login").text
        token = page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
        while not stop.is_set():
            t0 = time.perf_counter()
            r = client.post("/login", data={"name": "ana", "password": "wrong guess!", "csrf_token": token})
            results.append((r.status_code, round(time.perf_counter() - t0, 4)))


def summary(figures: dict, first: str) -> list[str]:
    lines = [f"{'series':<34} {'req/s':>16} {'p50 ms':>16} {'p99 ms':>16}  vs first (req/s, p50, p99)"]
    medians = {}
    for key, rounds in figures.items():
        med = {f: statistics.median(r[f] for r in rounds) for f in ("rps", "p50_ms", "p99_ms")}
        lo = {f: min(r[f] for r in rounds) for f in med}
        hi = {f: max(r[f] for r in rounds) for f in med}
        medians[key] = med
        cells = [f"{med[f]:7.2f} ({lo[f]:.1f}-{hi[f]:.1f})" for f in ("rps", "p50_ms", "p99_ms")]
        base = medians.get(first + " " + key.split(" ", 1)[1])
        rel = (
            ""
            if base is None or key.startswith(first)
            else "  " + ", ".join(f"{med[f] / base[f]:.3f}" for f in ("rps", "p50_ms", "p99_ms"))
        )
        lines.append(f"{key:<34} {cells[0]:>16} {cells[1]:>16} {cells[2]:>16}{rel}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", type=Path, help="source trees; the first is the reference")
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--attackers", type=int, default=4)
    parser.add_argument("--attack-seconds", type=float, default=10.0)
    parser.add_argument("--cdx-timeout", type=float, default=8.0)
    args = parser.parse_args(argv)
    out = BENCH_DIR / "out" / f"isolation-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    out.mkdir(parents=True)
    root = out / "collections"
    summaries = build_collection(root, args.pages)
    snapshot, run_id = summaries[-1]["snapshot"], summaries[-1]["run_id"]
    users = Users.for_root(root)
    users.add("ana", "correct horse battery")
    users.close()
    urls = pick_urls(root, run_id, args.pages)["response"]
    paths = {
        "page": [f"/bench/{snapshot}/{u}" for u in urls],
        "raw": [f"/bench/{snapshot}id_/{u}" for u in urls],
    }
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} CPUs")
    trees = [Tree(t, root, out, n) for n, t in enumerate(args.trees)]
    report: dict = {"trees": [str(t.tree) for t in trees], "load_before": load}
    try:
        report["replay"] = replay_rounds(trees, paths, args.rounds, args.block)
        print("\n".join(summary(report["replay"], trees[0].name)))
        report["beside"] = {}
        for tree in trees:  # each alone: the attack's load is the tree's own
            quiet = beside(tree, paths["raw"][0], lambda *a: None, 0, args.attack_seconds / 2)
            logins = beside(tree, paths["raw"][0], login_attack, args.attackers, args.attack_seconds)
            attack = cdx_attack(args.cdx_timeout, urls[0].rsplit("/", 1)[0] + "/")  # every page: a key of 30 characters
            regex = beside(tree, paths["raw"][0], attack, args.attackers, args.attack_seconds)
            report["beside"][tree.name] = {"quiet": quiet, "login flood": logins, "catastrophic cdx": regex}
            for what, got in report["beside"][tree.name].items():
                s = got["steady"]
                statuses = sorted({str(a[0]) for a in got["attack"]})
                slowest = max((a[1] for a in got["attack"]), default=0.0)
                print(
                    f"{tree.name:<20} {what:<18} steady replay: {s['requests']:5d} requests, p50 {s['p50_ms']:8.1f} ms,"
                    f" p99 {s['p99_ms']:8.1f} ms; attack: {len(got['attack'])} answers {','.join(statuses)},"
                    f" slowest {slowest:.2f} s"
                )
            if any(not isinstance(a[0], int) for a in regex["attack"]):  # still matching: it would run for hours
                tree.stop()
    finally:
        for tree in trees:
            tree.stop()
        report["load_after"] = os.getloadavg()
        (out / "isolation.json").write_text(json.dumps(report, indent=1, default=str))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in report['load_after'])}; figures in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
