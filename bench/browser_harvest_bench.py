"""Issue 36's benchmark: browser capture against HTTP capture and against a peer (Chromium through
warcprox), two runs each, on the script-built portal scaled up (``demo/script_site.py``).

    python bench/browser_harvest_bench.py --articles 500 --repeats 3          # the issue's scale
    python bench/browser_harvest_bench.py --articles 20 --repeats 1 --qa-pages 10   # a quick look

One invocation serves the site on a free 127.0.0.1 port and, for each repeat, runs each tool twice,
every run a fresh measured child (``bench.common.run_measured``: wall, and the CPU of the child and
of every process under it that was reaped, Chromium's included):

- ``http``: ``strata harvest`` of a job with ``capture = "http"``;
- ``browser``: the same job with ``capture = "browser"`` (the site's "load more" button clicked);
- ``peer``: Chromium through warcprox. warcprox is pip-installed by this script into its own
  virtualenv under ``bench/out/`` (never a Strata dependency). The peer's pages are loaded by
  Strata's own browser code (the same Chromium flags, contexts, navigation, behaviours, text and
  screenshot) with Chromium's network pointed at warcprox instead of interception, and each page's
  screenshot and text written into warcprox's WARC with its ``WARCPROX_WRITE_RECORD`` method, as
  brozzler does: the same browsing, so the difference is the capture path. warcprox keeps its
  dedup database (``-j``, SQLite) across the two runs: the second run writes identical-payload
  revisits for payloads it saw before, which is all warcprox can do (Chromium sends no conditional
  request from a fresh profile).

Run 1 is the site's version 1, run 2 its version 2 (``demo/script_site.py``: a tenth of the
articles' JSON, the list's first page, the background image and the last news chunk change). Every
tool gets the site's page URLs as its seeds (depth 0: a seed list, as from a sitemap), so all three
load the same pages; HTTP capture fetches what their HTML names, browser capture what Chromium asks
for. Per run: pages a minute, CPU a page, the peak RSS and PSS summed over the tool's processes
(sampled twice a second), the server's requests and 304s, and the WARC bytes the run stored. For
run 2: stored bytes and requests against run 1, and from run 2's WARC records, per URL that run 1
also captured and whose bytes did not change: a ``server-not-modified`` revisit (it answered 304),
an ``identical-payload-digest`` revisit, or a full response. Then ``strata qa`` of ``--qa-pages``
pages of each Strata tool's run 1: QA's time a page. With ``--repeats`` > 1, medians and ranges.

Output: ``bench/out/browser-harvest/`` (``results.json``, each run's output and WARCs).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from demo.script_site import REVISE_EVERY  # noqa: E402
from harvester.browser.intercept import Interceptor  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "browser-harvest"
PEER_VENV = Path(__file__).resolve().parent / "out" / "warcprox-venv"
PEER_PACKAGE = "warcprox==2.13.1"
COLLECTION = "bench"
TOOLS = ("http", "browser", "peer")
NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"


# -- pure helpers (tests/unit/bench/test_browser_harvest_bench.py) ------------------------------------
def record_kind(rtype: str, profile: str | None) -> str:
    """``response``, ``304`` (a server-not-modified revisit), ``identical`` (an identical-payload
    revisit), ``revisit`` (another profile) or the record's type."""
    if rtype != "revisit":
        return rtype
    if profile in (NOT_MODIFIED, "http://netpreserve.org/warc/1.0/revisit/server-not-modified"):
        return "304"
    if profile and profile.endswith("/revisit/identical-payload-digest"):
        return "identical"
    return "revisit"


@dataclasses.dataclass
class Scan:
    kinds: Counter  # records by kind (``record_kind``)
    sizes: Counter  # bytes on disk by kind
    by_url: dict[str, list[str]]  # HTTP(S) URL -> the kinds of its response and revisit records, in file order
    resources: dict[str, list[tuple[str, int]]]  # a resource record's URI -> (SHA-1 of its block, bytes on disk)


