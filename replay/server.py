"""``strata serve``: the application on gevent's WSGI server, as pywb's ``wayback`` runs.

Two differences from pywb's server: every accepted connection gets ``TCP_NODELAY`` (a response
written in more than one piece would otherwise wait for the client's delayed ACK, about 40 ms per
response on a kept-alive connection), and the process is not monkey-patched (nothing in Strata's
replay path blocks on a socket: the warcserver is called in-process).
"""

from __future__ import annotations

import logging
import socket

from strata.ports import listen_error

log = logging.getLogger(__name__)


def make_server(app, host: str = "127.0.0.1", port: int = 8080, log_requests: bool = True, tls=None):
    """``tls``: (certificate file, key file) to serve HTTPS, or None."""
    from gevent.pywsgi import WSGIHandler, WSGIServer

    class Handler(WSGIHandler):
        def handle(self):
            try:
                self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass  # not TCP (a Unix socket): nothing to tune
            super().handle()

        def get_environ(self):
            environ = super().get_environ()
            environ["REQUEST_URI"] = self.path  # the raw request target, as pywb's server sets it
            return environ

    ssl_args = {"certfile": tls[0], "keyfile": tls[1]} if tls else {}
    return WSGIServer((host, port), app, handler_class=Handler, log=None if not log_requests else "default", **ssl_args)


def serve(app, host: str = "127.0.0.1", port: int = 8080, ready=None, tls=None) -> None:
    """Serve until interrupted. ``ready(server)`` is called once the socket listens."""
    import signal

    import gevent

    server = make_server(app, host, port, tls=tls)
    try:
        server.init_socket()
    except OSError as exc:  # a busy port: one line from the CLI, not gevent's traceback
        raise listen_error(host, port, exc) from None
    # Ctrl-C and SIGTERM stop the server quietly (gevent's hub would print the KeyboardInterrupt).
    handlers = [gevent.signal_handler(sig, server.stop) for sig in (signal.SIGINT, signal.SIGTERM)]
    if ready:
        ready(server)
    try:
        server.serve_forever()
    finally:
        for handler in handlers:
            handler.cancel()
        server.stop(timeout=2)
