"""What went wrong in a run as it ran, for staff: its recent errors and notes, the hosts and seeds
that never answered, robots.txt files that could not be read, proxies that failed; and from those,
why a run that went to its end still failed (``RunLog.failure``)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from harvester.frontier import Item
from harvester.job import JobSettings
from harvester.report import RunFigures
from harvester.robots import RobotsRules
from strata.urls import url_origin

if TYPE_CHECKING:
    from harvester.proxies import ProxyPool

RECENT_ERRORS = 20  # errors kept (the summary shows the last 10, progress the last 5)
MAX_NOTES = 50  # notes of one kind that may pile up (Crawl-delays, Redis waits)


class RunLog:
    def __init__(self) -> None:
        self.recent_errors: list[tuple[str, str]] = []
        self.notes: list[str] = []
        self.surplus_urls: list[str] = []  # captures whose server sent more than the message held
        self.host_errors: dict[str, tuple[int, str]] = {}  # host[:port] -> (errors, first error)
        self.hosts_answered: set[str] = set()  # hosts[:port] that sent at least one response
        self.seeds_answered: set[str] = set()
        self.seed_errors: dict[str, str] = {}
        #: URLs that count as the run's seeds besides items of kind "seed": a patch's resources
        #: (``harvester.patch``), fetched as embeds; the run failed when none of them answered.
        self.starts: set[str] = set()
        self.robots_unread: dict[str, str] = {}  # origin -> why its robots.txt could not be read
        self.robots_unread_hosts: set[str] = set()  # their host[:port]s, as the run's URLs name them
        self.proxy_failures: dict[str, int] = {}  # proxy (no credentials) -> failures seen

    def error(self, where: str, text: str) -> None:
        self.recent_errors = (self.recent_errors + [(where, text)])[-RECENT_ERRORS:]

    def note_some(self, text: str) -> None:
        """A note of a kind that may repeat: kept while there are fewer than ``MAX_NOTES``."""
        if len(self.notes) < MAX_NOTES:
            self.notes.append(text)

    def fetch_failed(self, item: Item, error: str) -> None:
        self.error(item.url, error)
        host = urlsplit(item.url).netloc
        count, first = self.host_errors.get(host, (0, error))
        self.host_errors[host] = (count + 1, first)
        if item.kind == "seed" or item.url in self.starts:
            self.seed_errors.setdefault(item.url, error)

    def answered(self, item: Item, surplus: int) -> None:
        if item.kind == "seed" or item.url in self.starts:
            self.seeds_answered.add(item.url)
        self.hosts_answered.add(urlsplit(item.url).netloc)
        if surplus:
            self.surplus_urls.append(item.url)

    def robots_unreadable(self, url: str, rules: RobotsRules) -> str:
        """Say once per site, among the run's errors, that its robots.txt was unreadable; the reason
        each of its URLs was skipped."""
        origin = url_origin(url) or url
        why = rules.reason.removesuffix(": disallow all")
        if origin not in self.robots_unread:
            self.robots_unread[origin] = why
            self.robots_unread_hosts.add(urlsplit(url).netloc)
            self.error(
                origin + "/robots.txt",
                f"robots.txt could not be read ({why}): nothing on {origin} is fetched (RFC 9309)",
            )
        return f"not fetched: robots.txt could not be read ({why}); RFC 9309 then disallows everything"

    def take_proxy_events(self, pool: ProxyPool | None) -> None:
        """A proxy's failures go among the run's errors, under the proxy's name."""
        if pool is None:
            return
        for name, text in pool.take_events():
            self.proxy_failures[name] = self.proxy_failures.get(name, 0) + 1
            self.error(name, text)

    def note_proxy_failures(self) -> None:
        for name, count in self.proxy_failures.items():
            self.notes.append(f"proxy {name} failed {count} time(s); see the errors")

    def note_at_end(self, figures: RunFigures) -> None:
        """Hosts the run could not harvest (every request to them failed, or their robots.txt could not
        be read, so RFC 9309 disallowed them: a figure of the run, a note, and in the CLI a non-zero
        exit), and responses that came with bytes past their end."""
        unanswered = {h for h in self.host_errors if h not in self.hosts_answered}
        figures.failed_hosts = sorted(unanswered | self.robots_unread_hosts)
        for host in sorted(unanswered):
            count, first = self.host_errors[host]
            self.notes.append(
                f"every request to {host or 'a URL without a host'} failed ({count} request(s); first error: {first})"
            )
        for origin, why in sorted(self.robots_unread.items()):
            self.notes.append(f"nothing on {origin} was fetched: its robots.txt could not be read ({why}; RFC 9309)")
        if self.surplus_urls:
            self.notes.append(
                f"{len(self.surplus_urls)} response(s) came with bytes past their end (more than "
                f"Content-Length), e.g. {self.surplus_urls[0]}: their connections were closed "
                "and their records carry WARC-Strata-Note: content-length-surplus"
            )

    def failure(self, job: JobSettings, proxy_pool: ProxyPool | None) -> str | None:
        """Why this run must count as failed though it ran to its end, or None.

        A run none of whose seeds answered harvested nothing; RFC 9309: a robots.txt that cannot be
        read (5xx, unreachable) disallows the whole site, so a seed's site with one was not harvested
        at all. A run that harvested some of its seeds' sites is finished: the sites it could not
        harvest are named in its ``failed_hosts`` (``note_at_end``), and the CLI exits 1."""
        if proxy_pool is not None and proxy_pool.exhausted:
            return proxy_pool.exhausted
        if self.seeds_answered:
            return None  # its other sites were harvested: finished, those it could not in failed_hosts
        seed_origins = {url_origin(seed) for seed in job.seeds}
        unread = [(origin, why) for origin, why in self.robots_unread.items() if origin in seed_origins]
        if unread:
            origin, why = unread[0]
            more = f" (and {len(unread) - 1} more seed site(s))" if len(unread) > 1 else ""
            return (
                f"robots.txt of {origin} could not be read ({why}), so nothing there was fetched "
                f"(RFC 9309: disallow all until it can be read){more}"
            )
        seed = job.seeds[0]
        if seed in self.seed_errors:
            return f"no seed could be fetched: {seed}: {self.seed_errors[seed]}"
        return (
            'no seed was fetched: robots.txt disallows every seed (robots = "ignore" only with the site\'s permission)'
        )
