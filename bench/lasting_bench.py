"""Lasting addresses and banner navigation: what they cost, against pywb's own index lookups.

    .venv/bin/python bench/lasting_bench.py            # 10k, 100k and 1M captures, 7 rounds
    .venv/bin/python bench/lasting_bench.py --quick    # 10k and 100k, 5 rounds

For each size, synthesises one collection's ``indexes/index.cdxj`` (sorted, as pywb writes it) and
times, in this process, alternating in each round:

- ``/id/<pid>``'s resolution (``index.cdx.pid.resolve``: a byte search of the CDXJ for the capture's
  second, then a hash of each candidate), against pywb's own exact-URL lookup of the same capture
  (``pywb.utils.binsearch.iter_exact``, what its CDX server does for ``url=``), and against a
  full-text scan of the file for the URL (a lower bound of any table-free resolver that does not
  encode the time);
- the banner's capture list (``index.cdx.versions.read_versions``: one binary search per index file).

Prints the median wall time with its range and the CPU time of each, and the ratio to pywb's
lookup. Output: ``bench/out/lasting/results.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from index.cdx.pid import capture_pid, resolve  # noqa: E402
from index.cdx.versions import read_versions, url_key  # noqa: E402
from index.collection import Collection  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "lasting"


def synthesise(root: Path, size: int) -> tuple[Collection, list[tuple[str, str]]]:
    """``size`` captures: size/4 URLs of 4 captures each, one a second, in a sorted CDXJ."""
    coll = Collection.open(root, "bench", create=True)
    rng = random.Random(size)
    lines, captures = [], []
    for i in range(size):
        url = f"http://site{i % 97}.example/section/{(i // 4) % 1000}/page-{i // 4}.html"
        ts = time.strftime("%Y%m%d%H%M%S", time.gmtime(1_700_000_000 + i))
        blob = {"url": url, "mime": "text/html", "status": "200", "digest": f"{rng.getrandbits(160):040X}"[:32]}
        blob |= {"length": "900", "offset": str(i * 900), "filename": f"bench-{i // 50000:05d}.warc.gz"}
        lines.append(f"{url_key(url)} {ts} {json.dumps(blob)}")
        captures.append((url, ts))
    lines.sort()
    coll.cdxj_path.write_text("\n".join(lines) + "\n")
    return coll, captures


def timed(fn) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def pywb_lookup(coll: Collection, url: str) -> list:
    from pywb.utils.binsearch import iter_exact

    with open(coll.cdxj_path, "rb") as fh:
        return list(iter_exact(fh, url_key(url).encode()))


def text_scan(coll: Collection, url: str) -> int:
    needle, found = f'"url": "{url}"'.encode(), 0
    with open(coll.cdxj_path, "rb") as fh:
        for line in fh:
            found += needle in line
    return found


def bench_size(size: int, rounds: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        coll, captures = synthesise(Path(tmp), size)
        mb = coll.cdxj_path.stat().st_size / 1e6
        rng = random.Random(7)
        results: dict[str, list[tuple[float, float]]] = {"pid": [], "pywb": [], "scan": [], "banner": []}
        for _ in range(rounds):
            url, ts = captures[rng.randrange(len(captures))]
            pid = capture_pid("bench", url, ts)
            steps = [
                ("pid", lambda pid=pid: resolve(coll.root, pid)),
                ("pywb", lambda url=url: pywb_lookup(coll, url)),
                ("scan", lambda url=url: text_scan(coll, url)),
                ("banner", lambda url=url: read_versions(coll, url)),
            ]
            rng.shuffle(steps)
            for name, fn in steps:
                results[name].append(timed(fn))
            assert [v.timestamp for _, v in resolve(coll.root, pid)] == [ts]
    out = {"captures": size, "cdxj_mb": round(mb, 1)}
    for name, runs in results.items():
        walls = [w * 1000 for w, _ in runs]
        out[name] = {
            "wall_ms_median": round(statistics.median(walls), 2),
            "wall_ms_min": round(min(walls), 2),
            "wall_ms_max": round(max(walls), 2),
            "cpu_ms_median": round(statistics.median(c * 1000 for _, c in runs), 2),
        }
    out["pid_over_pywb"] = round(out["pid"]["wall_ms_median"] / out["pywb"]["wall_ms_median"], 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes, rounds = ((10_000, 100_000), 5) if args.quick else ((10_000, 100_000, 1_000_000), 7)
    rows = [bench_size(size, rounds) for size in sizes]
    print(f"{'captures':>9} {'MB':>6}  {'':8} {'median ms':>10} {'range':>17} {'CPU ms':>8}")
    for row in rows:
        for name in ("pid", "pywb", "scan", "banner"):
            r = row[name]
            spread = f"{r['wall_ms_min']}-{r['wall_ms_max']}"
            print(
                f"{row['captures']:>9} {row['cdxj_mb']:>6}  {name:8} {r['wall_ms_median']:>10} {spread:>17} "
                f"{r['cpu_ms_median']:>8}"
            )
        print(f"{'':>17}  /id/ resolution = {row['pid_over_pywb']} x pywb's exact lookup")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
