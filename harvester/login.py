"""A job's login recipe and proxy pool, applied to a harvest as an httpx transport.

``harvest_transport(job, policy)`` returns the transport a ``Harvest`` should use (or None when a
plain one will do):

- **Login cookies** (``login_cookies = ["session=abc", ...]``) are added as a ``Cookie`` header to
  requests for the seeds' hosts only (and their subdomains when the job's scope is
  ``same-domain``): a session cookie must not travel to third-party embeds. They are added below
  the harvester's request recording, so they never reach a WARC ``request`` record, an index or a
  log: the archive does not keep the secret.
- **Login form** (``login_form_url`` and ``login_form_fields``): posted before the run, through the
  same (guarded) transport, following up to 5 redirects; the cookies it sets join the login cookies,
  with the same rule: seeds' hosts only, never recorded.
- **Proxies** (``proxies = ["http://proxy1:3128", ...]``) are rotated per request; https URLs go
  through them with ``CONNECT``; one that cannot be reached rests a while and its requests go
  through the others (``harvester.proxies``).
- **SSRF guard**: with a ``NetworkPolicy`` (runs started from the console), every request and
  every proxy passes ``harvester.guard``. Without one (an operator's own ``strata harvest``), the
  same transport runs with every network allowed, which only adds the pinning.
"""

from __future__ import annotations

import httpx

from harvester.guard import GuardedTransport, NetworkPolicy
from harvester.job import JobSettings
from strata.errors import ConfigError
from strata.urls import url_host

ALLOW_ALL = NetworkPolicy.from_strings(["0.0.0.0/0", "::/0"])
_COOKIE_NAME_BAD = set('()<>@,;:\\"/[]?={} \t')


def parse_cookies(values) -> list[tuple[str, str]]:
    """``name=value`` strings as pairs; ConfigError naming the field when one is malformed."""
    pairs = []
    for raw in values or ():
        name, sep, value = str(raw).partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or any(c in _COOKIE_NAME_BAD or ord(c) < 33 or ord(c) > 126 for c in name):
            raise ConfigError("field 'login_cookies': each entry must look like name=value")
        if any(c in ";\r\n" or ord(c) < 32 for c in value):
            raise ConfigError(f"field 'login_cookies': the value of cookie {name!r} holds a ';' or a control character")
        pairs.append((name, value))
    return pairs


def cookie_hosts(job: JobSettings) -> tuple[set[str], bool]:
    """Hosts the cookies go to, and whether their subdomains count too."""
    return {url_host(seed) for seed in job.seeds}, job.scope == "same-domain"


class CookieTransport(httpx.AsyncBaseTransport):
    def __init__(
        self, inner: httpx.AsyncBaseTransport, cookies: list[tuple[str, str]], hosts: set[str], subdomains: bool = False
    ):
        self.inner = inner
        self.header = "; ".join(f"{k}={v}" for k, v in cookies)
        self.hosts = {h.lower() for h in hosts}
        self.subdomains = subdomains

    def applies_to(self, host: str) -> bool:
        host = host.lower()
        return host in self.hosts or (self.subdomains and any(host.endswith("." + h) for h in self.hosts))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.header and self.applies_to(request.url.raw_host.decode("ascii")):
            existing = request.headers.get("Cookie")
            request.headers["Cookie"] = f"{existing}; {self.header}" if existing else self.header
        return await self.inner.handle_async_request(request)

    @property
    def proxy_pool(self):
        """The inner transport's proxy pool, for the harvest to report on (None without proxies)."""
        return getattr(self.inner, "proxy_pool", None)

    async def aclose(self) -> None:
        await self.inner.aclose()


def harvest_transport(
    job: JobSettings, policy: NetworkPolicy | None = None, limits: httpx.Limits | None = None
) -> httpx.AsyncBaseTransport | None:
    if policy is None and not job.shapes_transport:
        return None
    cookies = parse_cookies(job.login_cookies)
    if policy is None and not cookies and not job.proxies:
        return None  # cookie strings that hold no cookie
    limits = limits or httpx.Limits(
        max_connections=max(job.concurrency, 1), max_keepalive_connections=max(job.concurrency, 1)
    )
    transport: httpx.AsyncBaseTransport = GuardedTransport(
        policy or ALLOW_ALL, proxies=job.proxies, limits=limits, dns_timeout=job.connect_timeout
    )
    if cookies:
        hosts, subdomains = cookie_hosts(job)
        transport = CookieTransport(transport, cookies, hosts, subdomains)
    return transport


MAX_LOGIN_REDIRECTS = 5


async def form_login(job: JobSettings, transport: httpx.AsyncBaseTransport | None) -> list[tuple[str, str]]:
    """POST the job's login form; the cookies the site set. ``HarvestError`` when it is refused."""
    from urllib.parse import parse_qsl

    from strata.errors import HarvestError

    fields = []
    for entry in job.login_form_fields:
        fields.extend(parse_qsl(entry, keep_blank_values=True) or [(entry.split("=", 1)[0], "")])
    async with httpx.AsyncClient(
        transport=transport,
        trust_env=False,
        follow_redirects=True,
        max_redirects=MAX_LOGIN_REDIRECTS,
        timeout=job.timeout,
        headers={"User-Agent": job.user_agent},
    ) as client:
        try:
            response = await client.post(job.login_form_url, data=dict(fields))
        except httpx.HTTPError as exc:
            raise HarvestError(f"login form {job.login_form_url} could not be posted: {exc}") from None
        if response.status_code >= 400:
            raise HarvestError(
                f"login form {job.login_form_url} answered {response.status_code}: check the job's login_form_fields"
            )
        return [(cookie.name, cookie.value) for cookie in client.cookies.jar if cookie.value is not None]


def with_cookies(
    job: JobSettings, transport: httpx.AsyncBaseTransport | None, cookies: list[tuple[str, str]]
) -> httpx.AsyncBaseTransport:
    hosts, subdomains = cookie_hosts(job)
    return CookieTransport(transport or httpx.AsyncHTTPTransport(), cookies, hosts, subdomains)
