"""Noise-tolerant change detection, kept apart from storage dedup.

The WARC payload digest stays the exact SHA-1 of what was received. Beside it, each HTML capture gets
a *content fingerprint*: the page's main text with boilerplate removed (script, style, noscript,
template, nav, and the job's noise selectors) and the job's noise regexes blanked, hashed; plus a
MinHash signature of its word (or CJK character) 3-shingles, so the similarity of two captures can
be estimated from the stored signatures alone.

A payload that differs while the main content is the same within ``change_threshold`` is *soft-changed*.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import struct
import zlib

from lxml import etree, html

from harvester.charset import decode, html_charset

BOILERPLATE_TAGS = ("script", "style", "noscript", "template", "nav")
SIGNATURE_SIZE = 64          # a power of two: bins are picked by the hash's low bits
EMPTY_BIN = 1 << 40
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+", re.UNICODE)


@dataclasses.dataclass(frozen=True)
class Fingerprint:
    digest: str                 # sha1 hex of the normalised main text
    signature: tuple[int, ...]  # MinHash of its shingles

    def encode(self) -> str:
        return self.digest + ":" + struct.pack(f">{SIGNATURE_SIZE}Q", *self.signature).hex()

    @classmethod
    def decode(cls, value: str | None) -> Fingerprint | None:
        if not value or ":" not in value:
            return None
        digest, sig = value.split(":", 1)
        try:
            return cls(digest, struct.unpack(f">{SIGNATURE_SIZE}Q", bytes.fromhex(sig)))
        except (ValueError, struct.error):
            return None

    def similarity(self, other: Fingerprint) -> float:
        """Estimated Jaccard similarity of the two texts' shingle sets (1.0 for the same text)."""
        if self.digest == other.digest:
            return 1.0
        used = same = 0
        for a, b in zip(self.signature, other.signature, strict=True):
            if a == EMPTY_BIN and b == EMPTY_BIN:
                continue
            used += 1
            same += a == b
        return same / used if used else 0.0


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


def _shingle_hashes(text: str) -> list[int]:
    tokens = _TOKEN.findall(text.lower())
    if len(tokens) < 3:
        return [zlib.crc32(" ".join(tokens).encode("utf-8"))]
    return [zlib.crc32(f"{a} {b} {c}".encode()) for a, b, c in zip(tokens, tokens[1:], tokens[2:], strict=False)]


def fingerprint(body: bytes, charset: str | None, rules: NoiseRules) -> Fingerprint:
    """One-permutation MinHash: each shingle's hash picks one of ``SIGNATURE_SIZE`` bins by its low
    bits and competes there with its remaining bits; an empty bin holds ``EMPTY_BIN``."""
    text = main_text(body, charset, rules)
    bins = [EMPTY_BIN] * SIGNATURE_SIZE
    for h in _shingle_hashes(text):
        h = (h * 0x9E3779B1) & 0xFFFFFFFF   # spread crc32's bits before splitting them
        slot, value = h & (SIGNATURE_SIZE - 1), h >> 6
        if value < bins[slot]:
            bins[slot] = value
    return Fingerprint(hashlib.sha1(text.encode("utf-8")).hexdigest(), tuple(bins))
