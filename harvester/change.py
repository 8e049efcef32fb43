"""Noise-tolerant change detection, kept apart from storage dedup.

The WARC payload digest stays the exact SHA-1 of what was received. Beside it, a changed HTML page
is compared by its *main text*: boilerplate removed (script, style, noscript, template, nav, and the
job's noise selectors) and the job's noise regexes blanked. Equal main texts mean a soft (noise-only)
change; otherwise the similarity is the exact Jaccard index of the two texts' word (or CJK
character) 3-shingle sets, compared with the job's ``change_threshold``. The main text's SHA-1 is
kept per URL (``content_digest``), so an unchanged main text costs no second parse, and with the
default threshold of 1.0 a different fingerprint settles it: the stored capture is not read back.
Only pages whose payload changed are compared: the harvest's hot path stays free of this work.

The main text is every text node outside the boilerplate elements, in document order, what
follows ``</html>`` included (a browser shows it; libxml2 makes it a second root). A tree gives it
(:func:`main_text`), or, when a page is parsed for its links anyway (a payload new to its URL) and
the job names no noise selectors, the same parse's events (:func:`main_text_and_links`,
``harvester.links.links_and_text``). So the fingerprint is kept from a page's first capture on, and
its first change is told without reading the stored capture back.
"""

from __future__ import annotations

import hashlib
import re

from lxml import etree, html

from harvester.links import Link, extract_links, links_and_text
from strata.charset import decode, html_charset
from strata.regex import compile_linear

BOILERPLATE_TAGS = ("script", "style", "noscript", "template", "nav")
_BOILERPLATE = frozenset(BOILERPLATE_TAGS)
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
        self.patterns = [compile_linear(p) for p in patterns]  # RE2: linear in the page's text


def main_text(body: bytes, charset: str | None, rules: NoiseRules) -> str:
    """The page's main text, boilerplate and noise removed, whitespace folded."""
    if not body.strip():
        return ""
    text = decode(body, html_charset(body, charset))
    try:
        doc = html.document_fromstring(text)
    except (etree.ParserError, ValueError):
        return ""
    # What follows </html> is a second root beside the first (libxml2), which a browser shows.
    roots = [*reversed(list(doc.itersiblings(preceding=True))), doc, *doc.itersiblings()]
    roots = [root for root in roots if isinstance(root.tag, str)]  # not comments or instructions
    for root in roots:
        for element in list(root.iter(*BOILERPLATE_TAGS)):  # a list: dropping while walking ends the walk
            element.drop_tree() if element.getparent() is not None else None
    for selector in rules.selectors:
        for element in selector(doc):
            if isinstance(element, etree._Element) and element.getparent() is not None:
                element.drop_tree()
    return _folded("".join(root.text_content() for root in roots), rules)


def main_text_and_links(body: bytes, base_url: str, charset: str | None, rules: NoiseRules) -> tuple[str, list[Link]]:
    """The main text of an HTML page (as :func:`main_text` gives it) and its links (as
    ``harvester.links.extract_links`` gives them), from one parse of parser events when the rules
    name no selectors (they need a tree). A tree costs less than events for the text alone."""
    if not rules.selectors:
        links, text = links_and_text(body, base_url, charset, _BOILERPLATE)
        if text is not None:
            return _folded(text, rules), links
    else:
        links = extract_links(body, base_url, "text/html", charset)
    return main_text(body, charset, rules), links


def _folded(text: str, rules: NoiseRules) -> str:
    """*text* with whitespace folded and the rules' patterns blanked (then folded again)."""
    out = " ".join(text.split())
    if rules.patterns:
        for pattern in rules.patterns:
            out = pattern.sub(" ", out)
        out = " ".join(out.split())
    return out


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
