"""QA of captures: each page of a run loaded from replay in Chromium and compared with its capture.

What other packages use (import from the modules):

- ``check.check_run(collection, run_id, settings=, limit=)``: the QA of one run; writes and returns
  its report. ``check.patch_candidates(report)``: what a patch capture could fetch.
- ``store``: the run's report, staff's reviews and the patch queue (``collections/<c>/qa/<run>/``);
  ``store.read_patch`` is what the harvest reads when it captures a patch.
- ``compare``: screenshot and text closeness, the score.

Modules: ``compare``, ``store``, ``pages`` (a run's pages and what their capture recorded),
``server`` (the replay application in a child process), ``check``.
"""

__all__ = ["check", "compare", "pages", "server", "store"]
