"""The staff console: jobs, runs and their history, on its own host name.

Other packages use ``create_staff_app`` (the WSGI application); ``replay.hosts`` puts it beside the
public replay app. Everything else is internal.
"""

from replay.staff.app import STAFF_SETTINGS, create_staff_app

# What other packages may import (tests/unit/strata/test_surfaces.py holds them to it).
__all__ = ["STAFF_SETTINGS", "create_staff_app", "users"]
