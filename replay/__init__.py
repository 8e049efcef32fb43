"""Replay: the public web application (pywb behind Flask), each harvest browsable as it was.

Other packages use ``create_app`` (the WSGI application), ``serve`` (run it on a production
server), ``hosts`` (the host names it answers on), ``origins`` (which host name serves what) and
``forwarded`` (the scheme a trusted proxy says), for ``strata serve``'s checks and its server, and
``staff`` (the staff console); everything else is internal. Importing this package does not import
pywb.
"""

from replay.app import create_app
from replay.server import serve

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = ["create_app", "serve", "hosts", "forwarded", "origins", "staff", "qa"]
