"""Tests for harvester.scope: a table of (scope, url, depth, kind) -> decision."""

import pytest

from harvester.scope import Decision, Scope, registrable_domain

SEEDS = ["http://www.Example.com/news/", "https://library.example.org.uk/"]

SCOPES = {
    "default": Scope(SEEDS, max_depth=2),
    "domain": Scope(SEEDS, hosts="same-domain", max_depth=2),
    "any": Scope(SEEDS, hosts="any", max_depth=2),
    "filtered": Scope(SEEDS, include=[r"/news/", r"\.pdf$"], exclude=[r"/private/", r"[?&]sessionid="], max_depth=2),
    "no-offsite": Scope(SEEDS, hosts="same-domain", embeds_offsite=False, exclude=[r"\.exe$"], max_depth=2),
    "ip": Scope(["http://192.0.2.10:8080/", "http://[2001:db8::1]/"], hosts="same-domain", max_depth=0),
    "cctld": Scope(["https://news.bbc.co.uk/"], hosts="same-domain"),
    "any-port": Scope(SEEDS, max_depth=2, same_host_any_port=True),
}

TABLE = [
    # scope, url, depth, kind, accept, reason
    ("default", "http://www.example.com/news/", 0, "navigation", True, "seed"),
    ("default", "http://www.example.com/news/a.html", 1, "navigation", True, "in scope"),
    ("default", "http://WWW.EXAMPLE.COM:80/other#x", 2, "navigation", True, "in scope"),
    ("default", "https://www.example.com/tls", 1, "navigation", True, "in scope"),
    ("default", "http://www.example.com:8080/port", 1, "navigation", False, "out-of-scope host"),
    ("any-port", "http://www.example.com:8080/port", 1, "navigation", True, "in scope"),
    ("any-port", "http://example.com/", 1, "navigation", False, "out-of-scope host"),
    ("default", "http://www.example.com/deep", 3, "navigation", False, "too deep"),
    ("default", "http://www.example.com/deep", 3, "refresh", False, "too deep"),
    ("default", "http://www.example.com/deep", 3, "redirect", False, "too deep"),
    ("default", "http://example.com/", 1, "navigation", False, "out-of-scope host"),
    ("default", "http://blog.example.com/", 1, "navigation", False, "out-of-scope host"),
    ("default", "https://library.example.org.uk/catalogue", 1, "navigation", True, "in scope"),
    ("default", "http://elsewhere.net/", 1, "navigation", False, "out-of-scope host"),
    ("default", "http://www.example.com.evil.net/", 1, "navigation", False, "out-of-scope host"),
    ("default", "http://www.example.com@evil.net/", 1, "navigation", False, "out-of-scope host"),
    ("default", "http://cdn.elsewhere.net/a.png", 1, "embed", True, "embed"),
    ("default", "http://cdn.elsewhere.net/a.png", 50, "embed", True, "embed"),
    ("default", "http://www.example.com/style.css", 99, "embed", True, "embed"),
    ("default", "javascript:alert(1)", 1, "navigation", False, "not an http(s) URL"),
    ("default", "mailto:a@example.com", 1, "embed", False, "not an http(s) URL"),
    ("default", "/relative", 1, "navigation", False, "not an http(s) URL"),
    # same-domain
    ("domain", "http://example.com/", 1, "navigation", True, "in scope"),
    ("domain", "https://blog.example.com/post", 2, "navigation", True, "in scope"),
    ("domain", "http://a.b.c.example.com/", 1, "navigation", True, "in scope"),
    ("domain", "http://notexample.com/", 1, "navigation", False, "out-of-scope host"),
    ("domain", "http://example.com.evil.net/", 1, "navigation", False, "out-of-scope host"),
    ("domain", "http://org.uk/", 1, "navigation", False, "out-of-scope host"),
    ("domain", "http://other.org.uk/", 1, "navigation", False, "out-of-scope host"),
    ("domain", "http://www.example.org.uk/", 1, "navigation", True, "in scope"),
    ("domain", "http://example.com/deep", 3, "navigation", False, "too deep"),
    # any
    ("any", "http://anything.example.net/x", 2, "navigation", True, "in scope"),
    ("any", "http://anything.example.net/x", 3, "navigation", False, "too deep"),
    ("any", "ftp://anything.example.net/x", 1, "navigation", False, "not an http(s) URL"),
    # include / exclude
    ("filtered", "http://www.example.com/news/", 0, "navigation", True, "seed"),
    ("filtered", "https://library.example.org.uk/", 0, "navigation", True, "seed"),
    ("filtered", "http://www.example.com/news/2024/story", 1, "navigation", True, "in scope"),
    ("filtered", "http://www.example.com/report.pdf", 1, "navigation", True, "in scope"),
    ("filtered", "http://www.example.com/about", 1, "navigation", False, "matches no include pattern"),
    ("filtered", "http://www.example.com/img/logo.png", 9, "embed", True, "embed"),
    (
        "filtered",
        "http://www.example.com/news/private/x",
        1,
        "navigation",
        False,
        "excluded by pattern //private//",
    ),
    (
        "filtered",
        "http://www.example.com/news/private/x.png",
        1,
        "embed",
        False,
        "excluded by pattern //private//",
    ),
    ("filtered", "http://cdn.net/private/x.png", 1, "embed", False, "excluded by pattern //private//"),
    (
        "filtered",
        "http://www.example.com/news/?a=1&sessionid=2",
        1,
        "navigation",
        False,
        "excluded by pattern /[?&]sessionid=/",
    ),
    ("filtered", "http://www.example.com/news/deep", 3, "navigation", False, "too deep"),
    # embeds restricted to in-scope hosts
    ("no-offsite", "http://cdn.elsewhere.net/a.png", 1, "embed", False, "out-of-scope host"),
    ("no-offsite", "http://static.example.com/a.png", 40, "embed", True, "embed"),
    ("no-offsite", "http://static.example.com/setup.exe", 1, "embed", False, "excluded by pattern /\\.exe$/"),
    # IP seeds: exact match only
    ("ip", "http://192.0.2.10:8080/page", 0, "navigation", True, "in scope"),
    ("ip", "http://192.0.2.10/other-port", 0, "navigation", True, "in scope"),
    ("ip", "http://192.0.2.11/", 0, "navigation", False, "out-of-scope host"),
    ("ip", "http://3221225994/", 0, "navigation", True, "in scope"),  # 192.0.2.10 as a number
    ("ip", "http://[2001:DB8:0::1]:8000/", 0, "navigation", True, "in scope"),
    ("ip", "http://[2001:db8::2]/", 0, "navigation", False, "out-of-scope host"),
    ("ip", "http://192.0.2.10/", 1, "navigation", False, "too deep"),
    # country-code second levels
    ("cctld", "https://www.bbc.co.uk/", 1, "navigation", True, "in scope"),
    ("cctld", "https://itv.co.uk/", 1, "navigation", False, "out-of-scope host"),
]


