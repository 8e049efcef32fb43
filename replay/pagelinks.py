"""Links inside replayed pages that keep the page's own characters, so the browser encodes them.

pywb 2.10 sends every rewritten URL through ``WbUrl.to_uri``, which percent-encodes a URL that has
any non-ASCII character with ``quote(url)``: ``?``, ``=``, ``&``, ``#`` and ``%`` go too, and the
``&amp;`` the HTML wrote becomes ``%26amp%3B``. ``/list.html?dept=教育局&amp;page=2`` turns into one
path segment, ``list.html%3Fdept%3D...%26amp%3Bpage%3D2``, that was never archived. On a page in a
legacy encoding (GBK, Shift_JIS) it also re-decodes the attribute from the page's charset first,
and the query would come out in UTF-8 where the browser sends the page's encoding.

A browser on the live page resolves such a link itself: path as UTF-8, query string in the page's
encoding (WHATWG URL), the same way the harvester stores it. So here a URL that is not ASCII is
left exactly as the page wrote it (same characters, same bytes once the page is encoded again):
only the replay prefix is put in front. The browser then requests what it requested on the live
site, behind that prefix, provided it reads the replayed page in the same encoding
(``replay.pagecharset``). ASCII URLs go through pywb's own ``to_uri`` as before.
"""

from __future__ import annotations

from pywb.rewrite.html_rewriter import HTMLRewriter
from pywb.rewrite.url_rewriter import UrlRewriter
from pywb.rewrite.wburl import WbUrl


class PageWbUrl(WbUrl):
    """A ``WbUrl`` whose rewritten form of a non-ASCII URL is that URL, unquoted."""

    def get_url(self, url=None):
        if url is None or url.isascii():
            return super().get_url(url)
        return url

    @classmethod
    def adopt(cls, wburl: WbUrl) -> PageWbUrl:
        """The same parsed address, now rewriting as this class does (no state is added)."""
        wburl.__class__ = cls
        return wburl


class PageUrlRewriter(UrlRewriter):
    """pywb's ``UrlRewriter`` over a ``PageWbUrl``; a ``<base href>`` keeps the behaviour."""

    @classmethod
    def like(cls, rewriter: UrlRewriter) -> PageUrlRewriter:
        return cls(
            PageWbUrl.adopt(rewriter.wburl),
            prefix=rewriter.prefix,
            full_prefix=rewriter.full_prefix,
            rel_prefix=rewriter.rel_prefix,
            root_path=rewriter.root_path,
            cookie_scope=rewriter.cookie_scope,
            rewrite_opts=rewriter.rewrite_opts,
            pywb_static_prefix=rewriter._pywb_static_prefix,
        )

    def _create_rebased_rewriter(self, new_wburl, prefix):
        return PageUrlRewriter(PageWbUrl.adopt(new_wburl), prefix)


class PageHTMLRewriter(HTMLRewriter):
    """pywb's HTML rewriter without the re-decoding of attribute values.

    pywb reads a page that is not UTF-8 as ISO-8859-1 (one character per byte) and, for a link,
    decodes those bytes with the page's charset before rewriting, so that ``to_uri`` could quote
    them; the rewritten link would then hold characters that no longer fit the ISO-8859-1 stream.
    Unquoted, the link is rewritten as the bytes it was (URL delimiters are ASCII, and no GBK or
    Shift_JIS trail byte is one of ``/?#``), so nothing needs decoding.
    """

    def _rewrite_url(self, value, mod=None, force_abs=False):
        if not value:
            return ""
        value = value.strip()
        if not value:
            return ""
        unescaped = self.try_unescape(value)
        rewritten = self.url_rewriter.rewrite(unescaped, mod, force_abs)
        if rewritten == unescaped:
            return value
        if unescaped != value:
            rewritten = rewritten.replace(unescaped, value)
        return rewritten
