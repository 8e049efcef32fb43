"""Issue 14's full-text benchmark: the same harvest with full-text indexing off and on.

One invocation generates a site (``bench/sitegen.py``), serves it on 127.0.0.1 with a few ms of
latency, and for each repeat harvests it twice from an empty root, once with the job setting
``fulltext = false`` and once with ``fulltext = true``, the order alternating from one repeat to the
next (machine drift then falls on both sides). Each harvest is crawl 1 (v1, ``--mode full``) then
crawl 2 (v2, ``--mode incremental``) into the same root, each as a fresh ``strata harvest`` child
process (``bench.common.run_measured``): wall time (spawn to exit), CPU (user + system of Strata and
of the children it waited for: the fetch process and the full-text indexer), peak RSS (``os.wait4``:
the largest of those processes), the load average before and after, and the run's own full-text
figures (``summary["fulltext"]``: documents added, how many during the run, seconds the run waited
for the index at its end). It prints per crawl the on/off ratios of wall and CPU, their median and
spread over the repeats, and whether issue 14's target (wall on / off <= 1.2) is met.

    .venv/bin/python bench/fulltext_harvest_bench.py                      # preset quick, repeat 3
    .venv/bin/python bench/fulltext_harvest_bench.py --preset issue2 --repeat 3

Output (the table, and every figure as JSON) goes to ``bench/out/fulltext-harvest-<preset>-<time>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from bench.common import run_measured  # noqa: E402
from bench.harvest_bench import code_version, strata_cmd  # noqa: E402
from bench.sitegen import GeneratedSite, SiteSpec  # noqa: E402
from demo.site_server import SiteServer  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
COLLECTION = "bench"
TARGET = 1.2  # issue 14: harvest wall with full-text indexing on <= 1.2 x the same harvest with it off


def run_crawl(root: Path, crawl: int, fulltext: bool, server: SiteServer, out: Path, tag: str, args) -> dict:
    """One measured ``strata harvest`` of one crawl into ``root``."""
    server.version = crawl
    seed = server.base_url + "/"
    exe = shlex.split(args.strata) if args.strata else None
    cmd = strata_cmd(root, seed, crawl, args.concurrency, fulltext, exe)
    if args.wait_for_index:
        cmd.append("--wait-for-index")
    load_before = os.getloadavg()[0]
    m = run_measured(cmd, args.timeout, out / f"{tag}.out", out / f"{tag}.err")
    exited = time.monotonic()
    text = (out / f"{tag}.out").read_text(errors="replace")
    report = next((json.loads(line) for line in reversed(text.splitlines()) if line.startswith("{")), {})
    if m.returncode != 0 or m.timed_out or report.get("status") != "finished":
        err = (out / f"{tag}.err").read_text(errors="replace")[-2000:]
        raise SystemExit(f"{tag}: strata exited {m.returncode} (timed out: {m.timed_out}), report {report}:\n{err}")
    ft = report.get("fulltext") or {}
    searchable = m.wall
    if ft.get("background"):  # wait for the run to be searchable: the next crawl starts on a quiet machine
        ft = wait_for_background(root, report["run_id"], ft["pid"], args.timeout)
        searchable = m.wall + (time.monotonic() - exited)
    return {
        "crawl": crawl,
        "fulltext": fulltext,
        "wall": round(m.wall, 3),
        "cpu": m.cpu,
        "maxrss": m.maxrss,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "urls": report.get("urls_fetched"),
        "index": {
            k: ft.get(k)
            for k in ("added", "indexed_during_run", "parsed", "documents", "seconds", "error", "background")
        }
        if fulltext
        else None,
        "searchable": round(searchable, 3),  # spawn until the run is searchable (= wall when waited for)
        "background_cpu": ft.get("cpu_seconds", 0.0) if ft.get("background") else 0.0,
        "background_rss": 1024 * ft.get("peak_rss_kb", 0) if ft.get("background") else 0,
    }


def wait_for_background(root: Path, run_id: str, pid: int, timeout: float) -> dict:
    """The figures the run's background indexer records once the run is searchable, after waiting
    for them (and for the process to exit)."""
    from index.collection import Collection
    from index.fulltext.captures import read_existing

    deadline = time.monotonic() + timeout
    store_dir = Collection(root, COLLECTION).fulltext_dir
    while time.monotonic() < deadline:
        figures = read_existing(store_dir, lambda store: store.run_figures(run_id), None)
        if figures is not None:
            while time.monotonic() < deadline and Path(f"/proc/{pid}").exists() and not _zombie(pid):
                time.sleep(0.01)
            return figures
        time.sleep(0.01)
    raise SystemExit(f"run {run_id}: its background indexer (process {pid}) did not finish in {timeout:g} s")


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith(("Z", "X"))
    except OSError:
        return True


def spread(values: list[float]) -> dict:
    return {
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
        "values": [round(v, 3) for v in values],
    }


def summarise(runs: list[dict], repeat: int) -> dict:
    """Per crawl: on/off ratios of wall and CPU for each repeat (the pair measured together), their spread."""
    out: dict = {}
    for crawl in (1, 2):
        pairs = []
        for r in range(repeat):
            (off,) = [x for x in runs if x["repeat"] == r and x["crawl"] == crawl and not x["fulltext"]]
            (on,) = [x for x in runs if x["repeat"] == r and x["crawl"] == crawl and x["fulltext"]]
            pairs.append((off, on))
        out[crawl] = {
            "wall_off": spread([off["wall"] for off, _ in pairs]),
            "wall_on": spread([on["wall"] for _, on in pairs]),
            "cpu_off": spread([off["cpu"] for off, _ in pairs]),
            "cpu_on": spread([on["cpu"] + on["background_cpu"] for _, on in pairs]),
            "searchable": spread([on["searchable"] for _, on in pairs]),
            "searchable_ratio": spread([on["searchable"] / off["wall"] for off, on in pairs]),
            "rss_off": spread([off["maxrss"] / 1e6 for off, _ in pairs]),
            "rss_on": spread([max(on["maxrss"], on["background_rss"]) / 1e6 for _, on in pairs]),
            "wall_ratio": spread([on["wall"] / off["wall"] for off, on in pairs]),
            "cpu_ratio": spread([(on["cpu"] + on["background_cpu"]) / off["cpu"] for off, on in pairs]),
            "end_wait": spread([float(on["index"].get("seconds") or 0.0) for _, on in pairs]),
            "added": [on["index"].get("added") for _, on in pairs],
            "during_run": [on["index"].get("indexed_during_run") for _, on in pairs],
            "urls": [on["urls"] for _, on in pairs],
            "load": spread([x["load_before"] for pair in pairs for x in pair] + [x["load_after"] for x in pairs[-1]]),
        }
    return out


def _s(d: dict, unit: str = "", digits: int = 2) -> str:
    return f"{d['median']:.{digits}f}{unit} ({d['min']:.{digits}f}-{d['max']:.{digits}f})"


def table(summary: dict, args, site_stats: dict, version: str) -> str:
    lines = [
        f"Full-text indexing during a harvest, preset {args.preset!r} (v1 {site_stats['urls_v1']} URLs, "
        f"v2 {site_stats['urls_v2']}), latency {args.latency * 1000:g} ms, concurrency {args.concurrency}, "
        f"repeat {args.repeat}, code {version}",
        "indexing: "
        + ("waited for at the end of the run (--wait-for-index)" if args.wait_for_index else "in the background"),
        "median (min-max) over the repeats; ratio = on / off of the same repeat; CPU on counts the background"
        " indexer; searchable = from the start until the run is in the index (= wall on when waited for)",
        "",
        "| crawl | wall off | wall on | wall ratio | searchable | searchable / wall off | CPU off | CPU on "
        "| CPU ratio | peak RSS off / on (MB) | index seconds after the run | docs added (during run) | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for crawl, s in summary.items():
        added = ", ".join(f"{a} ({d})" for a, d in zip(s["added"], s["during_run"], strict=True))
        lines.append(
            f"| {crawl} | {_s(s['wall_off'], ' s', 1)} | {_s(s['wall_on'], ' s', 1)} | {_s(s['wall_ratio'])} "
            f"| {_s(s['searchable'], ' s', 1)} | {_s(s['searchable_ratio'])} "
            f"| {_s(s['cpu_off'], ' s', 1)} | {_s(s['cpu_on'], ' s', 1)} | {_s(s['cpu_ratio'])} "
            f"| {s['rss_off']['median']:.0f} / {s['rss_on']['median']:.0f} | {_s(s['end_wait'], '', 1)} "
            f"| {added} | {_s(s['load'], '', 1)} |"
        )
    lines.append("")
    for crawl, s in summary.items():
        met = s["wall_ratio"]["median"] <= TARGET
        lines.append(
            f"crawl {crawl}: wall on / off {s['wall_ratio']['median']:.2f} (target <= {TARGET}): "
            f"{'met' if met else 'MISS'}; worst repeat {s['wall_ratio']['max']:.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/fulltext_harvest_bench.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--preset", default="quick", help="sitegen preset: quick (default), issue2, govcn, 100k")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.005, help="seconds before each response (default 5 ms)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3, help="off/on pairs (default 3)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed for each crawl")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default bench/out/fulltext-...)")
    parser.add_argument("--strata", default=None, help="command to run instead of the venv's `strata`")
    parser.add_argument("--keep", action="store_true", help="keep the collections afterwards")
    parser.add_argument(
        "--wait-for-index", action="store_true", help="strata harvest --wait-for-index (default: in the background)"
    )
    args = parser.parse_args(argv)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = (args.out or BENCH_DIR / "out" / f"fulltext-harvest-{args.preset}-{stamp}").resolve()
    out.mkdir(parents=True, exist_ok=False)
    version = code_version()

    t0 = time.monotonic()
    site = GeneratedSite(SiteSpec.preset(args.preset, seed=args.seed))
    site_stats = site.stats()  # generates (and caches) every body of both versions
    print(f"site generated in {time.monotonic() - t0:.1f} s: v1 {site_stats['urls_v1']} URLs -> {out}", flush=True)

    runs: list[dict] = []
    with SiteServer(site, 1, latency=args.latency) as server:
        for r in range(args.repeat):
            for fulltext in (False, True) if r % 2 == 0 else (True, False):
                root = out / f"root-{r}-{'on' if fulltext else 'off'}"
                root.mkdir()
                for crawl in (1, 2):
                    tag = f"r{r}-{'on' if fulltext else 'off'}-crawl{crawl}"
                    result = run_crawl(root, crawl, fulltext, server, out, tag, args)
                    result["repeat"] = r
                    runs.append(result)
                    index = result["index"] or {}
                    print(
                        f"{tag}: {result['wall']:.1f} s wall, {result['cpu']:.1f} s CPU, "
                        f"{result['maxrss'] / 1e6:.0f} MB, load {result['load_after']:.1f}"
                        + (f", index: {index}" if fulltext else ""),
                        flush=True,
                    )
                if not args.keep:
                    shutil.rmtree(root, ignore_errors=True)
    summary = summarise(runs, args.repeat)
    text = table(summary, args, site_stats, version)
    print()
    print(text)
    (out / "report.txt").write_text(text + "\n")
    dump = {"runs": runs, "summary": summary, "site": site_stats, "code": version, "args": vars(args)}
    (out / "results.json").write_text(json.dumps(dump, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
