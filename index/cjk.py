"""Text analysis for full-text search: Latin words and overlapping CJK bigrams, in one pass.

Chinese and Japanese do not put spaces between words, so Whoosh's default analyzer turns a whole
run of Han or kana characters into one token: a two-character word such as ``国会`` is then never
found inside a sentence. ``CJKBigramAnalyzer`` follows Lucene's ``CJKBigramFilter``:

- a run of CJK characters (Han, kana, Hangul) becomes its overlapping bigrams at consecutive
  positions (``数据安全`` -> ``数据 据安 安全``), so a two-character word is one term and a longer
  word is a phrase of bigrams;
- a one-character run is a unigram, and at index time the last character of every longer run is
  also emitted as a unigram (at the last bigram's position). A one-character query ``书`` is then
  ``书`` or any bigram that starts with it: that covers every place the character can be
  (``index.query`` expands the prefix, with a cap);
- everything else is Whoosh's default: ``\\w+(\\.?\\w+)*`` words, lowercased, English stop words and
  one-letter words dropped without using a position.

Why bigrams and not Whoosh's ``CJKAnalyzer`` (unigrams, phrase queries for every word): measured in
``bench/search_bench.py``, bigram queries are faster (a two-character word is one posting list
instead of a positional join of two very common characters) and exact where unigrams are not
(``国会`` matched ``中国。会议`` with unigrams, since punctuation takes no position). A segmenter
such as jieba would cut ``图书馆`` as one word and then miss the query ``图书``.

Text is expected NFKC-normalised (``index.text`` does it), so full-width Latin letters and
half-width katakana meet their usual forms; queries are normalised the same way.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from whoosh.analysis import STOP_WORDS, Token, Tokenizer

__all__ = ["CJK_CHARS", "CJKBigramAnalyzer", "is_cjk", "normalize"]

# Han (with extensions and compatibility forms), kana, Hangul. Punctuation blocks are left out:
# they separate runs.
CJK_CHARS = (
    "\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff\uf900-\ufaff\uff66-\uff9d"
    "\U00020000-\U0002ebef\U0002f800-\U0002fa1f\U00030000-\U0003134f"
)
_TOKEN_RE = re.compile(rf"([{CJK_CHARS}]+)|((?:[^\W{CJK_CHARS}])+(?:\.?(?:[^\W{CJK_CHARS}])+)*)")
_CJK_RE = re.compile(rf"[{CJK_CHARS}]")


def is_cjk(text: str) -> bool:
    return bool(_CJK_RE.search(text))


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


class CJKBigramAnalyzer(Tokenizer):
    """A Whoosh analyzer (a tokenizer that needs no filters): see the module docstring."""

    def __init__(self, stoplist: frozenset[str] = STOP_WORDS, minsize: int = 2, maxsize: int = 64):
        self.stoplist = frozenset(stoplist)
        self.minsize = minsize
        self.maxsize = maxsize

    def __eq__(self, other):
        return (
            other.__class__ is self.__class__
            and (self.stoplist, self.minsize, self.maxsize) == (other.stoplist, other.minsize, other.maxsize)
        )

    def __hash__(self):
        return hash((self.__class__.__name__, self.minsize, self.maxsize))

    def __call__(self, value: str, positions: bool = False, chars: bool = False, keeporiginal: bool = False,
                 removestops: bool = True, start_pos: int = 0, start_char: int = 0, tokenize: bool = True,
                 mode: str = "", **kwargs) -> Iterator[Token]:
        t = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        t.boost = 1.0
        t.stopped = False
        if not tokenize:
            t.text = t.original = value
            if positions:
                t.pos = start_pos
            if chars:
                t.startchar, t.endchar = start_char, start_char + len(value)
            yield t
            return
        index_mode = mode == "index"
        stoplist, minsize, maxsize = self.stoplist, self.minsize, self.maxsize
        pos = start_pos
        for match in _TOKEN_RE.finditer(value):
            run = match.group(1)
            start = match.start()
            if run is None:
                word = match.group(2).lower()
                if len(word) < minsize or len(word) > maxsize or word in stoplist:
                    if removestops:
                        continue
                    t.stopped = True
                else:
                    t.stopped = False
                t.text = word
                if keeporiginal:
                    t.original = match.group(2)
                if positions:
                    t.pos = pos
                if chars:
                    t.startchar, t.endchar = start_char + start, start_char + match.end()
                pos += 1
                yield t
                continue
            t.stopped = False
            n = len(run)
            if n == 1:
                t.text = run
                if keeporiginal:
                    t.original = run
                if positions:
                    t.pos = pos
                if chars:
                    t.startchar, t.endchar = start_char + start, start_char + start + 1
                pos += 1
                yield t
                continue
            for i in range(n - 1):
                t.text = run[i:i + 2]
                if keeporiginal:
                    t.original = t.text
                if positions:
                    t.pos = pos
                if chars:
                    t.startchar, t.endchar = start_char + start + i, start_char + start + i + 2
                pos += 1
                yield t
            if index_mode:
                t.text = run[-1]
                if keeporiginal:
                    t.original = t.text
                if positions:
                    t.pos = pos - 1
                if chars:
                    t.startchar, t.endchar = start_char + start + n - 1, start_char + start + n
                yield t
