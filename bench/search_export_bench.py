"""Issue 11's search export benchmark: ``strata search --all`` over 100,000 hits, time and peak RSS.

One invocation writes ``--docs`` documents (Latin filler text, a word every one of them holds, 1 to
6 capture dates over three years, 20 hosts) into a collection's full-text index
(``index.fulltext.rebuild.create``), then runs ``strata search COLL WORD --all --format F`` for
jsonl and csv, each ``--repeat`` times, in a fresh child process (wall, CPU, peak RSS; the output
goes to a file and its lines are counted), and once ``--json --per-page 100`` (one exact page over
every hit) and a plain search (the best 20) for comparison. Memory is read from the child's
``/proc/<pid>/status`` every 10 ms: peak RSS, and apart the heap (``RssAnon``) and the index files
every search maps whole (``RssFile``). The target: under 300 MB.

    .venv/bin/python bench/search_export_bench.py               # 100,000 documents
    .venv/bin/python bench/search_export_bench.py --docs 20000  # quicker

Output: a table and JSON under ``bench/out/search-export-<time>/``.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`
sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO = Path(__file__).resolve().parent.parent
OUT = Path(__file__).resolve().parent / "out"
STRATA = REPO / ".venv" / "bin" / "strata"
WORD = "archive"
FILLER = (
    "library report policy data national digital harvest review budget harbour lantern meadow copper "
    "violet orchard signal granite willow ember council river station museum garden bridge"
).split()


def synthesise(root: Path, count: int, seed: int) -> float:
    from index.collection import Collection
    from index.fulltext import rebuild as fulltext
    from index.fulltext.documents import Payload

    rng = random.Random(seed)
    coll = Collection.open(root, "many", create=True)
    start = datetime(2022, 1, 1, tzinfo=UTC)

    def documents():
        for n in range(count):
            words = rng.choices(FILLER, k=rng.randrange(150, 500)) + [WORD]
            rng.shuffle(words)
            stamps = {
                (start + timedelta(days=rng.uniform(0, 3 * 365))).strftime("%Y%m%d%H%M%S")
                for _ in range(rng.choice((1, 1, 2, 3, 6)))
            }
            title = " ".join(rng.choices(FILLER, k=5)).title()
            payload = Payload(mime="text/html", status=200, size=len(words) * 7, title=title, text=" ".join(words))
            yield f"http://www{n % 20}.example.org/a/{n}.html", f"sha1:{n:032d}", payload, stamps

    started = time.monotonic()
    fulltext.create(coll, documents())
    return time.monotonic() - started


def sampled(cmd: list[str], stdout: Path, stderr: Path) -> dict:
    """Run ``cmd``, reading its /proc status every 10 ms: wall, CPU, peak RSS (``VmHWM``), and the
    peaks of its anonymous memory (``RssAnon``: the heap, what the export itself holds) and of its
    file-backed pages (``RssFile``: the full-text index's files, which every search maps whole,
    ``MAP_POPULATE``, and the kernel may drop)."""
    peaks = {"VmHWM": 0, "RssAnon": 0, "RssFile": 0}
    started = time.monotonic()
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        status = Path(f"/proc/{proc.pid}/status")
        while proc.poll() is None:
            try:
                for line in status.read_text().splitlines():
                    name, _, value = line.partition(":")
                    if name in peaks:
                        peaks[name] = max(peaks[name], int(value.split()[0]) * 1024)
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
    wall = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"returncode": proc.returncode, "wall": wall, "cpu_total": usage.ru_utime + usage.ru_stime, **peaks}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reuse", type=Path, help="a collections root an earlier run of this benchmark wrote")
    args = ap.parse_args(argv)
    out_dir = OUT / f"search-export-{time.strftime('%Y%m%d-%H%M%S')}"
    out_dir.mkdir(parents=True)
    if args.reuse:
        root, build_s = args.reuse, 0.0
    else:
        root = out_dir / "collections"
        root.mkdir()
        print(f"indexing {args.docs:,} documents ...", flush=True)
        build_s = synthesise(root, args.docs, seed=3)
    base = [str(STRATA), "search", "many", WORD, "--root", str(root)]
    cases = {
        "--all --format jsonl": base + ["--all", "--format", "jsonl"],
        "--all --format csv": base + ["--all", "--format", "csv"],
        "--json --per-page 100 (page 1)": base + ["--json", "--per-page", "100"],
    }
    cases["plain search (the best 20, for comparison)"] = base
    results: dict[str, list[dict]] = {k: [] for k in cases}
    cpu_before = 0.0
    for i in range(args.repeat):
        for n, (label, cmd) in enumerate(cases.items()):
            stdout = out_dir / f"{n}-{i}.out"
            m = sampled(cmd, stdout, out_dir / f"{n}-{i}.err")
            if m["returncode"] != 0:
                raise SystemExit(f"{label} failed: {(out_dir / f'{n}-{i}.err').read_text()[-2000:]}")
            lines = sum(1 for _ in open(stdout, "rb"))
            cpu, cpu_before = m["cpu_total"] - cpu_before, m["cpu_total"]
            results[label].append(
                {
                    "wall": round(m["wall"], 2),
                    "cpu": round(cpu, 2),
                    "rss_mb": round(m["VmHWM"] / 1e6, 1),
                    "anon_mb": round(m["RssAnon"] / 1e6, 1),
                    "file_mb": round(m["RssFile"] / 1e6, 1),
                    "lines": lines,
                }
            )
            print(f"  {label}: {results[label][-1]}", flush=True)
    table = [
        f"{args.docs:,} documents = hits (index built in {build_s:.0f} s); {args.repeat} repeats, min / median / max",
        "",
        "| command | wall s | CPU s | peak RSS MB | of it: heap (RssAnon) MB | mapped index (RssFile) MB | lines out |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, runs in results.items():
        w = sorted(r["wall"] for r in runs)
        rss = sorted(r["rss_mb"] for r in runs)
        anon = sorted(r["anon_mb"] for r in runs)
        mapped = statistics.median(r["file_mb"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        table.append(
            f"| {label} | {w[0]:.1f} / {statistics.median(w):.1f} / {w[-1]:.1f} | {cpu:.1f} "
            f"| {rss[0]} / {statistics.median(rss)} / {rss[-1]} | {anon[0]} / {statistics.median(anon)} / {anon[-1]} "
            f"| {mapped} | {runs[-1]['lines']:,} |"
        )
    text = "\n".join(table)
    print("\n" + text)
    (out_dir / "table.md").write_text(text + "\n")
    (out_dir / "figures.json").write_text(json.dumps({"build_s": build_s, "results": results}, indent=1))


if __name__ == "__main__":
    main()
