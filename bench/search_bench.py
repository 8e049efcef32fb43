"""Issue 5's benchmark: Strata's full-text index against plain Whoosh, on a real harvest.

One invocation:

1. generates a site (``bench/sitegen.py``, a Chinese government-news portal), serves it on
   127.0.0.1 and harvests version 1 then version 2 (incremental) with Strata, full-text indexing
   off (crawl 1: about 3,600 URLs with the default preset), then times ``index_run`` after each
   crawl as the harvester would call it, each in a fresh process (seconds, peak RSS, documents
   parsed, added, and updated by capture rows);
2. extracts the text of every HTML page and PDF once, with Strata's extractor (timed: every
   index shares it), then indexes the same documents, each in a fresh child process (for its peak
   RSS), ``--repeat`` times in turn (the best time counts: this machine's speed varies by 20% from
   minute to minute): (a) Strata, the way ``strata index rebuild`` writes (``fulltext.create``:
   BulkWriter, capture store, fsync); (b) plain Whoosh, a ``SegmentWriter`` with the same
   metadata fields and the title, description, keywords and text as ``TEXT`` fields with its
   default analyzer; (c) the same with Whoosh's ``CJKAnalyzer`` (unigrams): docs/s, size, RSS;
3. runs a fixed set of Chinese words (2, 3 and 4 characters, frequent to rare in the site's
   vocabulary) against each index, the way each would be queried (Strata: ``index.fulltext.matching``, with
   its phrase checks; plain Whoosh: its ``MultifieldParser``), and compares with the documents
   whose text contains the word: recall and precision;
4. synthesises 10,000 and 100,000 documents from the same vocabulary (with capture dates over
   three years) into Strata indexes and times 50 fixed queries through ``index.fulltext.query.search`` (the
   whole path: parse, search, group by URL, facets, histogram, snippets): p50 and p95.

    .venv/bin/python bench/search_bench.py                 # issue2 preset, 10k and 100k
    .venv/bin/python bench/search_bench.py --quick         # quick preset, 2k and 10k

Output (the table, and every figure as JSON) goes to ``bench/out/search-<time>/``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import pickle
import random
import resource
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout: `python bench/...`
sys.path.insert(0, str(Path(__file__).resolve().parent))

OUT = Path(__file__).resolve().parent / "out"
CHINESE_RANKS = (3, 10, 30, 60, 120, 250, 500, 900, 1500, 2400)  # Zipf ranks in the site's vocabulary


def rss_mb() -> float:
    """This process's peak RSS. Linux keeps ``ru_maxrss`` across exec, so a child spawned by a big
    parent reports the parent's size (every index measured 246 MB); VmHWM starts with the child."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_child(fn, *args):
    """Run ``fn(*args)`` in a fresh interpreter; returns its result (with its own peak RSS)."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(fn, args)


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


# -- 1. harvest ------------------------------------------------------------------------------------


def harvest(root: Path, preset: str) -> tuple[list[dict], object]:
    """Crawl 1 (version 1, mode full) and crawl 2 (version 2, incremental) into one collection,
    full-text indexing off; the collection after each crawl is copied to ``crawl1``, ``crawl2``."""
    from sitegen import GeneratedSite, SiteSpec

    from demo.site_server import SiteServer
    from harvester.job import validate_job
    from harvester.run import Harvest
    from index.collection import Collection

    site = GeneratedSite(SiteSpec.preset(preset))
    site.warm()
    server = SiteServer(site, 1).start()
    summaries = []
    try:
        coll = Collection.open(root, "harvest", create=True)
        job = validate_job(
            "bench",
            {
                "seeds": [server.base_url + "/"],
                "delay": 0.0,
                "depth": 50,
                "concurrency": 8,
                "max_urls": 100_000,
                "fulltext": False,
            },
        )
        for version, mode in ((1, "full"), (2, "incremental")):
            server.version = version
            started = time.monotonic()
            summary = asyncio.run(Harvest(coll, job, mode=mode).run())
            summary["seconds"] = round(time.monotonic() - started, 1)
            summaries.append(summary)
            shutil.copytree(root / "harvest", root / f"crawl{version}")
    finally:
        server.stop()
    return summaries, site


def index_run_in_child(root: str, name: str, run_id: str) -> dict:
    from index.collection import Collection
    from index.fulltext.update import index_run

    started = time.monotonic()
    figures = index_run(Collection(Path(root), name), run_id)
    return {
        "seconds": round(time.monotonic() - started, 2),
        "peak_rss_mb": round(rss_mb(), 1),
        **{
            k: figures.get(k)
            for k in ("parsed", "copied", "added", "updated", "unchanged", "captures", "rebuilt", "documents")
        },
    }


def incremental(root: Path, runs: list[str]) -> list[dict]:
    """``index_run`` after each crawl, as the harvester calls it, each in a fresh process: the
    collection ``incr`` gets crawl i's WARC files and harvest state, keeping its full-text index."""
    out = []
    work = root / "incr"
    for i, run_id in enumerate(runs, 1):
        snapshot = root / f"crawl{i}"
        for part in ("archive", "indexes", "jobs"):
            shutil.rmtree(work / part, ignore_errors=True)
            shutil.copytree(snapshot / part, work / part)
        (work / "strata").mkdir(parents=True, exist_ok=True)
        shutil.copy(snapshot / "strata" / "harvest.sqlite", work / "strata" / "harvest.sqlite")
        out.append(in_child(index_run_in_child, str(root), "incr", run_id))
        print(f"index_run after crawl {i}:", out[-1], flush=True)
    return out


