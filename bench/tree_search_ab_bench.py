"""Strata against Strata at search: two or more source trees build and query the same synthetic
corpus, alternated (``tree_ab_bench.py``'s way, for ``search_bench.py --synthetic``'s figures).

One invocation makes the corpus (``search_bench.py``'s synthetic documents from a preset's
vocabulary, seed 7) and the 50 latency queries once; then, round after round, each tree in turn
builds an index of the corpus (its own ``bench/search_bench.py --child build``: a fresh process
with ``PYTHONPATH`` at the tree, so the tree's own index code) and times the queries through its own
``index.fulltext.query.search`` (``--child query``, ``--passes`` passes after a cold first query).
Per tree and round it prints build docs/s and peak RSS, and the last pass's query p50, p95 and max
with the query process's peak RSS; then the median of each over the rounds with the range, and the
load before and after each step.

    git worktree add /tmp/before <commit>
    .venv/bin/python bench/tree_search_ab_bench.py --scale 100000 --rounds 3 /tmp/before .

Every figure also goes as JSON to ``bench/out/tree-search-ab-<scale>-<time>/``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`
sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_bench import latency_queries, load, run_child, write_corpus  # noqa: E402
from sitegen import GeneratedSite, SiteSpec  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):g} ({min(values):g}-{max(values):g})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path, help="source trees (worktrees) to compare")
    parser.add_argument("--scale", type=int, default=100_000, help="synthetic documents")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=3, help="passes over the 50 queries (the last counts)")
    parser.add_argument("--preset", default="issue2", help="sitegen preset whose vocabulary the corpus uses")
    args = parser.parse_args(argv)
    trees = [tree.resolve() for tree in args.trees]
    out = OUT / f"tree-search-ab-{args.scale}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    out.mkdir(parents=True)
    site = GeneratedSite(SiteSpec.preset(args.preset))
    queries = out / "queries.json"
    queries.write_text(json.dumps(latency_queries(site), ensure_ascii=False))
    corpus = out / "corpus.pickle"
    print(f"generating {args.scale:,} documents ...", flush=True)
    meta = write_corpus(corpus, args.scale, 7, args.preset)
    rows: dict[str, list[dict]] = {str(tree): [] for tree in trees}
    for round_ in range(1, args.rounds + 1):
        for n, tree in enumerate(trees):
            root = out / f"root-{n}"
            shutil.rmtree(root, ignore_errors=True)
            before = load()
            built = run_child("build", corpus, root, "synth", tree=tree)
            between = load()
            timed = run_child("query", root, "synth", queries, args.passes, True, tree=tree)
            last = timed["passes"][-1]
            row = {
                "round": round_,
                "docs_per_s": round(args.scale / built["seconds"], 1),
                "build_rss_mb": built["peak_rss_mb"],
                "build_cpu_s": built["cpu_s"],
                "first_ms": timed["first_query_ms"],
                "p50_ms": last["p50_ms"],
                "p95_ms": last["p95_ms"],
                "max_ms": last["max_ms"],
                "query_rss_mb": timed["peak_rss_mb"],
                "load": f"{before} / {between} / {load()}",
            }
            rows[str(tree)].append(row)
            shutil.rmtree(root, ignore_errors=True)
            print(
                f"{n}:{tree.name:<12} round {round_}  build {row['docs_per_s']:>8} docs/s, RSS {row['build_rss_mb']} MB"
                f" | queries first {row['first_ms']} ms, p50 {row['p50_ms']}, p95 {row['p95_ms']}, max {row['max_ms']}"
                f" ms, RSS {row['query_rss_mb']} MB | load {row['load']}",
                flush=True,
            )
    print(f"\nmedians over {args.rounds} rounds ({args.scale:,} documents, {meta['text_bytes'] / 1e6:.0f} MB of text):")
    for n, tree in enumerate(trees):
        r = rows[str(tree)]
        print(
            f"{n}:{tree.name:<12} build {_median([x['docs_per_s'] for x in r])} docs/s,"
            f" RSS {_median([x['build_rss_mb'] for x in r])} MB | queries p50 {_median([x['p50_ms'] for x in r])},"
            f" p95 {_median([x['p95_ms'] for x in r])}, max {_median([x['max_ms'] for x in r])} ms,"
            f" RSS {_median([x['query_rss_mb'] for x in r])} MB"
        )
    corpus.unlink(missing_ok=True)
    (out / "report.json").write_text(json.dumps({"scale": args.scale, "corpus": meta, "rows": rows}, indent=1))
    print(f"\nfigures: {out / 'report.json'}")


if __name__ == "__main__":
    main()
