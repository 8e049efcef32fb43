"""The CJK test site itself: what it serves, how it logs, and that its pages are what they claim."""

from __future__ import annotations

import re
import socket

import httpx

from tests.support.cjk_site import GROUPS, CjkSite, browser_target, start_cjk_site


def test_every_page_is_served_as_described_and_the_log_records_it():
    with start_cjk_site() as site:
        with httpx.Client(base_url=site.base_url, trust_env=False) as client:
            for target, page in site.pages.items():
                response = client.get(target)
                assert response.status_code == 200, target
                assert response.headers["content-type"] == page.content_type
                assert response.content == page.body
            assert client.get("/gbk-none/no-such-page.html").status_code == 404
        assert site.requested_targets() == set(site.pages) | {"/gbk-none/no-such-page.html"}
        assert site.requested()[0] == ("GET", next(iter(site.pages)))
        site.clear_log()
        assert site.requested() == []
        port = site._server.port
    with socket.socket() as sock:  # stopped: the port is free again
        sock.bind(("127.0.0.1", port))


def test_pages_are_in_their_encoding_with_enough_text_to_detect():
    pages = CjkSite().pages
    assert {page.group for page in pages.values()} == {group.name for group in GROUPS} | {"root"}
    for page in pages.values():
        if page.group == "root":
            continue
        text = page.body.decode(page.encoding)
        assert page.marker in text and page.title in text
        assert len(re.findall(r"[\u3040-\u30ff\u4e00-\u9fff]", text)) >= 200, page.target
        head = page.body[:1024]
        assert (b"charset" in head.lower()) == (page.declared != "none"), page.target
        assert "&amp;" in text or len(page.hrefs) == 2  # index pages escape & in href


def test_link_targets_are_encoded_as_the_url_standard_says():
    assert browser_target("?s=大", "/g/", "gbk") == "/g/?s=%B4%F3"
    assert browser_target("?s=大", "/g/", "utf-8") == "/g/?s=%E5%A4%A7"
    assert browser_target("列表.html?k=乗", "/g/", "gbk") == "/g/%E5%88%97%E8%A1%A8.html?k=%81\\"
    assert browser_target("a?n=𠮷", "/g/", "gb18030") == "/g/a?n=%954%B25"
    assert browser_target("a?n=𠮷", "/g/", "gbk") == "/g/a?n=%26%23134071%3B"
    assert browser_target("/x/表?k=表", "/g/", "shift_jis") == "/x/%E8%A1%A8?k=%95\\"