# -- 2. extract and index --------------------------------------------------------------------------


def extract_docs(coll) -> tuple[list[tuple], float]:
    """(url, digest, Payload, {timestamp}) for every 2xx payload of the collection (text types parsed)."""
    from warcio.archiveiterator import ArchiveIterator

    from index.fulltext.documents import Payload, indexable
    from strata.times import ts14_of as _ts14

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
                docs.append((url, digest, payload, {_ts14(record.rec_headers.get_header("WARC-Date"))}))
    return docs, time.monotonic() - started


# index.fulltext.documents.PART_BOOSTS, and the boilerplate at matching.BOILER_WEIGHT (a field of its own there)
TEXTS = (("title", 3.0), ("description", 1.5), ("keywords", 1.5), ("text", 1.0), ("boilerplate", 0.3))


def plain_schema(kind: str):
    """Strata's metadata fields, with the texts as Whoosh ``TEXT`` fields."""
    from whoosh import fields
    from whoosh.analysis import CJKAnalyzer, StandardAnalyzer

    analyzer = StandardAnalyzer() if kind == "whoosh-default" else CJKAnalyzer()
    return fields.Schema(
        key=fields.ID(unique=True, stored=True),
        url=fields.ID(stored=True, sortable=True),
        digest=fields.ID(stored=True),
        host=fields.ID(stored=True, sortable=True),
        domains=fields.KEYWORD(lowercase=True),
        mime=fields.ID(stored=True, sortable=True),
        mtype=fields.ID(stored=True, sortable=True),
        lang=fields.STORED(),
        status=fields.STORED(),
        size=fields.STORED(),
        **{name: fields.TEXT(analyzer=analyzer, stored=True, field_boost=boost) for name, boost in TEXTS},
    )


def plain_document(url: str, digest: str, payload) -> dict:
    from index.fulltext.documents import make_document

    doc = make_document(url, digest, payload)
    keep = ("key", "url", "digest", "host", "domains", "mime", "mtype", "lang", "status", "size")
    doc = {name: doc[name] for name in keep}
    doc.update({name: getattr(payload, name, "") or "" for name, _ in TEXTS})
    return doc


def index_docs(kind: str, docs_file: str, target: str) -> dict:
    from whoosh import index

    with open(docs_file, "rb") as fh:
        docs = pickle.load(fh)
    os.makedirs(target, exist_ok=True)
    if kind == "strata":
        from index.collection import Collection
        from index.fulltext import rebuild as fulltext

        coll = Collection.open(Path(target), "ix", create=True)
        started = time.monotonic()
        fulltext.create(coll, docs)
        seconds = time.monotonic() - started
        size = dir_size(coll.fulltext_dir)
    else:
        ix = index.create_in(target, plain_schema(kind))
        started = time.monotonic()  # the documents are made inside the timing, as fulltext.create does
        writer = ix.writer(limitmb=128)
        for url, digest, payload, _ in docs:
            writer.add_document(**plain_document(url, digest, payload))
        writer.commit()
        seconds = time.monotonic() - started
        size = dir_size(Path(target))
    return {
        "kind": kind,
        "docs": len(docs),
        "seconds": round(seconds, 2),
        "docs_per_s": round(len(docs) / seconds, 1),
        "size_mb": round(size / 1e6, 2),
        "peak_rss_mb": round(rss_mb(), 1),
    }


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
    with open(docs_file, "rb") as fh:
        docs = pickle.load(fh)
    out = {"kind": kind, "words": {}}
    found_total = truth_total = correct_total = 0
    for word, truth, found in _found(kind, target, docs, words):
        correct = len(found & truth)
        out["words"][word] = {"truth": len(truth), "found": len(found), "correct": correct}
        found_total += len(found)
        truth_total += len(truth)
        correct_total += correct
    out["recall"] = round(correct_total / truth_total, 4) if truth_total else None
    out["precision"] = round(correct_total / found_total, 4) if found_total else None
    return out


