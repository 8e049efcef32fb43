"""BulkWriter's pool of postings, sorted by numpy, against the postings worked out document by
document from ``content_weights``: every term's documents, impacts and counts, and every CJK
character's (``CharTerms``), in one segment and after segments are merged."""

from __future__ import annotations

import random

import pytest
from whoosh import fields

from index.fulltext import postings as P
from index.fulltext.cjk import content_weights, is_cjk
from index.fulltext.mapfile import MappedStorage

_HAN = "数据安全档案馆国会图书中文日本語の記録"
_WORDS = ["archive", "archives", "library", "web", "harvest", "2024", "café", "the", "u.s"]


def _text(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randrange(0, 40)):
        kind = rng.random()
        if kind < 0.6:
            out.append("".join(rng.choice(_HAN) for _ in range(rng.randrange(1, 6))))
        elif kind < 0.9:
            out.append(rng.choice(_WORDS))
        else:
            out.append(rng.choice("，。 !"))
        out.append(rng.choice(["", " ", "、"]))
    return "".join(out)


def _documents(n: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        parts = ((_text(rng), 3.0), (_text(rng), 1.5), (_text(rng) * rng.randrange(1, 30), 1.0))
        docs.append((f"k{i}", parts))
    return docs


def _expected(docs) -> tuple[dict, dict]:
    """term -> [(docnum, impact, count)], CJK character -> the same, by the definitions."""
    terms: dict[str, list] = {}
    chars: dict[str, list] = {}
    for docnum, (_, parts) in enumerate(docs):
        weights, length = content_weights(parts)
        row = P.impact_row(P.length_class(length))
        per_char: dict[str, int] = {}
        for term, w2 in sorted(weights.items()):
            w2 = min(w2, P._MAX_W2)
            count = min(P.MAX_COUNT, (w2 + 1) // 2)
            terms.setdefault(term, []).append((docnum, row[w2], count))
            if is_cjk(term[0]):
                per_char[term[0]] = per_char.get(term[0], 0) + count
        for char, total in per_char.items():
            w2 = min(2 * total, P._MAX_W2)
            chars.setdefault(char, []).append((docnum, row[w2], (w2 + 1) // 2))
    return terms, chars


def _read(ix, fieldname: str) -> dict[str, list]:
    with ix.reader() as r:
        leaves = list(r.leaf_readers())
        found = {}
        for btext in r.lexicon(fieldname):
            parts = [p.rebased(base) for leaf, base in leaves if (p := P.read_postings(leaf, fieldname, btext))]
            p = P.Postings.join(parts)
            found[btext.decode("utf-8")] = list(zip(p.ids, p.impacts, p.counts, strict=True))
        return found


@pytest.mark.parametrize("how", ["one pool", "three segments merged", "three runs spilled"])
def test_pooled_postings_equal_those_worked_out_document_by_document(tmp_path, how, monkeypatch):
    monkeypatch.setattr(P, "_SORT_CHUNK", 1 << 10)  # several sort chunks, and characters split across them
    monkeypatch.setattr(P, "_CHUNK_BITS", 10)
    docs = _documents(300, seed=len(how))
    schema = fields.Schema(key=fields.ID(stored=True), content=P.Content(chars="chars"), chars=P.CharTerms())
    (tmp_path / "index").mkdir()
    ix = MappedStorage(tmp_path / "index").create_index(schema)
    spilled = tmp_path / "runs"
    spilled.mkdir()
    step = len(docs) if how == "one pool" else 100
    writer = P.BulkWriter(ix, merge=None)
    for at in range(0, len(docs), step):
        if writer.is_closed:
            writer = P.BulkWriter(ix, merge=None)
        for key, parts in docs[at : at + step]:
            writer.add_document(key=key, content=parts)
        if how == "three runs spilled":
            writer.spill(spilled)  # the last one too: a segment of runs and an empty pool
            assert len(list(spilled.iterdir())) == at // step + 1
        else:
            writer.commit()
    if how == "three runs spilled":
        writer.commit()
        assert not list(spilled.iterdir())  # the runs go with the segment written
    elif how == "three segments merged":
        P.BulkWriter(ix, merge="all").commit()
    terms, chars = _expected(docs)
    assert len(ix.reader().leaf_readers()) == 1
    assert ix.doc_count_all() == len(docs)
    assert [stored["key"] for stored in ix.reader().all_stored_fields()] == [key for key, _ in docs]
    assert _read(ix, "content") == terms
    assert _read(ix, "chars") == chars
    assert len(chars) > 5 and max(map(len, terms.values())) > 1 << 10 // 4


def test_a_cancelled_writer_removes_its_runs(tmp_path):
    schema = fields.Schema(key=fields.ID(stored=True), content=P.Content(chars="chars"), chars=P.CharTerms())
    ix = MappedStorage(tmp_path).create_index(schema)
    writer = P.BulkWriter(ix, merge=None)
    for key, parts in _documents(20, seed=5):
        writer.add_document(key=key, content=parts)
    writer.spill(tmp_path)
    assert list(tmp_path.glob("run-*"))
    writer.cancel()
    assert not list(tmp_path.glob("run-*"))
    assert ix.doc_count_all() == 0


def test_a_sorted_pool_takes_no_more_documents():
    pool = P._FieldPool()
    pool.add(0, ["a", "b"], [1, 2])
    pool.sorted()
    with pytest.raises(ValueError, match="sorted"):
        pool.add(1, ["a"], [1])
