"""The capture path: the one decision a capture is given, and what derives captures from WARC files (rebuild, import, run records, sealing a file)."""