def _found(kind: str, target: str, docs: list, words: list[str]):
    """(word, keys of the documents containing it, keys the index finds) per word."""

    def truth(word: str) -> set[str]:
        return {
            f"{url} {digest}"
            for url, digest, payload, _ in docs
            if any(word in (getattr(payload, name, "") or "") for name, _ in TEXTS)
        }

    if kind == "strata":
        from index.collection import Collection
        from index.fulltext.matching import IndexView, matching_docs
        from index.fulltext.params import parse_query

        view = IndexView(Collection(Path(target), "ix"))
        for word in words:
            found = matching_docs(view, parse_query(word).tree)
            yield word, truth(word), {view.searcher.stored_fields(d)["key"] for d in found}
        view.close()
        return
    from whoosh import index
    from whoosh.qparser import MultifieldParser

    ix = index.open_dir(target)
    with ix.searcher() as searcher:
        parser = MultifieldParser([name for name, _ in TEXTS], ix.schema)
        for word in words:
            yield word, truth(word), {hit["key"] for hit in searcher.search(parser.parse(word), limit=None)}


# -- 4. latency at scale ---------------------------------------------------------------------------


LATIN_WORDS = "archive library report policy data national digital harvest review budget".split()
SYNTHETIC_START = datetime(2022, 1, 1, tzinfo=UTC)


def _text_and_stamps(site, rng: random.Random) -> tuple[str, set[str]]:
    """A synthetic document's text (Chinese, a third with Latin words) and its capture times over
    three years: the same draws for ``synthesise`` and ``write_corpus``."""
    text = site._text(rng, 300, 900)
    if rng.random() < 0.3:
        text += " " + " ".join(rng.choices(LATIN_WORDS, k=8))
    stamps = {
        (SYNTHETIC_START + timedelta(days=rng.uniform(0, 3 * 365))).strftime("%Y%m%d%H%M%S")
        for _ in range(rng.choice((1, 1, 2, 3, 6)))
    }
    return text, stamps


def synthesise(root: str, name: str, count: int, seed: int, preset: str) -> dict:
    """``count`` documents from the site's vocabulary in a collection, with capture dates."""
    from sitegen import GeneratedSite, SiteSpec

    from index.collection import Collection
    from index.fulltext import rebuild as fulltext
    from index.fulltext.documents import Payload

    site = GeneratedSite(SiteSpec.preset(preset))
    rng = random.Random(seed)
    coll = Collection.open(Path(root), name, create=True)

    def documents():
        for n in range(count):
            text, stamps = _text_and_stamps(site, rng)
            host = f"www{rng.randrange(20)}.example.gov.cn"
            payload = Payload(
                mime="text/html" if rng.random() < 0.95 else "application/pdf",
                status=200,
                size=len(text) * 3,
                title=site._text(rng, 14, 40).rstrip("。"),
                text=text,
                lang="zh",
            )
            yield f"http://{host}/a/{n}.htm", f"sha1:{n:032d}", payload, stamps

    started = time.monotonic()
    fulltext.create(coll, documents())
    seconds = time.monotonic() - started
    return {
        "docs": count,
        "seconds": round(seconds, 1),
        "docs_per_s": round(count / seconds, 1),
        "size_mb": round(dir_size(coll.fulltext_dir) / 1e6, 1),
        "peak_rss_mb": round(rss_mb(), 1),
    }


def latency_queries(site) -> list[dict]:
    words = chinese_words(site)
    two = [w for w in site.words if len(w) == 2]
    qs = [{"q": w} for w in words[:25]]
    qs += [{"q": two[r]} for r in (1, 7, 40, 200, 800)]
    qs += [{"q": w[0]} for w in words[:3]]  # one character
    qs += [{"q": f"{a} {b}"} for a, b in zip(words[:5], words[5:10], strict=True)]  # AND
    qs += [{"q": f"{a} OR {b}"} for a, b in zip(words[10:14], words[14:18], strict=True)]
    qs += [{"q": f'"{words[0]}{words[1]}"'}, {"q": "archive"}, {"q": "national digital"}, {"q": "report NOT budget"}]
    qs += [{"q": w, "date_from": "2023-01-01", "date_to": "2023-06-30"} for w in words[:4]]
    qs += [{"q": w} for w in two[1000:1010]]  # pad to 50 with rarer words
    return qs[:50]


