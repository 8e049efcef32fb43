"""Same-domain scope by the Public Suffix List (strata.public_suffix), and same-host by host and port.

The expected registrable domains follow the list's rules as tldextract's bundled snapshot holds
them (each suffix named in a comment is a line of that file, private section included): this
table is the list's data, not ours. The old rule of thumb (two labels, three under a few
country-code second levels) got 14 of the 35 wrong.
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest

from demo.sample_site import serve_sample_site
from harvester.scope import Decision, Scope
from index.collection import Collection
from index.storage.state import HarvestState
from strata.public_suffix import registrable_domain
from strata.urls import url_host
from tests.conftest import harvest

PSL_CASES = [
    # host, registrable domain                        # the rule that decides
    ("pref.kyoto.lg.jp", "kyoto.lg.jp"),  # lg.jp (ICANN)
    ("pref.osaka.lg.jp", "osaka.lg.jp"),
    ("www.city.kyoto.lg.jp", "kyoto.lg.jp"),
    ("www.city.kyoto.jp", "city.kyoto.jp"),  # kyoto.jp
    ("kyoto.jp", "kyoto.jp"),  # a suffix itself
    ("foo.city.kawasaki.jp", "city.kawasaki.jp"),  # *.kawasaki.jp with !city.kawasaki.jp
    ("bar.kawasaki.jp", "bar.kawasaki.jp"),  # *.kawasaki.jp: bar.kawasaki.jp is a suffix
    ("www.nhk.or.jp", "nhk.or.jp"),  # or.jp
    ("a.b.example.co.jp", "example.co.jp"),  # co.jp
    ("www.beijing.gov.cn", "beijing.gov.cn"),  # gov.cn
    ("www.shanghai.gov.cn", "shanghai.gov.cn"),
    ("gov.cn", "gov.cn"),
    ("www.edu.cn", "www.edu.cn"),  # edu.cn
    ("www.xn--55qx5d.cn", "www.xn--55qx5d.cn"),  # 公司.cn, IDNA form
    ("www.example.xn--fiqs8s", "example.xn--fiqs8s"),  # 中国
    ("news.bbc.co.uk", "bbc.co.uk"),  # co.uk
    ("www.gov.uk", "www.gov.uk"),  # gov.uk
    ("x.y.ox.ac.uk", "ox.ac.uk"),  # ac.uk
    ("www.bl.uk", "bl.uk"),  # uk
    ("www.example.com.au", "example.com.au"),  # com.au
    ("a.b.pvt.k12.ma.us", "b.pvt.k12.ma.us"),  # pvt.k12.ma.us
    ("www.ck", "www.ck"),  # *.ck with !www.ck
    ("www.a.ck", "www.a.ck"),
    ("alice.github.io", "alice.github.io"),  # github.io (private section)
    ("bob.github.io", "bob.github.io"),
    ("github.io", "github.io"),
    ("x.github.com", "github.com"),  # github.com is not a suffix
    ("a.b.c.blogspot.com", "c.blogspot.com"),  # blogspot.com (private)
    ("example.s3.amazonaws.com", "example.s3.amazonaws.com"),  # s3.amazonaws.com (private)
    ("myapp.herokuapp.com", "myapp.herokuapp.com"),  # herokuapp.com (private)
    ("intranet.corp", "intranet.corp"),  # no listed suffix: the default rule *
    ("localhost", "localhost"),
    ("foo.localhost", "foo.localhost"),
    ("127.0.0.1", "127.0.0.1"),
    ("[2001:db8::1]", "2001:db8::1"),
]


@pytest.mark.parametrize(("host", "domain"), PSL_CASES)
def test_registrable_domain(host, domain):
    assert registrable_domain(host) == domain


SCOPE_CASES = [
    # seed, url, hosts, accepted
    ("https://pref.kyoto.lg.jp/", "https://www.pref.kyoto.lg.jp/a", "same-domain", True),
    ("https://pref.kyoto.lg.jp/", "https://www.city.kyoto.lg.jp/", "same-domain", True),
    ("https://pref.kyoto.lg.jp/", "https://pref.osaka.lg.jp/", "same-domain", False),
    ("https://alice.github.io/", "https://alice.github.io/blog/", "same-domain", True),
    ("https://alice.github.io/", "https://bob.github.io/", "same-domain", False),
    ("https://alice.github.io/", "https://github.io/", "same-domain", False),
    ("http://www.beijing.gov.cn/", "http://zfxxgk.beijing.gov.cn/", "same-domain", True),
    ("http://www.beijing.gov.cn/", "http://www.shanghai.gov.cn/", "same-domain", False),
    ("http://www.beijing.gov.cn/", "http://www.gov.cn/", "same-domain", False),
    ("http://a.blogspot.com/", "http://b.blogspot.com/", "same-domain", False),
    ("http://news.bbc.co.uk/", "http://www.bbc.co.uk:8080/", "same-domain", True),  # any port
    ("http://127.0.0.1:8001/", "http://127.0.0.1:8002/", "same-domain", True),  # IP: exact host
    ("http://127.0.0.1:8001/", "http://127.0.0.2:8001/", "same-domain", False),
    ("http://localhost:8001/", "http://app.localhost:8001/", "same-domain", False),
    # same-host: the port counts (default ports are dropped, so http and https of one host agree)
    ("http://127.0.0.1:8001/", "http://127.0.0.1:8001/x", "same-host", True),
    ("http://127.0.0.1:8001/", "http://127.0.0.1:8002/x", "same-host", False),
    ("http://example.com/", "https://example.com/x", "same-host", True),
    ("http://example.com/", "http://example.com:80/x", "same-host", True),
    ("http://example.com/", "http://example.com:8080/x", "same-host", False),
    ("http://[::1]:8001/", "http://[0:0::1]:8001/x", "same-host", True),
    ("http://[::1]:8001/", "http://[::1]:8002/x", "same-host", False),
]


@pytest.mark.parametrize(("seed", "url", "hosts", "accepted"), SCOPE_CASES)
def test_scope(seed, url, hosts, accepted):
    assert Scope([seed], hosts=hosts).decide(url, 1, "navigation").accept is accepted


def test_same_host_any_port_is_a_job_setting():
    seed = "http://127.0.0.1:8001/"
    assert Scope([seed], same_host_any_port=True).decide("http://127.0.0.1:8002/", 1, "navigation") == Decision(
        True, "in scope"
    )
    assert Scope([seed], same_host_any_port=True).decide("http://127.0.0.2:8001/", 1, "navigation") == Decision(
        False, "out-of-scope host"
    )
    # Embeds from another port are still fetched (embeds_offsite), only navigation is held back.
    assert Scope([seed]).decide("http://127.0.0.1:8002/a.png", 1, "embed").accept


def test_the_list_is_read_without_the_network_or_a_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def no_network(*args, **kwargs):
        raise AssertionError("the Public Suffix List must come from the bundled snapshot")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    from strata import public_suffix

    public_suffix._extractor.cache_clear()
    public_suffix.registrable_domain.cache_clear()
    assert registrable_domain("pref.osaka.lg.jp") == "osaka.lg.jp"
    assert list(tmp_path.iterdir()) == []  # nothing written under HOME or the cache directory


@pytest.mark.slow
def test_an_incremental_run_from_another_port_leaves_the_first_sites_urls_alone(root):

    with serve_sample_site() as first, serve_sample_site() as second:
        assert first.port != second.port
        harvest(root, first)
        before = len(first.request_log)
        run = harvest(root, second, mode="incremental")
        assert run["status"] == "finished" and run["urls_fetched"] > 0
        with HarvestState(Collection.open(root, "sample").db_path) as state:
            navigation = {
                urlsplit(row["url"]).path
                for row in state.known_urls()
                if row["link_kind"] != "embed"
                and url_host(row["url"]) == "127.0.0.1"
                and urlsplit(row["url"]).port == first.port
            }
        assert len(navigation) > 10
        # Not one page of the other port is rechecked. (Its embeds still are: a known embed is
        # rechecked on any host when embeds_offsite is on; keeping jobs apart is another change.)
        assert navigation & {r.path for r in first.request_log[before:]} == set()
