"""The content rewriter replay uses: pywb's (with its JS object proxy), plus two things for pages.

- Links are rewritten as in ``replay.pagelinks`` (non-ASCII URLs left as the page wrote them).
- An HTML page gets the charset the browser read it with on the live site in its ``Content-Type``
  (``replay.pagecharset``), and pywb's rewriter reads it with that charset too.
"""

from __future__ import annotations

from pywb.rewrite.default_rewriter import RewriterWithJSProxy
from pywb.rewrite.url_rewriter import UrlRewriter
from warcio.bufferedreaders import BufferedReader

from replay.pagecharset import DETECT_BYTES, page_charset
from replay.pagelinks import PageHTMLRewriter, PageUrlRewriter
from strata.charset import charset_param, codec_for_label


class PageContentRewriter(RewriterWithJSProxy):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.all_rewriters["html"] = PageHTMLRewriter

    def __call__(self, record, url_rewriter, cookie_rewriter, head_insert_func=None, cdx=None, environ=None):
        if type(url_rewriter) is UrlRewriter:  # not pywb's identity rewriter (proxy mode)
            url_rewriter = PageUrlRewriter.like(url_rewriter)
        return super().__call__(record, url_rewriter, cookie_rewriter, head_insert_func, cdx, environ)

    def get_head_insert(self, rwinfo, rule, head_insert_func, cdx):
        # pywb calls this for every HTML page it rewrites, before it reads the body.
        declare_charset(rwinfo)
        return super().get_head_insert(rwinfo, rule, head_insert_func, cdx)


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
