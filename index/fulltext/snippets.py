"""Snippets for search hits: the passage of a page's text with the most query terms, marked.

Terms are found by string search, not by analysing the text (which cost up to 20 ms for a long
page): a Chinese or Japanese bigram or character wherever it occurs, a word where the analyzer
would make it a token (whole, any letter case) and its stem is a query term (``archives`` for the
term ``archiv``) or it begins with a query prefix (``arch*``). Overlapping and adjacent finds are
marked as one, so the bigrams of ``图书馆`` mark the word.
"""

from __future__ import annotations

import bisect
import html
import re

from index.fulltext.cjk import CJK_CHARS, is_cjk, stem, stem_search_prefix

__all__ = ["SNIPPET_CHARS", "snippet"]

SNIPPET_CHARS = 240
SCAN_CHARS = 50_000  # of a page's text searched for terms
MAX_SPANS = 2000
_WORD_CHAR = re.compile(rf"[^\W{CJK_CHARS}]")
_CJK_CHAR = re.compile(rf"[{CJK_CHARS}]")


def _whole_token(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] is a whole word token of the analyzer (``\\w+(\\.?\\w+)*``)."""
    before, after = text[start - 2 : start] if start >= 2 else text[:start], text[end : end + 2]
    if before and (
        _WORD_CHAR.match(before[-1]) or (before[-1] == "." and len(before) == 2 and _WORD_CHAR.match(before[0]))
    ):
        return False
    return not (
        after and (_WORD_CHAR.match(after[0]) or (after[0] == "." and len(after) == 2 and _WORD_CHAR.match(after[1])))
    )


def find_spans(
    text: str, terms: set[str], prefixes: set[str], word_prefixes: frozenset[str] | set[str] = frozenset()
) -> list[tuple[int, int, str]]:
    """(start, end, term) of every find of ``terms`` (analysed query terms) in ``text``, by start;
    a character in ``prefixes`` (a one-character query word) is found wherever it is, a word that
    begins with one of ``word_prefixes`` wherever it is a token."""
    text = text[:SCAN_CHARS]
    spans: list[tuple[int, int, str]] = []
    words = {t for t in terms if not is_cjk(t)}
    for term in sorted(t for t in terms | prefixes if is_cjk(t)):
        start = text.find(term)
        while start >= 0 and len(spans) < MAX_SPANS:
            spans.append((start, start + len(term), term))
            start = text.find(term, start + 1)
    starts = {stem_search_prefix(t) for t in words} | set(word_prefixes)
    if starts:
        # the words alone in the pattern, then the rest of the token: the word-character class makes a
        # pattern take 25 ms to compile, so \w (which holds CJK too) is cut at the first CJK character
        alternatives = "|".join(map(re.escape, sorted(starts, key=len, reverse=True)))
        pattern = re.compile(rf"(?:{alternatives})\w*(?:\.\w+)*", re.IGNORECASE)
        for match in pattern.finditer(text):
            if len(spans) >= MAX_SPANS:
                break
            start, found = match.start(), match.group()
            cjk = _CJK_CHAR.search(found)
            if cjk:
                found = found[: cjk.start()]
            end = start + len(found)
            if not _whole_token(text, start, end):
                continue
            word = found.lower()
            if stem(word) in words or any(word.startswith(p) for p in word_prefixes):
                spans.append((start, end, word))
    spans.sort()
    return spans


def snippet(
    text: str,
    terms: set[str],
    prefixes: set[str],
    width: int = SNIPPET_CHARS,
    word_prefixes: frozenset[str] | set[str] = frozenset(),
) -> tuple[str, str]:
    """(plain text, HTML with <mark>) of the passage of ``text`` with the most distinct terms."""
    text = text or ""
    spans = find_spans(text, terms, prefixes, word_prefixes) if terms or prefixes or word_prefixes else []
    if not spans:
        plain = text[:width].replace("\n", " ")
        plain = plain + ("…" if len(text) > width else "")
        return plain, html.escape(plain)
    starts = [s for s, _, _ in spans]
    best_start, best_score = spans[0][0], -1
    for start, _, _ in spans[:500]:
        window_start = max(0, start - width // 4)
        window_end = window_start + width
        lo, hi = bisect.bisect_left(starts, window_start), bisect.bisect_right(starts, window_end)
        score = len({t for s, e, t in spans[lo:hi] if e <= window_end})
        if score > best_score:
            best_start, best_score = window_start, score
    end = min(len(text), best_start + width)
    lo, hi = bisect.bisect_left(starts, best_start), bisect.bisect_right(starts, end)
    merged: list[list[int]] = []
    for s, e, _ in spans[lo:hi]:
        if e > end:
            continue
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    parts_html, cursor = [], best_start
    for s, e in merged:
        parts_html.append(html.escape(text[cursor:s]))
        parts_html.append("<mark>" + html.escape(text[s:e]) + "</mark>")
        cursor = e
    parts_html.append(html.escape(text[cursor:end]))
    lead = "…" if best_start > 0 else ""
    tail = "…" if end < len(text) else ""
    plain = (lead + text[best_start:end] + tail).replace("\n", " ")
    return plain, (lead + "".join(parts_html) + tail).replace("\n", " ")
