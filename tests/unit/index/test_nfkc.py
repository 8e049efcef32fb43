"""``index.fulltext.cjk.normalize`` is ``unicodedata.normalize("NFKC", ...)``, character for
character, on text made to break it: full-width forms next to combining marks that compose with
what they become, half-width katakana with their voicing marks, Hangul jamo, compatibility
ideographs, ligatures, characters outside the BMP."""

from __future__ import annotations

import random
import unicodedata

import pytest

from index.fulltext import cjk

ALPHABET = (
    [chr(c) for c in cjk._WIDTH_FORMS]  # full-width ASCII, the ideographic space
    + [chr(c) for c in range(0x0300, 0x0370, 7)]  # combining marks (acute composes with Ａ -> A)
    + ["\u3099", "\u309a", "\uff9e", "\uff9f"]  # voicing marks, combining and half-width
    + [chr(c) for c in range(0xFF61, 0xFFA0, 3)]  # half-width katakana
    + ["\u1100", "\u1161", "\u11a8", "\uac00"]  # Hangul jamo L, V, T and a syllable
    + ["\uf900", "\ufa10", "\u2f00", "\u3131"]  # compatibility ideographs, a radical, compatibility jamo
    + ["\ufb01", "\u2026", "\u2460", "\u00bd", "\u00a0", "\u2000", "\u3000"]  # fi, ..., (1), 1/2, spaces
    + ["\U0001d400", "\U0002f800", "\U00020000"]  # bold A, a supplementary compatibility ideograph, Han B
    + list("Aa1,:;()")
    + list("中文档案馆日本語のテキスト한국어")
)


def test_random_text_normalizes_exactly_as_unicodedata_does():
    rng = random.Random(1403)
    for _ in range(4000):
        text = "".join(rng.choices(ALPHABET, k=rng.randint(0, 40)))
        assert cjk.normalize(text) == unicodedata.normalize("NFKC", text), ascii(text)


@pytest.mark.parametrize(
    "text",
    [
        "\uff21\u0301",  # full-width A, combining acute: composes into A-acute
        "\uff76\uff9e\uff8a\uff9f",  # half-width ka + voicing mark, ha + semi-voicing mark
        "\u3000\u3000\u4e2d\u6587\uff0c\uff1a\uff08\u6863\u6848\uff09",  # a Chinese line
        "\uff10\uff11\uff12\uff13\u5e74",  # full-width digits
        "plain ASCII, unchanged",
        "",
    ],
)
def test_cases_that_compose_or_narrow(text):
    assert cjk.normalize(text) == unicodedata.normalize("NFKC", text)


def test_each_width_form_is_its_own_full_decomposition():
    assert len(cjk._WIDTH_FORMS) == 95  # U+FF01..U+FF5E and U+3000
    for code, ascii_form in cjk._WIDTH_FORMS.items():
        assert unicodedata.normalize("NFKD", chr(code)) == ascii_form == unicodedata.normalize("NFKC", chr(code))
