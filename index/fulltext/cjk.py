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
  (``index.fulltext.matching`` unites them);
- everything else is Whoosh's default: ``\\w+(\\.?\\w+)*`` words, lowercased, English stop words and
  one-letter words dropped without using a position; then a word of ASCII letters only is reduced to
  its English stem (``stem``: Snowball's Porter2, Whoosh's ``whoosh.lang.porter2``, as Whoosh's
  ``StemFilter`` does), so ``archives`` and ``archive`` are one term. Other words (with digits,
  accents, dots: ``mkzhgbk2``, ``café``, ``u.s``) and CJK runs are left as they are: bigrams never
  meet the stemmer. Stop words are dropped before stemming.

The index (``index.fulltext.postings``) keeps these terms' weights, not their positions:
``content_weights`` counts them for a whole document without a ``Token`` per token, and
``phrase_in`` decides a phrase on the stored text, with the positions the analyzer would give.

Why bigrams and not Whoosh's ``CJKAnalyzer`` (unigrams, phrase queries for every word): measured in
``bench/search_bench.py``, bigram queries are faster (a two-character word is one posting list
instead of a positional join of two very common characters) and exact where unigrams are not
(``国会`` matched ``中国。会议`` with unigrams, since punctuation takes no position). A segmenter
such as jieba would cut ``图书馆`` as one word and then miss the query ``图书``.

Text is expected NFKC-normalised (``index.fulltext.text`` does it), so full-width Latin letters and
half-width katakana meet their usual forms; queries are normalised the same way.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from itertools import islice, repeat
from operator import add, mul

from whoosh.analysis import STOP_WORDS, Token, Tokenizer
from whoosh.lang.porter2 import stem as _porter2

__all__ = [
    "CJK_CHARS",
    "CJKBigramAnalyzer",
    "chained_word",
    "content_weights",
    "is_cjk",
    "normalize",
    "phrase_in",
    "stem",
    "stem_search_prefix",
]

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


def _width_forms() -> dict[int, str]:
    """Full-width ASCII and the ideographic space (U+3000): the compatibility characters of nearly
    every Chinese and Japanese page (measured on generated Chinese pages: 10,046 of the 10,721
    such characters were full-width commas, the rest colons). Each is, under NFKD as under NFKC,
    one ASCII character. Taken from ``unicodedata`` itself, so that it holds for this Python."""
    forms = {}
    for code in (*range(0xFF01, 0xFF5F), 0x3000):
        nfkc = unicodedata.normalize("NFKC", chr(code))
        if nfkc.isascii() and unicodedata.normalize("NFKD", chr(code)) == nfkc:
            forms[code] = nfkc
    return forms


_WIDTH_FORMS = _width_forms()
_WIDTH_RUN = re.compile("[" + "".join(map(chr, _WIDTH_FORMS)) + "]+")


def _narrow(run: re.Match[str]) -> str:
    return run.group().translate(_WIDTH_FORMS)


def normalize(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``, faster on CJK text. One full-width comma makes
    CPython's quick check fail and normalise the whole text, at about 80 ns a character (half a
    millisecond for a 6,000-character page). Those characters are replaced first by their full
    compatibility decompositions, which leaves NFKD, and so NFKC, unchanged; the text then usually
    passes the quick check. The suite compares both on random text built to break this and on
    Chinese and Japanese lines (tests/unit/index/test_nfkc.py)."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", _WIDTH_RUN.sub(_narrow, text))


_STEMS: dict[str, str] = {}
_MAX_STEMS = 400_000  # words remembered (a site's vocabulary); the cache starts again past it


def stem(word: str) -> str:
    """The index term of a lowercased word: its Porter2 stem when it is ASCII letters only, else the
    word. Cached: Porter2 costs about 12 µs a word, a dictionary look-up a fraction of that."""
    found = _STEMS.get(word)
    if found is None:
        found = _porter2(word) if word.isascii() and word.isalpha() else word
        if len(_STEMS) >= _MAX_STEMS:
            _STEMS.clear()
        _STEMS[word] = found
    return found


def stem_search_prefix(term: str) -> str:
    """What a stem's words begin with in a text: the stem, but for Porter2's ``y`` -> ``i``
    (``happy`` -> ``happi``), where only the letters before it are certain."""
    return term[:-1] if len(term) > 2 and term.endswith("i") and term.isascii() else term


class _Token(Token):
    """Whoosh's ``Token`` with ``original`` declared: tokenizers set it under ``keeporiginal``, but
    whoosh's annotations leave it out."""

    original: str


class CJKBigramAnalyzer(Tokenizer):
    """A Whoosh analyzer (a tokenizer that needs no filters): see the module docstring."""

    def __init__(
        self, stoplist: frozenset[str] = STOP_WORDS, minsize: int = 2, maxsize: int = 64, stemming: bool = True
    ):
        self.stoplist = frozenset(stoplist)
        self.minsize = minsize
        self.maxsize = maxsize
        self.stemming = stemming

    def __eq__(self, other):
        return other.__class__ is self.__class__ and (self.stoplist, self.minsize, self.maxsize, self.stemming) == (
            other.stoplist,
            other.minsize,
            other.maxsize,
            other.stemming,
        )

    def __hash__(self):
        return hash((self.__class__.__name__, self.minsize, self.maxsize, self.stemming))

    # One loop on purpose (complexity 23, over the limit of 15): the bigrams of a CJK run in a sub-generator
    # cost 15% more CPU per token on Chinese text (0.145 s -> 0.170 s for 790k tokens, best of 5).
    def __call__(  # noqa: C901
        self,
        value: str,
        positions: bool = False,
        chars: bool = False,
        keeporiginal: bool = False,
        removestops: bool = True,
        start_pos: int = 0,
        start_char: int = 0,
        tokenize: bool = True,
        mode: str = "",
        **kwargs,
    ) -> Iterator[Token]:
        t = _Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
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
                t.text = stem(word) if self.stemming else word
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
                t.text = run[i : i + 2]
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


