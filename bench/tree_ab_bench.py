"""Strata against Strata: two or more source trees harvest the same served site, alternated.

A change of a few per cent in CPU a request drowns in a shared machine's drift between two
invocations of ``harvest_bench.py`` (wget's own CPU for one crawl moved by 30 % within an hour on
one VM). Here one invocation generates a site (``bench/sitegen.py``), serves it once, and runs each
tree's crawl 1 (v1, full) and crawl 2 (v2, incremental) in turn, round after round, as fresh child
processes with ``PYTHONPATH`` pointing at the tree (the venv's ``strata`` otherwise). Per tree and
round it prints CPU (user + system, the fetch process included) and wall time of both crawls, CPU
a request, crawl 2's CPU a request against crawl 1's, wall time against the latency floor (requests
x latency / connections) and peak RSS; then the median of each over the rounds. No wget: compare
with wget in ``harvest_bench.py``.

    git worktree add /tmp/before <commit>
    .venv/bin/python bench/tree_ab_bench.py --preset issue2 --rounds 3 /tmp/before .

Output: the table on stdout, and every figure as JSON in ``bench/out/tree-ab-<preset>-<time>/``.
"""

from __future__ import annotations

import argparse
import compileall
import json
import shutil
import statistics
import sys
import time
import types
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from bench.common import compile_project  # noqa: E402
from bench.harvest_bench import BENCH_DIR, latency_floor, run_tool  # noqa: E402
from bench.sitegen import GeneratedSite, SiteSpec  # noqa: E402
from demo.site_server import SiteServer  # noqa: E402

FIGURES = ("cpu1", "cpu2", "wall1", "wall2", "ms1", "ms2", "ratio", "floor1", "floor2", "rss1", "rss2")


def run_tree(tree: Path, server: SiteServer, out: Path, args) -> dict:
    """Crawl 1 and crawl 2 of one tree in a fresh collections root; its figures."""
    strata = Path(sys.executable).parent / "strata"
    options = types.SimpleNamespace(
        concurrency=args.concurrency,
        fulltext=False,
        py_spy=False,
        timeout=args.timeout,
        strata=f"env -C {tree} PYTHONPATH={tree} {strata}",  # run from the tree: its child processes too
    )
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    crawls = {}
    for crawl in (1, 2):
        server.version = crawl
        crawls[crawl] = run_tool("strata", crawl, server, out, options, "wget")
        if crawls[crawl]["returncode"] != 0:
            raise SystemExit(f"{tree}: crawl {crawl} exited {crawls[crawl]['returncode']} (see {out})")
    shutil.rmtree(out / "strata", ignore_errors=True)
    figures = {}
    for crawl, r in crawls.items():
        figures[f"cpu{crawl}"] = r["cpu"]
        figures[f"wall{crawl}"] = r["wall"]
        figures[f"ms{crawl}"] = r["cpu"] / r["requests"] * 1000
        figures[f"floor{crawl}"] = r["wall"] / latency_floor(r["requests"], args.latency, args.concurrency)
        figures[f"rss{crawl}"] = r["maxrss"] / 1e6
    figures["ratio"] = figures["ms2"] / figures["ms1"]
    figures["requests"] = [crawls[1]["requests"], crawls[2]["requests"]]
    return figures


def line(name: str, f: dict) -> str:
    return (
        f"{name:24s} crawl 1 CPU {f['cpu1']:7.2f} s wall {f['wall1']:7.2f} s ({f['floor1']:.2f} x floor) | "
        f"crawl 2 CPU {f['cpu2']:7.2f} s wall {f['wall2']:7.2f} s ({f['floor2']:.2f} x floor) | "
        f"ms a request {f['ms1']:.3f} / {f['ms2']:.3f}, crawl 2 / crawl 1 {f['ratio']:.3f} | "
        f"peak RSS {f['rss1']:.0f} / {f['rss2']:.0f} MB"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path, help="source trees (checkouts or worktrees) to compare")
    parser.add_argument("--preset", default="issue2", help="sitegen preset: quick, issue2 (default), govcn, 100k")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each runs every tree once (default 3)")
    parser.add_argument("--latency", type=float, default=0.005, help="seconds before each response (default 5 ms)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed for each crawl")
    args = parser.parse_args(argv)
    trees = [tree.resolve() for tree in args.trees]
    missing = [str(tree) for tree in trees if not (tree / "harvester" / "run.py").is_file()]
    if missing:
        parser.error(f"not a Strata source tree: {', '.join(missing)}")
    names = [f"{i}:{tree.name}" for i, tree in enumerate(trees)]
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = BENCH_DIR / "out" / f"tree-ab-{args.preset}-{stamp}"
    out.mkdir(parents=True)

    compile_project()
    for tree in trees:  # each tree's bytecode, as pip install writes it, so no run compiles its sources
        for package in ("cli", "harvester", "index", "strata"):
            compileall.compile_dir(tree / package, quiet=1)
    started = time.monotonic()
    site = GeneratedSite(SiteSpec.preset(args.preset))
    site.stats()
    print(f"site {args.preset} generated in {time.monotonic() - started:.1f} s -> {out}", flush=True)
    results: dict[str, list[dict]] = {name: [] for name in names}
    with SiteServer(site, 1, latency=args.latency) as server:
        for round_no in range(args.rounds):
            for name, tree in zip(names, trees, strict=True):
                figures = run_tree(tree, server, out / f"{round_no}-{name.replace(':', '-')}", args)
                results[name].append(figures)
                print(line(f"{name} round {round_no + 1}", figures), flush=True)
    print("\nmedians over the rounds:")
    for name in names:
        medians = {key: statistics.median(r[key] for r in results[name]) for key in FIGURES}
        print(line(name, medians))
    (out / "results.json").write_text(
        json.dumps({"trees": [str(t) for t in trees], "args": vars(args), "results": results}, indent=2, default=str)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
