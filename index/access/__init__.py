"""Access rules: who may see which capture, on every surface (replay, search, counts, exports)."""