def scan_records(paths: Iterable[Path]) -> Scan:
    """What the WARC files ``paths`` hold: records and bytes by kind, the records of each HTTP(S)
    URL, and the pages' own ``resource`` records (screenshot, text) with the digests of their blocks."""
    from warcio.archiveiterator import ArchiveIterator

    scan = Scan(Counter(), Counter(), defaultdict(list), defaultdict(list))
    for path in paths:
        with open(path, "rb") as fh:
            records = ArchiveIterator(fh)
            for record in records:
                kind = record_kind(record.rec_type, record.rec_headers.get_header("WARC-Profile"))
                url = record.rec_headers.get_header("WARC-Target-URI") or ""
                digest = hashlib.sha1(record.content_stream().read()).hexdigest()  # to the record's end too
                size = records.get_record_length()
                scan.kinds[kind] += 1
                scan.sizes[kind] += size
                if record.rec_type in ("response", "revisit") and url.startswith(("http://", "https://")):
                    scan.by_url[url].append(kind)
                elif record.rec_type == "resource":
                    scan.resources[url].append((digest, size))
    scan.by_url, scan.resources = dict(scan.by_url), dict(scan.resources)
    return scan


def same_resources(first: dict[str, list[tuple[str, int]]], second: dict[str, list[tuple[str, int]]]) -> dict:
    """The second run's resource records (a page's screenshot, text, info) whose block is byte for
    byte one the first run stored under the same URI: what identical-payload revisits could save."""
    records = same = same_bytes = total_bytes = 0
    for uri, stored in second.items():
        before = {digest for digest, _ in first.get(uri, ())}
        for digest, size in stored:
            records += 1
            total_bytes += size
            if digest in before:
                same += 1
                same_bytes += size
    return {"records": records, "bytes": total_bytes, "same": same, "same_bytes": same_bytes}


def second_run_check(first: dict[str, list[str]], second: dict[str, list[str]], body_at) -> dict:
    """What run 2 wrote for each URL, against the site's truth. ``body_at(version, url)`` gives the
    bytes the site serves (None: nothing). A URL is *unchanged* when run 1 captured it and both
    versions serve the same bytes (the site sends validators on everything it serves); run 2 should
    have answered each with a 304 revisit. ``changed_share``: the URLs run 2 captured whose bytes
    differ from version 1's (the site ignores its cache-busting parameter, so a cache-busted URL counts
    by its bytes; it is new to run 2, so no conditional request can be sent for it)."""
    unchanged = Counter()
    missed: list[str] = []
    changed = 0
    for url, kinds in second.items():
        old, new = body_at(1, url), body_at(2, url)
        changed += old != new
        if url not in first or old is None or old != new:
            continue
        kind = "304" if "304" in kinds else "identical" if "identical" in kinds else kinds[0]
        unchanged[kind] += 1
        if kind != "304":
            missed.append(url)
    total = sum(unchanged.values())
    return {
        "urls": len(second),
        "changed": changed,
        "changed_share": round(changed / len(second), 4) if second else 0.0,
        "unchanged": total,
        "unchanged_by_kind": dict(unchanged),
        "unchanged_304_share": round(unchanged["304"] / total, 4) if total else 0.0,
        "not_304": sorted(missed)[:20],
    }


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.3g}"
    return f"{statistics.median(values):.3g} ({min(values):.3g}-{max(values):.3g})"


# -- the peer -----------------------------------------------------------------------------------------
# warcprox refuses to fetch from 127.0.0.1 (a guard like Strata's own), and has no switch for it: its
# handler's class attribute is set before its own main() runs, as its tests do. Nothing else changes.
PEER_LAUNCH = (
    "import sys, warcprox.main, warcprox.warcproxy; "
    "warcprox.warcproxy.WarcProxyHandler.allow_localhost = True; "
    "sys.exit(warcprox.main.main(['warcprox', *sys.argv[1:]]))"
)


