"""Issue 5's benchmark: Strata's full-text index against plain Whoosh, on a real harvest.

One invocation:

1. generates a site (``bench/sitegen.py``, a Chinese government-news portal), serves version 1 on
   127.0.0.1 and harvests it with Strata (crawl 1: about 3,600 URLs with the default preset);
2. extracts the text of every HTML page and PDF once, with Strata's extractor (timed: both
   indexes share it), then indexes the same documents, each in a fresh child process (for its peak
   RSS), with (a) Strata's schema and CJK bigram analyzer, (b) the same schema with Whoosh's default
   analyzer, (c) with Whoosh's ``CJKAnalyzer`` (unigrams): docs/s, index size, peak RSS;
3. runs a fixed set of Chinese words (2, 3 and 4 characters, frequent to rare in the site's
   vocabulary) against each index, the way each would be queried (Strata: ``index.query``; plain
   Whoosh: its ``MultifieldParser``), and compares with the documents whose text contains the word:
   recall and precision;
4. synthesises 10,000 and 100,000 documents from the same vocabulary (with capture dates over
   three years) into Strata indexes and times 50 fixed queries through ``index.query.search`` (the
   whole path: parse, search, group by URL, facets, histogram, snippets): p50 and p95.

    .venv/bin/python bench/search_bench.py                 # issue2 preset, 10k and 100k
    .venv/bin/python bench/search_bench.py --quick         # quick preset, 2k and 10k

Output (the table, and every figure as JSON) goes to ``bench/out/search-<time>/``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import pickle
import random
import resource
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`
sys.path.insert(0, str(Path(__file__).resolve().parent))

OUT = Path(__file__).resolve().parent / "out"
CHINESE_RANKS = (3, 10, 30, 60, 120, 250, 500, 900, 1500, 2400)   # Zipf ranks in the site's vocabulary


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_child(fn, *args):
    """Run ``fn(*args)`` in a fresh interpreter; returns its result (with its own peak RSS)."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(fn, args)


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


# -- 1. harvest ------------------------------------------------------------------------------------

def harvest(root: Path, preset: str) -> tuple[dict, object]:
    from sitegen import GeneratedSite, SiteSpec

    from harvester.run import Harvest
    from index.collection import Collection
    from strata.settings import validate_job
    from strata.site_server import SiteServer

    site = GeneratedSite(SiteSpec.preset(preset))
    site.warm()
    server = SiteServer(site, 1).start()
    try:
        coll = Collection.open(root, "bench", create=True)
        job = validate_job("bench", {"seeds": [server.base_url + "/"], "delay": 0.0, "depth": 50,
                                     "concurrency": 8, "max_urls": 100_000, "fulltext": False})
        started = time.monotonic()
        summary = asyncio.run(Harvest(coll, job).run())
        summary["seconds"] = round(time.monotonic() - started, 1)
    finally:
        server.stop()
    return summary, site


# -- 2. extract and index --------------------------------------------------------------------------

