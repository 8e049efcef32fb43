"""``strata index rebuild`` and ``strata import`` against pywb's ``cdx-indexer -j -s -p`` on the same
WARCs, and ``strata verify --quick`` against the full ``strata verify``.

One invocation writes a collection of mixed WARC files with warcio (seeded): gzipped one member per
record and uncompressed, WARC/1.0 and 1.1, HTML text that compresses and image-like bytes that do
not (5-100 KB bodies), a request record per response, one revisit in ten (some of another URL, some
naming no original), a resource record now and then. Then it runs, each as a fresh child process and
in turn, ``--repeat`` times:

1. ``cdx-indexer -j -s -p -o OUT archive/*`` (the peer: what ``wb-manager reindex`` runs);
2. ``strata index rebuild bench --only state`` (CDXJ + harvest state + digest index);
3. ``strata import`` of the same files into an empty root (checked, copied, indexed, in the
   manifest; ``--no-fulltext``);
4. ``strata verify`` (every file hashed and every record checked) and ``strata verify --quick``, over
   the imported collection (it has a fixity manifest).

Per command: wall time (median, min-max), CPU time (user + system), the child's peak RSS, MB/s
and the ratio to cdx-indexer; the quick verification's share of the full one. The CDXJ of the
rebuild and of the import are compared with cdx-indexer's, line for line.

    .venv/bin/python bench/rebuild_bench.py                        # 200 MB, 3 repeats
    .venv/bin/python bench/rebuild_bench.py --size 1000 --repeat 3 # 1 GB
    .venv/bin/python bench/rebuild_bench.py --size 10 --repeat 5   # verify --quick on 10 MB
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import random
import shutil
import statistics
import sys
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import Measured, compile_project, run_measured  # noqa: E402

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
        gz = number % 4 != 3  # a quarter uncompressed
        version = "1.1" if number % 2 else "1.0"
        path = archive / f"bench-{number:03d}.warc{'.gz' if gz else ''}"
        with open(path, "wb") as fh:
            writer = WARCWriter(fh, gzip=gz, warc_version=version)
            writer.write_record(writer.create_warcinfo_record(path.name, {"software": "bench", "run-id": f"r{number}"}))
            seen: list[tuple[str, str, bytes]] = []
            i = 0
            while fh.tell() < target:
                url = f"http://bench.test/{number}/{i}.{'html' if i % 3 else 'jpg'}"
                date = f"20{10 + number % 10:02d}-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z"
                if seen and i % 10 == 9:
                    o_url, o_date, body = rng.choice(seen)
                    same = i % 20 == 19  # a revisit of its own URL that names no original (wget's)
                    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
                    record = writer.create_revisit_record(url, _digest(body), o_url, o_date, http_headers=http)
                    record.rec_headers.replace_header("WARC-Date", date)
                    if same:
                        record.rec_headers.replace_header("WARC-Target-URI", o_url)
                        record.rec_headers.remove_header("WARC-Refers-To-Target-URI")
                        record.rec_headers.remove_header("WARC-Refers-To-Date")
                elif i % 50 == 25:
                    body = " ".join(rng.choice(WORDS) for _ in range(500)).encode()
                    record = writer.create_warc_record(
                        url + ".txt",
                        "resource",
                        payload=io.BytesIO(body),
                        warc_content_type="text/plain",
                        warc_headers_dict={"WARC-Date": date},
                    )
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


def _quick_share(results: dict[str, list[Measured]]) -> str:
    quick = statistics.median(m.wall for m in results["verify --quick"])
    full = statistics.median(m.wall for m in results["verify"])
    return f"verify --quick {quick:.3f} s, {quick / full:.3f} x the full verify's {full:.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=200, help="MB of WARC (default 200)")
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    compile_project()  # this machine sets PYTHONDONTWRITEBYTECODE: no run compiles the project
    if OUT.exists():
        shutil.rmtree(OUT)
    root = OUT / "collections"
    archive = root / "bench" / "archive"
    records, total = write_collection(archive, args.size, args.files)
    print(f"{args.files} WARC files, {records} records, {total / 1e6:.1f} MB (gzip and plain, WARC 1.0 and 1.1)")
    files = sorted(str(p) for p in archive.iterdir())
    source = OUT / "source"
    shutil.copytree(archive, source)  # what the import takes in (its own copies go to another root)
    imported = OUT / "imported"
    repo = Path(__file__).resolve().parent.parent
    strata = str(BIN / "strata")
    commands = {
        "cdx-indexer": [str(BIN / "cdx-indexer"), "-j", "-s", "-p", "-o", str(OUT / "peer.cdxj"), *files],
        "strata rebuild": [strata, "index", "rebuild", "bench", "--only", "state", "--root", str(root)],
        "strata import": [
            strata,
            "import",
            "bench",
            *sorted(map(str, source.iterdir())),
            "--no-fulltext",
            "--root",
            str(imported),
        ],
        "verify": [strata, "verify", "bench", "--json", "--root", str(imported)],
        "verify --quick": [strata, "verify", "bench", "--quick", "--json", "--root", str(imported)],
    }
    results: dict[str, list[Measured]] = {name: [] for name in commands}
    inside: dict[str, list[float]] = {"verify": [], "verify --quick": []}
    for _ in range(args.repeat):
        for name, cmd in commands.items():
            if name == "strata import":
                shutil.rmtree(imported, ignore_errors=True)
                imported.mkdir(parents=True)
            m = run_measured(cmd, 7200, OUT / "stdout.txt", OUT / "stderr.txt", cwd=repo)
            if m.returncode != 0:
                sys.exit(f"{name} failed: {(OUT / 'stderr.txt').read_text()[-2000:]}")
            results[name].append(m)
            if name.startswith("verify"):  # the verification itself, without the interpreter's start
                inside[name].append(json.loads((OUT / "stdout.txt").read_text())["seconds"])
    peer = sorted((OUT / "peer.cdxj").read_bytes().splitlines())
    for label, path in (("rebuild", root), ("import", imported)):
        ours = sorted((path / "bench" / "indexes" / "index.cdxj").read_bytes().splitlines())
        same = "identical to" if ours == peer else "DIFFERENT from"
        print(f"CDXJ of the {label}: {len(ours)} lines, {same} cdx-indexer's")
    print(f"{'command':<16} {'wall s (min-max)':>20} {'cpu s':>8} {'peak RSS MB':>12} {'MB/s':>7}")
    base = statistics.median(m.wall for m in results["cdx-indexer"])
    for name, runs in results.items():
        walls = [m.wall for m in runs]
        wall = statistics.median(walls)
        print(
            f"{name:<16} {wall:>9.2f} ({min(walls):.2f}-{max(walls):.2f}) "
            f"{statistics.median(m.cpu for m in runs):>8.2f} {max(m.maxrss for m in runs) / 1e6:>12.1f} "
            f"{total / 1e6 / wall:>7.1f}   throughput x{base / wall:.2f} of cdx-indexer's"
        )
    print(_quick_share(results))
    quick, full = (statistics.median(inside[k]) for k in ("verify --quick", "verify"))
    print(f"inside the process (the report's seconds): verify --quick {quick:.4f} s, {quick / full:.4f} x {full:.3f} s")


if __name__ == "__main__":
    main()
