"""Access-control benchmark (issue 15): replay and search latency with 0, 100 and 10,000 rules.

    .venv/bin/python bench/access_bench.py              # 3 rounds, about two minutes
    .venv/bin/python bench/access_bench.py --quick      # 1 round, fewer requests

One invocation:

1. harvests the sample site (``demo.sample_site``, versions 1 and 2, full text indexed at each run's
   end) into ``bench/out/access/collections/bench`` with Strata's harvester;
2. builds the replay application once (``replay.create_app``) and calls it in-process through its
   WSGI interface (werkzeug's test client: no socket, so the figures are the application's own
   work: Flask, access resolution, pywb's rewriter and warcserver, the rule lookups);
3. copies the collection three times, each with its own ``acl/rules.aclj``: none; 100 rules; 10,000
   rules (two block pages of the bench site that searches find, so search filters documents for
   real; a tenth are on paths of the site that no request asks for; the rest are synthetic prefixes
   on other hosts, some with an embargo); no replayed page is hidden, so every request is answered
   with the status it gets without rules (checked) but passes through the filters;
4. after one untimed pass over everything, each round times ``--replays`` replay requests (pages in
   default and ``id_`` modes, TimeMaps, calendars) and ``--searches`` search API queries against each
   copy, the copies taking turns in blocks of 10 in a shuffled order (other load on the machine hits
   them alike);
5. reports p50 and p95 per rule set and round, the ratio to the no-rule figures of the same round
   (target: at most 1.10), the spread of the ratios over the rounds, and the process's peak RSS.

Output: a table on stdout and every figure as JSON in ``bench/out/access-<time>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from demo.sample_site import serve_sample_site  # noqa: E402
from harvester.job import validate_job  # noqa: E402
from harvester.run import Harvest  # noqa: E402
from index.access.rules import AccessRules, Rule  # noqa: E402
from index.cdx.cdxj import iter_index  # noqa: E402
from index.collection import Collection  # noqa: E402

OUT = REPO / "bench" / "out"
NAME = "bench"
WORDS = ("sample", "news", "article", "report", "mkguide", "documents", "about", "gallery", "kitchen", "home")


def build(root: Path) -> tuple[str, str]:
    """The harvested collection; returns (base URL of the stopped site, last snapshot)."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    snapshot = ""
    with serve_sample_site(1) as site:
        for version in (1, 2):
            site.version = version
            job = validate_job("bench", {"seeds": [site.base_url + "/"], "delay": 0.0, "depth": 6, "timeout": 10.0})
            summary = asyncio.run(Harvest(Collection.open(root, NAME, create=True), job).run())
            assert summary["status"] == "finished", summary
            snapshot = summary["snapshot"]
        return site.base_url, snapshot


HIDDEN = ("/gallery.html", "/kitchen-sink.html")  # blocked in both rule sets: search filters for real


def rules_for_bench(count: int, base_url: str, seed: int = 15) -> list[Rule]:
    """``count`` rules: two hide pages of the bench site (never replayed here, but found by search
    words), a tenth are on paths of it no request asks for, the rest on other hosts."""
    rng = random.Random(seed)
    out = [Rule.new(base_url + path, "block") for path in HIDDEN]
    used = {k for r in out for k in r.keys}
    while len(out) < count:
        if len(out) % 10 == 0:
            prefix = f"{base_url}/withdrawn-{len(out)}/"
        else:
            host = f"h{rng.randint(0, 999)}.example{rng.randint(0, 20)}.gov"
            prefix = f"http://{host}/" + "/".join(f"p{rng.randint(0, 99)}" for _ in range(rng.randint(0, 3)))
            prefix += rng.choice(["", "/", "*", ".html"]) if not prefix.endswith("/") else ""
        access = rng.choice(["block", "exclude", "allow"])
        level = rng.choice([None, "reading-room", "staff"]) if access != "allow" else None
        try:
            rule = Rule.new(prefix, access, level, "1y" if rng.random() < 0.1 and access != "allow" else None)
        except Exception:  # noqa: BLE001 (a generated prefix pywb's canonicalizer folds into another: skip it)
            continue
        if used.intersection(rule.keys):
            continue
        used.update(rule.keys)
        out.append(rule)
    return out


def install(coll_path: Path, rules: list[Rule]) -> None:
    acl = coll_path / "acl"
    if acl.exists():
        shutil.rmtree(acl)
    if not rules:
        return
    acl.mkdir()
    lines = sorted(
        (f"{k} - {json.dumps(d, sort_keys=True)}\n" for r in rules for k, d in r.lines()),
        reverse=True,
    )
    (acl / "rules.aclj").write_text("".join(lines))
    assert len(AccessRules(coll_path).rules()) == len(rules)


