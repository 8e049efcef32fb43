"""Issue 16's benchmark: what an unchanged URL costs to store, and per-site change rates against the truth.

One invocation generates a site (``bench/sitegen.py``), serves it on 127.0.0.1, and for each repeat
harvests it twice (v1 full, v2 incremental, every known URL rechecked conditionally) into two fresh
collections that differ in one job setting only: ``request_records = "all"`` (a request record for
every capture: what every earlier Strata wrote) and ``"changed"`` (the default: none for a revisit).

Section 1, bytes per unchanged URL. From crawl 2's WARC files, the gzip bytes of every revisit
(server-not-modified after a 304, identical-payload-digest after a 200 with a known digest) and of
every request record, split by what the request answered; bytes per unchanged URL is the revisit
plus its request when one is written. Crawl-2 WARC bytes against the storage floor, for both
settings: the floor is gzip payloads of what changed, plus one request record (Strata's median) per
capture that gets one, plus one revisit (Strata's median) per unchanged URL, as issue 2 defines it.
Crawl 2 against crawl 1: what the incremental run saved.

Section 2, per-site change rates. Crawl 2's report records, per site and kind of page, the pages
checked again and how many had changed (``changed`` or ``deleted``; a soft, noise-only change is not a
change). The generator knows which pages it changed: the bench prints both, page kinds by the
site's own patterns.

    .venv/bin/python bench/incremental_bench.py --preset quick --repeats 3
    .venv/bin/python bench/incremental_bench.py --preset govcn --repeats 1

Output (the table, and every figure as JSON) goes to ``bench/out/incremental-<preset>-<time>/``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from bench.common import run_measured  # noqa: E402
from bench.harvest_bench import measure_floors  # noqa: E402
from bench.sitegen import CONTENT_PATTERNS, INDEX_PATTERNS, NOISE_SELECTORS, GeneratedSite, SiteSpec  # noqa: E402
from demo.site_server import SiteServer  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
COLLECTION = "bench"
SETTINGS = ("all", "changed")
TARGET_PER_UNCHANGED = 600  # bytes, at the default setting


def harvest(root: Path, seed: str, crawl: int, request_records: str, args, out: Path) -> dict:
    jobs = root / COLLECTION / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    job = {
        "seeds": [seed],
        "depth": 100,
        "delay": 0.0,
        "concurrency": args.concurrency,
        "fulltext": False,
        "recheck_all": True,
        "request_records": request_records,
        "index_patterns": list(INDEX_PATTERNS),
        "content_patterns": list(CONTENT_PATTERNS),
        "noise_selectors": list(NOISE_SELECTORS),
    }
    (jobs / "bench.toml").write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in job.items()))
    exe = str(Path(sys.executable).parent / "strata")
    mode = "full" if crawl == 1 else "incremental"
    cmd = [exe, "harvest", COLLECTION, "--job", "bench", "--mode", mode, "--json", "--root", str(root)]
    stem = out / f"{root.name}-crawl{crawl}"
    m = run_measured(cmd, args.timeout, stem.with_suffix(".out"), stem.with_suffix(".err"))
    if m.returncode != 0 or m.timed_out:
        raise SystemExit(f"strata harvest exited {m.returncode}: {stem.with_suffix('.err').read_text()[-2000:]}")
    text = stem.with_suffix(".out").read_text()
    report = next(json.loads(line) for line in reversed(text.splitlines()) if line.startswith("{"))
    report["_wall"], report["_cpu"] = m.wall, m.cpu
    return report


def record_bytes(paths: list[Path]) -> dict[str, list[int]]:
    """gzip bytes of each record, by kind: revisit-304, revisit-digest, request-of-revisit,
    request-of-response, response, other."""
    sizes: dict[str, list[int]] = defaultdict(list)
    revisit_ids: set[str] = set()
    requests: list[tuple[str, int]] = []
    for path in paths:
        with open(path, "rb") as fh:
            it = ArchiveIterator(fh)
            for record in it:
                record.content_stream().read()
                length = it.get_record_length()
                headers = record.rec_headers
                if record.rec_type == "revisit":
                    revisit_ids.add(headers.get_header("WARC-Record-ID"))
                    profile = headers.get_header("WARC-Profile") or ""
                    sizes["revisit-304" if "not-modified" in profile else "revisit-digest"].append(length)
                elif record.rec_type == "request":
                    requests.append((headers.get_header("WARC-Concurrent-To") or "", length))
                else:
                    sizes[record.rec_type if record.rec_type == "response" else "other"].append(length)
    for concurrent_to, length in requests:
        sizes["request-of-revisit" if concurrent_to in revisit_ids else "request-of-response"].append(length)
    return sizes


def mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def overhead(root: Path, reports: dict[int, dict], floors: dict) -> dict:
    archive = root / COLLECTION / "archive"
    sizes = record_bytes([archive / name for name in reports[2]["warc_files"]])
    revisits = sizes["revisit-304"] + sizes["revisit-digest"]
    requests = sizes["request-of-revisit"] + sizes["request-of-response"]
    per_unchanged = (sum(revisits) + sum(sizes["request-of-revisit"])) / max(1, len(revisits))
    rev_median = statistics.median(revisits) if revisits else 0
    req_median = statistics.median(requests) if requests else 0
    with_requests = len(requests)
    floor = floors["payload_gzip_bytes"] + with_requests * req_median + len(revisits) * rev_median
    return {
        "revisits": len(revisits),
        "revisit_304_mean": mean(sizes["revisit-304"]),
        "revisit_digest_mean": mean(sizes["revisit-digest"]),
        "request_records": len(requests),
        "request_mean": mean(requests),
        "per_unchanged_url": per_unchanged,
        "crawl1_bytes": reports[1]["bytes_stored"],
        "crawl2_bytes": reports[2]["bytes_stored"],
        "storage_floor": floor,
        "floor_ratio": reports[2]["bytes_stored"] / floor if floor else 0.0,
        "saved_vs_crawl1": 1 - reports[2]["bytes_stored"] / reports[1]["bytes_stored"],
        "crawl2_wall": reports[2]["_wall"],
        "crawl2_cpu": reports[2]["_cpu"],
    }


def truth_rates(site: GeneratedSite) -> dict[str, dict[str, int]]:
    """Per kind of page: pages of v1 (checked again in crawl 2) and how many changed or went."""
    out: dict[str, dict[str, int]] = {}
    for path, t in site.truth().items():
        kind = site.page_kind(path) if t.page else None
        if kind is None or t.size_v1 is None:
            continue
        acc = out.setdefault(kind, {"checked": 0, "changed": 0})
        acc["checked"] += 1
        acc["changed"] += t.change in ("changed", "deleted")
    return out


def spread(values: list[float]) -> str:
    if len(values) < 2:
        return f"{values[0]:.0f}" if values else "-"
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


def table(results: dict, truth: dict, rates: dict, args) -> str:
    lines = [f"incremental bench, preset {args.preset}, {args.repeats} repeat(s); median (min-max)"]
    lines.append("")
    lines.append("bytes per record (gzip), crawl 2          " + "".join(f"{s:>26}" for s in SETTINGS))
    rows = [
        ("revisit after a 304", "revisit_304_mean"),
        ("revisit after a 200, same digest", "revisit_digest_mean"),
        ("request record", "request_mean"),
        ("per unchanged URL (revisit + request)", "per_unchanged_url"),
        ("request records written", "request_records"),
        ("revisits written", "revisits"),
        ("crawl-1 WARC bytes", "crawl1_bytes"),
        ("crawl-2 WARC bytes", "crawl2_bytes"),
        ("crawl-2 storage floor", "storage_floor"),
    ]
    for label, key in rows:
        cells = "".join(f"{spread([r[key] for r in results[s]]):>26}" for s in SETTINGS)
        lines.append(f"  {label:<40}{cells}")
    for label, key in (("crawl-2 bytes / floor", "floor_ratio"), ("crawl 2 saved against crawl 1", "saved_vs_crawl1")):
        cells = ""
        for s in SETTINGS:
            values = [r[key] for r in results[s]]
            cells += f"{statistics.median(values):>17.3f} ({min(values):.3f}-{max(values):.3f})"
        lines.append(f"  {label:<40}{cells}")
    default = statistics.median(r["per_unchanged_url"] for r in results["changed"])
    met = "met" if default <= TARGET_PER_UNCHANGED else "NOT met"
    lines.append(f"  target: <= {TARGET_PER_UNCHANGED} B per unchanged URL at the default: {default:.0f} B, {met}")
    lines.append("")
    lines.append("per-site change rates, crawl 2 (Strata's run report against the generator's truth)")
    lines.append(
        f"  {'site':<22}{'kind':<10}{'checked':>9}{'truth':>9}{'changed':>9}{'truth':>9}{'share':>8}{'truth':>8}"
    )
    for site, kinds in sorted(rates.items()):
        for kind, figure in sorted(kinds.items()):
            t = truth.get(kind, {"checked": 0, "changed": 0})
            share = figure["changed"] / figure["checked"] if figure["checked"] else 0.0
            tshare = t["changed"] / t["checked"] if t["checked"] else 0.0
            lines.append(
                f"  {site:<22}{kind:<10}{figure['checked']:>9}{t['checked']:>9}{figure['changed']:>9}"
                f"{t['changed']:>9}{share:>8.3f}{tshare:>8.3f}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/incremental_bench.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="quick", help="sitegen preset: quick (default), issue2, govcn")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.002, help="seconds before each response (default 2 ms)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed for each crawl")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = (args.out or BENCH_DIR / "out" / f"incremental-{args.preset}-{stamp}").resolve()
    out.mkdir(parents=True, exist_ok=False)

    t0 = time.monotonic()
    site = GeneratedSite(SiteSpec.preset(args.preset, seed=args.seed))
    stats = site.stats()
    print(f"site generated in {time.monotonic() - t0:.1f} s: v1 {stats['urls_v1']}, v2 {stats['urls_v2']} URLs")
    results: dict[str, list[dict]] = {s: [] for s in SETTINGS}
    rates: dict = {}
    with SiteServer(site, 1, latency=args.latency) as server:
        seed = server.base_url + "/"
        for repeat in range(args.repeats):
            for setting in SETTINGS:
                root = out / f"{setting}-{repeat}"
                reports = {}
                for crawl in (1, 2):
                    server.version = crawl
                    reports[crawl] = harvest(root, seed, crawl, setting, args, out)
                floors = measure_floors(site, server, time.monotonic() + 600)
                figures = overhead(root, reports, floors)
                results[setting].append(figures)
                rates = reports[2].get("change_rates") or rates
                per_url, stored, ratio = figures["per_unchanged_url"], figures["crawl2_bytes"], figures["floor_ratio"]
                print(f"repeat {repeat + 1}, request_records={setting}: {per_url:.0f} B per unchanged URL, ", end="")
                print(f"crawl 2 {stored:,} B ({ratio:.3f} x floor)", flush=True)
                shutil.rmtree(root / COLLECTION / "archive", ignore_errors=True)
    text = table(results, truth_rates(site), rates, args)
    print()
    print(text)
    (out / "report.txt").write_text(text + "\n")
    (out / "results.json").write_text(json.dumps({"results": results, "change_rates": rates}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