def latency(root: str, name: str, queries: list[dict]) -> dict:
    from index.fulltext.params import SearchParams
    from index.fulltext.query import search

    times, totals, cold, timed_out, per_query = [], [], None, 0, []
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
        timed_out += bool(result["timed_out"])
        per_query.append(
            {
                **spec,
                "ms": round(elapsed, 1),
                "documents": result["total_documents"],
                "urls": result["total_urls"],
                "exhaustive": result["exhaustive"],
            }
        )
    return {
        "queries": len(times),
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(p95(times), 1),
        "max_ms": round(max(times), 1),
        "first_query_cold_ms": cold,
        "median_matches": statistics.median(totals),
        "timed_out": timed_out,
        "peak_rss_mb": round(rss_mb(), 1),
        "per_query": per_query,
    }


def p95(times: list[float]) -> float:
    """Nearest rank: the 48th of 50 (the bench before this one took the 47th)."""
    ordered = sorted(times)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]


# -- 5. a million synthetic documents (issue 14) ------------------------------------------------
#
# ``--synthetic``: only the synthetic documents, at any scale, each step a fresh interpreter whose
# peak RSS and CPU time come from ``os.wait4``: the corpus is generated once into a file (so that
# generating it is not timed as indexing), built (Strata, and plain Whoosh with a time budget),
# then queried in a fresh process: the first query after start (page cache emptied of the index
# files first, ``posix_fadvise(DONTNEED)``), then the 50 queries ``--passes`` times.

CORPUS_BATCH = 1000


def write_corpus(path: Path, count: int, seed: int, preset: str) -> dict:
    """``count`` documents as ``synthesise`` makes them, pickled in batches; returns their text size."""
    from sitegen import GeneratedSite, SiteSpec

    from index.fulltext.documents import Payload

    site = GeneratedSite(SiteSpec.preset(preset))
    rng = random.Random(seed)
    text_bytes = captures = 0
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        batch: list[tuple] = []
        for n in range(count):
            text, stamps = _text_and_stamps(site, rng)
            title = site._text(rng, 14, 40).rstrip("。")
            payload = Payload(
                mime="text/html" if rng.random() < 0.95 else "application/pdf",
                status=200,
                size=len(text) * 3,
                title=title,
                text=text,
                lang="zh",
            )
            text_bytes += len(text.encode("utf-8")) + len(title.encode("utf-8"))
            captures += len(stamps)
            batch.append((f"http://www{rng.randrange(20)}.example.gov.cn/a/{n}.htm", f"sha1:{n:032d}", payload, stamps))
            if len(batch) == CORPUS_BATCH:
                pickle.dump(batch, fh, protocol=pickle.HIGHEST_PROTOCOL)
                batch = []
        if batch:
            pickle.dump(batch, fh, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)
    return {"docs": count, "text_bytes": text_bytes, "captures": captures}


def read_corpus(path: Path, limit: int | None = None) -> Iterator[tuple]:
    with open(path, "rb") as fh:
        n = 0
        while True:
            try:
                batch = pickle.load(fh)
            except EOFError:
                return
            for doc in batch:
                if limit is not None and n >= limit:
                    return
                n += 1
                yield doc


def child_build(corpus: str, root: str, name: str) -> dict:
    from index.collection import Collection
    from index.fulltext import rebuild as fulltext

    coll = Collection.open(Path(root), name, create=True)
    started = time.monotonic()
    fulltext.create(coll, read_corpus(Path(corpus)))
    seconds = time.monotonic() - started
    return {"seconds": round(seconds, 1), "size_bytes": dir_size(coll.fulltext_dir), "hwm_mb": round(rss_mb(), 1)}


def child_plain_build(corpus: str, target: str, kind: str, budget: float) -> dict:
    """Plain Whoosh (``plain_schema``, capture days as a keyword field), for ``budget`` seconds at most."""
    from whoosh import fields, index

    os.makedirs(target, exist_ok=True)
    schema = plain_schema(kind)
    schema.add("days", fields.KEYWORD())
    ix = index.create_in(target, schema)
    started = time.monotonic()
    writer = ix.writer(limitmb=256)
    done, finished = 0, True
    for url, digest, payload, stamps in read_corpus(Path(corpus)):
        if time.monotonic() - started > budget:
            finished = False
            break
        doc = plain_document(url, digest, payload)
        doc["days"] = " ".join(sorted({ts[:8] for ts in stamps}))
        writer.add_document(**doc)
        done += 1
    writer.commit()
    seconds = time.monotonic() - started
    return {
        "docs": done,
        "finished": finished,
        "seconds": round(seconds, 1),
        "docs_per_s": round(done / seconds, 1),
        "size_bytes": dir_size(Path(target)),
        "hwm_mb": round(rss_mb(), 1),
    }


