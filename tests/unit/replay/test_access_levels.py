"""replay.access: the level of a request from its address, proxies and host; nothing a client sends
raises it."""

from __future__ import annotations

import pytest

from replay.access import AccessPolicy, client_address, networks
from replay.config import build_config


@pytest.fixture
def policy(tmp_path):
    settings = build_config(
        {
            "reading_room": ["10.20.0.0/16", "2001:db8:20::/48"],
            "trusted_proxies": ["192.0.2.1", "192.0.2.2"],
            "restricted_hosts": ["restricted.localhost"],
        }
    )
    return AccessPolicy(tmp_path, settings)


def level(policy, remote: str, xff: str | None = None, host: str = "archive.localhost", **headers) -> str:
    environ = {"REMOTE_ADDR": remote, "HTTP_HOST": host, **headers}
    if xff is not None:
        environ["HTTP_X_FORWARDED_FOR"] = xff
    return policy.resolve(environ, {}).level


def test_levels_from_addresses_and_proxies(policy):
    assert level(policy, "10.20.3.4") == "reading-room"
    assert level(policy, "10.21.3.4") == "public"
    assert level(policy, "2001:db8:20::9") == "reading-room"
    assert level(policy, "::ffff:10.20.3.4") == "reading-room"  # IPv4-mapped
    assert level(policy, "198.51.100.7", "10.20.3.4") == "public"  # spoofed: not from a proxy
    assert level(policy, "10.20.3.4", "198.51.100.7") == "reading-room"  # a terminal's own header: ignored
    assert level(policy, "192.0.2.1", "10.20.3.4") == "reading-room"
    assert level(policy, "192.0.2.1", "10.20.3.4, 192.0.2.2") == "reading-room"  # two trusted hops
    assert level(policy, "192.0.2.1", "10.20.3.4, 198.51.100.7") == "public"  # the client wrote the first
    assert level(policy, "192.0.2.1", "garbage, 10.20.3.4") == "reading-room"
    assert level(policy, "192.0.2.1", "10.20.3.4, garbage") == "public"  # a garbled last hop: the proxy's own
    assert level(policy, "192.0.2.1", "") == "public"


def test_no_header_raises_a_level(policy):
    for headers in (
        {"HTTP_X_PYWB_ACL_USER": "staff"},
        {"HTTP_X_REAL_IP": "10.20.3.4"},
        {"HTTP_FORWARDED": "for=10.20.3.4"},
        {"HTTP_COOKIE": "strata_restricted=anything"},
    ):
        assert level(policy, "198.51.100.7", **headers) == "public"
    # the restricted host with no valid cookie is public (and its pages refuse to serve)
    access = policy.resolve({"REMOTE_ADDR": "10.20.3.4", "HTTP_HOST": "restricted.localhost:8080"}, {})
    assert access.restricted_host and access.level == "public" and access.user is None


def test_settings_are_checked():
    assert networks(["10.0.0.1", "10.1.0.0/16"]) == ("10.0.0.1/32", "10.1.0.0/16")
    for bad in (["10.0.0.0/33"], ["example.org"], ["10.0.0.0/8 x"]):
        with pytest.raises(ValueError):
            networks(bad)


def test_client_address_without_trusted_proxies():
    assert str(client_address({"REMOTE_ADDR": "192.0.2.1", "HTTP_X_FORWARDED_FOR": "10.0.0.1"}, ())) == "192.0.2.1"
