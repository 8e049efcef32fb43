"""Two captures of one URL compared: what changed between them (``diff``: by payload digest, else
main text word by word, images by their dimensions, ``image_size``), and the two pages themselves
side by side with the words removed and added marked in place (``marked``)."""

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = [
    "diff",
    "marked",
]
