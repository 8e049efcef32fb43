"""What a URL and what a link cost the harvest: Strata's CPU time over sites of different shapes,
fitted as  CPU = start-up + a x URLs + b x link occurrences  (issue 14: per link occurrence <= 30 us).

    .venv/bin/python bench/link_cost_bench.py              # 4 site shapes x 3 repeats, about 3 minutes
    .venv/bin/python bench/link_cost_bench.py --repeat 1   # one pass

Each shape is the generated site (``bench/sitegen.py``, preset quick) with a number of articles and of
sections: every page links every section, so more sections give about twice the links a URL at about
the same number of URLs (5,400 and 11,100 links for 709 and 747 URLs), more articles more URLs.
A full crawl (crawl 1) of each is run as a fresh ``strata harvest`` child, shapes in turn
within each repeat; its CPU time (user + system, the fetch process included) is measured with
``os.wait4``. Link occurrences are what the harvester extracts from the pages: each page's
``harvester.links.extract_links``, one per distinct link and page. The fit is least squares per repeat
(the spread over repeats is printed) and over all runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import compile_project, run_measured  # noqa: E402
from bench.harvest_bench import COLLECTION, strata_cmd  # noqa: E402
from bench.sitegen import GeneratedSite, SiteSpec  # noqa: E402
from demo.site_server import SiteServer  # noqa: E402
from harvester.links import extract_links  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
SHAPES = [  # (articles, sections): every page links every section, so sections add links, not URLs
    (400, 4),
    (400, 20),
    (1200, 4),
    (1200, 20),
]


def link_occurrences(site: GeneratedSite, base: str) -> int:
    total = 0
    for path in site.paths(1):
        res = site.resolve(1, path)
        ctype = dict((k.lower(), v) for k, v in res.headers).get("content-type", "") if res else ""
        if res is not None and ctype.startswith(("text/html", "text/css")):
            total += len(extract_links(res.body, base + path, ctype))
    return total


def fit(rows: list[tuple[int, int, float]]) -> tuple[float, float, float]:
    """Least squares of cpu = c + a * urls + b * links: (c s, a ms a URL, b us a link), from the
    normal equations solved by Cramer's rule (three unknowns)."""
    xs = [(1.0, float(u), float(n)) for u, n, _ in rows]
    m = [[sum(x[i] * x[j] for x in xs) for j in range(3)] for i in range(3)]
    v = [sum(x[i] * cpu for x, (_, _, cpu) in zip(xs, rows, strict=True)) for i in range(3)]

    def det(q: list[list[float]]) -> float:
        return (
            q[0][0] * (q[1][1] * q[2][2] - q[1][2] * q[2][1])
            - q[0][1] * (q[1][0] * q[2][2] - q[1][2] * q[2][0])
            + q[0][2] * (q[1][0] * q[2][1] - q[1][1] * q[2][0])
        )

    d = det(m)
    c, a, b = (det([[v[r] if k == i else m[r][k] for k in range(3)] for r in range(3)]) / d for i in range(3))
    return c, a * 1e3, b * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.005)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--strata", default=None, help="command to run instead of the venv's `strata`")
    args = parser.parse_args(argv)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = (BENCH_DIR / "out" / f"linkcost-{stamp}").resolve()
    out.mkdir(parents=True)
    compile_project()
    sites = {shape: GeneratedSite(SiteSpec.preset("quick", articles=shape[0], sections=shape[1])) for shape in SHAPES}
    runs: list[dict] = []
    exe = args.strata.split() if args.strata else None
    for repeat in range(args.repeat):
        for shape, site in sites.items():
            with SiteServer(site, 1, latency=args.latency) as server:
                root = out / f"r{repeat}-{shape[0]}-{shape[1]}"
                root.mkdir()
                cmd = strata_cmd(root, server.base_url + "/", 1, args.concurrency, False, exe)
                m = run_measured(cmd, 1800, root / "strata.out", root / "strata.err")
                links = link_occurrences(site, server.base_url)
                text = (root / "strata.out").read_text()
                report = next((json.loads(line) for line in reversed(text.splitlines()) if line.startswith("{")), {})
                urls = report.get("urls_fetched", 0)
                runs.append(
                    dict(
                        repeat=repeat,
                        articles=shape[0],
                        sections=shape[1],
                        urls=urls,
                        links=links,
                        cpu=m.cpu,
                        wall=m.wall,
                        rc=m.returncode,
                        load=os.getloadavg()[0],
                    )
                )
                print(
                    f"repeat {repeat + 1}: {shape[0]} articles, {shape[1]} sections: {urls} URLs, {links} links, "
                    f"CPU {m.cpu:.2f} s, wall {m.wall:.2f} s, load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
                shutil.rmtree(root / COLLECTION, ignore_errors=True)
    bad = [r for r in runs if r["rc"] != 0 or not r["urls"]]
    if bad:
        print(f"{len(bad)} runs failed: see {out}", file=sys.stderr)
        return 1
    per = [fit([(r["urls"], r["links"], r["cpu"]) for r in runs if r["repeat"] == i]) for i in range(args.repeat)]
    c, a, b = fit([(r["urls"], r["links"], r["cpu"]) for r in runs])
    lines = [
        f"fit over {len(runs)} runs: start-up {c:.2f} s + {a:.3f} ms a URL + {b:.1f} us a link occurrence",
        "per repeat: " + "; ".join(f"{pc:.2f} s + {pa:.3f} ms + {pb:.1f} us" for pc, pa, pb in per),
        f"us a link: median {statistics.median(p[2] for p in per):.1f} "
        f"(min {min(p[2] for p in per):.1f}, max {max(p[2] for p in per):.1f}); target <= 30 us: "
        + ("met" if max(p[2] for p in per) <= 30 else "MISS"),
        "load average (1 min) during the runs: "
        f"{min(r['load'] for r in runs):.2f}-{max(r['load'] for r in runs):.2f} (2 CPUs)",
    ]
    print("\n".join(lines))
    (out / "report.txt").write_text("\n".join(lines) + "\n")
    (out / "results.json").write_text(json.dumps(dict(runs=runs, fit=[c, a, b], per_repeat=per), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
