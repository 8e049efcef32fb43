"""The staff console: jobs, runs and their history, on its own host name.

Other packages use ``create_staff_app`` (the WSGI application); ``replay.hosts`` puts it beside the
public replay app. Everything else is internal.
"""

from replay.staff.app import STAFF_SETTINGS, create_staff_app

__all__ = ["STAFF_SETTINGS", "create_staff_app"]
