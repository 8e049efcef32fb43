"""Issue 38's pages at scale: the calendar of a URL with 10,000 captures and the site map of a host
with 100,000 URLs. Target: each under 200 ms of server time and under 300 KB of page weight.

One invocation writes the two histories with ``demo.history`` (WARCs by warcio) and derives them
with ``strata index rebuild``'s code (``index.capture.rebuild.rebuild_state``): one URL captured 10,000
times over three years (a new version about one capture in five, a few 404s), and one host of
100,000 URLs in 20 sections of 50 folders (one capture each, then a second run recapturing a tenth).
Then, ``--repeat`` times each, inside one replay app (Flask's test client, no network: server time
is the request's wall time in the app), with the same peers in the same round:

- the calendar (``/<coll>/*/<url>``, the month of the last capture in its table), a year of it, and,
  as a peer, the CDX API's answer for the same URL (``/<coll>/cdx?url=``, pywb's query and nothing
  drawn);
- the site map's root and one section (``/<coll>/sitemap/<host>``), and as a peer the prefix listing
  of the host (``/<coll>/*/<host>/*``, at most ``calendar_limit`` URLs).

The first request of each page is reported apart (cold: the SQLite pages and the CDXJ lines read
from the page cache for the first time in this process). Page weight is the HTML plus the style
sheets and scripts it loads (uncompressed). Output: a table and JSON under ``bench/out/views-<time>/``.

    .venv/bin/python bench/views_bench.py                 # 10,000 captures, 100,000 URLs
    .venv/bin/python bench/views_bench.py --quick         # 2,000 captures, 10,000 URLs
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from demo.history import Event, write_history  # noqa: E402
from index.capture.rebuild import rebuild_state  # noqa: E402
from index.collection import Collection  # noqa: E402
from replay import create_app  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
URL = "http://cal.bench/news/"
HOST = "map.bench"


def calendar_events(n: int) -> list[Event]:
    rng = random.Random(38)
    start = datetime(2022, 1, 1, tzinfo=UTC)
    step = timedelta(days=3 * 365) / n
    version, out = 1, []
    for i in range(n):
        when = (start + step * i).strftime("%Y-%m-%dT%H:%M:%SZ")
        if rng.random() < 0.2:
            version += 1
        gone = rng.random() < 0.005
        out.append(Event(f"cal-{i // 500:03d}", URL, when, None if gone else version))
    return out


def sitemap_events(n: int) -> list[Event]:
    out = []
    for i in range(n):
        url = f"http://{HOST}/section{i % 20}/folder{(i // 20) % 50}/page{i}.html"
        out.append(Event("map-1", url, f"2024-01-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}Z", 1))
    for i in range(0, n, 10):  # a second run: a tenth again, half of them changed
        url = f"http://{HOST}/section{i % 20}/folder{(i // 20) % 50}/page{i}.html"
        out.append(
            Event(
                "map-2", url, f"2024-06-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}Z", 1 + (i % 20 == 0)
            )
        )
    return out


def build(root: Path, captures: int, urls: int) -> dict:
    figures = {}
    for name, events in (("cal", calendar_events(captures)), ("map", sitemap_events(urls))):
        coll = Collection.open(root, name, create=True)
        started = time.monotonic()
        write_history(
            coll.archive_dir, events, body=lambda url, v: f"<html><body><p>{url} v{v}</p></body></html>".encode()
        )
        written = time.monotonic() - started
        rebuild_state(coll)
        figures[name] = {
            "events": len(events),
            "write_s": round(written, 1),
            "rebuild_s": round(time.monotonic() - started - written, 1),
        }
    return figures


_ASSET = re.compile(rb'(?:href|src)="(/static/strata/[^"]+)"')


def weight(client, body: bytes) -> int:
    """The page and the style sheets and scripts it loads."""
    total = len(body)
    for path in sorted(set(_ASSET.findall(body))):
        total += len(client.get(path.decode()).data)
    return total


def measure(client, path: str, repeat: int) -> dict:
    times, size, status, body = [], 0, 0, b""
    for _ in range(repeat + 1):
        started = time.perf_counter()
        response = client.get(path)
        body = response.data
        times.append((time.perf_counter() - started) * 1000)
        status = response.status_code
    size = weight(client, body) if body.lstrip().startswith(b"<") else len(body)
    warm = times[1:]
    return {
        "path": path,
        "status": status,
        "cold_ms": round(times[0], 1),
        "median_ms": round(statistics.median(warm), 1),
        "min_ms": round(min(warm), 1),
        "max_ms": round(max(warm), 1),
        "html_kb": round(len(body) / 1000, 1),
        "weight_kb": round(size / 1000, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,000 captures and 10,000 URLs")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--root", type=Path, help="reuse the collections written by an earlier run here")
    args = parser.parse_args(argv)
    captures, urls = (2_000, 10_000) if args.quick else (10_000, 100_000)
    out_dir = OUT / f"views-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}"
    out_dir.mkdir(parents=True)
    root = args.root or out_dir / "collections"
    built = {}
    if not (root / "cal").is_dir():
        root.mkdir(parents=True, exist_ok=True)
        built = build(root, captures, urls)
    client = create_app(root).test_client()
    pages = {
        "calendar": f"/cal/*/{URL}",
        "calendar, a year": f"/cal/2023*/{URL}",
        "peer: CDX API, same URL": f"/cal/cdx?url={URL}",
        "site map, root": f"/map/sitemap/{HOST}",
        "site map, a section": f"/map/sitemap/{HOST}?folder=/section7/",
        "peer: prefix listing of the host": f"/map/*/http://{HOST}/*",
    }
    rows = {name: [] for name in pages}
    for _ in range(3):  # rounds: each page once a round, in turn, so load spreads evenly
        for name, path in pages.items():
            rows[name].append(measure(client, path, max(1, args.repeat // 3)))
    result = {
        "captures": captures,
        "urls": urls,
        "built": built,
        "load": os.getloadavg(),
        "pages": {name: _merge(runs) for name, runs in rows.items()},
    }
    (out_dir / "result.json").write_text(json.dumps(result, indent=2))
    print(f"load average {result['load'][0]:.2f}; {captures:,} captures of one URL, {urls:,} URLs of one host")
    print(f"{'page':<36} {'cold ms':>8} {'median':>8} {'min':>7} {'max':>7} {'HTML KB':>8} {'weight KB':>9}")
    for name, r in result["pages"].items():
        print(
            f"{name:<36} {r['cold_ms']:>8} {r['median_ms']:>8} {r['min_ms']:>7} {r['max_ms']:>7} "
            f"{r['html_kb']:>8} {r['weight_kb']:>9}"
        )
    print(f"JSON: {out_dir / 'result.json'}")


def _merge(runs: list[dict]) -> dict:
    warm = [r["median_ms"] for r in runs]
    return {
        **runs[-1],
        "cold_ms": runs[0]["cold_ms"],
        "median_ms": round(statistics.median(warm), 1),
        "min_ms": min(r["min_ms"] for r in runs),
        "max_ms": max(r["max_ms"] for r in runs),
    }


if __name__ == "__main__":
    main()
