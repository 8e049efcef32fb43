"""``strata index rebuild --only state`` against pywb's ``cdx-indexer -j -s -p`` on the same WARCs.

One invocation writes a collection of WARC files with warcio (seeded: HTML text that compresses and
image-like bytes that do not, 5-100 KB bodies, one gzip member per record, a request record per
response, one revisit in ten), then runs, each as a fresh child process and in turn, ``--repeat``
times:

1. ``cdx-indexer -j -s -p -o OUT archive/*`` (the peer: what ``wb-manager reindex`` runs);
2. ``strata index rebuild bench --only state`` (CDXJ + harvest state + digest index);
3. ``index.integrity.warcscan.scan_file`` over every file alone (the damage check the rebuild now runs
   first: lengths, block digests, gzip members), to show its share.

Per command: wall time (median, min-max), CPU time (user + system), the child's peak RSS; then the
ratios against cdx-indexer. The two CDXJ outputs are compared line for line.

    .venv/bin/python bench/rebuild_bench.py              # 200 MB, 3 repeats
    .venv/bin/python bench/rebuild_bench.py --size 50 --repeat 2
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import random
import shutil
import statistics
import sys
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Measured, run_measured  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "rebuild"
BIN = Path(sys.executable).parent
WORDS = (
    "archive library harvest record payload digest index replay capture snapshot revisit crawl "
    "collection preservation fixity manifest"
).split()


def write_collection(archive: Path, size_mb: int, files: int, seed: int = 7) -> tuple[int, int]:
    rng = random.Random(seed)
    archive.mkdir(parents=True, exist_ok=True)
    target = size_mb * 1_000_000 // files
    records = total = 0
    for number in range(files):
        path = archive / f"bench-{number:03d}.warc.gz"
        with open(path, "wb") as fh:
            writer = WARCWriter(fh, gzip=True)
            writer.write_record(writer.create_warcinfo_record(path.name, {"software": "bench", "run-id": f"r{number}"}))
            seen: list[tuple[str, str, bytes]] = []
            i = 0
            while fh.tell() < target:
                url = f"http://bench.test/{number}/{i}.{'html' if i % 3 else 'jpg'}"
                date = f"20{10 + number % 10:02d}-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z"
                if seen and i % 10 == 9:
                    o_url, o_date, body = rng.choice(seen)
                    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
                    record = writer.create_revisit_record(url, _digest(body), o_url, o_date, http_headers=http)
                    record.rec_headers.replace_header("WARC-Date", date)
                else:
                    n = rng.randint(5_000, 100_000)
                    body = (
                        rng.randbytes(n) if i % 3 == 0 else " ".join(rng.choice(WORDS) for _ in range(n // 8)).encode()
                    )
                    http = StatusAndHeaders(
                        "200 OK",
                        [
                            ("Content-Type", "image/jpeg" if i % 3 == 0 else "text/html"),
                            ("Content-Length", str(len(body))),
                        ],
                        protocol="HTTP/1.1",
                    )
                    record = writer.create_warc_record(
                        url,
                        "response",
                        payload=io.BytesIO(body),
                        http_headers=http,
                        warc_headers_dict={"WARC-Date": date},
                    )
                    seen.append((url, date, body))
                writer.write_record(record)
                req = StatusAndHeaders(f"GET /{number}/{i} HTTP/1.1", [("Host", "bench.test")], is_http_request=True)
                writer.write_record(
                    writer.create_warc_record(url, "request", http_headers=req, warc_headers_dict={"WARC-Date": date})
                )
                records += 2
                i += 1
        total += path.stat().st_size
    return records, total


def _digest(body: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()


SCAN = (
    "import sys, pathlib\nfrom index.integrity.warcscan import scan_file\n"
    "bad = [s for p in sorted(pathlib.Path(sys.argv[1]).iterdir()) if (s := scan_file(p)).damage]\n"
    "sys.exit(1 if bad else 0)\n"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=200, help="MB of WARC (default 200)")
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if OUT.exists():
        shutil.rmtree(OUT)
    root = OUT / "collections"
    archive = root / "bench" / "archive"
    records, total = write_collection(archive, args.size, args.files)
    print(f"{args.files} WARC files, {records} records, {total / 1e6:.1f} MB (gzip)")
    files = sorted(str(p) for p in archive.iterdir())
    repo = Path(__file__).resolve().parent.parent
    commands = {
        "cdx-indexer": [str(BIN / "cdx-indexer"), "-j", "-s", "-p", "-o", str(OUT / "peer.cdxj"), *files],
        "strata rebuild": [str(BIN / "strata"), "index", "rebuild", "bench", "--only", "state", "--root", str(root)],
        "warcscan only": [sys.executable, "-c", SCAN, str(archive)],
    }
    results: dict[str, list[Measured]] = {name: [] for name in commands}
    for _ in range(args.repeat):
        for name, cmd in commands.items():
            m = run_measured(cmd, 3600, OUT / "stdout.txt", OUT / "stderr.txt", cwd=repo)
            if m.returncode != 0:
                sys.exit(f"{name} failed: {(OUT / 'stderr.txt').read_text()[-2000:]}")
            results[name].append(m)
    peer = sorted((OUT / "peer.cdxj").read_bytes().splitlines())
    ours = sorted((root / "bench" / "indexes" / "index.cdxj").read_bytes().splitlines())
    print(f"CDXJ: {len(ours)} lines, {'identical to' if ours == peer else 'DIFFERENT from'} cdx-indexer's")
    print(f"{'command':<16} {'wall s (min-max)':>20} {'cpu s':>8} {'peak RSS MB':>12} {'MB/s':>7}")
    base = statistics.median(m.wall for m in results["cdx-indexer"])
    for name, runs in results.items():
        walls = [m.wall for m in runs]
        wall = statistics.median(walls)
        print(
            f"{name:<16} {wall:>9.2f} ({min(walls):.2f}-{max(walls):.2f}) "
            f"{statistics.median(m.cpu for m in runs):>8.2f} {max(m.maxrss for m in runs) / 1e6:>12.1f} "
            f"{total / 1e6 / wall:>7.1f}   x{wall / base:.2f} of cdx-indexer"
        )


if __name__ == "__main__":
    main()
