"""Issue 3's benchmark: the NLC paper's table (full vs incremental harvests) on a generated gov.cn-shaped site.

One invocation generates the site (``bench/sitegen.py``, preset ``govcn``), serves it on 127.0.0.1
with a few ms of latency per response, and runs Strata as a fresh, measured child process five times:

1. ``full-v1``: full harvest of v1, the baseline collection (copied after the run, so every later
   incremental run starts from the same state);
2. ``full-v2``: full harvest of v2 into a fresh collection (the old way);
3. ``(a)``: incremental harvest of v2 from the baseline, every known URL rechecked conditionally
   (``recheck_all``), soft changes stored (lossless);
4. ``(b)``: incremental harvest of v2 with the index/content-page strategy (page patterns, noise
   selectors, soft changes not stored, deletions from vanished links, adaptive intervals);
5. ``(a')``: as (a) with ``store_soft_changes = false`` (``--no-lossy`` skips it).

It prints, per run, wall time, server requests and bytes, WARC bytes, records by type and peak RSS;
the savings of (a), (a') and (b) against the full harvest of v2 beside the paper's; the floors
from the generator's ground truth; a URL-by-URL check of every run; and which of issue 3's goals
are met.

    .venv/bin/python bench/strategy_bench.py            # preset govcn: 9,700 / 10,700 URLs, ~15 min
    .venv/bin/python bench/strategy_bench.py --quick    # 1,500 articles in 6 sections, ~3 min

Output (the table, and every figure as JSON) goes to ``bench/out/strategy-<preset>-<time>/``.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`

from bench.common import RawClient, b32_sha1, median, run_measured, scan_warcs, validators  # noqa: E402
from bench.harvest_bench import code_version  # noqa: E402
from bench.sitegen import (  # noqa: E402
    CONTENT_PATTERNS,
    INDEX_PATTERNS,
    NOISE_SELECTORS,
    VERSION_DATES,
    GeneratedSite,
    SiteSpec,
)
from demo.site_server import SiteServer  # noqa: E402
from harvester.schedule import due_at, parse_iso  # noqa: E402
from strata.settings import parse_seconds  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
COLLECTION = "govcn"
JOB = "bench"
ACCEPT_ENCODING = "gzip, deflate"  # what Strata sends; the floors assume a client that accepts gzip
PAPER = (  # the NLC paper's incremental runs against a full harvest
    ("paper, gov.cn (8,082 pages; incremental 1,820)", -0.83, -0.93),
    ("paper, mct.gov.cn", -0.71, -0.90),
)
GOAL_FLOOR = 1.05  # (a): within 5% of the storage and bandwidth floors
GOAL_TIME = -0.83  # (b): at least the paper's time saving against the full harvest of v2
FILE_KINDS = ("image", "pdf")


# -- runs ------------------------------------------------------------------------------------------


def toml_value(value) -> str:
    """JSON's string escapes are valid in TOML basic strings, so json.dumps spells strings for both."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def base_job(seed: str, concurrency: int) -> dict:
    """What every run shares: the site's page kinds and noise, no politeness delay, no full-text index."""
    return {
        "seeds": [seed],
        "depth": 100,
        "delay": 0.0,
        "concurrency": concurrency,
        "fulltext": False,
        "index_patterns": list(INDEX_PATTERNS),
        "content_patterns": list(CONTENT_PATTERNS),
        "noise_selectors": list(NOISE_SELECTORS),
    }


def variants(args) -> list[tuple[str, int, str, dict]]:
    """(name, site version, mode, job settings on top of the base job)."""
    out = [
        ("full-v1", 1, "full", {}),
        ("full-v2", 2, "full", {}),
        ("(a)", 2, "incremental", {"recheck_all": True, "store_soft_changes": True}),
        (
            "(b)",
            2,
            "incremental",
            {
                "store_soft_changes": False,
                "check_deleted_links": True,
                "min_interval": args.min_interval,
                "max_interval": args.max_interval,
            },
        ),
    ]
    if not args.no_lossy:
        out.append(("(a')", 2, "incremental", {"recheck_all": True, "store_soft_changes": False}))
    return out


def slug(name: str) -> str:
    return name.strip("()").replace("'", "-lossy")


