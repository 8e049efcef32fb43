"""Browser capture: pages that JavaScript builds, loaded in Chromium with every request answered by
the caller's own fetch.

What other packages use (import from the module itself: importing the package imports nothing,
so that ``python -m harvester.browser.keeper`` starts with the standard library alone):

- ``session.BrowserSession``: one Chromium owned by the caller; ``await session.load(url, resolve)``
  loads a page and returns a ``page.PageCapture`` (links of the rendered DOM, text, title,
  screenshot, requests and their outcomes).
- ``contract``: ``BrowserRequest``, ``BrowserResponse``, ``Resolve`` (the callback every request
  goes through), ``RequestOutcome``.
- ``settings.BrowserSettings``: page concurrency, the page deadline, the behaviours' bounds.
- ``records``: the WARC records of a page's screenshot, text and request list (``urn:view:``,
  ``urn:text:``, ``urn:pageinfo:``; the URIs themselves are ``strata.pageuris``, for readers).
- ``chromium.ChromiumProcess`` and ``chromium.sweep``: the browser process itself (QA uses it with
  its own interception), and the clean-up of what a killed owner left (recovery calls it).
- ``visitor.BrowserVisitor``: the harvest's visitor for ``capture = "browser"``
  (``harvester.visit.VISITORS["browser"]``), on the run's request path.

Modules, from the bottom up: ``keeper`` (the process that outlives nothing), ``chromium``,
``contract``, ``settings``, ``intercept``, ``behaviours``, ``page``, ``session``, ``records``,
``visitor``.
"""

__all__ = ["behaviours", "chromium", "contract", "keeper", "page", "records", "session", "settings", "visitor"]