def evict(path: Path) -> None:
    """Drop a directory's files from the page cache (no root needed). Written back first: the
    kernel keeps dirty pages, so an index queried right after its build was still half in memory
    (first query 181 ms here, against 298-306 ms after ``drop_caches``)."""
    for p in Path(path).rglob("*"):
        if p.is_file():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def child_query(root: str, name: str, queries_file: str, passes: int, cold: bool) -> dict:
    """The first query after start (the whole ``search``: the index opened, its tables read),
    then every query ``passes`` times."""
    from index.collection import Collection

    queries = json.loads(Path(queries_file).read_text())
    if cold:
        evict(Collection(Path(root), name).fulltext_dir)
    from index.fulltext.params import SearchParams
    from index.fulltext.query import search

    started = time.perf_counter()
    search(Path(root), SearchParams(collections=[name], **queries[0]))
    first_ms = (time.perf_counter() - started) * 1000
    rss_after_first = rss_mb()
    runs = []
    for _ in range(passes):
        times, per_query = [], []
        cpu: list[float] = []
        for spec in queries:
            started, cpu_started = time.perf_counter(), time.process_time()
            result = search(Path(root), SearchParams(collections=[name], **spec))
            elapsed = (time.perf_counter() - started) * 1000
            cpu.append((time.process_time() - cpu_started) * 1000)
            times.append(elapsed)
            per_query.append(
                {
                    **spec,
                    "ms": round(elapsed, 1),
                    "documents": result["total_documents"],
                    "timed_out": result["timed_out"],
                }
            )
        runs.append(
            {
                "p50_ms": round(statistics.median(times), 1),
                "p95_ms": round(p95(times), 1),
                "max_ms": round(max(times), 1),
                "cpu_p95_ms": round(p95(cpu), 1),
                "cpu_max_ms": round(max(cpu), 1),
                "timed_out": sum(q["timed_out"] for q in per_query),
                "per_query": per_query,
            }
        )
    return {
        "first_query_ms": round(first_ms, 1),
        "hwm_after_first_mb": round(rss_after_first, 1),
        "hwm_mb": round(rss_mb(), 1),
        "passes": runs,
    }


def child_plain_query(target: str, queries_file: str, passes: int, cold: bool) -> dict:
    """The same queries through Whoosh's ``MultifieldParser`` (date ranges as a ``TermRange`` of days)."""
    from whoosh import index
    from whoosh import query as wq
    from whoosh.qparser import MultifieldParser

    queries = json.loads(Path(queries_file).read_text())
    if cold:
        evict(Path(target))
    started = time.perf_counter()
    ix = index.open_dir(target)
    searcher = ix.searcher()
    parser = MultifieldParser([name for name, _ in TEXTS], ix.schema)

    def run(spec: dict) -> int:
        q = parser.parse(spec["q"])
        if "date_from" in spec:
            days = wq.TermRange("days", spec["date_from"].replace("-", ""), spec["date_to"].replace("-", ""))
            q = wq.And([q, days])
        return len(searcher.search(q, limit=20))

    run(queries[0])
    first_ms = (time.perf_counter() - started) * 1000
    runs = []
    for _ in range(passes):
        times = []
        for spec in queries:
            t = time.perf_counter()
            run(spec)
            times.append((time.perf_counter() - t) * 1000)
        runs.append(
            {
                "p50_ms": round(statistics.median(times), 1),
                "p95_ms": round(p95(times), 1),
                "max_ms": round(max(times), 1),
            }
        )
    return {"first_query_ms": round(first_ms, 1), "hwm_mb": round(rss_mb(), 1), "passes": runs}


CHILDREN = {
    "build": child_build,
    "plain-build": child_plain_build,
    "query": child_query,
    "plain-query": child_plain_query,
}


def run_child(kind: str, *args, tree: Path | None = None) -> dict:
    """``kind`` in a fresh interpreter (``subprocess`` exec); its result, and from ``os.wait4`` its
    peak RSS, user and system CPU seconds. ``tree``: another source tree's own ``search_bench.py``,
    with ``PYTHONPATH`` at that tree (``tree_search_ab_bench.py``)."""
    import subprocess

    started = time.monotonic()
    script = Path(__file__).resolve() if tree is None else tree / "bench" / "search_bench.py"
    env = None if tree is None else {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen(
        [sys.executable, str(script), "--child", kind, json.dumps([str(a) for a in args])],
        stdout=subprocess.PIPE,
        cwd=tree,
        env=env,
    )
    assert proc.stdout is not None
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"{kind} failed with exit code {proc.returncode}")
    result = json.loads(output.decode().strip().splitlines()[-1])
    result.update(
        wall_s=round(time.monotonic() - started, 1),
        peak_rss_mb=round(usage.ru_maxrss / 1024, 1),
        cpu_s=round(usage.ru_utime + usage.ru_stime, 1),
    )
    return result