def run_strata(name: str, mode: str, job: dict, root: Path, server: SiteServer, out: Path, args) -> dict:
    jobs = root / COLLECTION / "jobs"
    jobs.mkdir(parents=True, exist_ok=True)
    (jobs / f"{JOB}.toml").write_text("".join(f"{k} = {toml_value(v)}\n" for k, v in job.items()))
    exe = str(Path(sys.executable).parent / "strata")
    cmd = [exe, "harvest", COLLECTION, "--job", JOB, "--mode", mode, "--json", "--root", str(root)]
    server.reset_counters()
    load_before = os.getloadavg()[0]
    stdout, stderr = out / f"{slug(name)}.out", out / f"{slug(name)}.err"
    m = run_measured(cmd, args.timeout, stdout, stderr)
    text = stdout.read_text(errors="replace")
    report = next((json.loads(line) for line in reversed(text.splitlines()) if line.startswith("{")), {})
    warcs = [root / COLLECTION / "archive" / f for f in report.get("warc_files", [])]
    stats = scan_warcs([w for w in warcs if w.exists()])
    if m.returncode != 0 or m.timed_out or not report:
        print(
            f"!! {name} exited {m.returncode}{' (timed out)' if m.timed_out else ''}:\n"
            f"{stderr.read_text(errors='replace')[-2000:]}",
            file=sys.stderr,
        )
    span = 0.0
    if report.get("started") and report.get("finished"):
        span = (parse_iso(report["finished"]) - parse_iso(report["started"])).total_seconds()
    return {
        "name": name,
        "mode": mode,
        "job": job,
        "root": root,
        "returncode": m.returncode,
        "timed_out": m.timed_out,
        "command": "strata " + " ".join(cmd[1:]).replace(str(root), f"<out>/{root.name}"),
        "wall": m.wall,
        "span": span,
        "maxrss": m.maxrss,
        "requests": server.request_count,
        "server_bytes": server.bytes_sent,
        "connections": server.connection_count,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "report": report,
        "warc_bytes": stats.bytes,
        "records": dict(stats.records),
        "record_bytes": {k: sum(v) for k, v in stats.record_bytes.items()},
        "record_median": {k: median(v) for k, v in stats.record_bytes.items()},
    }


# -- what Strata recorded, URL by URL --------------------------------------------------------------


def read_state(root: Path, run_id: str, base: str) -> dict:
    """The run's captures and checks, and every URL row, from the collection's harvest database
    (read only: SELECTs on a closed collection)."""
    conn = sqlite3.connect(str(root / COLLECTION / "strata" / "harvest.sqlite"))
    conn.row_factory = sqlite3.Row
    path = lambda url: url[len(base) :] if url.startswith(base) else url  # noqa: E731
    try:
        captures = {}
        for r in conn.execute(
            "SELECT url, record_type, class, status, digest FROM captures WHERE run_id=? ORDER BY id", (run_id,)
        ):
            captures[path(r["url"])] = dict(r)  # the last capture of a URL in the run wins
        checks: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
        for r in conn.execute("SELECT url, outcome, reason FROM checks WHERE run_id=?", (run_id,)):
            checks[path(r["url"])].append((r["outcome"], r["reason"]))
        urls = {path(r["url"]): dict(r) for r in conn.execute("SELECT * FROM urls")}
    finally:
        conn.close()
    return {"captures": captures, "checks": dict(checks), "urls": urls}


CHECK_LABELS = {
    "soft": "soft, not stored",
    "deleted": "vanished (deleted)",
    "not_due": "not due",
    "not_followed": "not followed",
    "skipped": "robots",
    "error": "error",
}


def outcome(state: dict, path: str) -> str:
    """One label for what a run did with a path: its capture's class, else its check, else nothing."""
    cap = state["captures"].get(path)
    if cap:
        return cap["class"] + ("" if cap["record_type"] == "response" else " (revisit)")
    outcomes = [o for o, _ in state["checks"].get(path, [])]
    for key in ("soft", "deleted", "not_due", "not_followed", "skipped", "error"):
        if key in outcomes:
            return CHECK_LABELS[key]
    return "not looked at"


def stored(state: dict, path: str) -> bool:
    cap = state["captures"].get(path)
    return bool(cap and cap["record_type"] == "response")


def group(t) -> str:
    if t.page:
        return f"{t.page} pages"
    return "images, PDFs" if t.kind in FILE_KINDS else "static, robots"


def confusion(truth: dict, state: dict) -> dict:
    """group -> truth change -> Strata's outcome -> count."""
    out: dict = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    for path, t in truth.items():
        out[group(t)][t.change][outcome(state, path)] += 1
    return {g: {c: dict(v) for c, v in by.items()} for g, by in out.items()}


def check_full(site: GeneratedSite, version: int, state: dict) -> dict:
    """A full harvest must hold every path live in its version, with the payload digest of what was sent."""
    problems: dict[str, list[str]] = {"missing": [], "wrong_digest": []}
    for path, t in site.truth().items():
        if not t.in_version(version):
            continue
        cap = state["captures"].get(path)
        if not cap or cap["status"] != 200:
            problems["missing"].append(path)
        elif cap["digest"] != "sha1:" + b32_sha1(site.wire_body(version, path)):
            problems["wrong_digest"].append(path)
    return problems


