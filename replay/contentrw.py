"""The content rewriter replay uses: pywb's (with its JS object proxy), links as in ``replay.pagelinks``."""

from __future__ import annotations

from pywb.rewrite.default_rewriter import RewriterWithJSProxy
from pywb.rewrite.url_rewriter import UrlRewriter

from replay.pagelinks import PageHTMLRewriter, PageUrlRewriter


class PageContentRewriter(RewriterWithJSProxy):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.all_rewriters["html"] = PageHTMLRewriter

    def __call__(self, record, url_rewriter, cookie_rewriter, head_insert_func=None, cdx=None, environ=None):
        if type(url_rewriter) is UrlRewriter:  # not pywb's identity rewriter (proxy mode)
            url_rewriter = PageUrlRewriter.like(url_rewriter)
        return super().__call__(record, url_rewriter, cookie_rewriter, head_insert_func, cdx, environ)
