"""Issue 10's benchmark: ``strata verify`` against ``sha256sum`` and ``warcio check``, and
``strata index rebuild`` against pywb's ``cdx-indexer``, over the same collection, in one invocation.

The collection is written the way a harvest writes it (``harvester.warcfile.WarcRoller`` with the
records ``harvester.records`` builds: response + request per URL, identical-payload revisits with the
three Refers-To headers, the fixity manifest made as the files are sealed), two crawls of a generated
site: crawl 1 has HTML pages (text that compresses about as real pages do), images and PDFs
(incompressible bytes); crawl 2 revisits most of them and changes the rest. Then, each a fresh child
process (``bench.common.run_measured``: wall, CPU, peak RSS), three rounds in a shuffled order:

    sha256sum archive/*            vs  strata verify --fixity-only     (target >= 0.8 x throughput)
    warcio check archive/*         vs  strata verify                   (target >= 1 x throughput)
    cdx-indexer -j -s -p           vs  strata index rebuild --only state
    every Strata run                                                   (target peak RSS < 300 MB)

    .venv/bin/python bench/verify_bench.py              # about 320 MB of WARCs
    .venv/bin/python bench/verify_bench.py --mb 60      # a quick look

Output (the table, and every figure as JSON) goes to ``bench/out/verify-<time>/``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import statistics
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from bench.common import b32_sha1, run_measured  # noqa: E402
from harvester import records  # noqa: E402
from harvester.fetch import FetchResult  # noqa: E402
from harvester.warcfile import WarcRoller  # noqa: E402
from index.cdx import cdxj
from index.collection import Collection  # noqa: E402
from index.integrity.fixity import Fixity  # noqa: E402
from index.state import Original  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
COLLECTION = "bench"
TARGETS = {"hash_vs_sha256sum": 0.8, "full_vs_warcio": 1.0, "rss": 300e6}
WORDS = (
    "archive library record capture harvest preserve digital heritage collection document page site news "
    "article index report public service notice policy research data culture history museum council "
    "annual budget minutes meeting press release statement event program education health transport"
).split()


def _text(rng: random.Random, size: int) -> bytes:
    out, n = [], 0
    while n < size:
        sentence = " ".join(rng.choices(WORDS, k=rng.randint(6, 18))).capitalize() + f" {rng.randint(0, 10**6)}. "
        out.append(sentence)
        n += len(sentence)
    return "".join(out).encode()


def _html(rng: random.Random, url: str, size: int, version: int) -> bytes:
    body = _text(rng, size)
    links = "".join(f'<li><a href="/page-{rng.randint(0, 9999)}.html">more</a></li>' for _ in range(20))
    return (
        (
            f"<!DOCTYPE html><html><head><title>{url} v{version}</title></head><body><h1>{url}</h1><ul>{links}</ul><p>"
        ).encode()
        + body
        + b"</p></body></html>"
    )


class _Writer:
    def __init__(self, coll: Collection, run: str, max_size: int):
        self.roller = WarcRoller(
            coll.archive_dir,
            coll.name,
            warcinfo={"software": "Strata bench", "job": "bench", "run-id": run, "mode": "full"},
            max_size=max_size,
            indexer=cdxj.RecordIndexer(),
            fixity=Fixity(coll.fixity_dir),
            on_sealed=lambda name, size, lines: cdxj.merge_lines(
                coll.cdxj_path, lines if lines is not None else cdxj.index_warc(coll.archive_dir / name, name)
            ),
        )

    def fetch(self, url: str, body: bytes, ctype: str) -> FetchResult:
        spool = tempfile.SpooledTemporaryFile(max_size=1 << 24)
        spool.write(body)
        return FetchResult(
            url,
            request_line="GET /" + url.split("/", 3)[-1] + " HTTP/1.1",
            request_headers=[("Host", "bench.example"), ("User-Agent", "Strata bench")],
            status=200,
            reason="OK",
            body=spool,
            body_length=len(body),
            headers=[("Content-Type", ctype), ("Content-Length", str(len(body)))],
            digest="sha1:" + b32_sha1(body),
        )

    def response(self, url: str, body: bytes, ctype: str, date: str) -> Original:
        result = self.fetch(url, body, ctype)
        result.ip = "127.0.0.1"
        resp = records.response_record(result, date)
        rid = records.record_id(resp)
        self.roller.write([resp, records.request_record(result, date, rid)])
        return Original(url, date, rid)

    def revisit(self, url: str, body: bytes, ctype: str, date: str, original: Original) -> None:
        result = self.fetch(url, body, ctype)
        rev = records.identical_revisit(result, date, original)
        self.roller.write([rev, records.request_record(result, date, records.record_id(rev))])


def build(root: Path, target_bytes: int, seed: int = 10) -> Collection:
    """Two crawls, crawl 1 about 93% of the bytes (crawl 2 is mostly revisits); files of 100 MB."""
    rng = random.Random(seed)
    coll = Collection.open(root, COLLECTION, create=True)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    pages: list[tuple[str, bytes, str]] = []
    originals: dict[str, Original] = {}
    writer = _Writer(coll, "20260101000000-aaaa", 100_000_000)
    i = 0
    while writer.roller.bytes_written < target_bytes * 0.93:
        kind = rng.random()
        if kind < 0.75:
            url, body, ctype = f"http://bench.example/page-{i}.html", None, "text/html"
            body = _html(rng, url, rng.randint(8_000, 60_000), 1)
        elif kind < 0.95:
            url, body, ctype = (
                f"http://bench.example/img/{i}.jpg",
                rng.randbytes(rng.randint(20_000, 200_000)),
                "image/jpeg",
            )
        else:
            url, body, ctype = (
                f"http://bench.example/doc/{i}.pdf",
                rng.randbytes(rng.randint(100_000, 900_000)),
                "application/pdf",
            )
        date = (start + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        originals[url] = writer.response(url, body, ctype, date)
        pages.append((url, body, ctype))
        i += 1
    writer.roller.close()
    writer = _Writer(coll, "20260201000000-bbbb", 100_000_000)
    later = start + timedelta(days=31)
    for j, (url, body, ctype) in enumerate(pages):
        date = (later + timedelta(seconds=j)).strftime("%Y-%m-%dT%H:%M:%SZ")
        if ctype == "text/html" and rng.random() < 0.35:
            writer.response(url, _html(rng, url, rng.randint(8_000, 60_000), 2), ctype, date)
        else:
            writer.revisit(url, body, ctype, date, originals[url])
    writer.roller.close()
    return coll


def _measure(name: str, cmd: list[str], out: Path, cwd: Path | None = None) -> dict:
    m = run_measured(cmd, timeout=3600, stdout=out / f"{name}.out", stderr=out / f"{name}.err", cwd=cwd)
    return {
        "tool": name,
        "returncode": m.returncode,
        "wall": round(m.wall, 3),
        "cpu": round(m.cpu, 3),
        "maxrss": m.maxrss,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=320, help="WARC bytes to write, in MB (default 320)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the collection afterwards")
    args = parser.parse_args()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or BENCH_DIR / "out" / f"verify-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    root = out / "collections"
    coll = build(root, args.mb * 1_000_000, args.seed)
    files = [coll.archive_dir / n for n in coll.warc_files()]
    total = sum(p.stat().st_size for p in files)
    print(f"collection: {len(files)} WARC files, {total / 1e6:.1f} MB -> {coll.path}", flush=True)
    bin_dir = Path(sys.executable).parent
    strata = str(bin_dir / "strata")
    rel = [f"archive/{p.name}" for p in files]
    tools = {
        "sha256sum": (["sha256sum", *rel], coll.path),
        "strata verify --fixity-only": ([strata, "verify", COLLECTION, "--fixity-only", "--root", str(root)], None),
        "warcio check": ([str(bin_dir / "warcio"), "check", *map(str, files)], None),
        "strata verify": ([strata, "verify", COLLECTION, "--root", str(root)], None),
        "cdx-indexer -j -s -p": (
            [str(bin_dir / "cdx-indexer"), "-j", "-s", "-p", "-o", str(out / "pywb.cdxj"), str(coll.archive_dir)],
            None,
        ),
        "strata index rebuild": (
            [strata, "index", "rebuild", COLLECTION, "--only", "state", "--root", str(root)],
            None,
        ),
    }
    rng = random.Random(args.seed)
    results: dict[str, list[dict]] = {name: [] for name in tools}
    for rnd in range(args.rounds):
        order = list(tools)
        rng.shuffle(order)
        for name in order:
            cmd, cwd = tools[name]
            m = _measure(name.replace(" ", "_").replace("-", ""), cmd, out, cwd)
            results[name].append(m)
            print(
                f"round {rnd + 1}: {name:<28} {m['wall']:7.2f} s wall {m['cpu']:7.2f} s CPU "
                f"{m['maxrss'] / 1e6:6.1f} MB  rc={m['returncode']}",
                flush=True,
            )
    # the CDXJ Strata rebuilt is pywb's, line for line (filename as Strata writes it: the base name)
    ours = coll.cdxj_path.read_bytes().splitlines()
    theirs = [line for line in (out / "pywb.cdxj").read_bytes().splitlines() if line and not line.startswith(b"!")]
    summary = summarize(results, total)
    summary["cdxj_lines"] = len(ours)
    summary["cdxj_equal_to_pywb"] = ours == theirs
    summary["bytes"] = total
    summary["files"] = len(files)
    summary["sha256_of_manifest"] = hashlib.sha256(Fixity(coll.fixity_dir).manifest_path.read_bytes()).hexdigest()
    table = render(summary)
    print(table)
    (out / "results.json").write_text(json.dumps({"runs": results, "summary": summary}, indent=2))
    (out / "results.txt").write_text(table + "\n")
    if not args.keep:
        shutil.rmtree(root)
        (out / "pywb.cdxj").unlink(missing_ok=True)


def summarize(results: dict[str, list[dict]], total: int) -> dict:
    rows = {}
    for name, runs in results.items():
        walls = [r["wall"] for r in runs]
        rows[name] = {
            "wall_median": statistics.median(walls),
            "wall_min": min(walls),
            "wall_max": max(walls),
            "cpu_median": statistics.median(r["cpu"] for r in runs),
            "maxrss_max": max(r["maxrss"] for r in runs),
            "mb_per_s": total / 1e6 / statistics.median(walls),
            "ok": all(r["returncode"] in (0,) for r in runs),
        }

    def ratio(a: str, b: str) -> float:  # throughput of a over throughput of b
        return rows[b]["wall_median"] / rows[a]["wall_median"]

    strata_rss = max(rows[n]["maxrss_max"] for n in rows if n.startswith("strata"))
    return {
        "rows": rows,
        "ratios": {
            "hash_vs_sha256sum": ratio("strata verify --fixity-only", "sha256sum"),
            "full_vs_warcio": ratio("strata verify", "warcio check"),
            "rebuild_vs_cdx_indexer": ratio("strata index rebuild", "cdx-indexer -j -s -p"),
        },
        "strata_maxrss": strata_rss,
        "targets_met": {
            "hash_vs_sha256sum": ratio("strata verify --fixity-only", "sha256sum") >= TARGETS["hash_vs_sha256sum"],
            "full_vs_warcio": ratio("strata verify", "warcio check") >= TARGETS["full_vs_warcio"],
            "rss": strata_rss < TARGETS["rss"],
        },
    }


def render(s: dict) -> str:
    lines = [
        f"{s['files']} WARC files, {s['bytes'] / 1e6:.1f} MB; wall median [min-max] of each tool's runs",
        f"{'tool':<30}{'wall s':>24}{'CPU s':>9}{'MB/s':>8}{'peak RSS':>11}  exit 0",
    ]
    for name, r in s["rows"].items():
        wall = f"{r['wall_median']:.2f} [{r['wall_min']:.2f}-{r['wall_max']:.2f}]"
        lines.append(
            f"{name:<30}{wall:>24}{r['cpu_median']:>9.2f}{r['mb_per_s']:>8.0f}"
            f"{r['maxrss_max'] / 1e6:>8.1f} MB  {r['ok']}"
        )
    ratios = s["ratios"]
    lines.append(
        f"throughput: verify --fixity-only / sha256sum = {ratios['hash_vs_sha256sum']:.2f} (target >= 0.8); "
        f"verify / warcio check = {ratios['full_vs_warcio']:.2f} (target >= 1); "
        f"index rebuild / cdx-indexer = {ratios['rebuild_vs_cdx_indexer']:.2f}"
    )
    lines.append(
        f"Strata peak RSS {s['strata_maxrss'] / 1e6:.1f} MB (target < 300 MB); "
        f"targets met: {s['targets_met']}; CDXJ equal to pywb's: {s['cdxj_equal_to_pywb']} "
        f"({s['cdxj_lines']} lines)"
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