def check_recheck_all(site: GeneratedSite, state: dict, lossless: bool) -> dict:
    """(a) and (a'): every new, changed and deleted URL captured; unchanged ones not stored again."""
    truth = site.truth()
    p: dict[str, list[str]] = {
        k: []
        for k in (
            "new missed",
            "changed missed",
            "changed not stored (classed soft)",
            "deleted missed",
            "soft not stored",
            "soft stored",
            "unchanged stored again",
            "not looked at",
            "wrong digest",
        )
    }
    for path, t in truth.items():
        cap = state["captures"].get(path)
        label = outcome(state, path)
        if label == "not looked at":
            p["not looked at"].append(path)
        if t.change == "new" and not stored(state, path):
            p["new missed"].append(path)
        elif t.change == "changed" and not stored(state, path):
            p["changed not stored (classed soft)" if label == "soft, not stored" else "changed missed"].append(path)
        elif t.change == "deleted" and not (cap and cap["status"] in (404, 410)):
            p["deleted missed"].append(path)
        elif t.change == "soft":
            if lossless and not stored(state, path):
                p["soft not stored"].append(path)
            if not lossless and stored(state, path):
                p["soft stored"].append(path)  # costs storage, loses nothing
        elif t.change == "unchanged" and stored(state, path):
            p["unchanged stored again"].append(path)
        if cap and t.in_version(2) and cap["status"] in (200, 304):
            if cap["digest"] != "sha1:" + b32_sha1(site.wire_body(2, path)):
                p["wrong digest"].append(path)
    return p


