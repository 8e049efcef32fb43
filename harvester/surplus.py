"""Bytes a server sent past the end of a response, and the connection they must not be read from.

A server that sends more than its ``Content-Length`` (one that counts the characters of a UTF-8
page instead of its bytes does) leaves the surplus on a kept-alive connection. httpcore hands the
connection back to its pool with the surplus still in h11's receive buffer, where the pool's
readability check before reuse cannot see it, and h11 reads it as the response to the next request
sent there: that URL is archived with another URL's bytes, status 200, no error.

``bytes_past_message(response)`` counts what has arrived past the message (in h11's buffer and in
the connection's, not yet handed to h11) once the body has been read to its end, before the response
is closed; ``close_connection(response)`` closes the socket then, so the pool drops the connection
(httpcore checks it before every reuse) and the next request goes out on a new one. Surplus that
arrives only later is caught by that same check before reuse, though the capture is not flagged.

Reaching h11 takes three private names of httpx and httpcore (``_httpcore_stream``, ``_stream``,
``_connection``) and one of httpcore (``_h11_state``); ``h11_connection`` returns ``None`` when
they change, and tests/test_surplus.py checks that it finds h11 on a real response, so a changed
httpx fails a test rather than silently archiving shifted captures again.
"""

from __future__ import annotations

import h11
import httpx

from harvester.netbackend import AsyncioStream


def h11_connection(response: httpx.Response) -> h11.Connection | None:
    """The h11 state machine of the HTTP/1.1 connection ``response`` came over, if it can be reached."""
    stream = response.stream
    own = getattr(stream, "h11_state", None)  # harvester.h11transport's body, in the fetch process
    if isinstance(own, h11.Connection):
        return own
    pooled = getattr(stream, "_httpcore_stream", None)  # httpx's AsyncResponseStream
    if pooled is None:  # under the client's BoundAsyncStream
        pooled = getattr(getattr(stream, "_stream", None), "_httpcore_stream", None)
    body = getattr(pooled, "_stream", None)  # httpcore's PoolByteStream
    connection = getattr(body, "_connection", None)  # HTTP11ConnectionByteStream
    state = getattr(connection, "_h11_state", None)  # AsyncHTTP11Connection
    return state if isinstance(state, h11.Connection) else None


def bytes_past_message(response: httpx.Response) -> int:
    """Bytes already received on the connection after the end of ``response``'s message. Call it
    once the body has been read to its end and before the response is closed."""
    stream = response.extensions.get("network_stream")
    return pending_bytes(h11_connection(response), stream if isinstance(stream, AsyncioStream) else None)


def pending_bytes(state: h11.Connection | None, stream: AsyncioStream | None) -> int:
    """What has arrived past the message: in h11's buffer once the message has ended, and in the
    connection's buffer, not yet handed to h11."""
    pending = 0
    if state is not None and state.their_state in (h11.DONE, h11.MUST_CLOSE):  # the message has ended
        pending = len(state.trailing_data[0])
    if stream is not None:
        pending += stream.unread_bytes()
    return pending


async def close_connection(response: httpx.Response) -> None:
    """Close the socket under ``response``: httpcore's pool then drops the connection, never reusing it."""
    stream = response.extensions.get("network_stream")
    if stream is not None:
        await stream.aclose()