def _child_main(kind: str, raw: str) -> None:
    args = json.loads(raw)
    fn = CHILDREN[kind]
    if kind in ("plain-build",):
        args[-1] = float(args[-1])
    if kind in ("query", "plain-query"):
        args[-2], args[-1] = int(args[-2]), args[-1] == "True"
    print(json.dumps(fn(*args), ensure_ascii=False))


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def synthetic(args, preset: str) -> None:
    from sitegen import GeneratedSite, SiteSpec

    work = Path(args.work) if args.work else OUT / "synthetic"
    work.mkdir(parents=True, exist_ok=True)
    out = OUT / f"search-synthetic-{datetime.now(UTC):%Y%m%d%H%M%S}"
    out.mkdir(parents=True)
    queries_file = out / "queries.json"
    queries_file.write_text(json.dumps(latency_queries(GeneratedSite(SiteSpec.preset(preset))), ensure_ascii=False))
    report: dict = {"preset": preset, "python": sys.version.split()[0], "cpus": os.cpu_count(), "scales": {}}
    for count in [int(s) for s in (args.scales or "100000").split(",")]:
        corpus = work / f"corpus-{preset}-{count}-7.pickle"
        meta_file = corpus.with_suffix(".json")
        if not corpus.is_file() or not meta_file.is_file():
            print(f"generating {count:,} documents ...", flush=True)
            meta_file.write_text(json.dumps(write_corpus(corpus, count, 7, preset)))
        meta = json.loads(meta_file.read_text())
        figures: dict = {"corpus": meta, "builds": [], "queries": [], "plain": None}
        root = work / f"root-{count}"
        for attempt in range(max(1, args.repeat)):
            shutil.rmtree(root, ignore_errors=True)
            before = load()
            built = run_child("build", corpus, root, "synth")
            built.update(
                docs_per_s=round(count / built["seconds"], 1),
                docs_per_cpu_s=round(count / built["cpu_s"], 1),
                size_vs_text=round(built["size_bytes"] / meta["text_bytes"], 2),
                load=f"{before} / {load()}",
            )
            figures["builds"].append(built)
            print(f"{count:,} build {attempt + 1}: {built}", flush=True)
            if attempt + 1 < args.repeat and not args.query_every_build:
                continue
            before = load()
            timed = run_child("query", root, "synth", queries_file, args.passes, True)
            timed["load"] = f"{before} / {load()}"
            figures["queries"].append(timed)
            print(
                f"{count:,} queries: first {timed['first_query_ms']} ms, RSS {timed['peak_rss_mb']} MB, "
                + "; ".join(f"p50 {r['p50_ms']} p95 {r['p95_ms']} max {r['max_ms']}" for r in timed["passes"]),
                flush=True,
            )
        if args.plain_budget > 0:
            target = work / f"plain-{count}"
            shutil.rmtree(target, ignore_errors=True)
            before = load()
            plain = run_child("plain-build", corpus, target, args.plain_kind, args.plain_budget)
            plain["load"] = f"{before} / {load()}"
            if plain["finished"]:
                plain["queries"] = run_child("plain-query", target, queries_file, args.passes, True)
            figures["plain"] = plain
            print(f"{count:,} plain Whoosh ({args.plain_kind}): {plain}", flush=True)
            if not args.keep:
                shutil.rmtree(target, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        report["scales"][count] = figures
        (out / "report.json").write_text(json.dumps(report, ensure_ascii=False, indent=1))
    lines = _synthetic_table(report)
    (out / "report.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nfigures: {out / 'report.json'}")


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values)} ({min(values)}-{max(values)})" if len(values) > 1 else f"{values[0]}"


def _of(rows: list[dict], key: str) -> str:
    return _spread([row[key] for row in rows])


