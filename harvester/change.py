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

from lxml import etree, html

from harvester.charset import decode, html_charset

BOILERPLATE_TAGS = ("script", "style", "noscript", "template", "nav")
SIGNATURE_SIZE = 64
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+", re.UNICODE)
_MASK = (1 << 64) - 1
# Fixed seeds: signatures must compare across runs and machines.
_SEEDS = [int.from_bytes(hashlib.sha1(b"strata-minhash-%d" % i).digest()[:8], "big") for i in range(SIGNATURE_SIZE)]


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
        if self.digest == other.digest:
            return 1.0
        same = sum(1 for a, b in zip(self.signature, other.signature, strict=True) if a == b)
        return same / SIGNATURE_SIZE


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


def _shingles(text: str) -> set[int]:
    tokens = _TOKEN.findall(text.lower())
    if len(tokens) < 3:
        return {hash_token(" ".join(tokens))}
    return {hash_token(" ".join(tokens[i:i + 3])) for i in range(len(tokens) - 2)}


def hash_token(value: str) -> int:
    return int.from_bytes(hashlib.blake2b(value.encode("utf-8"), digest_size=8).digest(), "big")


def fingerprint(body: bytes, charset: str | None, rules: NoiseRules) -> Fingerprint:
    text = main_text(body, charset, rules)
    shingles = _shingles(text)
    signature = tuple(min(((s ^ seed) * 0x9E3779B97F4A7C15) & _MASK for s in shingles) for seed in _SEEDS)
    return Fingerprint(hashlib.sha1(text.encode("utf-8")).hexdigest(), signature)
