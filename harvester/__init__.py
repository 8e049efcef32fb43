"""Harvester: fetch seeds and the links they lead to, and write what comes back to WARC files."""
