"""Noise-tolerant change detection, kept apart from storage dedup.

The WARC payload digest stays the exact SHA-1 of what was received. Beside it, a changed HTML page
is compared by its *main text*: boilerplate removed (script, style, noscript, template, nav, and the
job's noise selectors) and the job's noise regexes blanked. Equal main texts mean a soft (noise-only)
change; otherwise the similarity is the exact Jaccard index of the two texts' word (or CJK
character) 3-shingle sets, compared with the job's ``change_threshold``. The main text's SHA-1 is
kept per URL (``content_digest``), so an unchanged main text costs no second parse, and with the
default threshold of 1.0 a different fingerprint settles it: the stored capture is not read back.
Only pages whose payload changed are compared: the harvest's hot path stays free of this work.
"""

from __future__ import annotations

import hashlib
import re

from lxml import etree, html

from strata.charset import decode, html_charset

BOILERPLATE_TAGS = ("script", "style", "noscript", "template", "nav")
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+", re.UNICODE)


class NoiseRules:
    def __init__(self, selectors: tuple[str, ...] = (), patterns: tuple[str, ...] = ()):
        from lxml.cssselect import CSSSelector

        self.selectors = []
        for selector in selectors:
            if selector.startswith(("/", "(")):
                self.selectors.append(etree.XPath(selector))
            else:
                self.selectors.append(CSSSelector(selector))
        self.patterns = [re.compile(p) for p in patterns]


def main_text(body: bytes, charset: str | None, rules: NoiseRules) -> str:
    """The page's main text, boilerplate and noise removed, whitespace folded."""
    if not body.strip():
        return ""
    text = decode(body, html_charset(body, charset))
    try:
        doc = html.document_fromstring(text)
    except (etree.ParserError, ValueError):
        return ""
    for element in doc.iter(*BOILERPLATE_TAGS):
        element.drop_tree() if element.getparent() is not None else None
    for selector in rules.selectors:
        for element in selector(doc):
            if isinstance(element, etree._Element) and element.getparent() is not None:
                element.drop_tree()
    out = " ".join(doc.text_content().split())
    for pattern in rules.patterns:
        out = pattern.sub(" ", out)
    return " ".join(out.split())


def content_digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _shingles(text: str) -> set[tuple[str, ...]]:
    tokens = _TOKEN.findall(text.lower())
    if len(tokens) < 3:
        return {tuple(tokens)}
    return set(zip(tokens, tokens[1:], tokens[2:], strict=False))


def similarity(a: str, b: str) -> float:
    """Exact Jaccard index of the two texts' 3-shingle sets; 1.0 only for equal texts."""
    if a == b:
        return 1.0
    sa, sb = _shingles(a), _shingles(b)
    union = len(sa | sb)
    score = len(sa & sb) / union if union else 0.0
    return min(score, 0.999999)  # different texts are never "the same"
