"""Media types that decide how a payload is treated (links read, text extracted, page kinds)."""

from __future__ import annotations

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
CSS_TYPES = frozenset({"text/css"})
TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/csv", "text/x-markdown"})
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