def content_weights(
    parts, stoplist: frozenset[str] = frozenset(STOP_WORDS), minsize: int = 2, maxsize: int = 64
) -> tuple[dict[str, int], int]:
    """The terms of ``CJKBigramAnalyzer``'s index analysis, counted without a ``Token`` per token,
    for a document given as ``(text, boost)`` parts (title, meta description, keywords, body):
    term -> weight in half units (occurrences times the part's boost, times two), and the number
    of tokens. No positions: ``index.fulltext.postings`` keeps none; phrases are checked against the
    stored text (``phrase_in``). About 0.5 ms for a 2,400-character page here, against 1.4 ms
    for the analyzer's tokens."""
    counted = []
    length = 0
    stems = _STEMS
    for text, boost in parts:
        if not text:
            continue
        terms: list[str] = []
        for run, word in _TOKEN_RE.findall(text):
            if run:
                if len(run) > 1:
                    terms.extend(map(add, run, run[1:]))
                terms.append(run[-1])
            else:
                word = word.lower()
                if minsize <= len(word) <= maxsize and word not in stoplist:
                    terms.append(stems.get(word) or stem(word))
        length += len(terms)
        counted.append((Counter(terms), round(2 * boost)))
    if not counted:
        return {}, 0
    # the longest part (the body) by map, the others (title, meta: short) term by term
    counted.sort(key=lambda c: len(c[0]), reverse=True)
    counts, boost2 = counted[0]
    weights = dict(zip(counts, map(mul, counts.values(), repeat(boost2)), strict=True))
    for counts, boost2 in counted[1:]:
        for term, count in counts.items():
            weights[term] = weights.get(term, 0) + boost2 * count
    return weights, length


def phrase_in(tokens: list[str], text: str) -> bool:
    """Whether ``text`` holds ``tokens`` (a query phrase, analysed in query mode) at consecutive
    positions of ``CJKBigramAnalyzer``'s index analysis: words may be separated by what it drops
    (punctuation, stop words, one-letter words). A phrase that is the bigrams of one Chinese or
    Japanese word is that word as a substring (exact, where bigram positions also matched
    ``ab。bcd`` for ``abcd``)."""
    if not tokens or not text:
        return False
    word = chained_word(tokens)
    if word is not None:
        return word in text
    first = tokens[0]
    for match in re.finditer(re.escape(stem_search_prefix(first)), text, re.IGNORECASE):
        stream = _stream_from(text, match.start(), first)
        if stream is None:
            continue
        found = list(islice(stream, len(tokens)))
        if len(found) == len(tokens) and all(t in at for t, at in zip(tokens, found, strict=True)):
            return True
    return False


def chained_word(tokens: list[str]) -> str | None:
    """The word whose bigrams ``tokens`` are (``图书 书馆`` -> ``图书馆``), or None."""
    for i, token in enumerate(tokens):
        if not (
            len(token) == 2
            and _CJK_RE.match(token[0])
            and _CJK_RE.match(token[1])
            and (i == 0 or tokens[i - 1][1] == token[0])
        ):
            return None
    return tokens[0] + "".join(t[1] for t in tokens[1:]) if tokens else None


_WORD_CHAR_RE = re.compile(rf"[^\W{CJK_CHARS}]")


def _stream_from(text: str, start: int, first: str) -> Iterator[tuple[str, ...]] | None:
    """The analyzer's tokens per position, from the position of ``first`` found at ``start``
    (None when that occurrence is not a token there)."""
    is_cjk_char = _CJK_RE.match
    if is_cjk_char(first):
        if len(first) == 2:
            return _run_from(text, start)
        if start + 1 < len(text) and is_cjk_char(text[start + 1]):
            return None  # a one-character token is a run's last character, or a run of one
        return _after((first,), text, start + 1)
    # a word: it must start a token and be the whole token
    if start:
        prev = text[start - 1]
        if _WORD_CHAR_RE.match(prev) or (prev == "." and start >= 2 and _WORD_CHAR_RE.match(text[start - 2])):
            return None
    match = _TOKEN_RE.match(text, start)
    if match is None or match.group(2) is None or stem(match.group(2).lower()) != first:
        return None
    return _after((first,), text, match.end())


def _run_from(text: str, start: int) -> Iterator[tuple[str, ...]]:
    end = start
    while end < len(text) and _CJK_RE.match(text[end]):
        end += 1
    for j in range(start, end - 2):
        yield (text[j : j + 2],)
    yield (text[end - 2 : end], text[end - 1])
    yield from _after((), text, end)


def _after(head: tuple, text: str, start: int, stoplist: frozenset[str] = frozenset(STOP_WORDS)):
    if head:
        yield head
    for match in _TOKEN_RE.finditer(text, start):
        run = match.group(1)
        if run:
            if len(run) == 1:
                yield (run,)
                continue
            for j in range(len(run) - 2):
                yield (run[j : j + 2],)
            yield (run[-2:], run[-1])
            continue
        word = match.group(2).lower()
        if 2 <= len(word) <= 64 and word not in stoplist:
            yield (stem(word),)
