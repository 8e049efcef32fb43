"""pywb's ``RewriterApp`` talking to the in-process warcserver, with Strata's replay rules.

- Upstream calls go through ``LocalClient`` instead of HTTP to a second server.
- Every revisit's original is the one ``index.revisits`` gives (``replay.warcserver``).
- ``id_`` (the archived bytes) never falls back to a later capture: a raw response claims to be
  the resource as it was at the requested time, and there is no banner to say otherwise. The
  index is clamped to ``to=<ts>``; nothing at or before means 404.
- A 404/410 capture that records a deletion raises ``CaptureDeleted`` (outside ``id_``) so the
  application can render its "removed from the live site" page instead of the archived error.
- A fuzzy match (pywb's rules found a capture of another URL: another query on the same path...)
  is never served as the URL asked for: ``id_`` raises pywb's ``NotFoundException`` (404, as for a
  URL never archived), other modes raise ``FuzzyMatch`` and the engine redirects to the matched
  URL's own replay address, where the banner names it.
- Links with non-ASCII characters are left as the page wrote them (``replay.pagelinks``).
"""

from __future__ import annotations

from collections.abc import Callable
from io import BytesIO

from pywb.apps.rewriterapp import RewriterApp
from pywb.utils.io import no_except_close
from pywb.utils.wbexception import NotFoundException

from replay.asof import ACCESS_PARAM, POSTED_PARAM, RAW_PARAM, pad_as_of
from replay.contentrw import PageContentRewriter
from replay.errors import CaptureDeleted
from replay.transport import LocalClient

UPSTREAM = "http://warcserver.invalid"
PATHS = {"replay": UPSTREAM + "/{coll}/resource/postreq", "cdx-server": UPSTREAM + "/{coll}/index"}
GONE = ("404", "410")


class FuzzyMatch(Exception):
    """The capture found is of another URL: replay it under its own address."""

    def __init__(self, url: str, timestamp: str):
        super().__init__(url)
        self.url, self.timestamp = url, timestamp


class StrataRewriterApp(RewriterApp):
    def __init__(self, client: LocalClient, deletion_lookup: Callable, jinja_env, config: dict):
        super().__init__(framed_replay=False, jinja_env=jinja_env, config=config, paths=PATHS)
        self.client = client
        self.js_proxy_rw = PageContentRewriter(replay_mod=self.replay_mod)  # replay.pagelinks
        self.deletion_lookup = deletion_lookup  # (coll, url, timestamp) -> Deletion | None

    def _init_cookie_tracker(self, redis=None):
        # The cookie tracker only serves live/record collections; replay needs no Redis, fake or not.
        return None

    def _do_req(self, inputreq, wb_url, kwargs, skip_record):
        kwargs["requested_url"] = wb_url.url  # for _add_custom_params
        req_data = inputreq.reconstruct_request(wb_url.url)
        headers = {"Content-Length": str(len(req_data)), "Content-Type": "application/request"}
        if skip_record:
            headers["Recorder-Skip"] = "1"
        closest = "now" if wb_url.is_latest_replay() else wb_url.timestamp
        # Every revisit's original is found by the one rule of index.revisits (replay.warcserver), as
        # verify and the other surfaces find it: not from this list (pywb's resolveRevisits takes the
        # first earlier capture with the digest, whatever the revisit names).
        params = {"url": wb_url.url, "closest": closest, "matchType": "exact", POSTED_PARAM: "1"}
        if wb_url.mod == "id_":
            params[RAW_PARAM] = "1"
        if wb_url.mod == "id_" and not wb_url.is_latest_replay():
            params["to"] = pad_as_of(wb_url.timestamp)
        if wb_url.mod == "vi_":
            params["content_type"] = self.VIDEO_INFO_CONTENT_TYPE
        if kwargs.get(ACCESS_PARAM):
            params[ACCESS_PARAM] = kwargs[ACCESS_PARAM]
        return self.client.post(self.get_upstream_url(wb_url, kwargs, params), data=BytesIO(req_data), headers=headers)

    def do_query(self, wb_url, kwargs):
        params = {
            "url": wb_url.url,
            "output": kwargs.get("output", "json"),
            "from": wb_url.timestamp,
            "to": wb_url.end_timestamp,
        }
        for key in ("memento_format", "limit", ACCESS_PARAM):
            if key in kwargs:
                params[key] = kwargs[key]
        upstream = self.get_upstream_url(wb_url, kwargs, params).replace("/resource/postreq", "/index")
        return self.client.get(upstream)

    def _add_custom_params(self, cdx, headers, kwargs, record):
        """Called once the capture is chosen and its record parsed, before any rewriting."""
        if cdx.get("is_fuzzy") == "1" and cdx["url"] != kwargs.get("requested_url"):
            no_except_close(record.raw_stream)
            if kwargs.get("mod") == "id_":
                raise NotFoundException(url=kwargs.get("requested_url"))
            # the record's own URI: pywb's cdx["url"] has an IRI's "?", "=" and "&" quoted (to_uri)
            raise FuzzyMatch(record.rec_headers.get_header("WARC-Target-URI") or cdx["url"], cdx["timestamp"])
        if kwargs.get("mod") == "id_" or not record.http_headers:
            return
        if record.http_headers.get_statuscode() not in GONE:
            return
        deletion = self.deletion_lookup(kwargs["coll"], cdx["url"], cdx["timestamp"])
        if deletion is not None:
            no_except_close(record.raw_stream)
            raise CaptureDeleted(kwargs["coll"], deletion)
