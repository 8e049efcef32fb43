"""Issue 11's WACZ benchmark: ``strata export wacz`` against PyPI's ``wacz create`` on the same WARCs.

One invocation harvests the generated site (``bench/sitegen.py``) twice into one collection (v1 full,
v2 incremental: the second run's revisits point into the first run's files), then, ``--repeat``
times in turn, each in a fresh child process (wall, CPU, peak RSS):

- ``strata export wacz`` of the whole collection (every WARC file's records);
- ``wacz create`` over the same WARC files (it copies them whole and indexes every record);
- ``strata export wacz --run <second run>`` (the records of one run and the originals of its revisits),
  and ``wacz create`` over that run's files alone, for the record (that package does not replay its
  revisits: their originals are in the first run's files).

MB/s is the package's size (what each wrote: for the whole collection about its WARC bytes) over
wall time, a fresh interpreter's start included. ``wacz`` lives in its own
venv, ``.venv-wacz`` (``scripts/dev-setup``). Output: a table and JSON under ``bench/out/wacz-<time>/``.

    .venv/bin/python bench/wacz_bench.py                 # preset issue2 (about 100 MB a run)
    .venv/bin/python bench/wacz_bench.py --quick         # preset quick (about 20 MB a run)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`
sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "out"
STRATA = REPO / ".venv" / "bin" / "strata"
WACZ = REPO / ".venv-wacz" / "bin" / "wacz"


def measure(label: str, cmd: list[str], out_dir: Path, package: Path) -> dict:
    from common import run_measured

    package.unlink(missing_ok=True)
    m = run_measured(cmd, 1800, out_dir / f"{label}.out", out_dir / f"{label}.err")
    if m.returncode != 0:
        raise SystemExit(f"{label} failed: {(out_dir / f'{label}.err').read_text()[-2000:]}")
    return {
        "wall": round(m.wall, 3),
        "cpu": round(m.cpu, 3),
        "rss_mb": round(m.maxrss / 1e6, 1),
        "mb_per_s": round(package.stat().st_size / 1e6 / m.wall, 1),
        "package_mb": round(package.stat().st_size / 1e6, 1),
    }


def spread(runs: list[dict], key: str) -> dict:
    values = [r[key] for r in runs]
    return {"min": min(values), "median": round(statistics.median(values), 3), "max": max(values)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--quick", action="store_true", help="preset quick instead of issue2")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from search_bench import harvest

    from index.collection import Collection
    from index.storage.state import open_readonly, run_files

    if not WACZ.exists():
        raise SystemExit("wacz is not installed: run ./scripts/dev-setup (it makes .venv-wacz)")
    out_dir = OUT / f"wacz-{time.strftime('%Y%m%d-%H%M%S')}"
    root = out_dir / "collections"
    root.mkdir(parents=True)
    preset = "quick" if args.quick else "issue2"
    print(f"harvesting preset {preset} twice ...", flush=True)
    summaries, _ = harvest(root, preset)
    archive = root / "harvest" / "archive"
    warcs = sorted(archive.glob("*.warc.gz"))
    second = summaries[1]["run_id"]
    conn = open_readonly(Collection(root, "harvest").db_path)
    assert conn is not None
    run2 = [archive / f for f in (run_files(conn, second) or [])]
    conn.close()
    total = sum(p.stat().st_size for p in warcs)
    total2 = sum(p.stat().st_size for p in run2)
    pkg = out_dir / "out.wacz"
    cases = {
        "strata export wacz (all)": (
            [str(STRATA), "export", "wacz", "harvest", "--root", str(root), "--out", str(pkg), "--force"],
            total,
        ),
        "wacz create (all)": ([str(WACZ), "create", "-o", str(pkg), *map(str, warcs)], total),
        "strata export wacz --run 2": (
            [
                str(STRATA),
                "export",
                "wacz",
                "harvest",
                "--root",
                str(root),
                "--out",
                str(pkg),
                "--run",
                second,
                "--force",
            ],
            total2,
        ),
        "wacz create (run 2's files)": ([str(WACZ), "create", "-o", str(pkg), *map(str, run2)], total2),
    }
    results: dict[str, list[dict]] = {k: [] for k in cases}
    for i in range(args.repeat):
        for n, (label, (cmd, _input)) in enumerate(cases.items()):
            results[label].append(measure(f"{n}-{i}", cmd, out_dir, pkg))
            print(f"  {label}: {results[label][-1]}", flush=True)
    table = [
        f"WARCs: {len(warcs)} files, {total / 1e6:.1f} MB (run 2: {len(run2)} files, {total2 / 1e6:.1f} MB); "
        f"{args.repeat} repeats, min / median / max",
        "",
        "| case | wall s | CPU s | MB/s | peak RSS MB | package MB |",
        "|---|---|---|---|---|---|",
    ]
    for label, runs in results.items():
        w, c, r, m = (spread(runs, k) for k in ("wall", "cpu", "rss_mb", "mb_per_s"))
        table.append(
            f"| {label} | {w['min']:.2f} / {w['median']:.2f} / {w['max']:.2f} | {c['median']:.2f} "
            f"| {m['min']} / {m['median']} / {m['max']} | {r['median']} | {runs[-1]['package_mb']} |"
        )
    ratio = [
        a["wall"] and b["wall"] / a["wall"]
        for a, b in zip(results["strata export wacz (all)"], results["wacz create (all)"], strict=True)
    ]
    table.append("")
    table.append(
        f"wacz create wall / strata export wall (whole collection), per repeat: {', '.join(f'{x:.2f}' for x in ratio)}"
    )
    text = "\n".join(table)
    print("\n" + text)
    (out_dir / "table.md").write_text(text + "\n")
    (out_dir / "figures.json").write_text(
        json.dumps({"summaries": summaries, "results": results}, indent=1, default=str)
    )


if __name__ == "__main__":
    main()
