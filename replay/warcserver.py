"""pywb's warcserver as Strata runs it: one in-process WSGI app over the collections root.

It is pywb's auto-collection handler (index ``<root>/<coll>/indexes/*.cdxj``, WARCs under
``<root>/<coll>/archive/``, pywb's fuzzy-match rules) with three differences:

- the index answers ``closest=`` as of that time (``replay.asof``);
- only the WARC loader: no live-web or video loader, so nothing is ever fetched from the live web;
- a revisit of a redirect is served with its original's body. pywb skips loading the payload of a
  3xx revisit ("ignored by browser") and sends an empty body, so ``id_`` would not return the
  archived bytes.
"""

from __future__ import annotations

import os
from pathlib import Path

from pywb.warcserver.basewarcserver import BaseWarcServer
from pywb.warcserver.handlers import ResourceHandler
from pywb.warcserver.resource.resolvingloader import ResolvingLoader
from pywb.warcserver.resource.responseloader import WARCPathLoader
from warcio.recordloader import ArchiveLoadFailed

from replay.asof import AsOfIndexSource


class _RedirectPayloadLoader(ResolvingLoader):
    def load_headers_and_payload(self, cdx, failed_files, cdx_loader):
        headers, payload = super().load_headers_and_payload(cdx, failed_files, cdx_loader)
        if headers is None or headers is not payload or cdx.get("mime") != "warc/revisit":
            return headers, payload
        status = headers.http_headers.get_statuscode() if headers.http_headers else ""
        if not status.startswith("3"):
            return headers, payload
        try:
            payload = self._load_different_url_payload(cdx, headers, failed_files, cdx_loader)
        except ArchiveLoadFailed:
            return headers, headers  # pywb's behaviour: the redirect with an empty body
        length = payload.http_headers.get_header("Content-Length") if payload.http_headers else None
        if length is None:
            headers.http_headers.remove_header("Content-Length")
        else:
            headers.http_headers.replace_header("Content-Length", length)
        return headers, payload


class _StrataWARCPathLoader(WARCPathLoader):
    def __init__(self, paths, cdx_source):
        super().__init__(paths, cdx_source)
        self.resolve_loader = _RedirectPayloadLoader(self.resolvers, no_record_parse=False)


def make_warcserver(root: Path) -> tuple[BaseWarcServer, AsOfIndexSource]:
    """The WSGI app routing ``/<coll>/index`` (CDX queries) and ``/<coll>/resource/postreq``
    (replay), and its index source (for the application's own lookups)."""
    root_dir = os.path.join(os.path.abspath(root), "")
    index = AsOfIndexSource(base_prefix=root_dir, base_dir=os.path.join("{coll}", "indexes", ""))
    archive_paths = os.path.join(root_dir, "{coll}", "archive", "")
    handler = ResourceHandler(index, [_StrataWARCPathLoader(archive_paths, index)])
    server = BaseWarcServer(debug=False)
    server.add_route("/<path_param_value>", handler, path_param_name="param.coll")
    return server, index
