"""Issue 2's benchmark: Strata against ``wget --warc-file --warc-dedup`` on a generated site, two crawls.

One invocation generates a site (``bench/sitegen.py``), serves it on 127.0.0.1 with a few ms of
latency, and runs each tool as a fresh child process on crawl 1 (v1) and crawl 2 (v2), both with no
politeness delay. For each tool and crawl it measures wall time, server requests, server bytes sent
(the server's own counters, reset before each run), WARC bytes on disk, records by type and the
child's peak RSS, and prints Strata/wget ratios. From the generator's ground truth it computes the
crawl-2 floors (storage and bandwidth, as issue 2 defines them), checks Strata's crawl-2 index
against the truth (every v2 URL captured, the right record kind, the right payload digest), and
says which of issue 2's targets are met.

    .venv/bin/python bench/harvest_bench.py            # about 3,600 URLs, 100 MB
    .venv/bin/python bench/harvest_bench.py --quick    # about 700 URLs

Output (the table, and every figure as JSON) goes to ``bench/out/harvest-<preset>-<time>/``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shlex
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from bench.common import RawClient, b32_sha1, compile_project, median, run_measured, scan_warcs, validators  # noqa: E402
from bench.sitegen import GeneratedSite, SiteSpec  # noqa: E402
from bench.wakeup_bench import machine_speed  # noqa: E402
from demo.site_server import SiteServer  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
COLLECTION = "bench"
ACCEPT_ENCODING = "gzip, deflate"  # what Strata sends; the floors assume a client that accepts gzip
TARGETS = {
    "bandwidth": 1.05,  # crawl-2 server bytes / bandwidth floor
    "storage": 1.05,  # crawl-2 WARC bytes / storage floor
    "wall1": 0.5,  # Strata / wget wall time, crawl 1
    "wall2": 0.3,  # Strata / wget wall time, crawl 2
    "rss": 300e6,  # bytes, each Strata run
}


def strata_cmd(
    root: Path, seed: str, crawl: int, concurrency: int, fulltext: bool, exe: list[str] | None = None
) -> list[str]:
    """``strata harvest`` with a job file: the command line has no switch for the full-text index."""
    jobs = root / COLLECTION / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    (jobs / "bench.toml").write_text(
        f'seeds = ["{seed}"]\ndepth = 100\ndelay = 0.0\nconcurrency = {concurrency}\n'
        f"fulltext = {'true' if fulltext else 'false'}\nmax_urls = 10000000\n"  # the 100k preset is past the default
    )
    exe = exe or [str(Path(sys.executable).parent / "strata")]
    return [
        *exe,
        "harvest",
        COLLECTION,
        "--job",
        "bench",
        "--mode",
        "full" if crawl == 1 else "incremental",
        "--json",
        "--root",
        str(root),
    ]


def wget_cmd(wget: str, workdir: Path, seed: str, crawl: int) -> list[str]:
    cmd = [
        wget,
        "--recursive",
        "--level=inf",
        "--page-requisites",
        "--no-parent",
        "--wait=0",
        "--tries=1",
        "--timeout=60",
        "--no-verbose",
        "--delete-after",
        f"--directory-prefix={workdir / f'files{crawl}'}",
        f"--warc-file={workdir / f'crawl{crawl}'}",
        "--warc-cdx",
        "--no-warc-keep-log",
        f"--warc-tempdir={workdir}",
    ]
    if crawl == 2:
        cmd.append(f"--warc-dedup={workdir / 'crawl1.cdx'}")
    return cmd + [seed]


def run_tool(tool: str, crawl: int, server: SiteServer, out: Path, args, wget: str) -> dict:
    """One measured run of one tool on one crawl."""
    seed = server.base_url + "/"
    server.reset_counters()
    if tool == "strata":
        root = out / "strata"
        root.mkdir(exist_ok=True)
        cmd = strata_cmd(
            root, seed, crawl, args.concurrency, args.fulltext, shlex.split(args.strata) if args.strata else None
        )
        if args.py_spy:  # sampled profile of the harvester (its figures are then not comparable)
            spy = Path(sys.executable).parent / "py-spy"
            cmd = [
                str(spy),
                "record",
                "--format",
                "raw",
                "--rate",
                "250",
                "--subprocesses",  # the fetch process too: each stack starts with its process
                "--output",
                str(out / f"strata-crawl{crawl}.pyspy.txt"),
                "--",
                *cmd,
            ]
    else:
        workdir = out / "wget"
        workdir.mkdir(exist_ok=True)
        cmd = wget_cmd(wget, workdir, seed, crawl)
    probe = machine_speed()  # this machine's speed now: its drift between two tools' runs is visible
    served_from = time.process_time()  # this process's CPU while the tool runs: the site server's
    m = run_measured(cmd, args.timeout, out / f"{tool}-crawl{crawl}.out", out / f"{tool}-crawl{crawl}.err")
    server_cpu = time.process_time() - served_from
    result = {
        "tool": tool,
        "crawl": crawl,
        "command": " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd)),
        "returncode": m.returncode,
        "timed_out": m.timed_out,
        "wall": m.wall,
        "maxrss": m.maxrss,
        "cpu": m.cpu,
        "server_cpu": server_cpu,
        "requests": server.request_count,
        "server_bytes": server.bytes_sent,
        "connections": server.connection_count,
        "loadavg_after": os.getloadavg()[0],
        "speed_probe_us": probe,
    }
    if tool == "strata":
        text = (out / f"{tool}-crawl{crawl}.out").read_text()
        report = next((json.loads(line) for line in reversed(text.splitlines()) if line.startswith("{")), {})
        result["report"] = report
        warcs = [out / "strata" / COLLECTION / "archive" / name for name in report.get("warc_files", [])]
    else:
        warcs = [out / "wget" / f"crawl{crawl}.warc.gz"]
        shutil.rmtree(out / "wget" / f"files{crawl}", ignore_errors=True)
    warcs = [w for w in warcs if w.exists()]
    stats = scan_warcs(warcs)
    result.update(
        warc_files=[w.name for w in warcs],
        warc_bytes=stats.bytes,
        records=dict(stats.records),
        record_bytes={k: sum(v) for k, v in stats.record_bytes.items()},
    )
    result["_stats"] = stats
    ok = m.returncode == 0 or (tool == "wget" and m.returncode == 8)  # wget: 8 = some 404s, expected
    if not ok or m.timed_out:
        err = (out / f"{tool}-crawl{crawl}.err").read_text(errors="replace")[-2000:]
        print(
            f"!! {tool} crawl {crawl} exited {m.returncode}{' (timed out)' if m.timed_out else ''}:\n{err}",
            file=sys.stderr,
        )
    return result


# -- floors and ground truth -----------------------------------------------------------------------


def measure_floors(site: GeneratedSite, server: SiteServer, deadline: float) -> dict:
    """Ask the server (v2, no latency) for what an ideal client must receive in crawl 2."""
    truth = site.truth()
    saved_latency, server.latency = server.latency, 0.0
    server.version = 2
    per_kind: dict[str, int] = {}
    not_modified: list[int] = []
    unvalidated: list[str] = []
    full_unchanged = 0  # what the unchanged resources without validators really cost
    body_bytes = head_bytes = deleted_bytes = 0
    payload_gz = 0
    try:
        with RawClient(server.port) as client:
            for path, t in truth.items():
                if time.monotonic() > deadline:
                    raise TimeoutError("floor measurement took too long")
                if t.change == "unchanged":
                    headers = {"Accept-Encoding": ACCEPT_ENCODING, **validators(site.resolve(2, path))}
                    r = client.get(path, headers)
                    if r.status == 304:
                        not_modified.append(r.wire_bytes)
                    else:
                        unvalidated.append(path)
                        full_unchanged += r.wire_bytes
                    continue
                r = client.get(path, {"Accept-Encoding": ACCEPT_ENCODING})
                if t.change == "deleted":
                    deleted_bytes += r.wire_bytes
                else:
                    body_bytes += r.body_bytes
                    head_bytes += r.head_bytes
                # As stored: the payload as received (gzip-encoded if the server sent it so), compressed
                # again by the WARC writer's gzip member.
                payload_gz += len(gzip.compress(r.body, 9))
                per_kind[t.change] = per_kind.get(t.change, 0) + 1
    finally:
        server.latency = saved_latency
    m304 = statistics.median(not_modified) if not_modified else 0
    bandwidth = body_bytes + deleted_bytes + sum(not_modified) + m304 * len(unvalidated)
    return {
        "changed_new_body_bytes": body_bytes,
        "changed_new_head_bytes": head_bytes,
        "deleted_response_bytes": deleted_bytes,
        "not_modified_count": len(not_modified),
        "not_modified_bytes": sum(not_modified),
        "not_modified_median": m304,
        "unvalidated_unchanged": len(unvalidated),
        "unvalidated_unchanged_bytes": full_unchanged,
        "bandwidth_floor": bandwidth,
        "bandwidth_reachable": bandwidth - m304 * len(unvalidated) + full_unchanged,
        "payload_gzip_bytes": payload_gz,
        "counts": per_kind,
    }


def storage_floor(site: GeneratedSite, floors: dict, strata2) -> dict:
    truth = site.truth()
    n_fetched = len(truth)
    n_unchanged = sum(t.change == "unchanged" for t in truth.values())
    req_median = median(strata2.record_bytes.get("request", []))
    rev_median = median(strata2.record_bytes.get("revisit", []))
    floor = floors["payload_gzip_bytes"] + n_fetched * req_median + n_unchanged * rev_median
    return {
        "storage_floor": floor,
        "fetched_urls": n_fetched,
        "unchanged_urls": n_unchanged,
        "request_median": req_median,
        "revisit_median": rev_median,
        "payload_part": floors["payload_gzip_bytes"],
        "request_part": n_fetched * req_median,
        "revisit_part": n_unchanged * rev_median,
    }


def check_strata(site: GeneratedSite, out: Path, base: str, warc_files: list[str]) -> dict:
    """Compare Strata's index lines for crawl 2 with the ground truth of v2."""
    truth = site.truth()
    cdxj = out / "strata" / COLLECTION / "indexes" / "index.cdxj"
    wanted = set(warc_files)
    seen: dict[str, list[dict]] = {}
    lines = cdxj.read_text(encoding="utf-8").splitlines() if cdxj.exists() else []
    for line in lines:
        _, _, blob = line.split(" ", 2)
        entry = json.loads(blob)
        if entry.get("filename") in wanted and entry["url"].startswith(base):
            seen.setdefault(entry["url"][len(base) :], []).append(entry)
    problems = {
        "missing": [],
        "deleted_not_seen": [],
        "stored_again": [],
        "changed_as_revisit": [],
        "wrong_digest": [],
        "unexpected": sorted(set(seen) - set(truth)),
    }
    for path, t in truth.items():
        entries = seen.get(path, [])
        if t.change == "deleted":
            if not any(e.get("status") in ("404", "410") for e in entries):
                problems["deleted_not_seen"].append(path)
            continue
        if not entries:
            problems["missing"].append(path)
            continue
        e = entries[-1]
        revisit = e.get("mime") == "warc/revisit"
        if t.change == "unchanged" and not revisit:
            problems["stored_again"].append(path)
        if t.change != "unchanged" and revisit:
            problems["changed_as_revisit"].append(path)
        if e.get("digest") != b32_sha1(site.wire_body(2, path)):
            problems["wrong_digest"].append(path)
    return problems


