"""The SURT key of a URL, as pywb's canonicalizer makes it (``surt.surt(url)``), without its cost.

pywb keys its CDXJ index by the ``surt`` package's key. That package costs 12-20 us a URL and its import
50-70 ms a process (it loads tldextract, requests and urllib3 for a feature a key never uses), and a
harvest makes a key for every record it writes. Most URLs a harvest meets are plain: an ``http`` or
``https`` URL of a host name or a dotted IPv4 address, with a path and query of characters that need
no escaping. For those the canonicalization reduces to a few string steps, which ``surt_key`` does
itself; any other URL goes to the package, imported then. The test suite holds the two equal over
generated and awkward URLs.

The steps, for a plain URL (those of the package's Google and Internet Archive canonicalizers):

- host lowercased, a leading ``www``, ``www2``, ... label dropped, labels reversed and joined by
  commas; a dotted IPv4 address is reversed as well;
- the port left out when it is the scheme's default;
- path lowercased, its trailing slash dropped (not the root's), ``/`` for none;
- query lowercased and its ``&``-separated arguments sorted; an empty one left out;
- fragment, user and password left out (such URLs are not plain: they go to the package);
- a URN of lowercase letters, digits and ``:._-`` is its own key.
"""

from __future__ import annotations

import re

__all__ = ["surt_key"]

# scheme://authority, then the path and the query. Only characters that neither escaping nor
# unescaping changes ('%' and everything outside printable ASCII are left to the package), and no
# '#', '@', '[', '\\' or whitespace.
_PLAIN = re.compile(
    r"(https?)://([A-Za-z0-9.-]+)(?::([1-9][0-9]{0,4}))?(/[A-Za-z0-9\-._~/:,;+!$'()*=&]*)?(?:\?([A-Za-z0-9\-._~/:,;+!$'()*=&?]*))?"
)
# A URN of lowercase letters, digits and ``:._-`` (a run report's ``urn:strata:run:<id>``) is its
# own key.
_PLAIN_URN = re.compile(r"urn:[a-z0-9:._-]+")
_WWW = re.compile(r"www\d*\.")
_IPV4 = re.compile(
    r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]?)(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}"
)
_DIGITS_AND_DOTS = re.compile(r"[0-9.]+")
_DEFAULT_PORT = {"http": 80, "https": 443}
# What the package strips as session ids: a path segment in parentheses (ASP.NET), and query
# arguments such as jsessionid=, phpsessid=, sid=, ASPSESSIONID..., cfid=...&cftoken=.
_SESSION_QUERY = ("sid=", "sessionid", "cfid=")


def surt_key(url: str) -> str:
    """``surt.surt(url)``: the key pywb files ``url`` under."""
    key = _plain_key(url)
    if key is not None:
        return key
    from surt import surt  # only for a URL that is not plain (imported once, then looked up)

    return surt(url)


def _plain_key(url: str) -> str | None:
    """The key of a plain URL, or None for one the package must canonicalize."""
    m = _PLAIN.fullmatch(url)
    if m is None:
        return url if _PLAIN_URN.fullmatch(url) else None
    scheme, host, port, path, query = m.groups()
    if host.startswith(".") or host.endswith(".") or ".." in host:
        return None
    if _DIGITS_AND_DOTS.fullmatch(host):  # an address: only its canonical dotted form is plain
        if not _IPV4.fullmatch(host):
            return None
    else:
        host = host.lower()
        www = _WWW.match(host)
        if www:
            host = host[www.end() :]
            if not host:
                return None
    if path is None:
        path = "/"
    elif "(" in path or "//" in path or "/./" in path or "/../" in path or path.endswith(("/.", "/..")):
        return None
    path = path.lower()
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    key = ",".join(reversed(host.split(".")))
    number = int(port) if port is not None else _DEFAULT_PORT[scheme]
    if number > 65535:
        return None
    if number != _DEFAULT_PORT[scheme]:
        key += f":{number}"
    key += ")" + path
    if query:
        query = query.lower()
        if any(marker in query for marker in _SESSION_QUERY):
            return None
        key += "?" + _sorted_query(query)
    return key


def _sorted_query(query: str) -> str:
    """The arguments in order, each as (name, value) split at its first '=' (an argument without
    one sorts before the same name with one), as the package orders them."""
    if len(query) <= 1:
        return query
    pairs = sorted(tuple(arg.split("=", 1)) for arg in query.split("&"))
    return "&".join("=".join(pair) for pair in pairs)
