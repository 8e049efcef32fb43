"""A run's figures: what it fetched, how each URL was classified, and what it stored and saved."""

from __future__ import annotations

import dataclasses

CLASSES = ("new", "changed", "soft", "unchanged", "not_modified", "deleted", "redirect", "error")


@dataclasses.dataclass
class RunFigures:
    urls_fetched: int = 0  # HTTP responses received (robots.txt included)
    requests: int = 0  # requests sent
    new: int = 0
    changed: int = 0
    soft: int = 0  # payload differs, main content the same within the threshold
    unchanged: int = 0  # identical payload, written as a revisit
    not_modified: int = 0  # 304, written as a server-not-modified revisit
    deleted: int = 0  # was 2xx, now 404/410
    redirect: int = 0  # a 3xx (other than 304): written in full
    errors: int = 0
    revisits: int = 0  # revisit records written (unchanged, not_modified, duplicate payloads)
    skipped: int = 0  # known URLs not fetched (robots, not due)
    bytes_downloaded: int = 0  # wire bytes received
    bytes_stored: int = 0  # WARC bytes written by this run
    bytes_saved: int = 0  # payload bytes not stored again thanks to revisits and 304s
    request_records: int = 0  # request records written (none for a revisit unless request_records = "all")
    request_bytes: int = 0  # their WARC bytes
    pages_rendered: int = 0  # pages loaded in a browser (capture = browser)
    page_records: int = 0  # their screenshot, text and page info resource records (harvester.browser.records)
    warc_files: list[str] = dataclasses.field(default_factory=list)
    failed_hosts: list[str] = dataclasses.field(default_factory=list)  # host[:port]s every request to which failed
    # Set when the run ends (harvester.run_end): what a full harvest would have stored instead, and
    # per site and page kind, the pages checked again and how many had changed.
    full_estimate: int | None = None
    change_rates: dict = dataclasses.field(default_factory=dict)

    def count(self, cls: str) -> None:
        if cls == "error":
            self.errors += 1
        else:
            setattr(self, cls, getattr(self, cls) + 1)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)