def _synthetic_table(report: dict) -> list[str]:
    lines = []
    for count, f in report["scales"].items():
        text_mb = f["corpus"]["text_bytes"] / 1e6
        b = f["builds"]
        lines.append(
            f"{int(count):,} documents, {text_mb:.0f} MB of text ({f['corpus']['text_bytes'] / int(count):.0f} bytes "
            f"a document), {f['corpus']['captures']:,} captures"
        )
        lines.append(
            f"  build: {_of(b, 'docs_per_s')} docs/s ({_of(b, 'docs_per_cpu_s')} per CPU second), "
            f"peak RSS {_of(b, 'peak_rss_mb')}"
            f" MB, CPU {_of(b, 'cpu_s')} s, index {b[-1]['size_bytes'] / 1e6:.0f} MB = "
            f"{b[-1]['size_vs_text']} x text; load {', '.join(x['load'] for x in b)}"
        )
        for q in f["queries"]:
            passes = q["passes"]
            lines.append(
                f"  queries: first after start (cold) {q['first_query_ms']} ms; p50 {_of(passes, 'p50_ms')}"
                f", p95 {_of(passes, 'p95_ms')}, max {_of(passes, 'max_ms')} ms; "
                f"(CPU p95 {_of(passes, 'cpu_p95_ms')}, max {_of(passes, 'cpu_max_ms')}); "
                f"peak RSS {q['peak_rss_mb']} MB; load {q['load']}"
            )
            slowest = sorted(passes[-1]["per_query"], key=lambda r: -r["ms"])[:4]
            lines.append(
                "    slowest: "
                + "; ".join(
                    f"{r['q']}{' (dates)' if 'date_from' in r else ''} {r['ms']} ms/{r['documents']} docs"
                    for r in slowest
                )
            )
        plain = f.get("plain")
        if plain:
            lines.append(
                f"  plain Whoosh: {plain['docs']:,} documents in {plain['seconds']} s ({plain['docs_per_s']} docs/s, "
                f"{'finished' if plain['finished'] else 'stopped at its budget'}), peak RSS {plain['peak_rss_mb']} MB, "
                f"{plain['size_bytes'] / 1e6:.0f} MB; load {plain['load']}"
            )
            if plain.get("queries"):
                pq = plain["queries"]
                lines.append(
                    f"    queries: first {pq['first_query_ms']} ms; p50 {_of(pq['passes'], 'p50_ms')}, "
                    f"p95 {_of(pq['passes'], 'p95_ms')}, max {_of(pq['passes'], 'max_ms')}"
                    f" ms; peak RSS {pq['peak_rss_mb']} MB"
                )
    return lines


