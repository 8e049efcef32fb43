"""Issue 14: where the CPU of one 304 goes, part by part, against the whole of crawl 2.

Crawl 2's CPU a request must fall to half of crawl 1's, and most of crawl 2 is 304s. This bench
harvests a generated site once (``strata harvest``, crawl 1 of ``--preset``), then times, on a copy
of that run's ``harvest.sqlite`` and with Strata's own functions, what the harvest's main process
does for each 304 (``harvester.run.Harvest._record`` and ``_write_not_modified``):

- the URL's state read (``HarvestState.url``), the original's capture row, the outlink cache;
- the revisit record built (``records.not_modified_revisit``: made as bytes, through warcio's builder
  only when a value is not plain ASCII);
- the record written (``WarcRoller.write``: gzip member, fixity hash, CDXJ line), and the CDXJ line
  alone (``RecordIndexer.line``, timed inside it);
- the decision (``index.capture.decision.decide``), and the state written: capture row, URL row, commit;
- the answer's trip from the fetch process (pickle, unpickle, ``FetchResult``).

Then the fetch process alone (``harvester.fetchproc.FetchProcess``, the harvest's own child):
``--fetches`` conditional GETs, 8 in flight, against the site with no latency, and the child's user
and system CPU a fetch from ``/proc``. Last, crawl 2 itself (v2, ``--mode incremental``) for its CPU
a request. Each part is timed over the same URLs ``--repeat`` times (median, min-max); what the
parts leave out of the main process's share (asyncio, the frontier, robots, queueing the cached
links, progress) is the difference.

    .venv/bin/python bench/revisit_cost_bench.py            # issue2, 3 repeats, about a minute
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import pickle
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from bench.common import compile_project, validators  # noqa: E402
from bench.harvest_bench import COLLECTION, run_tool  # noqa: E402
from bench.sitegen import GeneratedSite, SiteSpec  # noqa: E402
from demo.site_server import SiteServer  # noqa: E402
from harvester import records  # noqa: E402
from harvester.fetch import FetchResult  # noqa: E402
from harvester.fetchproc import _FIELDS, FetchProcess, _frame  # noqa: E402
from harvester.links import Link  # noqa: E402
from harvester.warcfile import WarcRoller  # noqa: E402
from index.capture import decision
from index.cdx import cdxj
from index.integrity.fixity import Fixity  # noqa: E402
from index.state import Capture, HarvestState, Original  # noqa: E402
from strata.times import iso, ts14, utc_now, warc_date  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
RUN_ID = "20300101000000-0000"
WARM_UP = 50


def _not_modified(url: str) -> FetchResult:
    """A 304 as the fetch process hands it over (headers as the site server sends them)."""
    return FetchResult(
        url=url,
        request_line="GET / HTTP/1.1",
        request_headers=[("Host", "127.0.0.1"), ("Accept-Encoding", "gzip, deflate"), ("If-None-Match", '"e"')],
        status=304,
        reason="Not Modified",
        headers=[("Date", "Tue, 01 Dec 2026 10:00:00 GMT"), ("ETag", '"e"'), ("Content-Length", "0")],
        body=io.BytesIO(b""),
        digest="sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ",
        ip="127.0.0.1",
    )


def main_process_parts(db: Path, limit: int, work: Path) -> dict[str, float]:
    """Microseconds a 304 of each part, over up to ``limit`` URLs of the run, on a copy of its state."""
    work.mkdir(parents=True)
    shutil.copy(db, work / "harvest.sqlite")
    conn = sqlite3.connect(work / "harvest.sqlite")
    urls = [
        row[0]
        for row in conn.execute(
            "SELECT url FROM urls WHERE orig_record_id IS NOT NULL AND last_status = 200 LIMIT ?", (limit + WARM_UP,)
        )
    ]
    conn.close()
    state = HarvestState(work / "harvest.sqlite")
    (work / "archive").mkdir()
    indexer = cdxj.RecordIndexer()
    roller = WarcRoller(
        work / "archive",
        COLLECTION,
        warcinfo={"software": "revisit_cost_bench"},
        max_size=10**10,
        indexer=indexer,
        fixity=Fixity(work / "fixity"),
    )
    roller.write([])
    spent: dict[str, float] = defaultdict(float)
    # URLs done before timing starts (imports, caches and SQLite's pages are then warm); the clock
    clock = {"warm": WARM_UP, "at": 0.0}
    line = indexer.line

    def timed_line(*args, **kwargs):
        started = time.perf_counter()
        try:
            return line(*args, **kwargs)
        finally:
            if not clock["warm"]:
                spent["  of which the CDXJ line"] += time.perf_counter() - started

    indexer.line = timed_line  # type: ignore[method-assign]

    def lap(part: str) -> None:
        now = time.perf_counter()
        if not clock["warm"]:
            spent[part] += now - clock["at"]
        clock["at"] = now

    for n, url in enumerate(urls):
        result = _not_modified(url)
        clock["at"] = time.perf_counter()
        answer = _frame(("result", n, {name: getattr(result, name) for name in _FIELDS}, b"", None))
        FetchResult(**pickle.loads(answer[4:])[2])
        lap("answer framed, read back (IPC)")
        previous = state.url(url)
        lap("state: the URL's row")
        assert previous is not None
        date = warc_date(utc_now())
        original = Original(
            previous["orig_uri"], previous["orig_date"], previous["orig_record_id"], previous["orig_warc"]
        )
        main = records.not_modified_revisit(result, date, original, previous["digest"])
        lap("revisit record built")
        loc = roller.write([main])[0]
        lap("record written (gzip, fixity, CDXJ)")
        state.capture_by_record_id(original.record_id)
        lap("state: the original's capture row")
        cached = state.outlinks(url, previous["digest"]) or []
        [Link(u, kind, "cache") for u, kind in cached]
        lap("state: cached outlinks")
        observed = decision.Observation(
            url=url,
            at=iso(utc_now()),
            run_id=RUN_ID,
            status=304,
            digest=previous["digest"],
            record_type="revisit",
            profile=records.NOT_MODIFIED_PROFILE,
            record_id=records.record_id(main),
            warc_date=date,
            warc=loc.filename,
            holds_payload=False,
            refers_to=original,
            etag='"e"',
            last_modified=None,
            location=None,
        )
        decided = decision.decide(previous, observed)
        lap("decision")
        state.conn.execute("BEGIN IMMEDIATE")
        state.add_capture(
            Capture(
                run_id=RUN_ID,
                url=url,
                timestamp=ts14(utc_now()),
                warc_date=date,
                record_type="revisit",
                cls=decided.cls,
                status=304,
                digest=previous["digest"],
                mime="text/html",
                payload_length=0,
                warc=loc.filename,
                offset=loc.offset,
                length=loc.length,
                record_id=records.record_id(main),
                refers_to_uri=original.url,
                refers_to_date=original.warc_date,
                location=None,
            )
        )
        state.update_url(url, **decided.state)
        lap("state: capture and URL rows written")
        state.conn.execute("COMMIT")
        lap("state: commit")
        clock["warm"] = max(clock["warm"] - 1, 0)
    roller.close()
    state.close()
    timed = len(urls) - WARM_UP
    return {part: 1e6 * seconds / timed for part, seconds in spent.items()} | {"urls": timed}


def _parts_in_child(db: Path, limit: int, work: Path) -> dict[str, float]:
    """``main_process_parts`` in a fresh interpreter, as the harvest's main process is: this one
    holds the generated site, whose millions of objects every full garbage collection walks."""
    done = subprocess.run(
        [sys.executable, __file__, "--parts-child", str(db), str(work), str(limit)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(done.stdout.splitlines()[-1])


def _child_cpu(pid: int) -> tuple[float, float]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / ticks, int(fields[12]) / ticks


async def _fetch_all(port: int, paths: list[str], site: GeneratedSite, count: int) -> dict:
    fetcher = await FetchProcess(4, 10.0, 60.0, "revisit_cost_bench").start()
    base = f"http://127.0.0.1:{port}"
    todo = [
        (base + path, {"Accept-Encoding": "gzip, deflate", **validators(site.resolve(1, path))})
        for path in (paths * (count // max(len(paths), 1) + 1))[:count]
    ]
    warm = await fetcher.fetch(todo[0][0], todo[0][1], 60.0, 10**8)
    warm.close()
    assert fetcher._proc is not None  # started
    user0, sys0 = _child_cpu(fetcher._proc.pid)
    statuses: dict[int | None, int] = defaultdict(int)
    queue = list(reversed(todo))

    async def worker() -> None:
        while queue:
            url, headers = queue.pop()
            result = await fetcher.fetch(url, headers, 60.0, 10**8)
            statuses[result.status] += 1
            result.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(8)))
    wall = time.perf_counter() - started
    user1, sys1 = _child_cpu(fetcher._proc.pid)
    await fetcher.close()
    return {
        "user_us": 1e6 * (user1 - user0) / count,
        "system_us": 1e6 * (sys1 - sys0) / count,
        "wall_us": 1e6 * wall / count,
        "statuses": dict(statuses),
    }


def _stats(values: list[float]) -> str:
    return f"{statistics.median(values):7.1f} ({min(values):.1f}-{max(values):.1f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/revisit_cost_bench.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="issue2", help="sitegen preset (default issue2)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--urls", type=int, default=3000, help="URLs timed in the main process's parts")
    parser.add_argument("--fetches", type=int, default=3000, help="conditional GETs through the fetch process")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default bench/out/revisit-cost-...)")
    parser.add_argument("--parts-child", nargs=3, metavar=("DB", "WORK", "LIMIT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.parts_child:
        db, work, limit = args.parts_child
        print(json.dumps(main_process_parts(Path(db), int(limit), Path(work))))
        return 0
    if args.repeat < 1 or args.urls < 1 or args.fetches < 1:
        parser.error("--repeat, --urls and --fetches must be at least 1")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = (args.out or BENCH_DIR / "out" / f"revisit-cost-{stamp}").resolve()
    out.mkdir(parents=True, exist_ok=False)
    compile_project()
    site = GeneratedSite(SiteSpec.preset(args.preset, seed=1))
    site.stats()
    tool_args = types.SimpleNamespace(concurrency=4, fulltext=False, strata=None, py_spy=False, timeout=1800.0)
    with SiteServer(site, 1, latency=0.005) as server:
        crawl1 = run_tool("strata", 1, server, out, tool_args, wget="")
        if crawl1["returncode"] != 0:
            print(f"crawl 1 failed: see {out / 'strata-crawl1.err'}", file=sys.stderr)
            return 1
        db = out / "strata" / COLLECTION / "strata" / "harvest.sqlite"
        saved = out / "crawl1-harvest.sqlite"
        shutil.copy(db, saved)  # crawl 2 below changes it
        server.latency = 0.0
        paths = [p for p in site.truth() if (r := site.resolve(1, p)) is not None and validators(r)]
        parts_runs, fetch_runs = [], []
        for n in range(args.repeat):
            with tempfile.TemporaryDirectory(dir=out) as work:
                parts_runs.append(_parts_in_child(saved, args.urls, Path(work) / "parts"))
            fetch_runs.append(asyncio.run(_fetch_all(server.port, paths, site, args.fetches)))
            print(f"repeat {n + 1}: main-process parts and {args.fetches:,} fetches timed", flush=True)
        server.latency, server.version = 0.005, 2
        crawl2 = run_tool("strata", 2, server, out, tool_args, wget="")
    shutil.rmtree(out / "strata", ignore_errors=True)
    per_request = {c: 1000 * r["cpu"] / max(r["requests"], 1) for c, r in ((1, crawl1), (2, crawl2))}
    parts = [k for k in parts_runs[0] if k != "urls"]
    lines = [
        f"One 304, part by part: preset {args.preset}, {parts_runs[0]['urls']:,} URLs of crawl 1's state, "
        f"{args.repeat} repeats, median (min-max) microseconds; load average now {os.getloadavg()[0]:.2f}",
        "",
        "main process (Strata's functions, timed one after another for each URL)",
    ]
    main_total = [sum(run[k] for k in parts if not k.startswith("  ")) for run in parts_runs]
    for part in parts:
        lines.append(f"  {part:<44}{_stats([run[part] for run in parts_runs])}")
    lines.append(f"  {'sum of the parts':<44}{_stats(main_total)}")
    lines += [
        "",
        f"fetch process ({args.fetches:,} conditional GETs, 8 in flight, no latency; "
        f"answers {fetch_runs[0]['statuses']})",
        f"  {'user CPU a fetch':<44}{_stats([r['user_us'] for r in fetch_runs])}",
        f"  {'system CPU a fetch':<44}{_stats([r['system_us'] for r in fetch_runs])}",
        f"  {'wall a fetch (8 in flight, 4 connections)':<44}{_stats([r['wall_us'] for r in fetch_runs])}",
        "",
        f"the harvest itself: CPU a request, crawl 1 {per_request[1]:.3f} ms, crawl 2 {per_request[2]:.3f} ms "
        f"(ratio {per_request[2] / per_request[1]:.3f}; issue 14's target 0.5, so a crawl-2 request at most "
        f"{per_request[1] / 2:.3f} ms)",
    ]
    text = "\n".join(lines)
    print()
    print(text)
    (out / "report.txt").write_text(text + "\n")
    dump = {"parts": parts_runs, "fetch": fetch_runs, "cpu_ms_per_request": per_request}
    (out / "results.json").write_text(json.dumps(dump, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