def replay_paths(root: Path, snapshot: str) -> list[str]:
    urls = sorted(
        {
            line["url"]
            for line in iter_index(Collection(root, NAME).cdxj_path)
            if line.get("mime", "").startswith("text/html") and line.get("status") == "200"
        }
    )
    paths = []
    urls = [u for u in urls if not u.endswith(HIDDEN)]
    for url in urls:
        paths += [f"/{NAME}/{snapshot}/{url}", f"/{NAME}/2099id_/{url}"]
    paths += [f"/{NAME}/timemap/json/{u}" for u in urls[:10]] + [f"/{NAME}/*/{u}" for u in urls[:10]]
    return paths


def timed(client, paths: list[str], statuses: list[int] | None = None) -> list[float]:
    out = []
    for path in paths:
        started = time.perf_counter()
        response = client.get(path, environ_base={"REMOTE_ADDR": "198.51.100.7"})
        response.get_data()
        out.append(time.perf_counter() - started)
        if statuses is not None:
            statuses.append(response.status_code)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] * 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--replays", type=int, default=400, help="replay requests per rule set and round")
    parser.add_argument("--searches", type=int, default=200, help="search queries per rule set and round")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.replays, args.searches = 1, 120, 60
    root = OUT / "access" / "collections"
    print("harvesting the sample site (versions 1, 2)...", file=sys.stderr)
    base_url, snapshot = build(root)

    from replay import create_app

    sets = {0: [], 100: rules_for_bench(100, base_url), 10_000: rules_for_bench(10_000, base_url)}
    for count, rules in sets.items():
        copy = root / f"{NAME}{count}"
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(root / NAME, copy)
        install(copy, rules)
    app = create_app(root)
    client = app.test_client()
    all_paths = replay_paths(root, snapshot)
    rng = random.Random(7)
    replays = [rng.choice(all_paths) for _ in range(args.replays)]
    searches = [f"/api/search?q={rng.choice(WORDS)}&c={NAME}" for _ in range(args.searches)]

    def for_set(paths: list[str], count: int) -> list[str]:
        return [p.replace(f"/{NAME}/", f"/{NAME}{count}/", 1).replace(f"c={NAME}", f"c={NAME}{count}") for p in paths]

    results: dict[int, list[dict]] = {n: [] for n in sets}
    for count in sets:  # untimed: rules compiled, caches and index views filled
        timed(client, for_set(all_paths, count) + for_set(searches, count))
    for round_no in range(args.rounds):
        times: dict[tuple[int, str], list[float]] = {(n, k): [] for n in sets for k in ("replay", "search")}
        statuses: dict[int, list[int]] = {n: [] for n in sets}
        for kind, paths in (("replay", replays), ("search", searches)):
            for start in range(0, len(paths), 10):
                order = list(sets)
                rng.shuffle(order)
                for count in order:
                    block = for_set(paths[start : start + 10], count)
                    times[(count, kind)] += timed(client, block, statuses[count])
        if len({tuple(v) for v in statuses.values()}) != 1:  # every rule set answers as no rules do
            raise RuntimeError("the rule sets answered these requests differently")
        for count in sets:
            row = {"round": round_no + 1, "rules": count}
            for kind in ("replay", "search"):
                row[f"{kind}_p50_ms"] = pct(times[(count, kind)], 0.5)
                row[f"{kind}_p95_ms"] = pct(times[(count, kind)], 0.95)
            results[count].append(row)
            print(json.dumps(row), file=sys.stderr)

    keys = ("replay_p50_ms", "replay_p95_ms", "search_p50_ms", "search_p95_ms")
    summary: dict[str, dict] = {}
    print(f"\n{'rules':>6} " + " ".join(f"{k:>16}" for k in keys))
    for count in sets:
        cells, ratios = [], {}
        for key in keys:
            values = [r[key] for r in results[count]]
            base = [r[key] for r in results[0]]
            per_round = [v / b for v, b in zip(values, base, strict=True)]
            ratios[key] = {"median": statistics.median(per_round), "min": min(per_round), "max": max(per_round)}
            cells.append(f"{statistics.median(values):7.2f} ({ratios[key]['median']:.2f}x)")
        summary[str(count)] = {"rounds": results[count], "ratio_to_no_rules": ratios}
        print(f"{count:>6} " + " ".join(f"{c:>16}" for c in cells))
    print("\nratio to no rules over the rounds (min-max):")
    for count in (100, 10_000):
        spread = ", ".join(
            f"{k} {summary[str(count)]['ratio_to_no_rules'][k]['min']:.2f}-"
            f"{summary[str(count)]['ratio_to_no_rules'][k]['max']:.2f}"
            for k in keys
        )
        print(f"  {count:>6} rules: {spread}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MB; {len(replays)} replays and {len(searches)} searches per rule set and round")
    OUT.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    (OUT / f"access-{stamp}.json").write_text(json.dumps({"summary": summary, "peak_rss_mb": peak}, indent=2))


if __name__ == "__main__":
    main()
