"""How close a replayed page is to its capture: screenshots, texts, resources, and one score.

- **Screenshots**: pixelmatch's measure (Browsertrix's QA uses pixelmatch with ``threshold=0.1``):
  a pixel differs when the perceptual colour difference of the two (pixelmatch's YIQ delta,
  Kotsarenko and Ramos) passes 10 % of its largest value; closeness is the share of pixels that
  do not differ. pixelmatch also forgives anti-aliased edges; this does not (a page shifted by its
  fonts' hinting scores a little lower). Decoded with Pillow (the ``browser`` extra), compared
  as arrays with numpy. Screenshots of different sizes are compared over the top-left area they
  share, the rest counting as different.
- **Texts**: the Jaccard index of the two texts' word 3-shingles (``harvester.change.similarity``,
  the measure Strata's change detection uses). Browsertrix takes a Levenshtein ratio, which costs
  the product of the two lengths: a shingle index costs their sum, and like the ratio it is 1.0
  only for equal texts and falls as words are lost, added or moved.
- **Resources**: the share of the archived resources the page asked for in replay that replay
  answered (2xx, or a redirect that was followed).
- **Score**: the lowest of the three that could be measured (a page is as good as its weakest
  side); a page has problems when a resource failed or the score is under ``GOOD``.
"""

from __future__ import annotations

import io

import numpy as np

from harvester.change import similarity

THRESHOLD = 0.1  # pixelmatch's default, Browsertrix's setting
MAX_DELTA = 35215.0  # the largest YIQ delta pixelmatch's colorDelta returns
GOOD = 0.9


def _rgb(png: bytes) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(png)) as opened:
        opened.load()
        rgba = np.asarray(opened.convert("RGBA"), dtype=np.float64)
    # blended with white, as pixelmatch blends translucent pixels
    alpha = rgba[..., 3:4] / 255.0
    return 255.0 + (rgba[..., :3] - 255.0) * alpha


def _yiq_delta(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = a - b
    y = d[..., 0] * 0.29889531 + d[..., 1] * 0.58662247 + d[..., 2] * 0.11448223
    i = d[..., 0] * 0.59597799 - d[..., 1] * 0.27417610 - d[..., 2] * 0.32180189
    q = d[..., 0] * 0.21147017 - d[..., 1] * 0.52261711 + d[..., 2] * 0.31114694
    return 0.5053 * y * y + 0.299 * i * i + 0.1957 * q * q


def screenshot_closeness(captured: bytes, replayed: bytes) -> float:
    """Share of pixels that look the same (0.0 to 1.0). Raises ``ValueError`` for an unreadable image."""
    try:
        a, b = _rgb(captured), _rgb(replayed)
    except Exception as exc:  # Pillow raises many kinds for a bad PNG
        raise ValueError(f"unreadable screenshot: {exc}") from None
    height, width = min(a.shape[0], b.shape[0]), min(a.shape[1], b.shape[1])
    total = max(a.shape[0] * a.shape[1], b.shape[0] * b.shape[1])
    if total == 0:
        return 1.0
    same = _yiq_delta(a[:height, :width], b[:height, :width]) <= MAX_DELTA * THRESHOLD * THRESHOLD
    return round(float(same.sum()) / total, 4)


def text_closeness(captured: str, replayed: str) -> float:
    return round(similarity(" ".join(captured.split()), " ".join(replayed.split())), 4)


def score(resources: float | None, screenshot: float | None, text: float | None) -> float:
    measured = [m for m in (resources, screenshot, text) if m is not None]
    return round(min(measured), 4) if measured else 0.0
