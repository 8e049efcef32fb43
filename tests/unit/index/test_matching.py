"""Queries evaluated over real posting lists (index.fulltext.matching) against a brute force: the
documents' own words, known to the test, say which documents match; the scores read back from the
posting lists one by one say which are best. Random queries of AND, OR, NOT and parentheses, with
and without a date range, in both scopes, at page sizes that cut through ties."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest

from index.collection import Collection
from index.fulltext.documents import Payload
from index.fulltext.matching import BOILER_WEIGHT, IndexView, evaluate, matching_docs, rank
from index.fulltext.params import parse_query
from index.fulltext.rebuild import create

WORDS = ["数据", "安全", "国会", "图书", "档案", "网络", "政府", "新闻"]
WEIGHTS = [40, 25, 12, 8, 5, 3, 2, 1]  # common to rare


def _documents(rng: random.Random, count: int) -> list[tuple[set[str], set[str], set[str]]]:
    """(main words, boilerplate words, capture stamps); every fifth a copy of the one before, so
    that scores tie."""
    docs: list[tuple[set[str], set[str], set[str]]] = []
    for n in range(count):
        if n % 5 == 4:
            docs.append(docs[-1])
            continue
        main = set(rng.choices(WORDS, WEIGHTS, k=rng.randrange(1, 5)))
        boiler = set(rng.choices(WORDS, WEIGHTS, k=rng.randrange(0, 3)))
        stamps = {f"20{rng.randrange(20, 26)}{rng.randrange(1, 13):02d}15120000" for _ in range(rng.randrange(1, 3))}
        docs.append((main, boiler, stamps))
    return docs


@pytest.fixture(scope="module")
def indexed(tmp_path_factory) -> tuple[IndexView, list[tuple[set[str], set[str], set[str]]]]:
    root: Path = tmp_path_factory.mktemp("matching")
    docs = _documents(random.Random(11), 600)
    coll = Collection.open(root, "m", create=True)
    create(
        coll,
        (
            (
                f"http://example.org/{n}",
                f"sha1:{n}",
                Payload(mime="text/html", text="。".join(sorted(main)), boilerplate="。".join(sorted(boiler))),
                stamps,
            )
            for n, (main, boiler, stamps) in enumerate(docs)
        ),
    )
    view = IndexView(coll)
    yield view, docs
    view.close()


def _query(rng: random.Random, depth: int = 0) -> str:
    pick = rng.randrange(5 if depth < 2 else 1)
    if pick == 0:
        return rng.choice(WORDS)
    a, b = _query(rng, depth + 1), _query(rng, depth + 1)
    return {1: f"{a} {b}", 2: f"({a} OR {b})", 3: f"{a} NOT {b}", 4: f"({a}) OR {b}"}[pick]


def _truth(node, docs, main_only: bool) -> set[int]:
    kind = node[0]
    if kind == "tokens":
        (word,) = node[1]
        return {n for n, (main, boiler, _) in enumerate(docs) if word in main or (not main_only and word in boiler)}
    if kind == "or":
        return set().union(*(_truth(c, docs, main_only) for c in node[1]))
    if kind == "not":
        return set(range(len(docs))) - _truth(node[1], docs, main_only)
    found = set(range(len(docs)))
    for child in node[1]:
        found &= (
            set(range(len(docs))) - _truth(child[1], docs, main_only)
            if child[0] == "not"
            else _truth(child, docs, main_only)
        )
    return found


def _score(view: IndexView, docs, node, docnum: int, main_only: bool) -> float:
    """A matching document's score, from the posting lists one posting at a time: a word's
    ``idf x impact`` (boilerplate weighing less), added over an AND's positive parts and over the
    parts of an OR that match."""
    kind = node[0]
    if kind == "tokens":
        total = 0.0
        for field, weight in (("content", 1.0),) + (() if main_only else (("boiler", BOILER_WEIGHT),)):
            p = view.postings(node[1][0], field)
            if p is not None and docnum in p.ids:
                total += view.idf(len(p)) * weight * p.impacts[list(p.ids).index(docnum)]
        return total
    if kind == "not":
        return 0.0
    if kind == "or":
        parts = [c for c in node[1] if docnum in _truth(c, docs, main_only)]
    else:
        parts = [c for c in node[1] if c[0] != "not"]
    return sum(_score(view, docs, c, docnum, main_only) for c in parts)


def test_random_queries_agree_with_a_brute_force(indexed):
    view, docs = indexed
    rng = random.Random(3)
    ranges = [None, ("20220101000000", "20231231235959"), ("20250101000000", None)]
    checked = 0
    for _ in range(120):
        text = _query(rng)
        tree = parse_query(text).tree
        scope = rng.choice(["all", "main"])
        main_only = scope == "main"
        dates = rng.choice(ranges)
        allowed = None
        if dates is not None:
            lo, hi = dates[0], dates[1] or "99999999999999"
            allowed = {n for n, (_, _, stamps) in enumerate(docs) if any(lo <= ts <= hi for ts in stamps)}
        truth = _truth(tree, docs, main_only) & (allowed if allowed is not None else set(range(len(docs))))
        if scope == "all":
            assert matching_docs(view, tree) & (allowed or set(range(len(docs)))) == truth, text
        limit = rng.choice([1, 7, 50, 1000])
        given = allowed  # as a search gives it: a set, or a mask of the index's documents
        if allowed is not None and rng.random() < 0.5:
            given = np.zeros(len(docs), dtype=np.bool_)
            given[list(allowed)] = True
        ranked = rank(evaluate(view, tree, scope=scope), given, limit)
        assert (ranked.total, ranked.exact) == (len(truth), True), text
        assert len(ranked.hits) == min(limit, len(truth)), text
        scores = {d: _score(view, docs, tree, d, main_only) for d in truth}
        got = [d for _, d in ranked.hits]
        assert len(set(got)) == len(got) and set(got) <= truth, text
        for score, docnum in ranked.hits:
            assert score == pytest.approx(scores[docnum]), text
        assert [s for s, _ in ranked.hits] == sorted((s for s, _ in ranked.hits), reverse=True), text
        if len(truth) > limit:  # nothing left out scores better than the page's last
            left_out = max(scores[d] for d in truth - set(got))
            assert left_out <= ranked.hits[-1][0] + 1e-9, text
        checked += bool(truth)
    assert checked > 60


def test_ties_rank_by_document_number(indexed):
    """Copies score alike: a single word's list keeps document order, a combination puts the
    higher document number first (as the ranking always did)."""
    view, docs = indexed
    single = rank(evaluate(view, parse_query("新闻").tree, scope="main"), None, 1000).hits
    for (s1, d1), (s2, d2) in zip(single, single[1:], strict=False):
        assert s1 > s2 or (math.isclose(s1, s2) and d1 < d2)
    combined = rank(evaluate(view, parse_query("新闻 OR 政府").tree), None, 1000).hits
    for (s1, d1), (s2, d2) in zip(combined, combined[1:], strict=False):
        assert s1 > s2 or (s1 == s2 and d1 > d2)
    assert any(s1 == s2 for (s1, _), (s2, _) in zip(combined, combined[1:], strict=False))
