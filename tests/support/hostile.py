"""Hostile endpoints under ``/hostile/`` for the fixture servers (never linked from any page).

Harvester tests meet slow, huge, compressed-bomb and pathological responses on a real socket:
``SiteServer(model, routes=hostile.resolve)``. They are generated lazily: nothing large is held in
memory.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterable, Sequence

from demo.site_server import Resource

_HTML = (("Content-Type", "text/html; charset=utf-8"),)
TRICKLE_INTERVAL = 0.5
_TRICKLE_HEAD = b"<!DOCTYPE html><title>trickle</title><p>"
_TRICKLE_BODY = _TRICKLE_HEAD + b"." * (120 - len(_TRICKLE_HEAD))  # one byte per interval: 60 s
HUGE_BYTES = 50 * 1024 * 1024
BOMB_INFLATED_BYTES = 200 * 1024 * 1024
DEEP_NESTING = 5000
MANY_LINKS = 200_000


def _trickle(stop: threading.Event) -> Iterable[bytes]:
    for i in range(len(_TRICKLE_BODY)):
        yield _TRICKLE_BODY[i : i + 1]
        if stop.wait(TRICKLE_INTERVAL):
            return


def _huge(stop: threading.Event) -> Iterable[bytes]:
    block = bytes(range(256)) * 256  # 64 KiB
    for _ in range(HUGE_BYTES // len(block)):
        yield block


_bomb_lock = threading.Lock()
_bomb_body: list[bytes] = []


def _bomb() -> bytes:
    """About 200 KB of gzip that inflates to 200 MiB of zeros, built in milliseconds.

    Deflate cannot beat about 1:1030, so this is as small as one gzip layer gets. After a full
    flush the compressor starts afresh, so every 1 MiB block of zeros compresses to the same
    bytes: compress one and repeat it.
    """
    with _bomb_lock:
        if not _bomb_body:
            zeros = bytes(1 << 20)
            blocks = BOMB_INFLATED_BYTES // len(zeros)
            comp = zlib.compressobj(9, zlib.DEFLATED, -15)
            block = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
            final = zlib.compressobj(9, zlib.DEFLATED, -15).flush()
            crc = 0
            for _ in range(blocks):
                crc = zlib.crc32(zeros, crc)
            trailer = crc.to_bytes(4, "little") + (BOMB_INFLATED_BYTES & 0xFFFFFFFF).to_bytes(4, "little")
            _bomb_body.append(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + block * blocks + final + trailer)
        return _bomb_body[0]


def _many_links(stop: threading.Event) -> Iterable[bytes]:
    yield b"<!DOCTYPE html>\n<html><head><title>Many links</title></head><body>\n"
    for start in range(0, MANY_LINKS, 1000):
        if stop.is_set():
            return
        yield "".join(
            f'<a href="/hostile/many/{n:06d}.html">{n}</a>\n' for n in range(start, min(start + 1000, MANY_LINKS))
        ).encode()
    yield b"</body></html>\n"


def resolve(path: str) -> Resource | None:
    if path == "/hostile/trickle":
        return Resource(headers=_HTML, stream=_trickle, content_length=len(_TRICKLE_BODY))
    if path == "/hostile/huge":
        return Resource(
            headers=(("Content-Type", "application/octet-stream"),), stream=_huge, content_length=HUGE_BYTES
        )
    if path == "/hostile/bomb":
        return Resource(headers=_HTML + (("Content-Encoding", "gzip"),), body=_bomb())
    if path == "/hostile/deep.html":
        body = (
            "<!DOCTYPE html>\n<html><head><title>Deep</title></head><body>\n"
            + "<div>" * DEEP_NESTING
            + '<a href="/hostile/empty.html">bottom</a>'
            + "</div>" * DEEP_NESTING
            + "\n</body></html>\n"
        )
        return Resource(headers=_HTML, body=body.encode())
    if path == "/hostile/badcharset.html":
        body = (
            '<!DOCTYPE html>\n<html><head><meta charset="x-bogus"><title>Bad '
            "charset</title></head>\n<body><p>Caf\u00e9 cr\u00e8me</p></body></html>\n"
        )
        return Resource(headers=(("Content-Type", "text/html"),), body=body.encode())
    if path == "/hostile/empty.html":
        return Resource(headers=_HTML, body=b"")
    if path == "/hostile/redirect-loop":
        return Resource(
            302,
            (("Location", "/hostile/redirect-loop"),) + _HTML,
            b'<a href="/hostile/redirect-loop">again</a>\n',
        )
    if path == "/hostile/manylinks.html":
        return Resource(headers=_HTML, stream=_many_links)
    if path == "/hostile/latin1-head":  # header bytes beyond ASCII, as Latin-1 text is sent
        return Resource(
            headers=(("Content-Type", "text/h\u00e9ml; x=\u00e9"), ("X-Odd", "\u00ff\u00fe")),
            body=b"<p>odd head</p>",
            reason="\u00d6kay",
        )
    return None


def hostile_paths() -> Sequence[str]:
    """The hostile endpoints, for tests that walk them all."""
    return (
        "/hostile/trickle",
        "/hostile/huge",
        "/hostile/bomb",
        "/hostile/deep.html",
        "/hostile/badcharset.html",
        "/hostile/empty.html",
        "/hostile/redirect-loop",
        "/hostile/manylinks.html",
        "/hostile/latin1-head",
    )
