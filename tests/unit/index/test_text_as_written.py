"""Text as it was written: full-width punctuation kept in what search stores and shows (the terms
found are the same), and a word diff of Chinese text with no spaces put between its words."""

from __future__ import annotations

from index.compare.diff import Comparison, _diff_words
from index.fulltext.cjk import CJKBigramAnalyzer
from index.fulltext.text import as_written, extract

PAGE = "<html><body><main><p>图书馆，会议：（通知）｡ＡＢＣ１２３ ｶﾀｶﾅ！</p></main></body></html>"


def test_full_width_punctuation_is_kept_and_the_rest_normalised():
    text = extract(PAGE.encode(), "text/html; charset=utf-8").text
    assert text == "图书馆，会议：（通知）｡ABC123 カタカナ！"
    analyzer = CJKBigramAnalyzer()
    terms = [t.text for t in analyzer(text)]
    assert terms == [t.text for t in analyzer(as_written(text).replace("，", ",").replace("：", ":"))]
    assert as_written("ＡＢＣ＿") == "ABC_"  # the low line stays a word character


def _inline(old: str, new: str) -> list:
    out = Comparison.__new__(Comparison)
    out.inline, out.old_chunks, out.new_chunks = [], [], []
    out.inserted_words = out.deleted_words = 0
    _diff_words(out, old, new)
    return out.inline


def test_a_chinese_diff_puts_no_space_between_words():
    chunks = _inline("我们在北京开会。", "我们在上海开会。")
    deleted = [c for c in chunks if c.op == "delete"]
    assert "".join(c.text for c in deleted) == "北京" and not any(c.gap for c in chunks)
    chunks = _inline("the count was nine today", "the count was ten today")
    assert [(c.op, c.text, c.gap) for c in chunks if c.op != "equal"] == [
        ("delete", "nine", True),
        ("insert", "ten", False),
    ]
