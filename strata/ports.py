"""Listening ports: one clear message when a server cannot listen, and an early check for one.

``strata serve`` and ``strata demo`` listen on fixed ports by default (8080 for the archive,
8765 for the demo's sample site); a port that is taken must end the command with one line naming
the port and the option that changes it (exit 2), not a traceback after minutes of harvesting.
"""

from __future__ import annotations

import errno
import socket

from strata.errors import ConfigError

__all__ = ["check_port_free", "listen_error"]


def listen_error(host: str, port: int, exc: OSError, option: str = "--port") -> ConfigError:
    """The ConfigError for a server that could not listen on ``host:port``."""
    if exc.errno == errno.EADDRINUSE:
        return ConfigError(
            f"port {port} on {host} is already in use (by another server, or an earlier "
            f"strata serve or demo still running); stop it or choose another with {option} PORT"
        )
    reason = exc.strerror or str(exc) or type(exc).__name__
    return ConfigError(f"cannot listen on {host}:{port} ({reason}); choose another address or port with {option}")


def check_port_free(host: str, port: int, option: str = "--port") -> None:
    """Raise ``listen_error`` now when ``host:port`` cannot be listened on (port 0 always can).

    Only a check: the port may be taken between this and the real listen, which reports the same
    way. ``SO_REUSEADDR`` as the servers set it, so a port in TIME_WAIT after an earlier run is free."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise listen_error(host, port, exc, option) from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
            sock.listen(1)
        except OSError as exc:
            raise listen_error(host, port, exc, option) from None