def check_strategy(site: GeneratedSite, state: dict, run_started: datetime, args) -> dict:
    """(b): new URLs caught, edits to older content pages caught, deletions recorded (and wrongly
    recorded), and when the adaptive intervals bring back the pages skipped as not due."""
    truth = site.truth()
    min_s, max_s = parse_seconds(args.min_interval), parse_seconds(args.max_interval)
    new_missed = collections.defaultdict(list)
    new_total = collections.Counter()
    edits = {"changed": collections.Counter(), "soft": collections.Counter()}
    deleted = {"recorded": [], "missed": [], "false": []}
    skipped_due: list[tuple[str, str, datetime | None, float]] = []
    for path, t in truth.items():
        label = outcome(state, path)
        if t.change == "new":
            key = "index pages" if t.page == "index" else ("content pages" if t.page == "content" else t.kind)
            new_total[key] += 1
            if not (stored(state, path) or label.startswith("new")):
                new_missed[key].append(path)
        if t.page == "content" and t.change in edits:
            caught = state["captures"].get(path) is not None or label == "soft, not stored"
            edits[t.change]["caught" if caught else label] += 1
            if not caught:
                row = state["urls"].get(path)
                when, _rate = due_at(row, min_s, max_s) if row else (None, 0.0)
                skipped_due.append((path, t.change, when, row.get("checks") if row else 0))
        recorded = label in ("deleted", "vanished (deleted)")
        if t.page == "content" and t.change == "deleted":
            deleted["recorded" if recorded else "missed"].append(path)
        elif recorded:
            deleted["false"].append(path)
    reasons = collections.Counter(
        outcome(state, p)
        for p, t in truth.items()
        if t.page == "content" and t.change in ("unchanged", "changed", "soft")
    )
    gap = VERSION_DATES[2] - VERSION_DATES[1]
    dues = [w for _, _, w, _ in skipped_due if w is not None]
    after = collections.Counter()
    for w in dues:
        days = (w - run_started).total_seconds() / 86400
        after[
            "<= 1 day"
            if days <= 1
            else "<= 7 days"
            if days <= 7
            else "<= 30 days"
            if days <= 30
            else "<= 90 days"
            if days <= 90
            else "> 90 days"
        ] += 1
    # Were the runs a quarter apart, as the site's versions are: which of the skipped edits would be due?
    last = {p: state["urls"][p]["last_checked"] for p, *_ in skipped_due if p in state["urls"]}
    due_in_gap = sum(
        1 for p, _, w, _ in skipped_due if w is not None and p in last and last[p] and w - parse_iso(last[p]) <= gap
    )
    # The same for every older content page: after one check, the interval is min_interval.
    old_due = collections.Counter()
    for p, t in truth.items():
        row = state["urls"].get(p)
        if t.page == "content" and t.in_version(1) and row and row.get("last_checked"):
            when, _rate = due_at(row, min_s, max_s)
            old_due["due" if when - parse_iso(row["last_checked"]) <= gap else "not due"] += 1
    index_v2 = [p for p, t in truth.items() if t.page == "index" and t.in_version(2)]
    # Where the misses sit in v2's listings, and which listing pages the run read (the evidence for
    # how paging stopped and for deletions recorded from links that only moved).
    position = {
        a.path: (s, i // site.spec.per_page + 1)
        for (v, s), arts in site.section_articles.items()
        if v == 2
        for i, a in enumerate(arts)
    }
    listings_read = collections.Counter(p.rsplit("/", 1)[1] for p in state["captures"] if "/list/" in p)
    missed_pages = collections.Counter(position[p][1] for p in new_missed.get("content pages", ()) if p in position)
    false_where = collections.Counter(
        "on a listing page read"
        if site.listing_path(*position[p]) in state["captures"]
        else "on a listing page not read"
        for p in deleted["false"]
        if p in position
    )
    return {
        "listing_pages_read": dict(listings_read),
        "new_missed_listing_page": dict(missed_pages),
        "false_deleted_now": dict(false_where),
        "new_total": dict(new_total),
        "new_missed": {k: v for k, v in new_missed.items()},
        "edits": {k: dict(v) for k, v in edits.items()},
        "deleted": deleted,
        "old_content_outcomes": dict(reasons),
        "index_pages_read": sum(1 for p in index_v2 if state["captures"].get(p)),
        "index_pages_v2": len(index_v2),
        "skipped_edits": len(skipped_due),
        "skipped_due_last": max(dues).isoformat() if dues else None,
        "skipped_due_first": min(dues).isoformat() if dues else None,
        "skipped_due_after_run": dict(after),
        "skipped_never_checked": sum(1 for *_, w, _ in skipped_due if w is None),
        "skipped_intervals_days": dict(
            collections.Counter(
                round((w - parse_iso(last[p])).total_seconds() / 86400, 1)
                for p, _, w, _ in skipped_due
                if w is not None and last.get(p)
            )
        ),
        "due_within_site_gap": due_in_gap,
        "site_gap_days": gap.days,
        "old_content_due_after_gap": dict(old_due),
        "skipped_examples": [p for p, *_ in skipped_due[:3]],
    }


# -- floors from the ground truth ------------------------------------------------------------------


def measure_paths(site: GeneratedSite, server: SiteServer, deadline: float) -> dict:
    """Ask the server (v2, no latency) what an ideal client must receive, path by path, and sum it
    by change kind: body bytes of 200s, wire bytes of 404s and 304s, gzip of what would be stored."""
    saved_latency, server.latency = server.latency, 0.0
    server.version = 2
    kinds: dict[str, dict] = {
        k: {"count": 0, "body": 0, "head": 0, "wire": 0, "gz": 0} for k in ("new", "changed", "soft", "deleted")
    }
    not_modified: list[int] = []
    unvalidated = {"count": 0, "wire": 0}
    try:
        with RawClient(server.port) as client:
            for path, t in site.truth().items():
                if time.monotonic() > deadline:
                    raise TimeoutError("floor measurement took too long")
                headers = {"Accept-Encoding": ACCEPT_ENCODING}
                if t.change == "unchanged":
                    headers.update(validators(site.resolve(2, path)))
                    r = client.get(path, headers)
                    if r.status == 304:
                        not_modified.append(r.wire_bytes)
                    else:  # no validators: a recheck costs the whole response
                        unvalidated["count"] += 1
                        unvalidated["wire"] += r.wire_bytes
                    continue
                r = client.get(path, headers)
                k = kinds[t.change]
                k["count"] += 1
                k["body"] += r.body_bytes
                k["head"] += r.head_bytes
                k["wire"] += r.wire_bytes
                k["gz"] += len(gzip.compress(r.body, 9))  # the WARC writer's gzip member around the payload
    finally:
        server.latency = saved_latency
    return {
        "kinds": kinds,
        "not_modified_count": len(not_modified),
        "not_modified_bytes": sum(not_modified),
        "not_modified_median": statistics.median(not_modified) if not_modified else 0,
        "unvalidated_count": unvalidated["count"],
        "unvalidated_bytes": unvalidated["wire"],
    }


def floors(measured: dict, truth: dict, medians: dict) -> dict:
    """Issue 3's floors for an incremental run over v2 that looks at every URL once.

    storage: gzip payloads of new, changed, noise-only and deleted (404) URLs, one request record per
    URL fetched and one revisit record per unchanged URL (at the medians of Strata's own records);
    "no soft": the same with noise-only pages not written at all (no payload, no request record).
    bandwidth: bodies of new, changed and noise-only URLs, the 404s, a 304 per unchanged URL (the
    median 304 for those the server sends no validators for); "reachable": those in full."""
    k = measured["kinds"]
    n_paths, n_unchanged = len(truth), sum(t.change == "unchanged" for t in truth.values())
    req, rev = medians.get("request", 0), medians.get("revisit", 0)
    payloads = sum(k[c]["gz"] for c in ("new", "changed", "soft", "deleted"))
    storage = payloads + n_paths * req + n_unchanged * rev
    storage_no_soft = storage - k["soft"]["gz"] - k["soft"]["count"] * req
    bodies = sum(k[c]["body"] for c in ("new", "changed", "soft")) + k["deleted"]["wire"]
    bandwidth = (
        bodies + measured["not_modified_bytes"] + measured["not_modified_median"] * measured["unvalidated_count"]
    )
    return {
        "storage": storage,
        "storage_no_soft": storage_no_soft,
        "bandwidth": bandwidth,
        "bandwidth_reachable": bodies + measured["not_modified_bytes"] + measured["unvalidated_bytes"],
        "payload_gz": payloads,
        "soft_gz": k["soft"]["gz"],
        "request_median": req,
        "revisit_median": rev,
        "paths": n_paths,
        "unchanged": n_unchanged,
        "bodies": bodies,
    }


def composition(truth: dict, full2_warc: int, fl: dict) -> dict:
    """How much of v2 is unchanged (and how much of that is large files): the bound on storage savings."""
    parts = collections.Counter()
    for t in truth.values():
        if t.size_v2 is None:
            continue
        what = "files" if t.kind in FILE_KINDS else ("html" if t.page else "static")
        parts[f"{what} {'unchanged' if t.change == 'unchanged' else 'new/changed/soft'}"] += t.size_v2
    total = sum(parts.values())
    return {
        "v2_bytes": total,
        "parts": dict(parts),
        "unchanged_share": sum(v for k, v in parts.items() if k.endswith(" unchanged")) / total if total else 0,
        "unchanged_files_share": parts["files unchanged"] / total if total else 0,
        "best_lossless_saving": fl["storage"] / full2_warc - 1 if full2_warc else 0,
        "best_no_soft_saving": fl["storage_no_soft"] / full2_warc - 1 if full2_warc else 0,
    }


# -- the report -----------------------------------------------------------------------------------


def _mb(n: float) -> str:
    return f"{n / 1e6:,.2f} MB"


def _pct(a: float, b: float) -> str:
    return f"{(a / b - 1) * 100:+.1f}%" if b else "-"


def table(
    results: dict, fl: dict, comp: dict, checks: dict, site_stats: dict, args, spec_text: str
) -> tuple[str, dict]:
    lines: list[str] = []
    add = lines.append
    names = list(results)
    add("command: .venv/bin/python bench/strategy_bench.py " + " ".join(args.argv))
    add(
        f"code: {code_version()}; {spec_text}; latency {args.latency * 1000:g} ms per response; Strata concurrency "
        f"{args.concurrency}, delay 0, full-text indexing off; {os.cpu_count()} CPUs (site server in this process)"
    )
    add(
        f"v1: {site_stats['urls_v1']} URLs ({site_stats['html_v1']} HTML pages), {_mb(site_stats['bytes_v1'])}; "
        f"v2: {site_stats['urls_v2']} URLs ({site_stats['html_v2']} HTML pages), {_mb(site_stats['bytes_v2'])}"
    )
    add(
        "changes v1->v2, HTML pages: "
        + ", ".join(f"{k} {v}" for k, v in site_stats["html_changes"].items())
        + "; all URLs: "
        + ", ".join(f"{k} {v}" for k, v in site_stats["changes"].items())
    )
    add("")
    add(
        "runs: full-v1 = baseline (copied before each incremental run); full-v2 = fresh collection; (a) recheck_all, "
        "soft stored; (a') recheck_all, soft not stored;"
    )
    add(
        f"      (b) index/content strategy: soft not stored, check_deleted_links, min_interval {args.min_interval}, "
        f"max_interval {args.max_interval}"
    )
    add(f"{'':<26}" + "".join(f"{n:>14}" for n in names))
    rtypes = sorted({t for r in results.values() for t in r["records"]})
    rows = [
        ("wall time (s)", "wall", lambda v: f"{v:,.1f}"),
        ("  Strata's own span (s)", "span", lambda v: f"{v:,.1f}"),
        ("server requests", "requests", lambda v: f"{v:,}"),
        ("server bytes sent", "server_bytes", _mb),
        ("WARC bytes", "warc_bytes", _mb),
        ("peak RSS", "maxrss", _mb),
        ("wall / latency floor", "floor_ratio", lambda v: f"{v:.2f}"),
        ("load avg before/after", None, None),
    ]
    for r in results.values():  # the floor: every request answered `latency` apart on each connection
        floor = r["requests"] * args.latency / max(args.concurrency, 1)
        r["floor_ratio"] = r["wall"] / floor if floor else float("inf")
    for label, key, fmt in rows:
        if key is None:
            add(f"{label:<26}" + "".join(f"{r['load_before']:>8.2f}/{r['load_after']:<5.2f}" for r in results.values()))
            continue
        add(f"{label:<26}" + "".join(f"{fmt(r[key]):>14}" for r in results.values()))
        if key == "warc_bytes":
            for t in rtypes:
                add(f"{'  records: ' + t:<26}" + "".join(f"{r['records'].get(t, 0):>14,}" for r in results.values()))
    for k in ("urls_fetched", "new", "changed", "soft", "unchanged", "not_modified", "deleted", "skipped", "errors"):
        add(f"{'  report: ' + k:<26}" + "".join(f"{r['report'].get(k, 0):>14,}" for r in results.values()))

    full2 = results.get("full-v2")
    add("")
    add("savings against the full harvest of v2 (negative = less)")
    add(f"{'':<50}{'time':>9}{'storage':>9}{'requests':>10}{'bandwidth':>10}")
    for n in names:
        if n.startswith("full") or not full2:
            continue
        r = results[n]
        add(
            f"{'Strata ' + n:<50}{_pct(r['wall'], full2['wall']):>9}{_pct(r['warc_bytes'], full2['warc_bytes']):>9}"
            f"{_pct(r['requests'], full2['requests']):>10}{_pct(r['server_bytes'], full2['server_bytes']):>10}"
        )
    for label, t, s in PAPER:
        add(f"{label:<50}{t * 100:>+8.0f}%{s * 100:>+8.0f}%{'':>10}{'':>10}")
    if "(b)" in results:
        b = results["(b)"]
        html_b = sum(1 for c in checks["(b)"]["_captured_html"])
        add(
            f"  (b) fetched {b['report'].get('urls_fetched', 0):,} URLs, {html_b:,} of them HTML pages, of "
            f"{site_stats['html_v2']:,} v2 pages (the paper: 1,820 of 8,082)"
        )

    add("")
    add("floors for an incremental run of v2 (ground truth; records at the medians of (a)'s own)")
    add(
        f"  storage, lossless           {_mb(fl['storage']):>12} = gzip payloads {_mb(fl['payload_gz'])} (noise-only "
        f"{_mb(fl['soft_gz'])}) + {fl['paths']:,} requests x {fl['request_median']:.0f} B + {fl['unchanged']:,} "
        f"revisits x {fl['revisit_median']:.0f} B"
    )
    add(f"  storage, noise-only not kept{_mb(fl['storage_no_soft']):>12}")
    add(
        f"  bandwidth, all unchanged 304{_mb(fl['bandwidth']):>12} = bodies and 404s {_mb(fl['bodies'])} + "
        f"{fl['m']['not_modified_count']:,} x 304 {_mb(fl['m']['not_modified_bytes'])} + "
        f"{fl['m']['unvalidated_count']:,} unvalidated unchanged at the median 304"
    )
    add(
        f"  bandwidth, reachable here   {_mb(fl['bandwidth_reachable']):>12}   ({fl['m']['unvalidated_count']:,} "
        f"unchanged URLs send no validators: {_mb(fl['m']['unvalidated_bytes'])} in full)"
    )
    ratios = {}
    for n, key_s in (("(a)", "storage"), ("(a')", "storage_no_soft")):
        if n in results:
            r = results[n]
            ratios[n] = {
                "storage": r["warc_bytes"] / fl[key_s],
                "bandwidth": r["server_bytes"] / fl["bandwidth"],
                "bandwidth_reachable": r["server_bytes"] / fl["bandwidth_reachable"],
            }
            soft_note = " (no soft)" if key_s == "storage_no_soft" else ""
            add(
                f"  {n:<5} WARC / storage floor{soft_note} {ratios[n]['storage']:.3f};"
                f" server bytes / bandwidth floor {ratios[n]['bandwidth']:.3f}, / reachable "
                f"{ratios[n]['bandwidth_reachable']:.3f}"
            )
            add(
                "        WARC bytes by record type: "
                + ", ".join(f"{t} {_mb(v)}" for t, v in sorted(r["record_bytes"].items()))
            )

    add("")
    add(
        f"site composition (v2, {_mb(comp['v2_bytes'])} of bodies): "
        + ", ".join(f"{k} {v / comp['v2_bytes'] * 100:.1f}%" for k, v in sorted(comp["parts"].items()))
    )
    add(
        f"  unchanged: {comp['unchanged_share'] * 100:.1f}% of v2 bytes, of which large unchanged files (images, "
        f"PDFs) {comp['unchanged_files_share'] * 100:.1f}%. Best storage saving any incremental run can reach here "
        f"against the full v2 WARCs: lossless {comp['best_lossless_saving'] * 100:+.1f}%, noise-only not kept "
        f"{comp['best_no_soft_saving'] * 100:+.1f}% (the paper: -93%)"
    )

    add("")
    add("URL by URL against the ground truth")
    for n in names:
        c = checks[n]
        if n.startswith("full"):
            add(
                f"  {n}: "
                + ", ".join(f"{k} {len(v)}" for k, v in c["problems"].items())
                + "".join(f"  e.g. {', '.join(v[:3])}" for v in c["problems"].values() if v)
            )
            continue
        add(f"  {n}: " + ", ".join(f"{k} {len(v)}" for k, v in c["problems"].items() if v or "missed" in k))
        for k, v in c["problems"].items():
            if v and ("missed" in k or "not stored" in k or "digest" in k):
                add(f"      {k}: {', '.join(v[:5])}{' ...' if len(v) > 5 else ''}")
        for grp, by in sorted(c["confusion"].items()):
            add(
                f"      {grp}: "
                + "; ".join(
                    f"{chg} {sum(o.values())} -> "
                    + ", ".join(f"{lab} {cnt}" for lab, cnt in sorted(o.items(), key=lambda x: -x[1]))
                    for chg, o in sorted(by.items())
                )
            )
    if "(b)" in checks:
        s = checks["(b)"]["strategy"]
        add("  (b) in detail:")
        add(
            "      new URLs: "
            + ", ".join(
                f"{k} {s['new_total'][k] - len(s['new_missed'].get(k, []))}/{s['new_total'][k]}"
                for k in sorted(s["new_total"])
            )
        )
        add(
            "      listing pages read, by file name: "
            + ", ".join(f"{k} x{v}" for k, v in sorted(s["listing_pages_read"].items()))
            + "; missed new content pages by their v2 listing page number: "
            + (", ".join(f"page {k} x{v}" for k, v in sorted(s["new_missed_listing_page"].items())) or "none")
        )
        for k, v in sorted(s["new_missed"].items()):
            add(f"      new {k} missed: {', '.join(v[:5])}{' ...' if len(v) > 5 else ''}")
        for chg, o in s["edits"].items():
            total = sum(o.values())
            add(
                f"      edits to older content pages ({chg}): caught {o.get('caught', 0)}/{total} "
                f"({o.get('caught', 0) / total * 100 if total else 0:.1f}%); the rest: "
                + ", ".join(f"{k} {v}" for k, v in o.items() if k != "caught")
            )
        add(
            "      older content pages (unchanged, changed, soft): "
            + ", ".join(f"{k} {v}" for k, v in sorted(s["old_content_outcomes"].items(), key=lambda x: -x[1]))
        )
        add(f"      index pages read {s['index_pages_read']}/{s['index_pages_v2']} of v2's")
        d = s["deleted"]
        add(
            f"      deleted content pages recorded {len(d['recorded'])}/{len(d['recorded']) + len(d['missed'])}; "
            f"live pages wrongly recorded deleted: {len(d['false'])}"
            + (f" e.g. {', '.join(d['false'][:3])}" if d["false"] else "")
            + (
                "; in v2 they are " + ", ".join(f"{k} x{v}" for k, v in s["false_deleted_now"].items())
                if s["false_deleted_now"]
                else ""
            )
        )
        add(
            f"      skipped edits: {s['skipped_edits']}; due (harvest state, due_at): first {s['skipped_due_first']}, "
            f"all by {s['skipped_due_last']}; after this run: "
            + ", ".join(f"{k} {v}" for k, v in sorted(s["skipped_due_after_run"].items()))
        )
        add(
            "      their recheck intervals (days): "
            + ", ".join(f"{k:g} d x{v}" for k, v in sorted(s["skipped_intervals_days"].items()))
        )
        add(
            f"      had the runs been {s['site_gap_days']} days apart (as v1 and v2 are), {s['due_within_site_gap']}"
            f" of the {s['skipped_edits']} skipped edits would have been due, and of all older content pages: "
            + ", ".join(f"{k} {v}" for k, v in sorted(s["old_content_due_after_gap"].items()))
        )
        if checks["(b)"].get("not_due_example"):
            add(f"      Strata's reason, e.g.: {checks['(b)']['not_due_example']}")

    goals = evaluate(results, ratios, checks)
    if "(a)" in results and "full-v2" in results:  # issue 14: a lossless incremental run near its floor
        a, full2 = results["(a)"], results["full-v2"]
        goals["(a) wall <= 1.25 x its latency floor (issue 14)"] = (
            a["floor_ratio"] <= 1.25,
            f"{a['floor_ratio']:.3f}",
        )
        goals["(a) wall < the full harvest of v2 (issue 14)"] = (
            a["wall"] < full2["wall"],
            f"{a['wall']:.1f} s vs {full2['wall']:.1f} s",
        )
    add("")
    add("goals (issue 3)")
    for name, (ok, text) in goals.items():
        add(f"  [{'met ' if ok else 'MISS'}] {name}: {text}")
    return "\n".join(lines), goals


def evaluate(results: dict, ratios: dict, checks: dict) -> dict:
    goals = {}
    if "(a)" in ratios:
        r = ratios["(a)"]
        goals["(a) WARC bytes <= 1.05 x storage floor"] = (r["storage"] <= GOAL_FLOOR, f"{r['storage']:.3f}")
        goals["(a) server bytes <= 1.05 x bandwidth floor (all unchanged 304)"] = (
            r["bandwidth"] <= GOAL_FLOOR,
            f"{r['bandwidth']:.3f}",
        )
        goals["(a) server bytes <= 1.05 x floor reachable with this server's validators"] = (
            r["bandwidth_reachable"] <= GOAL_FLOOR,
            f"{r['bandwidth_reachable']:.3f}",
        )
    if "(a')" in ratios:
        r = ratios["(a')"]
        goals["(a') WARC bytes <= 1.05 x storage floor without noise-only pages"] = (
            r["storage"] <= GOAL_FLOOR,
            f"{r['storage']:.3f}",
        )
    for n in ("(a)", "(a')"):
        if n in checks:
            p = checks[n]["problems"]
            bad = sum(
                len(p[k])
                for k in (
                    "new missed",
                    "changed missed",
                    "changed not stored (classed soft)",
                    "deleted missed",
                    "wrong digest",
                )
            )
            goals[f"{n} captures 100% of new, changed and deleted URLs"] = (bad == 0, f"{bad} misses")
    full2 = results.get("full-v2")
    if "(b)" in results and full2:
        saving = results["(b)"]["wall"] / full2["wall"] - 1
        goals["(b) time <= -83% against the full harvest of v2"] = (
            saving <= GOAL_TIME,
            f"{saving * 100:+.1f}% ({results['(b)']['wall']:.1f} s vs {full2['wall']:.1f} s)",
        )
        s = checks["(b)"]["strategy"]
        missed = sum(len(v) for v in s["new_missed"].values())
        goals["(b) captures 100% of new URLs"] = (
            missed == 0,
            f"{missed} of {sum(s['new_total'].values())} missed: "
            + ", ".join(f"{k} {len(v)}" for k, v in s["new_missed"].items()),
        )
    return goals


# -- main -----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python bench/strategy_bench.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller gov.cn site: 1,500 articles in 6 sections")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--latency", type=float, default=0.005, help="seconds before each response (default 5 ms)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--min-interval", default="7d", help="(b)'s min_interval (default 7d)")
    parser.add_argument("--max-interval", default="90d", help="(b)'s max_interval (default 90d)")
    parser.add_argument("--no-lossy", action="store_true", help="skip run (a') (recheck_all, soft not stored)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed for each run")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default bench/out/strategy-...)")
    parser.add_argument("--keep", action="store_true", help="keep the collections afterwards (about 1 GB for govcn)")
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else argv
    preset = "govcn-quick" if args.quick else "govcn"
    spec = SiteSpec.preset("govcn", seed=args.seed, **(dict(articles=1500, sections=6) if args.quick else {}))
    spec_text = (
        f"site preset govcn{' with articles=1500, sections=6 (--quick)' if args.quick else ''}, seed {args.seed}"
    )
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = (args.out or BENCH_DIR / "out" / f"strategy-{preset}-{stamp}").resolve()
    out.mkdir(parents=True, exist_ok=False)

    t0 = time.monotonic()
    site = GeneratedSite(spec)
    site_stats = site.stats()  # generates (and caches) every body of both versions
    truth = site.truth()
    print(
        f"site generated in {time.monotonic() - t0:.1f} s: v1 {site_stats['urls_v1']} URLs, v2 "
        f"{site_stats['urls_v2']} URLs; load average {os.getloadavg()[0]:.2f} -> {out}",
        flush=True,
    )

    results: dict[str, dict] = {}
    states: dict[str, dict] = {}
    started: dict[str, datetime] = {}
    baseline = out / "baseline"
    with SiteServer(site, 1, latency=args.latency) as server:
        base = server.base_url
        for name, version, mode, extra in variants(args):
            root = out / slug(name)
            if mode == "incremental":
                shutil.copytree(baseline, root / COLLECTION)  # every incremental run starts from v1's state
            server.version = version
            print(f"{name}: {mode} harvest of v{version} ...", end=" ", flush=True)
            started[name] = datetime.now(UTC)
            r = run_strata(name, mode, {**base_job(base + "/", args.concurrency), **extra}, root, server, out, args)
            results[name] = r
            print(
                f"{r['wall']:.1f} s, {r['requests']:,} requests, {_mb(r['server_bytes'])}, WARC "
                f"{_mb(r['warc_bytes'])}, "
                f"load {r['load_after']:.2f}",
                flush=True,
            )
            if r["report"].get("run_id"):
                states[name] = read_state(root, r["report"]["run_id"], base)
            if name == "full-v1":
                shutil.copytree(root / COLLECTION, baseline)
        print("measuring the floors ...", flush=True)
        measured = measure_paths(site, server, time.monotonic() + 900)

    medians = (results.get("(a)") or results["full-v2"])["record_median"]
    fl = floors(measured, truth, medians)
    fl["m"] = measured
    comp = composition(truth, results["full-v2"]["warc_bytes"], fl)
    checks: dict[str, dict] = {}
    for name, state in states.items():
        if name.startswith("full"):
            checks[name] = {"problems": check_full(site, 1 if name == "full-v1" else 2, state)}
            continue
        checks[name] = {
            "confusion": confusion(truth, state),
            "problems": check_recheck_all(site, state, lossless=name == "(a)"),
        }
        if name == "(b)":
            checks[name]["strategy"] = check_strategy(site, state, started[name], args)
            checks[name]["_captured_html"] = [p for p in state["captures"] if truth.get(p) and truth[p].page]
            checks[name]["not_due_example"] = next(
                (reason for v in state["checks"].values() for o, reason in v if o == "not_due"), None
            )
            report = subprocess.run(
                [
                    str(Path(sys.executable).parent / "strata"),
                    "report",
                    COLLECTION,
                    "--root",
                    str(out / slug(name)),
                    "--run",
                    results[name]["report"]["run_id"],
                    "--json",
                ],
                capture_output=True,
                text=True,
                timeout=300,
            )
            (out / "b-report.json").write_text(report.stdout)
    text, goals = table(results, fl, comp, checks, site_stats, args, spec_text)
    print()
    print(text)
    (out / "report.txt").write_text(text + "\n")
    dump = {
        "runs": {n: {k: (str(v) if isinstance(v, Path) else v) for k, v in r.items()} for n, r in results.items()},
        "floors": fl,
        "composition": comp,
        "site": site_stats,
        "spec": vars(spec),
        "checks": {n: {k: v for k, v in c.items() if not k.startswith("_")} for n, c in checks.items()},
        "goals": {k: {"met": ok, "value": v} for k, (ok, v) in goals.items()},
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    (out / "results.json").write_text(json.dumps(dump, indent=2, default=str, ensure_ascii=False) + "\n")
    if not args.keep:
        for name in [*results, "baseline"]:
            shutil.rmtree(out / slug(name), ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
