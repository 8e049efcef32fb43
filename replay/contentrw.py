"""The content rewriter replay uses: pywb's (with its JS object proxy), plus what Strata adds.

- Links are rewritten as in ``replay.pagelinks`` (non-ASCII URLs left as the page wrote them).
- An HTML page gets the charset the browser read it with on the live site in its ``Content-Type``
  (``replay.pagecharset``), and pywb's rewriter reads it with that charset too.
- Archived headers pass through ``replay.headers.ArchivedHeaderRewriter`` (an allow-list).
- What the browser gets is what was stored (``replay.payload``): the ``Content-Length`` sent is the
  length of the body sent; a stored payload that does not decode as its ``Content-Encoding`` says is
  sent without that header; a decoded body is capped against the stored one.
- Whether the body was rewritten as a page (with pywb's head insert) is noted in the request's
  environ (``PAGE_KEY``), for ``replay.isolation``: anything else is archived bytes, sandboxed.
"""

from __future__ import annotations

from pywb.rewrite.default_rewriter import RewriterWithJSProxy
from pywb.rewrite.url_rewriter import UrlRewriter
from warcio.bufferedreaders import BufferedReader

from replay import payload
from replay.headers import ArchivedHeaderRewriter
from replay.pagecharset import DETECT_BYTES, page_charset
from replay.pagelinks import PageHTMLRewriter, PageUrlRewriter
from strata.charset import charset_param, codec_for_label

PAGE_KEY = "strata.rewritten_page"  # environ: True when the body is an HTML page with pywb's insert
_ENV = "strata_environ"  # the request's environ, in the url rewriter's per-request options


class PageContentRewriter(RewriterWithJSProxy):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.all_rewriters["html"] = PageHTMLRewriter
        self.all_rewriters["header"] = ArchivedHeaderRewriter

    def __call__(self, record, url_rewriter, cookie_rewriter, head_insert_func=None, cdx=None, environ=None):
        if type(url_rewriter) is UrlRewriter:  # not pywb's identity rewriter (proxy mode)
            url_rewriter = PageUrlRewriter.like(url_rewriter)
        if environ is not None:
            environ[PAGE_KEY] = False
            url_rewriter.rewrite_opts[_ENV] = environ
        if record is not None:
            payload.bound_decoding(record)
        return super().__call__(record, url_rewriter, cookie_rewriter, head_insert_func, cdx, environ)

    def get_head_insert(self, rwinfo, rule, head_insert_func, cdx):
        # pywb calls this for every HTML page it rewrites, before it reads the body.
        declare_charset(rwinfo)
        inserted = super().get_head_insert(rwinfo, rule, head_insert_func, cdx)
        environ = rwinfo.url_rewriter.rewrite_opts.get(_ENV)
        if environ is not None and inserted:
            environ[PAGE_KEY] = True
        return inserted

    def rewrite_headers(self, rwinfo):
        # Called once the body's fate is known (rewritten, decoded, or passed as stored) and
        # before the stream that sends it is made.
        headers = super().rewrite_headers(rwinfo)
        payload.settle_length(rwinfo, headers)
        return headers


def declare_charset(rwinfo) -> None:
    headers = rwinfo.record.http_headers
    content_type = headers.get_header("Content-Type")
    if codec_for_label(charset_param(content_type)):
        return  # the browser reads the header's charset, on the live site as here
    decided = page_charset(peek(rwinfo, DETECT_BYTES), content_type)
    if decided is None:
        return
    mime = (content_type or "").split(";", 1)[0].strip() or "text/html"
    headers.replace_header("Content-Type", f"{mime}; charset={decided.label}")
    rwinfo.charset = "utf-8" if decided.codec == "utf-8" else decided.label.lower()


def peek(rwinfo, size: int) -> bytes:
    """Up to ``size`` bytes of the (decoded) body, left in place for the rewriter to read."""
    stream = rwinfo.content_stream
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            break
        data += chunk
    rwinfo._content_stream = BufferedReader(stream, starting_data=data)  # as pywb's read_and_keep does
    return data
