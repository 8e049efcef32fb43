"""Issue 14's scale figures: CPU a request from issue2's 3,600 URLs to the 100k preset, and peak RSS.

One invocation generates both sites (``bench/sitegen.py``: the 100k preset is issue2's page mix at
28 x its size), serves each on 127.0.0.1 with 5 ms of latency (``--latency``) and runs Strata alone
on crawl 1 (v1, full) and crawl 2 (v2, incremental), each a fresh ``strata harvest`` child, as
``harvest_bench.py`` does; wget is left out (``harvest_bench.py --preset 100k`` runs it, and takes
80 minutes). For each preset and crawl it prints requests, wall and CPU time, CPU a request, wall /
latency floor and the child's peak RSS; then 100k's CPU a request over issue2's, per crawl, against
issue 14's +-15 %, and the peak RSS against 300 MB. ``--repeat N`` runs the small preset N times
(its median is the reference) and the large one once.

    .venv/bin/python bench/flatness_bench.py                       # issue2 and 100k, about 20 minutes
    .venv/bin/python bench/flatness_bench.py --large govcn          # a quicker pair to try it

Output (the table, and every figure as JSON) goes to ``bench/out/flatness-<time>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
import types
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from bench.common import compile_project  # noqa: E402
from bench.harvest_bench import run_tool  # noqa: E402
from bench.sitegen import GeneratedSite, SiteSpec  # noqa: E402
from demo.site_server import SiteServer  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
FLAT = 0.15  # issue 14: CPU a request within +-15 % from 3,600 to 100,000 URLs
RSS_LIMIT = 300e6  # issue 14: peak RSS below 300 MB at 100k


def harvest_twice(preset: str, out: Path, args) -> dict[int, dict]:
    """Crawls 1 and 2 of one generated site, Strata only."""
    started = time.monotonic()
    site = GeneratedSite(SiteSpec.preset(preset, seed=args.seed))
    stats = site.stats()  # every body of both versions, generated now rather than while serving
    print(f"{preset}: site generated in {time.monotonic() - started:.1f} s, v1 {stats['urls_v1']} URLs", flush=True)
    out.mkdir(parents=True)
    tool_args = types.SimpleNamespace(
        concurrency=args.concurrency, fulltext=False, strata=args.strata, py_spy=False, timeout=args.timeout
    )
    crawls: dict[int, dict] = {}
    with SiteServer(site, 1, latency=args.latency) as server:
        for crawl in (1, 2):
            server.version = crawl
            result = run_tool("strata", crawl, server, out, tool_args, wget="")
            result.pop("_stats", None)
            result["cpu_ms_per_request"] = 1000 * result["cpu"] / max(result["requests"], 1)
            result["floor_ratio"] = result["wall"] / (result["requests"] * args.latency / args.concurrency)
            crawls[crawl] = result
            print(
                f"  crawl {crawl}: {result['requests']:,} requests, wall {result['wall']:.1f} s, "
                f"CPU {result['cpu']:.1f} s = {result['cpu_ms_per_request']:.3f} ms a request, "
                f"peak RSS {result['maxrss'] / 1e6:.0f} MB, exit {result['returncode']}",
                flush=True,
            )
    if not args.keep:
        shutil.rmtree(out / "strata", ignore_errors=True)
    return crawls


def table(small: list[dict[int, dict]], large: dict[int, dict], args) -> str:
    lines = [
        f"Strata alone, presets {args.small} (x{len(small)}) and {args.large} (x1), latency "
        f"{args.latency * 1000:g} ms, {args.concurrency} connections; load average now "
        f"{os.getloadavg()[0]:.2f} (2 CPUs: the site server runs in this process)",
        "",
        f"{'preset, crawl':<18}{'requests':>10}{'wall s':>9}{'CPU s':>9}{'CPU ms/req':>12}{'wall/floor':>12}"
        f"{'peak RSS MB':>13}",
    ]
    for name, runs in [(args.small, small), (args.large, [large])]:
        for crawl in (1, 2):
            for r in (run[crawl] for run in runs):
                lines.append(
                    f"{name + ', ' + str(crawl):<18}{r['requests']:>10,}{r['wall']:>9.1f}{r['cpu']:>9.1f}"
                    f"{r['cpu_ms_per_request']:>12.3f}{r['floor_ratio']:>12.2f}{r['maxrss'] / 1e6:>13.0f}"
                )
    lines += ["", "targets (issue 14)"]
    for crawl in (1, 2):
        per_small = [run[crawl]["cpu_ms_per_request"] for run in small]
        reference = statistics.median(per_small)
        ratio = large[crawl]["cpu_ms_per_request"] / reference
        spread = f" (the {args.small} runs: {min(per_small):.3f}-{max(per_small):.3f} ms)" if len(small) > 1 else ""
        met = abs(ratio - 1) <= FLAT
        lines.append(
            f"  [{'met ' if met else 'MISS'}] crawl-{crawl} CPU a request, {args.large} / {args.small}, within "
            f"+-{FLAT:.0%}: {ratio:.3f} ({large[crawl]['cpu_ms_per_request']:.3f} ms against {reference:.3f} ms"
            f"{spread})"
        )
    rss = max(large[crawl]["maxrss"] for crawl in (1, 2))
    lines.append(f"  [{'met ' if rss < RSS_LIMIT else 'MISS'}] peak RSS < 300 MB at {args.large}: {rss / 1e6:.0f} MB")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/flatness_bench.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", default="issue2", help="the reference preset (default issue2)")
    parser.add_argument("--large", default="100k", help="the large preset (default 100k)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of the small preset (default 1)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.005, help="seconds before each response (default 5 ms)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed for each crawl")
    parser.add_argument("--strata", default=None, help="command to run instead of the venv's `strata`")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default bench/out/flatness-...)")
    parser.add_argument("--keep", action="store_true", help="keep the collections afterwards")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = (args.out or BENCH_DIR / "out" / f"flatness-{stamp}").resolve()
    out.mkdir(parents=True, exist_ok=False)
    compile_project()
    small = [harvest_twice(args.small, out / f"{args.small}-{n}", args) for n in range(1, args.repeat + 1)]
    large = harvest_twice(args.large, out / args.large, args)
    failed = [r for runs in small + [large] for r in runs.values() if r["returncode"] != 0 or r["timed_out"]]
    text = table(small, large, args)
    print()
    print(text)
    (out / "report.txt").write_text(text + "\n")
    dump = {
        "small": [{str(k): v for k, v in run.items()} for run in small],
        "large": {str(k): v for k, v in large.items()},
    }
    (out / "results.json").write_text(json.dumps(dump, indent=2, default=str) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
