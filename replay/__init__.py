"""Replay: the public web application (pywb behind Flask), each harvest browsable as it was.

Other packages use ``create_app`` (the WSGI application) and ``serve`` (run it on a production
server); everything else is internal. Importing this package does not import pywb.
"""

from replay.app import create_app
from replay.server import serve

__all__ = ["create_app", "serve"]
