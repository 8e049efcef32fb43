"""Browser capture and QA on the script-built portal scaled up (``demo/script_site.py``).

    python bench/browser_bench.py [--articles 500] [--pages-at-once 2] [--repeats 2] [--qa-pages 60]
    python bench/browser_bench.py --serve --articles 500     # the scaled site alone, for other tools

For each repeat, one measured child process (``bench.common.run_measured``: wall, and the CPU of the
child and of every process under it that was reaped, Chromium's and Playwright's driver included)
loads every page of the site through ``harvester.browser`` with the site's behaviours, each
request fetched over HTTP and written to a WARC (``tests/support/browser_capture.py``, the
stand-in for the harvest until browser capture is wired into it). Inside the child a sampler adds
up, twice a second, the resident set (RSS) and the proportional set (PSS: shared pages divided
among their sharers; Chromium's processes share much) of the child and all its descendants: the
peaks are the browser layer's. Then ``strata index rebuild`` and a measured ``strata qa`` of
``--qa-pages`` pages of the run: QA's time a page.

The site server runs in this process and is not measured. The harvest-level comparison (browser
capture against HTTP capture and a peer, the second run's bytes) needs the wiring phase; ``--serve``
serves the same scaled site for it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from bench.common import run_measured  # noqa: E402
from demo.script_site import ScriptSite  # noqa: E402
from demo.site_server import SiteServer  # noqa: E402

OUT = Path(__file__).resolve().parent / "out" / "browser"


def _descendants(root_pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root_pid]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) in bytes, from smaps_rollup; (0, 0) for a process gone."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Rss:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith(b"Pss:"):
                    pss = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, pss


class Sampler(threading.Thread):
    """Peak RSS and PSS summed over this process and its descendants (``exclude_self``: the
    descendants only, for a wrapper around the measured command)."""

    def __init__(self, interval: float = 0.5, exclude_self: bool = False):
        super().__init__(daemon=True)
        self.interval = interval
        self.exclude_self = exclude_self
        self.peak_rss = self.peak_pss = 0
        self.most_processes = 0
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(self.interval):
            pids = _descendants(os.getpid())[1 if self.exclude_self else 0 :]
            rss = pss = 0
            for pid in pids:
                r, p = _memory(pid)
                rss, pss = rss + r, pss + p
            self.peak_rss, self.peak_pss = max(self.peak_rss, rss), max(self.peak_pss, pss)
            self.most_processes = max(self.most_processes, len(pids))

    def stop(self) -> None:
        self._halt.set()
        self.join()


def child_capture(args) -> None:
    """In the measured child: capture every page; print one JSON line of figures."""
    from harvester.browser.settings import BrowserSettings
    from index.collection import Collection
    from tests.support.browser_capture import capture_pages

    site = ScriptSite(args.articles)
    urls = [args.base + path for path in site.pages()]
    settings = BrowserSettings(pages=args.pages_at_once, click_selectors=ScriptSite.CLICK_SELECTORS)
    coll = Collection.open(Path(args.root), "bench", create=True)
    sampler = Sampler()
    sampler.start()
    started = time.monotonic()
    captures, resolve = asyncio.run(capture_pages(coll, args.warc, urls, settings))
    wall = time.monotonic() - started
    sampler.stop()
    print(
        json.dumps(
            {
                "pages": len(captures),
                "errors": sum(1 for c in captures if c.error),
                "timed_out": sum(1 for c in captures if c.timed_out),
                "requests": sum(len(c.requests) for c in captures),
                "fetched": len(resolve.asked),
                "page_seconds": statistics.median(c.elapsed for c in captures),
                "wall": wall,
                "peak_rss": sampler.peak_rss,
                "peak_pss": sampler.peak_pss,
                "processes": sampler.most_processes,
            }
        )
    )


def _strata(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "strata"), *args]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=500, help="article pages (the site has 3 more)")
    parser.add_argument("--pages-at-once", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--qa-pages", type=int, default=60, help="pages QA checks (0: none)")
    parser.add_argument("--serve", action="store_true", help="serve the scaled site until interrupted")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    parser.add_argument("--warc", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "capture":
        child_capture(args)
        return
    site = ScriptSite(args.articles)
    if args.serve:
        with SiteServer(site) as server:
            print(f"{server.base_url}/ : {len(site.pages())} pages (click {ScriptSite.CLICK_SELECTORS[0]})", flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                return
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"# browser capture of {len(site.pages())} pages, {args.pages_at_once} at once; load before: {_load()}")
    rows = []
    with SiteServer(site) as server:
        for repeat in range(args.repeats):
            root = OUT / f"root-{repeat}"
            if root.exists():
                shutil.rmtree(root)
            root.mkdir(parents=True)
            cmd = [sys.executable, __file__, "--child", "capture", "--base", server.base_url, "--root", str(root)]
            cmd += ["--warc", "capture.warc.gz", "--articles", str(args.articles)]
            cmd += ["--pages-at-once", str(args.pages_at_once)]
            measured = run_measured(cmd, 6 * 3600, OUT / f"capture-{repeat}.out", OUT / f"capture-{repeat}.err")
            figures = json.loads((OUT / f"capture-{repeat}.out").read_text().strip().splitlines()[-1])
            row = {**figures, "cpu": measured.cpu, "child_wall": measured.wall, "load": _load()}
            rows.append(row)
            print(
                f"capture {repeat}: {row['pages']} pages ({row['errors']} errors, {row['timed_out']} cut by the "
                f"deadline) in {row['wall']:.1f} s = {60 * row['pages'] / row['wall']:.1f} pages/min; "
                f"CPU {row['cpu']:.1f} s = {row['cpu'] / row['pages']:.2f} s/page; peak RSS "
                f"{row['peak_rss'] / 2**20:.0f} MiB, PSS {row['peak_pss'] / 2**20:.0f} MiB "
                f"({row['processes']} processes); median page {row['page_seconds']:.2f} s; load {row['load']}",
                flush=True,
            )
    qa = None
    if args.qa_pages:
        root = OUT / "root-0"
        run_measured(
            _strata("index", "rebuild", "bench", "--root", str(root)), 3600, OUT / "rebuild.out", OUT / "rebuild.err"
        )
        qa_cmd = _strata("qa", "bench", "--run", "capture.warc.gz", "--root", str(root), "--json")
        qa_cmd += ["--limit", str(args.qa_pages), "--click", ScriptSite.CLICK_SELECTORS[0]]
        qa_cmd += ["--pages-at-once", str(args.pages_at_once)]
        measured = run_measured(qa_cmd, 6 * 3600, OUT / "qa.out", OUT / "qa.err")
        report = json.loads((OUT / "qa.out").read_text().strip().splitlines()[-1])
        s = report["summary"]
        qa = {"pages": s["pages_checked"], "wall": measured.wall, "cpu": measured.cpu, "summary": s}
        print(
            f"QA: {s['pages_checked']} pages in {measured.wall:.1f} s = "
            f"{measured.wall / s['pages_checked']:.2f} s/page "
            f"(its own count {s['seconds_per_page']} s/page), CPU {measured.cpu / s['pages_checked']:.2f} s/page; "
            f"{s['pages_with_problems']} with problems, mean score {s['mean_score']}; load {_load()}"
        )
    if len(rows) > 1:
        rates = [60 * r["pages"] / r["wall"] for r in rows]
        cpus = [r["cpu"] / r["pages"] for r in rows]
        print(
            f"median of {len(rows)}: {statistics.median(rates):.1f} pages/min "
            f"(spread {min(rates):.1f}..{max(rates):.1f}), "
            f"CPU {statistics.median(cpus):.2f} s/page ({min(cpus):.2f}..{max(cpus):.2f})"
        )
    (OUT / "results.json").write_text(json.dumps({"captures": rows, "qa": qa}, indent=1))


if __name__ == "__main__":
    main()