# -- the run ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="issue2", help="sitegen preset (issue2: about 3,600 URLs)")
    parser.add_argument("--quick", action="store_true", help="quick preset, 2k and 10k synthetic documents")
    parser.add_argument("--scales", default=None, help="synthetic sizes, e.g. 10000,100000")
    parser.add_argument("--repeat", type=int, default=3, help="times each index is built, in turn (best counts)")
    parser.add_argument("--skip-latency", action="store_true", help="indexing and recall only")
    parser.add_argument("--synthetic", action="store_true", help="synthetic documents only, at --scales (issue 14)")
    parser.add_argument("--passes", type=int, default=3, help="--synthetic: passes over the 50 queries")
    parser.add_argument("--work", default=None, help="--synthetic: where corpora and indexes go")
    parser.add_argument("--plain-budget", type=float, default=0, help="--synthetic: seconds plain Whoosh may build")
    parser.add_argument("--plain-kind", default="whoosh-cjk-unigram", choices=("whoosh-cjk-unigram", "whoosh-default"))
    parser.add_argument("--query-every-build", action="store_true", help="--synthetic: query after each build")
    parser.add_argument("--keep", action="store_true", help="--synthetic: keep the indexes")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child_main(*args.child)
        return
    preset = "quick" if args.quick else args.preset
    if args.synthetic:
        synthetic(args, preset)
        return
    scales = [int(s) for s in (args.scales or ("2000,10000" if args.quick else "10000,100000")).split(",")]
    out = OUT / f"search-{preset}-{datetime.now(UTC):%Y%m%d%H%M%S}"
    root = out / "collections"
    root.mkdir(parents=True)
    report: dict = {"preset": preset, "python": sys.version.split()[0], "cpus": os.cpu_count()}

    print(f"harvesting the generated site ({preset}), two crawls ...", flush=True)
    summaries, site = harvest(root, preset)
    summary = summaries[0]
    report["harvest"] = {k: summary[k] for k in ("urls_fetched", "new", "seconds")}
    report["harvest2"] = {k: summaries[1][k] for k in ("urls_fetched", "new", "seconds")}
    report["incremental"] = incremental(root, [s["run_id"] for s in summaries])
    from index.collection import Collection

    coll = Collection(root, "crawl1")
    docs, extract_seconds = extract_docs(coll)
    text_docs = sum(1 for d in docs if d[2].text)
    report["extract"] = {
        "docs": len(docs),
        "with_text": text_docs,
        "seconds": round(extract_seconds, 2),
        "docs_per_s": round(len(docs) / extract_seconds, 1),
    }
    docs_file = out / "docs.pickle"
    with open(docs_file, "wb") as fh:
        pickle.dump(docs, fh)
    print(f"{len(docs)} documents ({text_docs} with text) extracted in {extract_seconds:.1f} s", flush=True)

    report["index"], report["recall"] = {}, {}
    words = chinese_words(site)
    report["chinese_words"] = words
    kinds = ("whoosh-default", "strata", "whoosh-cjk-unigram")
    runs: dict[str, list[dict]] = {kind: [] for kind in kinds}
    for attempt in range(max(1, args.repeat)):
        for kind in kinds:
            target = out / f"ix-{kind}-{attempt}"
            runs[kind].append(in_child(index_docs, kind, str(docs_file), str(target)))
            print(kind, runs[kind][-1], flush=True)
    for kind in kinds:
        best = min(range(len(runs[kind])), key=lambda i: runs[kind][i]["seconds"])
        figures = dict(runs[kind][best], all_docs_per_s=[f["docs_per_s"] for f in runs[kind]])
        figures["end_to_end_docs_per_s"] = round(len(docs) / (figures["seconds"] + extract_seconds), 1)
        report["index"][kind] = figures
        target = out / f"ix-{kind}-{best}"
        report["recall"][kind] = in_child(recall, kind, str(target), str(docs_file), words)
        print(kind, figures, {k: report["recall"][kind][k] for k in ("recall", "precision")}, flush=True)
    started = time.monotonic()
    from index.fulltext.rebuild import rebuild

    rebuilt = rebuild(coll)
    report["strata_rebuild_from_warcs"] = {
        "docs": rebuilt["documents"],
        "seconds": round(time.monotonic() - started, 1),
    }

    report["latency"] = {}
    queries = latency_queries(site)
    report["latency_queries"] = queries
    for count in [] if args.skip_latency else scales:
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
    lines = [
        f"crawl 1: {r['harvest']['urls_fetched']} URLs harvested; {r['extract']['docs']} documents "
        f"({r['extract']['with_text']} with text), extraction {r['extract']['docs_per_s']} docs/s",
        "",
        f"{'index':<20} {'docs/s':>8} {'+extract':>9} {'size MB':>8} {'RSS MB':>7} {'recall':>7} {'precision':>9}",
    ]
    for kind, f in (("whoosh default", plain), ("strata (bigram)", strata), ("whoosh CJKAnalyzer", uni)):
        rc = r["recall"][
            "whoosh-default"
            if kind == "whoosh default"
            else "strata"
            if kind.startswith("strata")
            else "whoosh-cjk-unigram"
        ]
        lines.append(
            f"{kind:<20} {f['docs_per_s']:>8} {f['end_to_end_docs_per_s']:>9} {f['size_mb']:>8} "
            f"{f['peak_rss_mb']:>7} {rc['recall']!s:>7} {rc['precision']!s:>9}   runs: {f['all_docs_per_s']}"
        )
    lines.append(
        f"strata/plain docs/s: {strata['docs_per_s'] / plain['docs_per_s']:.2f}x indexing only (best of "
        f"{len(plain['all_docs_per_s'])}; run by run: "
        + ", ".join(f"{s / p:.2f}x" for s, p in zip(strata["all_docs_per_s"], plain["all_docs_per_s"], strict=True))
        + f"), {strata['end_to_end_docs_per_s'] / plain['end_to_end_docs_per_s']:.2f}x with extraction"
    )
    lines.append(f"strata rebuild from WARCs: {r['strata_rebuild_from_warcs']}")
    for i, f in enumerate(r.get("incremental", []), 1):
        lines.append(
            f"index_run after crawl {i}: {f['seconds']} s, peak RSS {f['peak_rss_mb']} MB; parsed {f['parsed']}, "
            f"documents added {f['added']}, updated by capture rows {f['updated']}, {f['documents']} in all"
        )
    lines.append("")
    for count, f in r["latency"].items():
        lines.append(
            f"{count:>7} docs: p50 {f['p50_ms']} ms, p95 {f['p95_ms']} ms, max {f['max_ms']} ms "
            f"(first query cold {f['first_query_cold_ms']} ms); build {f['build']['docs_per_s']} docs/s, "
            f"{f['build']['size_mb']} MB; peak RSS {f['peak_rss_mb']} MB; timed out {f['timed_out']}"
        )
        slowest = sorted(f["per_query"], key=lambda q: -q["ms"])[:5]
        lines.append(
            "         slowest: "
            + "; ".join(
                f"{q['q']}{' (dates)' if 'date_from' in q else ''} {q['ms']} ms/{q['documents']} docs" for q in slowest
            )
        )
    return lines


if __name__ == "__main__":
    main()
