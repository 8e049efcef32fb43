"""Blueprints, one per area of the site: home, collection, replay (with the calendar), pywb's static
files, and the one error handler."""