def extract_docs(coll) -> tuple[list[dict], float]:
    """Strata's documents for every 2xx payload of the collection (text types parsed)."""
    from warcio.archiveiterator import ArchiveIterator

    from index.fulltext import Payload, _document, _ts14, indexable

    docs = []
    started = time.monotonic()
    for name in coll.warc_files():
        with open(coll.archive_dir / name, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type != "response" or not record.http_headers:
                    continue
                url = record.rec_headers.get_header("WARC-Target-URI")
                status = int(record.http_headers.get_statuscode() or 0)
                if not indexable(url, status):
                    continue
                payload = Payload.from_record(record.http_headers, record.raw_stream.read())
                digest = record.rec_headers.get_header("WARC-Payload-Digest")
                docs.append(_document(url, digest, payload, {_ts14(record.rec_headers.get_header("WARC-Date"))}))
    return docs, time.monotonic() - started


def _schema(kind: str):
    from whoosh import fields
    from whoosh.analysis import CJKAnalyzer, StandardAnalyzer

    from index.fulltext import schema

    base = schema()
    if kind == "strata":
        return base
    analyzer = StandardAnalyzer() if kind == "whoosh-default" else CJKAnalyzer()
    for name, boost in (("title", 4.0), ("description", 2.0), ("keywords", 2.0), ("text", 1.0)):   # as in schema()
        base.remove(name)
        base.add(name, fields.TEXT(analyzer=analyzer, stored=True, field_boost=boost))
    return base


def index_docs(kind: str, docs_file: str, target: str) -> dict:
    from whoosh import index

    with open(docs_file, "rb") as fh:
        docs = pickle.load(fh)
    os.makedirs(target, exist_ok=True)
    ix = index.create_in(target, _schema(kind))
    started = time.monotonic()
    writer = ix.writer(limitmb=128)
    for doc in docs:
        writer.add_document(**doc)
    writer.commit()
    seconds = time.monotonic() - started
    return {"kind": kind, "docs": len(docs), "seconds": round(seconds, 2), "docs_per_s": round(len(docs) / seconds, 1),
            "size_mb": round(dir_size(Path(target)) / 1e6, 2), "peak_rss_mb": round(rss_mb(), 1)}


# -- 3. recall -------------------------------------------------------------------------------------

def chinese_words(site) -> list[str]:
    """Fixed words of 2, 3 and 4 characters at fixed Zipf ranks of the site's vocabulary."""
    words = []
    for length in (2, 3, 4):
        ranked = [w for w in site.words if len(w) == length]
        for rank in CHINESE_RANKS:
            if rank < len(ranked) and ranked[rank] not in words:
                words.append(ranked[rank])
    return words


def recall(kind: str, target: str, docs_file: str, words: list[str]) -> dict:
    from whoosh import index
    from whoosh.qparser import MultifieldParser

    from index.query import _whoosh, parse_query

    with open(docs_file, "rb") as fh:
        docs = pickle.load(fh)
    fields_ = ("title", "description", "keywords", "text")
    ix = index.open_dir(target)
    out = {"kind": kind, "words": {}}
    found_total = truth_total = correct_total = 0
    with ix.searcher() as searcher:
        parser = MultifieldParser(list(fields_), ix.schema)
        for word in words:
            truth = {d["key"] for d in docs if any(word in (d.get(f) or "") for f in fields_)}
            if kind == "strata":
                q = _whoosh(parse_query(word).tree, searcher.reader())
            else:
                q = parser.parse(word)
            found = {hit["key"] for hit in searcher.search(q, limit=None)}
            correct = len(found & truth)
            out["words"][word] = {"truth": len(truth), "found": len(found), "correct": correct}
            found_total += len(found)
            truth_total += len(truth)
            correct_total += correct
    out["recall"] = round(correct_total / truth_total, 4) if truth_total else None
    out["precision"] = round(correct_total / found_total, 4) if found_total else None
    return out


# -- 4. latency at scale ---------------------------------------------------------------------------

def synthesise(root: str, name: str, count: int, seed: int, preset: str) -> dict:
    """``count`` documents from the site's vocabulary in a collection layout, with capture dates."""
    from sitegen import GeneratedSite, SiteSpec
    from whoosh import index

    from index import fulltext
    from index.collection import Collection
    from index.fulltext import Payload, _document, schema

    site = GeneratedSite(SiteSpec.preset(preset))
    rng = random.Random(seed)
    coll = Collection.open(Path(root), name, create=True)
    target = coll.fulltext_dir
    target.mkdir(parents=True, exist_ok=True)
    ix = index.create_in(str(target), schema())
    start = datetime(2022, 1, 1, tzinfo=UTC)
    latin = "archive library report policy data national digital harvest review budget".split()
    started = time.monotonic()
    writer = ix.writer(limitmb=256)
    for n in range(count):
        text = site._text(rng, 300, 900)
        if rng.random() < 0.3:
            text += " " + " ".join(rng.choices(latin, k=8))
        stamps = {(start + timedelta(days=rng.uniform(0, 3 * 365))).strftime("%Y%m%d%H%M%S")
                  for _ in range(rng.choice((1, 1, 2, 3, 6)))}
        host = f"www{rng.randrange(20)}.example.gov.cn"
        payload = Payload(mime="text/html" if rng.random() < 0.95 else "application/pdf", status=200,
                          size=len(text) * 3, title=site._text(rng, 14, 40).rstrip("。"), text=text, lang="zh")
        writer.add_document(**_document(f"http://{host}/a/{n}.htm", f"sha1:{n:032d}", payload, stamps))
    writer.commit()
    seconds = time.monotonic() - started
    (target / fulltext.FORMAT_FILE).write_text(json.dumps({"format": fulltext.FORMAT, "build": f"synth{count}"}))
    return {"docs": count, "seconds": round(seconds, 1), "docs_per_s": round(count / seconds, 1),
            "size_mb": round(dir_size(target) / 1e6, 1), "peak_rss_mb": round(rss_mb(), 1)}


def latency_queries(site) -> list[dict]:
    words = chinese_words(site)
    two = [w for w in site.words if len(w) == 2]
    qs = [{"q": w} for w in words[:25]]
    qs += [{"q": two[r]} for r in (1, 7, 40, 200, 800)]
    qs += [{"q": w[0]} for w in words[:3]]                                   # one character
    qs += [{"q": f"{a} {b}"} for a, b in zip(words[:5], words[5:10], strict=True)]      # AND
    qs += [{"q": f"{a} OR {b}"} for a, b in zip(words[10:14], words[14:18], strict=True)]
    qs += [{"q": f'"{words[0]}{words[1]}"'}, {"q": "archive"}, {"q": "national digital"}, {"q": "report NOT budget"}]
    qs += [{"q": w, "date_from": "2023-01-01", "date_to": "2023-06-30"} for w in words[:4]]
    qs += [{"q": w} for w in two[1000:1010]]                                 # pad to 50 with rarer words
    return qs[:50]


def latency(root: str, name: str, queries: list[dict]) -> dict:
    from index.query import SearchParams, search

    times, totals, cold = [], [], None
    for i, spec in enumerate(queries):
        started = time.perf_counter()
        result = search(Path(root), SearchParams(collections=[name], **spec))
        elapsed = (time.perf_counter() - started) * 1000
        if i == 0:
            cold = round(elapsed, 1)
            started = time.perf_counter()
            result = search(Path(root), SearchParams(collections=[name], **spec))
            elapsed = (time.perf_counter() - started) * 1000
        times.append(elapsed)
        totals.append(result["total_documents"])
    times_sorted = sorted(times)
    return {"queries": len(times), "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(times_sorted[max(0, int(len(times) * 0.95) - 1)], 1), "max_ms": round(max(times), 1),
            "first_query_cold_ms": cold, "median_matches": statistics.median(totals),
            "timed_out": 0, "peak_rss_mb": round(rss_mb(), 1)}


# -- the run ---------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="issue2", help="sitegen preset (issue2: about 3,600 URLs)")
    parser.add_argument("--quick", action="store_true", help="quick preset, 2k and 10k synthetic documents")
    parser.add_argument("--scales", default=None, help="synthetic sizes, e.g. 10000,100000")
    args = parser.parse_args(argv)
    preset = "quick" if args.quick else args.preset
    scales = [int(s) for s in (args.scales or ("2000,10000" if args.quick else "10000,100000")).split(",")]
    out = OUT / f"search-{preset}-{datetime.now(UTC):%Y%m%d%H%M%S}"
    root = out / "collections"
    root.mkdir(parents=True)
    report: dict = {"preset": preset, "python": sys.version.split()[0], "cpus": os.cpu_count()}

    print(f"harvesting the generated site ({preset}) ...", flush=True)
    summary, site = harvest(root, preset)
    report["harvest"] = {k: summary[k] for k in ("urls_fetched", "new", "seconds")}
    from index.collection import Collection

    coll = Collection(root, "bench")
    docs, extract_seconds = extract_docs(coll)
    text_docs = sum(1 for d in docs if d["text"])
    report["extract"] = {"docs": len(docs), "with_text": text_docs, "seconds": round(extract_seconds, 2),
                         "docs_per_s": round(len(docs) / extract_seconds, 1)}
    docs_file = out / "docs.pickle"
    with open(docs_file, "wb") as fh:
        pickle.dump(docs, fh)
    print(f"{len(docs)} documents ({text_docs} with text) extracted in {extract_seconds:.1f} s", flush=True)

    report["index"], report["recall"] = {}, {}
    words = chinese_words(site)
    report["chinese_words"] = words
    for kind in ("whoosh-default", "strata", "whoosh-cjk-unigram"):
        target = out / f"ix-{kind}"
        figures = in_child(index_docs, kind, str(docs_file), str(target))
        figures["end_to_end_docs_per_s"] = round(len(docs) / (figures["seconds"] + extract_seconds), 1)
        report["index"][kind] = figures
        report["recall"][kind] = in_child(recall, kind, str(target), str(docs_file), words)
        print(kind, figures, {k: report["recall"][kind][k] for k in ("recall", "precision")}, flush=True)
    started = time.monotonic()
    from index.fulltext import rebuild

    rebuilt = rebuild(coll)
    report["strata_rebuild_from_warcs"] = {"docs": rebuilt["documents"], "seconds": round(time.monotonic() - started, 1)}

    report["latency"] = {}
    queries = latency_queries(site)
    report["latency_queries"] = queries
    for count in scales:
        name = f"synth{count}"
        built = in_child(synthesise, str(root), name, count, 7, preset)
        timed = in_child(latency, str(root), name, queries)
        report["latency"][count] = {"build": built, **timed}
        print(f"{count} docs: build {built}, queries {timed}", flush=True)

    (out / "report.json").write_text(json.dumps(report, ensure_ascii=False, indent=1))
    lines = _table(report)
    (out / "report.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nfigures: {out / 'report.json'}")


def _table(r: dict) -> list[str]:
    plain, strata, uni = (r["index"][k] for k in ("whoosh-default", "strata", "whoosh-cjk-unigram"))
    lines = [f"crawl 1: {r['harvest']['urls_fetched']} URLs harvested; {r['extract']['docs']} documents "
             f"({r['extract']['with_text']} with text), extraction {r['extract']['docs_per_s']} docs/s",
             "", f"{'index':<20} {'docs/s':>8} {'+extract':>9} {'size MB':>8} {'RSS MB':>7} {'recall':>7} {'precision':>9}"]
    for kind, f in (("whoosh default", plain), ("strata (bigram)", strata), ("whoosh CJKAnalyzer", uni)):
        rc = r["recall"]["whoosh-default" if kind == "whoosh default" else
                         "strata" if kind.startswith("strata") else "whoosh-cjk-unigram"]
        lines.append(f"{kind:<20} {f['docs_per_s']:>8} {f['end_to_end_docs_per_s']:>9} {f['size_mb']:>8} "
                     f"{f['peak_rss_mb']:>7} {rc['recall']!s:>7} {rc['precision']!s:>9}")
    lines.append(f"strata/plain docs/s: {strata['docs_per_s'] / plain['docs_per_s']:.2f}x indexing only, "
                 f"{strata['end_to_end_docs_per_s'] / plain['end_to_end_docs_per_s']:.2f}x with extraction")
    lines.append(f"strata rebuild from WARCs: {r['strata_rebuild_from_warcs']}")
    lines.append("")
    for count, f in r["latency"].items():
        lines.append(f"{count:>7} docs: p50 {f['p50_ms']} ms, p95 {f['p95_ms']} ms, max {f['max_ms']} ms "
                     f"(first query cold {f['first_query_cold_ms']} ms); build {f['build']['docs_per_s']} docs/s, "
                     f"{f['build']['size_mb']} MB; peak RSS {f['peak_rss_mb']} MB")
    return lines


if __name__ == "__main__":
    main()