def ensure_peer() -> Path:
    """warcprox in a virtualenv of its own under bench/out/ (made once); that venv's python."""
    python = PEER_VENV / "bin" / "python"
    if not (PEER_VENV / "bin" / "warcprox").exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", PEER_PACKAGE], check=True, timeout=900)
    return python


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float) -> None:
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if proc.poll() is not None:
            raise SystemExit(f"warcprox exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"warcprox did not listen on {port} within {timeout} s")


async def write_record(port: int, uri: str, content_type: str, body: bytes) -> None:
    """One ``resource`` record through warcprox's ``WARCPROX_WRITE_RECORD`` method (brozzler's way
    of archiving a page's screenshot)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        head = (
            f"WARCPROX_WRITE_RECORD {uri} HTTP/1.1\r\nHost: 127.0.0.1\r\nWARC-Type: resource\r\n"
            f"Content-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        writer.write(head.encode() + body)
        await writer.drain()
        status = (await asyncio.wait_for(reader.readline(), 60)).split(b" ")
        if len(status) < 2 or not status[1].startswith(b"2"):
            raise RuntimeError(f"warcprox refused the record {uri}: {b' '.join(status)!r}")
    finally:
        writer.close()


class NetworkQuiet:
    """The behaviours' "network quiet" for a page whose requests Chromium makes itself: requests in
    flight counted from Playwright's request events, and waited on by the interceptor's own
    ``wait_quiet`` (the same three fields), so both browser tools wait by one rule."""

    def __init__(self, page):
        self._in_flight = 0
        self._last_change = time.monotonic()
        self._changed = asyncio.Event()
        page.on("request", lambda _r: self._move(1))
        page.on("requestfinished", lambda _r: self._move(-1))
        page.on("requestfailed", lambda _r: self._move(-1))

    def _move(self, delta: int) -> None:
        self._in_flight = max(0, self._in_flight + delta)
        self._last_change = time.monotonic()
        self._changed.set()

    wait_quiet = Interceptor.wait_quiet


async def peer_pages(urls: list[str], proxy_port: int, settings, workdir: Path) -> list[dict]:
    """Load ``urls`` as ``BrowserSession.load`` does, but through warcprox instead of interception."""
    from playwright.async_api import async_playwright

    from harvester.browser.behaviours import run_behaviours
    from harvester.browser.chromium import ChromiumProcess
    from harvester.browser.contract import PageRef
    from harvester.browser.page import PageCapture, _navigate, _read
    from strata.times import utc_now

    proxy = (f"--proxy-server=http://127.0.0.1:{proxy_port}", "--proxy-bypass-list=<-loopback>")
    chromium = await asyncio.to_thread(ChromiumProcess.start, parent=workdir, dead_proxy=False, extra_args=proxy)
    playwright = await async_playwright().start()
    slots = asyncio.Semaphore(settings.pages)
    try:
        browser = await playwright.chromium.connect_over_cdp(chromium.cdp_url, timeout=90_000)

        async def one(number: int, url: str) -> dict:
            async with slots:
                began = time.monotonic()
                deadline = began + settings.page_deadline
                context = await browser.new_context(
                    service_workers="block",
                    accept_downloads=False,
                    viewport={"width": settings.viewport[0], "height": settings.viewport[1]},
                )
                capture = PageCapture(url=url, page=PageRef(url, str(number)), started=utc_now())
                try:
                    page = await context.new_page()
                    network = NetworkQuiet(page)

                    async def quiet(timeout: float, network=network) -> bool:
                        return await network.wait_quiet(settings.quiet, timeout)

                    await _navigate(page, url, capture, deadline)
                    if capture.error is None and not capture.timed_out:
                        try:
                            capture.behaviours = await asyncio.wait_for(
                                run_behaviours(page, settings, quiet, deadline), max(0.1, deadline - time.monotonic())
                            )
                        except TimeoutError:
                            capture.timed_out = True
                    await _read(page, capture, settings)
                finally:
                    await context.close()
                if capture.screenshot:
                    await write_record(proxy_port, f"urn:view:{url}", "image/png", capture.screenshot)
                await write_record(proxy_port, f"urn:text:{url}", "text/plain; charset=utf-8", capture.text.encode())
                return {"error": capture.error, "timed_out": capture.timed_out, "elapsed": time.monotonic() - began}

        return list(await asyncio.gather(*(one(i, u) for i, u in enumerate(urls, 1))))
    finally:
        await playwright.stop()
        await asyncio.to_thread(chromium.stop)


def child_peer(args) -> None:
    """In the measured child: warcprox, then every page through it; one JSON line of figures."""
    from bench.browser_bench import Sampler
    from demo.script_site import ScriptSite
    from harvester.browser.settings import BrowserSettings

    work = Path(args.root)
    port = free_port()
    warcs = work / f"warcs-{args.run}"
    cmd = [
        args.warcprox_python,
        "-c",
        PEER_LAUNCH,
        "-b",
        "127.0.0.1",
        "-p",
        str(port),
        "-d",
        str(warcs),
        "-z",
        "--base32",
    ]
    cmd += ["-j", str(work / "dedup.sqlite"), "--stats-db-file", "", "-n", f"peer-run{args.run}", "-q"]
    cmd += ["--cacert", str(work / "ca.pem"), "--certs-dir", str(work / "certs")]
    sampler = Sampler()
    sampler.start()
    started = time.monotonic()
    with open(work / f"warcprox-{args.run}.log", "wb") as log:
        proxy = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=work)
    try:
        wait_port(port, proxy, 60)
        site = ScriptSite(args.articles)
        settings = BrowserSettings(pages=args.pages_at_once, click_selectors=ScriptSite.CLICK_SELECTORS)
        pages = asyncio.run(peer_pages([args.base + p for p in site.pages()], port, settings, work))
    finally:
        proxy.send_signal(signal.SIGTERM)  # warcprox finishes writing what it has, closes its files
        try:
            proxy.wait(120)
        except subprocess.TimeoutExpired:
            proxy.kill()
            proxy.wait()
    wall = time.monotonic() - started
    sampler.stop()
    print(
        json.dumps(
            {
                "pages": len(pages),
                "errors": sum(1 for p in pages if p["error"]),
                "timed_out": sum(1 for p in pages if p["timed_out"]),
                "wall": wall,
                "page_seconds": statistics.median(p["elapsed"] for p in pages),
                "peak_rss": sampler.peak_rss,
                "peak_pss": sampler.peak_pss,
                "processes": sampler.most_processes,
                "warcs": sorted(str(p) for p in warcs.glob("*.warc.gz")),
            }
        )
    )


def child_sample(args, command: list[str]) -> None:
    """In the measured child: run ``command``, sampling the memory of it and its descendants; write
    the peaks and this wrapper's own CPU (to take off the measured total) to ``--figures``."""
    from bench.browser_bench import Sampler

    sampler = Sampler(interval=0.2, exclude_self=True)
    sampler.start()
    code = subprocess.call(command)
    sampler.stop()
    own = resource.getrusage(resource.RUSAGE_SELF)
    Path(args.figures).write_text(
        json.dumps(
            {
                "peak_rss": sampler.peak_rss,
                "peak_pss": sampler.peak_pss,
                "processes": sampler.most_processes,
                "own_cpu": own.ru_utime + own.ru_stime,
            }
        )
    )
    sys.exit(code)


# -- the runs -----------------------------------------------------------------------------------------
def _strata() -> str:
    return str(Path(sys.executable).parent / "strata")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def write_job(root: Path, tool: str, seeds: list[str], args) -> None:
    from demo.script_site import ScriptSite

    jobs = root / COLLECTION / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    lines = [
        "seeds = [" + ", ".join(json.dumps(s) for s in seeds) + "]",
        "depth = 0",  # the seeds are every page; what they embed is fetched whatever the depth
        "delay = 0.0",
        f"concurrency = {args.concurrency}",
        "fulltext = false",  # neither the peer nor the HTTP run indexes; measured apart (fulltext_harvest_bench)
        "max_urls = 10000000",
        f'capture = "{tool}"',
    ]
    if tool == "browser":
        lines.append("click_selectors = " + json.dumps(list(ScriptSite.CLICK_SELECTORS)))
        lines.append(f"browser_pages = {args.pages_at_once}")
    (jobs / "bench.toml").write_text("\n".join(lines) + "\n")


def run_tool(tool: str, run: int, work: Path, server, seeds: list[str], args) -> dict:
    from bench.common import run_measured

    stem = work / f"{tool}-run{run}"
    server.reset_counters()
    load_before = load()
    if tool == "peer":
        root = work / "peer"
        root.mkdir(exist_ok=True)
        cmd = [sys.executable, __file__, "--child", "peer", "--run", str(run), "--root", str(root)]
        cmd += ["--base", server.base_url, "--articles", str(args.articles), "--pages-at-once", str(args.pages_at_once)]
        cmd += ["--warcprox-python", str(ensure_peer())]
    else:
        root = work / tool
        if run == 1:
            write_job(root, tool, seeds, args)
        harvest = [_strata(), "harvest", COLLECTION, "--job", "bench", "--json", "--root", str(root)]
        harvest += ["--mode", "full" if run == 1 else "incremental"]
        cmd = [sys.executable, __file__, "--child", "sample", "--figures", str(stem) + ".figures", "--", *harvest]
    measured = run_measured(cmd, args.timeout, Path(f"{stem}.out"), Path(f"{stem}.err"))
    log = server.request_log
    row: dict = {
        "tool": tool,
        "run": run,
        "returncode": measured.returncode,
        "timed_out": measured.timed_out,
        "wall": measured.wall,
        "cpu": measured.cpu,
        "requests": len(log),
        "answered_304": sum(1 for r in log if r.status == 304),
        "server_bytes": server.bytes_sent,
        "load_before": load_before,
        "load_after": load(),
    }
    lines = Path(f"{stem}.out").read_text().strip().splitlines()
    last = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    if tool == "peer":
        row.update({k: last.get(k) for k in ("pages", "errors", "timed_out", "peak_rss", "peak_pss", "processes")})
        warcs = [Path(p) for p in last.get("warcs", [])]
    else:
        figures = json.loads(Path(f"{stem}.figures").read_text()) if Path(f"{stem}.figures").exists() else {}
        row.update({k: figures.get(k) for k in ("peak_rss", "peak_pss", "processes")})
        row["cpu"] -= figures.get("own_cpu", 0.0)
        row["pages"] = len(seeds)
        row["report"] = {k: last.get(k) for k in ("run_id", "status", "urls_fetched", "requests", "errors")}
        row["report"].update({k: last.get(k) for k in ("new", "changed", "unchanged", "not_modified", "revisits")})
        warcs = [root / COLLECTION / "archive" / name for name in last.get("warc_files", [])]
    warcs = [w for w in warcs if w.exists()]
    scan = scan_records(warcs)
    row.update(stored=sum(w.stat().st_size for w in warcs), records=dict(scan.kinds), record_bytes=dict(scan.sizes))
    row["warcs"] = [str(w) for w in warcs]
    row["maxrss"] = measured.maxrss  # the largest single process (its rusage), beside the sampled sums
    row["_scan"] = scan
    if measured.returncode != 0 or measured.timed_out or not warcs:
        err = Path(f"{stem}.err").read_text(errors="replace")[-2000:]
        print(f"!! {tool} run {run} exited {measured.returncode} (timed out: {measured.timed_out}):\n{err}", flush=True)
    pages = row.get("pages") or 1
    print(
        f"{tool:8} run {run}: {row.get('pages')} pages in {row['wall']:.1f} s = "
        f"{60 * pages / row['wall']:.1f} pages/min, "
        f"CPU {row['cpu']:.1f} s = {row['cpu'] / pages:.3f} s/page, peak RSS {(row.get('peak_rss') or 0) / 2**20:.0f} "
        f"MiB / PSS {(row.get('peak_pss') or 0) / 2**20:.0f} MiB ({row.get('processes')} processes), "
        f"{row['requests']} requests ({row['answered_304']} 304), server sent {row['server_bytes'] / 1024:.0f} KiB, "
        f"stored {row['stored'] / 1024:.0f} KiB "
        f"{dict(scan.kinds)}, of it page records {scan.sizes['resource'] / 1024:.0f} KiB; "
        f"load {load_before} -> {row['load_after']}",
        flush=True,
    )
    return row


def run_qa(tool: str, work: Path, run_id: str, args) -> dict:
    from bench.common import run_measured
    from demo.script_site import ScriptSite

    stem = work / f"qa-{tool}"
    cmd = [_strata(), "qa", COLLECTION, "--run", run_id, "--root", str(work / tool), "--json"]
    cmd += ["--limit", str(args.qa_pages), "--click", ScriptSite.CLICK_SELECTORS[0]]
    cmd += ["--pages-at-once", str(args.pages_at_once)]
    measured = run_measured(cmd, args.timeout, Path(f"{stem}.out"), Path(f"{stem}.err"))
    lines = Path(f"{stem}.out").read_text().strip().splitlines()
    if measured.returncode != 0 or not lines:
        print(f"!! QA of {tool} exited {measured.returncode}: {Path(f'{stem}.err').read_text()[-1500:]}", flush=True)
        return {"tool": tool, "returncode": measured.returncode}
    s = json.loads(lines[-1])["summary"]
    pages = max(1, s["pages_checked"])
    row = {
        "tool": tool,
        "pages": s["pages_checked"],
        "wall": measured.wall,
        "cpu": measured.cpu,
        "seconds_per_page": measured.wall / pages,
        "cpu_per_page": measured.cpu / pages,
        "with_problems": s["pages_with_problems"],
        "mean_score": s["mean_score"],
        "missing_by_kind": s.get("missing_by_kind"),
        "load_after": load(),
    }
    print(
        f"QA {tool}: {row['pages']} pages in {row['wall']:.1f} s = {row['seconds_per_page']:.2f} s/page, CPU "
        f"{row['cpu_per_page']:.2f} s/page; {row['with_problems']} with problems, mean score {row['mean_score']}, "
        f"missing {row['missing_by_kind']}; load {row['load_after']}",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=500, help="article pages (the site has 3 more)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tools", default=",".join(TOOLS), help="any of http,browser,peer")
    parser.add_argument("--revise-every", type=int, default=REVISE_EVERY, help="one article in N revised in version 2")
    parser.add_argument("--image-bytes", type=int, default=0, help="each image padded to this size (0: ~200 bytes)")
    parser.add_argument("--pages-at-once", type=int, default=2, help="browser pages at once (browser and peer)")
    parser.add_argument("--concurrency", type=int, default=4, help="the harvest's connections at once")
    parser.add_argument("--qa-pages", type=int, default=60, help="pages QA checks in each Strata run 1 (0: none)")
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds, each run")
    parser.add_argument("--child", choices=("peer", "sample"), help=argparse.SUPPRESS)
    for hidden in ("--run", "--root", "--base", "--warcprox-python", "--figures"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1 :] if "--" in argv else []
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    if args.child == "peer":
        return child_peer(args)
    if args.child == "sample":
        return child_sample(args, command)

    from bench.common import compile_project
    from demo.script_site import ScriptSite
    from demo.site_server import SiteServer

    tools = [t for t in args.tools.split(",") if t]
    if unknown := set(tools) - set(TOOLS):
        parser.error(f"unknown tools: {', '.join(sorted(unknown))}")
    if "peer" in tools:
        ensure_peer()
    compile_project()
    site = ScriptSite(args.articles, revise_every=args.revise_every, image_bytes=args.image_bytes)
    OUT.mkdir(parents=True, exist_ok=True)
    print(
        f"# {len(site.pages())} pages, tools {tools}, {args.repeats} repeats, one article in {args.revise_every} "
        f"revised, images of {args.image_bytes or 'about 200'} bytes; uptime: {load()}",
        flush=True,
    )

    def body_at(version: int, url: str) -> bytes | None:
        parts = urlsplit(url)
        found = site.resolve(version, parts.path + (f"?{parts.query}" if parts.query else ""))
        return None if found is None else found.body

    results: dict = {
        "articles": args.articles,
        "revise_every": args.revise_every,
        "image_bytes": args.image_bytes,
        "pages": len(site.pages()),
        "load_before": load(),
        "repeats": [],
    }
    with SiteServer(site) as server:
        seeds = [server.base_url + path for path in site.pages()]
        for repeat in range(args.repeats):
            work = OUT / f"repeat-{repeat}"
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            rows: dict = {}
            for run in (1, 2):
                server.version = run
                for tool in tools:
                    rows[tool, run] = run_tool(tool, run, work, server, seeds, args)
            server.version = 1
            done: dict = {"runs": [], "second": {}, "qa": []}
            for tool in tools:
                first, second = rows[tool, 1], rows[tool, 2]
                scan1, scan2 = first.pop("_scan"), second.pop("_scan")
                check = second_run_check(scan1.by_url, scan2.by_url, body_at)
                check["page_records"] = same_resources(scan1.resources, scan2.resources)
                pages1, pages2 = scan1.sizes["resource"], scan2.sizes["resource"]
                check["stored_ratio_without_pages"] = (
                    round((second["stored"] - pages2) / (first["stored"] - pages1), 4)
                    if first["stored"] > pages1
                    else None
                )
                check.update(
                    stored_ratio=round(second["stored"] / first["stored"], 4) if first["stored"] else None,
                    requests_ratio=round(second["requests"] / first["requests"], 4) if first["requests"] else None,
                    server_bytes_ratio=round(second["server_bytes"] / first["server_bytes"], 4)
                    if first["server_bytes"]
                    else None,
                )
                done["second"][tool] = check
                done["runs"] += [first, second]
                print(
                    f"{tool:8} run 2 / run 1: stored {check['stored_ratio']} (without the page records "
                    f"{check['stored_ratio_without_pages']}), requests {check['requests_ratio']}, "
                    f"bytes the server sent {check['server_bytes_ratio']}; "
                    f"{check['changed']} of {check['urls']} URLs changed ({check['changed_share']:.1%}); "
                    f"unchanged {check['unchanged']}: {check['unchanged_by_kind']}; page records "
                    f"{check['page_records']}",
                    flush=True,
                )
            if args.qa_pages:
                for tool in tools:
                    run_id = (rows[tool, 1].get("report") or {}).get("run_id")
                    if tool != "peer" and run_id:
                        done["qa"].append(run_qa(tool, work, run_id, args))
            results["repeats"].append(done)
            (OUT / "results.json").write_text(json.dumps(results, indent=1, default=str))
    results["load_after"] = load()
    summarise(results, tools)
    (OUT / "results.json").write_text(json.dumps(results, indent=1, default=str))


def summarise(results: dict, tools: list[str]) -> None:
    print(f"# medians (range) of {len(results['repeats'])} repeats; load {results['load_before']} -> {load()}")
    for tool in tools:
        for run in (1, 2):
            rows = [r for rep in results["repeats"] for r in rep["runs"] if r["tool"] == tool and r["run"] == run]
            rate = [60 * (r["pages"] or 0) / r["wall"] for r in rows]
            cpu = [r["cpu"] / max(1, r["pages"] or 0) for r in rows]
            rss = [(r["peak_rss"] or 0) / 2**20 for r in rows]
            pss = [(r["peak_pss"] or 0) / 2**20 for r in rows]
            print(
                f"{tool:8} run {run}: pages/min {spread(rate)}; CPU s/page {spread(cpu)}; "
                f"peak RSS MiB {spread(rss)}; PSS MiB {spread(pss)}; "
                f"stored KiB {spread([r['stored'] / 1024 for r in rows])}"
            )
        checks = [rep["second"][tool] for rep in results["repeats"] if tool in rep["second"]]
        print(
            f"{tool:8} run 2 / run 1: stored {spread([c['stored_ratio'] or 0 for c in checks])} (without the page "
            f"records {spread([c['stored_ratio_without_pages'] or 0 for c in checks])}); requests "
            f"{spread([c['requests_ratio'] or 0 for c in checks])}; unchanged answered 304 "
            f"{spread([c['unchanged_304_share'] for c in checks])}"
        )
    qa = [q for rep in results["repeats"] for q in rep["qa"] if "seconds_per_page" in q]
    for tool in tools:
        mine = [q for q in qa if q["tool"] == tool]
        if mine:
            print(
                f"QA {tool}: s/page {spread([q['seconds_per_page'] for q in mine])}; "
                f"CPU s/page {spread([q['cpu_per_page'] for q in mine])}"
            )


if __name__ == "__main__":
    main()
