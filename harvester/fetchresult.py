"""What one fetch brought back (``harvester.fetch`` makes it), without the HTTP client: the
harvest's main process reads results that its fetch process made, and need not import httpx."""

from __future__ import annotations

import dataclasses
from typing import IO


def header_value(headers: list[tuple[str, str]], name: str, default: str | None = None) -> str | None:
    """The first value of header ``name`` (in any case) in ``headers``, else ``default``."""
    name = name.lower()
    for key, value in headers:
        if key.lower() == name:
            return value
    return default


@dataclasses.dataclass
class FetchResult:
    url: str
    request_line: str = ""
    request_headers: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    http_version: str = "HTTP/1.1"
    status: int | None = None
    reason: str = ""
    headers: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    body: IO[bytes] | None = None  # spooled while fetching; in memory or a file from fetchproc
    body_length: int = 0
    digest: str | None = None  # sha1:BASE32 of the stored body
    truncated: str | None = None  # None | "length" | "time"
    wire_bytes: int = 0
    error: str | None = None
    elapsed: float = 0.0
    ip: str | None = None  # the address connected to (WARC-IP-Address); a proxy's, through one
    surplus: int = 0  # bytes received past the message's end (connection then closed)

    def header(self, name: str) -> str | None:
        return header_value(self.headers, name)

    def read_body(self, limit: int | None = None) -> bytes:
        if self.body is None:
            return b""
        self.body.seek(0)
        data = self.body.read() if limit is None else self.body.read(limit)
        self.body.seek(0)
        return data

    def close(self) -> None:
        if self.body is not None:
            self.body.close()
            self.body = None