@pytest.mark.parametrize(("scope", "url", "depth", "kind", "accept", "reason"), TABLE)
def test_decide(scope, url, depth, kind, accept, reason):
    assert SCOPES[scope].decide(url, depth, kind) == Decision(accept, reason)


def test_decision_is_truthy_when_accepted():
    assert Decision(True, "in scope")
    assert not Decision(False, "too deep")


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("www.example.com", "example.com"),
        ("example.com", "example.com"),
        ("localhost", "localhost"),
        ("news.bbc.co.uk", "bbc.co.uk"),
        ("a.b.example.com.cn", "example.com.cn"),
        ("www.gov.uk", "www.gov.uk"),
        ("x.y.example.io", "example.io"),
        ("192.0.2.1", "192.0.2.1"),
        ("[2001:db8::1]", "2001:db8::1"),
    ],
)
def test_registrable_domain(host, domain):
    assert registrable_domain(host) == domain


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"include": ["/ok/", "("]},
            "include pattern '(' is not a valid regular expression: missing ), unterminated subpattern",
        ),
        (
            {"exclude": ["[a-"]},
            "exclude pattern '[a-' is not a valid regular expression: unterminated character set",
        ),
        ({"exclude": "/x/"}, "exclude must be a list of regular expressions, not one string"),
        ({"include": [3]}, "include pattern 3 is not a string"),
        ({"hosts": "same-site"}, "hosts must be one of same-host, same-domain, any, not 'same-site'"),
        ({"max_depth": -1}, "max_depth must be a whole number of at least 0, not -1"),
        ({"seeds": []}, "at least one seed URL is needed"),
        ({"seeds": ["ftp://example.com/"]}, "seed 'ftp://example.com/' is not an http(s) URL"),
        ({"seeds": "http://example.com/"}, "seeds must be a list of URLs, not one string"),
    ],
)
def test_invalid_settings_raise_value_error_naming_the_problem(kwargs, message):
    kwargs = {"seeds": SEEDS, **kwargs}
    with pytest.raises(ValueError) as info:
        Scope(**kwargs)
    assert str(info.value).startswith(message)


def test_patterns_are_compiled_once():
    scope = Scope(SEEDS, include=["/news/"], exclude=["/private/"])
    assert [p.pattern for p in scope.include] == ["/news/"]
    assert [p.pattern for p in scope.exclude] == ["/private/"]
    assert "same-host" in repr(scope)
