"""The header policy of replayed responses (``replay.isolation``) and the archived headers that pass
(``replay.headers``): what a browser is told, checked value by value."""

from __future__ import annotations

import pytest

from replay.isolation import PAGE_CSP, RAW_CSP, effective_content_type, policy, refuses_service_worker


@pytest.mark.parametrize(
    "values, browser_reads",
    [
        (["text/html"], "text/html"),
        (["image/png", "text/html"], "text/html"),  # two headers: Chromium renders HTML
        (["image/png, text/html"], "text/html"),  # one header listing both
        ([",text/html"], "text/html"),
        (["text/html; charset=gbk"], "text/html; charset=gbk"),
        (["text/html; charset=gbk", "text/html"], "text/html; charset=gbk"),  # same essence keeps it
        (["text/html; charset=gbk", "image/png"], "image/png"),
        (["TEXT/HTML ;Charset=UTF-8"], "text/html; charset=UTF-8"),
        (['text/html; charset="a,b"'], 'text/html; charset="a,b"'),
        (["*/*"], None),
        (["nonsense"], None),
        (["text/html", "nonsense"], "text/html"),
        ([], None),
    ],
)
def test_one_content_type_the_one_the_browser_would_use(values, browser_reads):
    assert effective_content_type(values) == browser_reads


def _headers(out):
    return [(k.lower(), v) for k, v in out]


def test_raw_bytes_are_sandboxed_with_one_type_and_nosniff():
    archived = [
        ("Content-Type", "image/png"),
        ("Content-Type", "text/html"),
        ("Content-Security-Policy", "script-src *"),
        ("Set-Cookie", "a=b; domain=example.org"),
        ("Service-Worker-Allowed", "/"),
        ("Refresh", "0; url=http://collector.test/"),
        ("Strict-Transport-Security", "max-age=1"),
        ("Clear-Site-Data", '"*"'),
        ("X-Content-Type-Options", "whatever"),
        ("Memento-Datetime", "Mon, 01 Jan 2024 00:00:00 GMT"),
    ]
    out = _headers(policy(archived, sandbox=True))
    assert ("content-type", "text/html") in out and [k for k, _ in out].count("content-type") == 1
    assert ("content-security-policy", RAW_CSP) in out and [k for k, _ in out].count("content-security-policy") == 1
    assert "allow-same-origin" not in RAW_CSP and "allow-scripts" not in RAW_CSP
    assert ("x-content-type-options", "nosniff") in out
    for name in ("set-cookie", "service-worker-allowed", "refresh", "strict-transport-security", "clear-site-data"):
        assert name not in dict(out), name
    assert dict(out)["memento-datetime"]


def test_a_rewritten_page_loads_from_the_archive_only():
    out = dict(_headers(policy([("Content-Type", "text/html")], sandbox=False, frame_ancestors="'self'")))
    assert out["content-security-policy"] == PAGE_CSP + "; frame-ancestors 'self'"
    assert "ws:" not in PAGE_CSP and "default-src 'self'" in PAGE_CSP and "form-action 'self'" in PAGE_CSP


def test_walled_hosts_refuse_other_origins_embedding():
    out = dict(_headers(policy([], sandbox=True, same_origin_only=True)))
    assert out["cross-origin-resource-policy"] == "same-origin" and "content-type" not in out


def test_a_service_worker_script_fetch_is_recognised():
    assert refuses_service_worker({"HTTP_SERVICE_WORKER": "script"})
    assert not refuses_service_worker({"HTTP_ACCEPT": "*/*"})
