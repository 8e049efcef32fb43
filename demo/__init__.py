"""The demo's sample site and the small HTTP server that serves it (and the benchmarks' generated sites)."""