def check_wget(site: GeneratedSite, base: str, stats) -> dict:
    truth = site.truth()
    caps = {url[len(base) :]: v for url, v in stats.captures.items() if url.startswith(base)}
    missing = [p for p, t in truth.items() if t.change != "deleted" and p not in caps]
    deleted_not_seen = [p for p, t in truth.items() if t.change == "deleted" and p not in caps]
    return {"missing": missing, "deleted_not_seen": deleted_not_seen}


# -- the report -----------------------------------------------------------------------------------


def _mb(n: float) -> str:
    return f"{n / 1e6:,.2f} MB"


def code_version() -> str:
    """The commit measured, and whether the harvester's working tree differs from it."""
    import subprocess

    def git(*a: str) -> str:
        try:
            return subprocess.run(
                ["git", *a], cwd=BENCH_DIR.parent, capture_output=True, text=True, timeout=10
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "harvester", "index", "strata")
    return head + (" + uncommitted changes in harvester/, index/ or strata/" if dirty else "")


def _seconds(start: str | None, end: str | None) -> float:
    if not start or not end:
        return 0.0
    parse = lambda v: datetime.fromisoformat(v.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def table(results: dict, floors: dict, storage: dict, checks: dict, site_stats: dict, args, conns: int) -> str:
    lines = []
    add = lines.append
    add(
        f"code: {code_version()}; Strata command: {'strata' if not args.strata else args.strata}"
        + ("; PROFILED with py-spy (times not comparable)" if args.py_spy else "")
    )
    add(
        f"Strata vs wget, generated site preset {args.preset!r} (seed {args.seed}), latency {args.latency * 1000:g} "
        f"ms, "
        f"delay 0 for both; Strata --concurrency {conns}, wget one connection; "
        f"Strata's full-text indexing {'on' if args.fulltext else 'off'}"
    )
    add(
        f"v1: {site_stats['urls_v1']} URLs ({site_stats['html_v1']} HTML), {_mb(site_stats['bytes_v1'])}; "
        f"v2: {site_stats['urls_v2']} URLs ({site_stats['html_v2']} HTML), {_mb(site_stats['bytes_v2'])}; "
        "changes v1->v2: " + ", ".join(f"{k} {v}" for k, v in site_stats["changes"].items())
    )
    rtypes = sorted({t for r in results.values() for t in r["records"]})
    for crawl in (1, 2):
        s, w = results["strata", crawl], results["wget", crawl]
        add("")
        add(f"crawl {crawl} (v{crawl})            {'Strata':>14} {'wget':>14} {'Strata/wget':>12}")
        rows = [
            ("wall time (s)", s["wall"], w["wall"], lambda v: f"{v:,.2f}"),
            ("CPU time (s)", s["cpu"], w["cpu"], lambda v: f"{v:,.2f}"),
            ("server requests", s["requests"], w["requests"], lambda v: f"{v:,}"),
            ("server bytes sent", s["server_bytes"], w["server_bytes"], _mb),
            ("WARC bytes", s["warc_bytes"], w["warc_bytes"], _mb),
            *[(f"records: {t}", s["records"].get(t, 0), w["records"].get(t, 0), lambda v: f"{v:,}") for t in rtypes],
            ("peak RSS", s["maxrss"], w["maxrss"], _mb),
            ("TCP connections", s["connections"], w["connections"], lambda v: f"{v:,}"),
            (
                "CPU ms a request",
                1000 * _per(s["cpu"], s["requests"]),
                1000 * _per(w["cpu"], w["requests"]),
                lambda v: f"{v:.3f}",
            ),
            (
                "site server CPU ms a req",  # on the same cores: what the latency floor leaves out
                1000 * _per(s["server_cpu"], s["requests"]),
                1000 * _per(w["server_cpu"], w["requests"]),
                lambda v: f"{v:.3f}",
            ),
            (
                "wall / latency floor",
                _per(s["wall"], latency_floor(s["requests"], args.latency, conns)),
                _per(w["wall"], latency_floor(w["requests"], args.latency, 1)),
                lambda v: f"{v:.2f}",
            ),
        ]
        for label, a, b, fmt in rows:
            add(f"  {label:<24} {fmt(a):>14} {fmt(b):>14} {_ratio(a, b):>12}")
        add(
            f"  1-min load average after the run: Strata {s['loadavg_after']:.2f}, wget {w['loadavg_after']:.2f} "
            f"({os.cpu_count()} CPUs; the site server runs in this process)"
        )
        add(
            f"  speed probe before the run (bench/wakeup_bench.py's unit, back to back): "
            f"Strata {s.get('speed_probe_us', 0):.0f} us, wget {w.get('speed_probe_us', 0):.0f} us"
        )
        rep = s.get("report", {})
        if rep:
            add(
                "  Strata's report: "
                + ", ".join(
                    f"{k} {rep.get(k)}"
                    for k in (
                        "urls_fetched",
                        "new",
                        "changed",
                        "soft",
                        "unchanged",
                        "not_modified",
                        "deleted",
                        "errors",
                        "revisits",
                    )
                )
            )
            span = _seconds(rep.get("started"), rep.get("finished"))
            extra = (
                f", then full-text indexing {rep['fulltext'].get('seconds', 0):.1f} s" if rep.get("fulltext") else ""
            )
            add(f"  Strata's run from start to finish (no process start-up){extra}: {span:.2f} s")
    s2, w2 = results["strata", 2], results["wget", 2]
    add("")
    add("crawl-2 floors (from the generator's ground truth)")
    add(
        f"  bandwidth floor            {_mb(floors['bandwidth_floor']):>14}   = changed/new/soft bodies "
        f"{_mb(floors['changed_new_body_bytes'])} + {floors['not_modified_count']} x 304 "
        f"({floors['not_modified_median']:.0f} B median) {_mb(floors['not_modified_bytes'])} + deleted 404s "
        f"{_mb(floors['deleted_response_bytes'])}"
        + (
            f" + {floors['unvalidated_unchanged']} unvalidated unchanged counted as 304"
            if floors["unvalidated_unchanged"]
            else ""
        )
    )
    if floors["unvalidated_unchanged"]:
        add(f"  reachable with this server's validators {_mb(floors['bandwidth_reachable'])}")
    add(
        f"  storage floor              {_mb(storage['storage_floor']):>14}   = gzip payloads "
        f"{_mb(storage['payload_part'])}"
        f" + {storage['fetched_urls']} requests x {storage['request_median']:.0f} B + {storage['unchanged_urls']} "
        f"revisits x {storage['revisit_median']:.0f} B (medians of Strata's crawl-2 records)"
    )
    add(
        "  Strata crawl-2 WARC bytes by record type: "
        + ", ".join(f"{t} {_mb(v)}" for t, v in sorted(s2["record_bytes"].items()))
    )
    add(
        f"  Strata crawl-2 server bytes / bandwidth floor  {_ratio(s2['server_bytes'], floors['bandwidth_floor'])}"
        f"   (wget {_ratio(w2['server_bytes'], floors['bandwidth_floor'])})"
    )
    add(
        f"  Strata crawl-2 WARC bytes / storage floor      {_ratio(s2['warc_bytes'], storage['storage_floor'])}"
        f"   (wget {_ratio(w2['warc_bytes'], storage['storage_floor'])})"
    )
    add("")
    add("targets (issue 2)")
    targets = evaluate(results, floors, storage, checks)
    for name, (ok, text) in targets.items():
        add(f"  [{'met ' if ok else 'MISS'}] {name}: {text}")
    add("")
    add("targets (issue 14; latency floor = requests x latency / connections)")
    for name, (ok, text) in evaluate_cost(results, args.latency, conns).items():
        add(f"  [{'met ' if ok else 'MISS'}] {name}: {text}")
    add("")
    add("correctness of Strata's crawl 2 (its CDXJ against the ground truth of v2)")
    for key, paths in checks["strata"].items():
        add(f"  {key:<20} {len(paths):>5}" + (f"   e.g. {', '.join(paths[:3])}" if paths else ""))
    add("wget's crawl 2 for comparison: " + ", ".join(f"{k} {len(v)}" for k, v in checks["wget"].items()))
    return "\n".join(lines)


def _per(a: float, b: float) -> float:
    return a / b if b else float("inf")


def latency_floor(requests: int, latency: float, connections: int) -> float:
    """The wall time of ``requests`` answers ``latency`` apart on each of ``connections``."""
    return requests * latency / max(connections, 1)


def evaluate_cost(results: dict, latency: float, conns: int) -> dict:
    """Issue 14's harvest targets: CPU against wget's, crawl 2's CPU a request against crawl 1's,
    crawl 2's wall time against its latency floor."""
    s1, w1, s2, w2 = (results[k] for k in (("strata", 1), ("wget", 1), ("strata", 2), ("wget", 2)))
    c1, c2 = _per(s1["cpu"], w1["cpu"]), _per(s2["cpu"], w2["cpu"])
    per = _per(_per(s2["cpu"], s2["requests"]), _per(s1["cpu"], s1["requests"]))
    floor2 = _per(s2["wall"], latency_floor(s2["requests"], latency, conns))
    return {
        "crawl-1 CPU <= 1.0 x wget": (c1 <= 1.0, f"{c1:.3f} ({s1['cpu']:.2f} s vs {w1['cpu']:.2f} s)"),
        "crawl-2 CPU <= 1.0 x wget": (c2 <= 1.0, f"{c2:.3f} ({s2['cpu']:.2f} s vs {w2['cpu']:.2f} s)"),
        "crawl-2 CPU a request <= 0.5 x crawl 1's": (per <= 0.5, f"{per:.3f}"),
        "crawl-2 wall <= 1.25 x latency floor": (floor2 <= 1.25, f"{floor2:.3f}"),
    }


def evaluate(results: dict, floors: dict, storage: dict, checks: dict) -> dict:
    s1, w1, s2, w2 = (results[k] for k in (("strata", 1), ("wget", 1), ("strata", 2), ("wget", 2)))

    def div(a: float, b: float) -> float:
        return a / b if b else float("inf")

    bw = div(s2["server_bytes"], floors["bandwidth_floor"])
    st = div(s2["warc_bytes"], storage["storage_floor"])
    r1, r2 = div(s1["wall"], w1["wall"]), div(s2["wall"], w2["wall"])
    rss = max(s1["maxrss"], s2["maxrss"])
    bad = sum(len(v) for k, v in checks["strata"].items() if k != "stored_again")
    return {
        "crawl-2 server bytes <= 1.05 x bandwidth floor": (bw <= TARGETS["bandwidth"], f"{bw:.3f}"),
        "crawl-2 WARC bytes <= 1.05 x storage floor": (st <= TARGETS["storage"], f"{st:.3f}"),
        "crawl-1 wall time <= 0.5 x wget": (
            r1 <= TARGETS["wall1"],
            f"{r1:.3f} ({s1['wall']:.1f} s vs {w1['wall']:.1f} s)",
        ),
        "crawl-2 wall time <= 0.3 x wget": (
            r2 <= TARGETS["wall2"],
            f"{r2:.3f} ({s2['wall']:.1f} s vs {w2['wall']:.1f} s)",
        ),
        "peak RSS < 300 MB": (rss < TARGETS["rss"], _mb(rss)),
        "every v2 URL captured right in crawl 2": (bad == 0, f"{bad} problems"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/harvest_bench.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the small site (preset quick)")
    parser.add_argument("--preset", default=None, help="sitegen preset: quick, issue2 (default), govcn, 100k")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.005, help="seconds before each response (default 5 ms)")
    parser.add_argument("--concurrency", type=int, default=4, help="Strata's connections (issue 2 allows up to 4)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed for each crawl")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default bench/out/harvest-...)")
    parser.add_argument(
        "--fulltext",
        action="store_true",
        help="let Strata update its full-text index after each run (job setting fulltext)",
    )
    parser.add_argument(
        "--strata", default=None, help="command to run instead of the venv's `strata` (e.g. a patched build to compare)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the WARCs and collections afterwards")
    parser.add_argument(
        "--py-spy",
        action="store_true",
        help="profile Strata with py-spy (pip install py-spy into the venv); slows it down",
    )
    args = parser.parse_args(argv)
    args.preset = args.preset or ("quick" if args.quick else "issue2")
    wget = shutil.which("wget")
    if not wget:
        parser.error("wget not found on PATH: install Debian's wget (apt-get install wget)")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or BENCH_DIR / "out" / f"harvest-{args.preset}-{stamp}"
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=False)

    compile_project()
    t0 = time.monotonic()
    site = GeneratedSite(SiteSpec.preset(args.preset, seed=args.seed))
    site_stats = site.stats()  # generates (and caches) every body of both versions
    print(
        f"site generated in {time.monotonic() - t0:.1f} s: v1 {site_stats['urls_v1']} URLs, "
        f"v2 {site_stats['urls_v2']} URLs -> {out}",
        flush=True,
    )

    results: dict = {}
    with SiteServer(site, 1, latency=args.latency) as server:
        for crawl in (1, 2):
            server.version = crawl
            for tool in ("strata", "wget"):
                print(f"crawl {crawl}: {tool} ...", end=" ", flush=True)
                results[tool, crawl] = run_tool(tool, crawl, server, out, args, wget)
                r = results[tool, crawl]
                print(f"{r['wall']:.1f} s, {r['requests']} requests, {_mb(r['server_bytes'])}", flush=True)
        floors = measure_floors(site, server, time.monotonic() + 600)
        base = server.base_url
    storage = storage_floor(site, floors, results["strata", 2]["_stats"])
    checks = {
        "strata": check_strata(site, out, base, results["strata", 2]["warc_files"]),
        "wget": check_wget(site, base, results["wget", 2]["_stats"]),
    }
    text = table(results, floors, storage, checks, site_stats, args, args.concurrency)
    print()
    print(text)
    (out / "report.txt").write_text(text + "\n")
    dump = {
        f"{tool}-crawl{crawl}": {k: v for k, v in r.items() if not k.startswith("_")}
        for (tool, crawl), r in results.items()
    }
    dump.update(
        floors=floors,
        storage=storage,
        site=site_stats,
        spec=vars(site.spec),
        checks=checks,
        targets={k: {"met": ok, "value": v} for k, (ok, v) in evaluate(results, floors, storage, checks).items()},
        cost_targets={
            k: {"met": ok, "value": v} for k, (ok, v) in evaluate_cost(results, args.latency, args.concurrency).items()
        },
        args={k: str(v) for k, v in vars(args).items()},
    )
    (out / "results.json").write_text(json.dumps(dump, indent=2, default=str) + "\n")
    if not args.keep:
        shutil.rmtree(out / "strata", ignore_errors=True)
        shutil.rmtree(out / "wget", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
