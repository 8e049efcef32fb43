"""The paging strategy of a run: which known URLs to look at again, which links to follow, where to
stop reading a listing, and which content pages have vanished from every listing.

In incremental runs of jobs that name page kinds (``index_patterns``, ``content_patterns``):
index pages are re-read from the seeds; an ordered listing (newest first) is read page after page
only while a page holds links new since the last run; content pages come back when due
(``harvester.schedule.due_at``). In every other run all known URLs are rechecked and every link
in scope is followed. ``harvester.visit`` asks this module what to queue; it fetches and records.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from harvester.frontier import Frontier, Item
from harvester.job import JobSettings
from harvester.links import Link
from harvester.report import RunFigures
from harvester.schedule import (
    PageKinds,
    due_at,
    is_ordered_listing,
    is_pagination_link,
    page_number,
    url_order_key,
)
from harvester.scope import Scope
from index.capture import decision
from index.storage.state import HarvestState
from strata.media import HTML_TYPES
from strata.times import iso


def _section(url: str) -> str:
    """A listing's or an article's section: the first segment of its path (``/news/...``)."""
    return url.split("://", 1)[-1].partition("/")[2].split("/", 1)[0]


class PagingStrategy:
    def __init__(
        self,
        state: HarvestState,
        run_id: str,
        job: JobSettings,
        mode: str,
        kinds: PageKinds,
        scope: Scope,
        frontier: Frontier,
        figures: RunFigures,
        enqueue: Callable[[Item], None],
        notes: list[str],
        job_key: str | None = None,
    ):
        self.state, self.run_id, self.job, self.mode = state, run_id, job, mode
        self.job_key = job_key  # the job whose URLs these are (None: runs of no job)
        self.kinds, self.scope, self.frontier, self.figures = kinds, scope, frontier, figures
        self.enqueue, self.notes = enqueue, notes
        # Index/content strategy: only in incremental runs of jobs that name page kinds.
        self.enabled = mode == "incremental" and kinds.enabled and not job.recheck_all
        self.index_links: set[str] = set()
        self.index_pages_done: set[str] = set()
        self.fetched: set[str] = set()
        #: Set by a visitor whose pages ask for their own embeds (a browser: ``harvester.browser.visitor``):
        #: the embeds a payload names are not queued, and an incremental run rechecks pages only.
        self.embeds_with_pages = False
        self.stopped_at: dict[str, int] = {}  # listing section -> page where paging stopped
        self.oldest_on_page: dict[tuple[str, int], tuple] = {}  # (section, page) -> oldest link on it

    def seed(self) -> None:
        for seed in self.job.seeds:
            self.enqueue(Item(seed, 0, "seed"))
        if self.mode != "incremental":
            return
        for row in self.state.job_urls(self.job_key):
            if self.embeds_with_pages and row["link_kind"] == "embed":
                continue  # it comes back with the pages that ask for it
            accepted = self.scope.decide(row["url"], row["depth"] or 0, row["link_kind"] or "navigation")
            if not accepted.accept:
                continue
            if self.enabled:
                # Index pages are reached again from the seeds (so paging stops where old links
                # begin); content pages come back when due; resources come back with their pages.
                if row["page_kind"] != "content":
                    continue
                if not self.due(row):
                    self.frontier.add_seen(row["url"])
                    continue
            self.enqueue(Item(row["url"], row["depth"] or 0, "recheck", via=row["found_on"]))

    def due(self, row: dict) -> bool:
        """Is a known content page due for a recheck? Records why not, for staff to see."""
        when, rate = due_at(row, self.job.min_interval, self.job.max_interval)
        if when is None or when <= datetime.now(UTC):
            return True
        self.figures.skipped += 1
        self.state.add_check(
            self.run_id,
            row["url"],
            "not_due",
            f"not due until {iso(when)} (estimated {rate:.3f} changes/day, "
            f"{row.get('changes') or 0} changes in {row.get('checks') or 0} checks)",
            iso(datetime.now(UTC)),
        )
        return False

    def queue_links(self, item: Item, links: list[Link], mime: str) -> None:
        if self.embeds_with_pages:
            links = [link for link in links if link.kind != "embed"]
        paging: bool | None = None  # None: not an ordered listing; True: read on; False: stop
        if self.enabled and mime in HTML_TYPES and self.kinds.kind(item.url) == "index":
            self.index_pages_done.add(item.url)
            content = [link.url for link in links if link.kind != "embed" and self.kinds.kind(link.url) == "content"]
            self.index_links.update(content)
            if is_ordered_listing(content):
                # Newest first: read on to the next page only while this one holds links new since the
                # last run; past that, older pages hold only old links.
                paging = any(self._new_since_last_run(u) for u in content)
                section, page = _section(item.url), page_number(item.url)
                oldest = min(url_order_key(u) for u in content if url_order_key(u))
                self.oldest_on_page[(section, page)] = oldest
                if not paging:
                    self.stopped_at[section] = min(page, self.stopped_at.get(section, page))
        next_page = None
        if paging:
            later = [
                link.url
                for link in links
                if link.kind != "embed"
                and is_pagination_link(item.url, link.url)
                and self.kinds.kind(link.url) == "index"
                and page_number(link.url) > page_number(item.url)
            ]
            next_page = min(later, key=page_number, default=None)
        for link in links:
            depth = item.depth if link.kind == "embed" else item.depth + 1
            if (
                paging is not None
                and link.kind != "embed"
                and is_pagination_link(item.url, link.url)
                and self.kinds.kind(link.url) == "index"
                and not self.frontier.seen(link.url)
            ):
                never_seen = self._new_since_last_run(link.url)
                if (paging and link.url == next_page) or never_seen:
                    self.follow(item, link.url, link.kind, depth)  # the next page, or a new one
                elif not paging:
                    self.frontier.add_seen(link.url)
                    self.state.add_check(
                        self.run_id,
                        link.url,
                        "not_followed",
                        f"listing {item.url} holds no links newer than the last run",
                        iso(datetime.now(UTC)),
                    )
                continue
            self.follow(item, link.url, link.kind, depth)

    def _new_since_last_run(self, url: str) -> bool:
        """Unknown before this run. Not "never checked": another worker may have fetched it already
        in this run (the home page links to the newest articles too), which says nothing about
        whether the listing that links to it holds news."""
        row = self.state.url(url)
        return not row or not row.get("last_checked") or row.get("first_run") == self.run_id

    def follow(self, item: Item, url: str, kind: str, depth: int) -> None:
        if self.frontier.seen(url):
            return
        scope_kind = "embed" if kind == "embed" else "navigation"
        if kind == "redirect" and item.kind == "embed":
            scope_kind = "embed"
        if not self.scope.decide(url, depth, scope_kind).accept:
            return
        if self.enabled and scope_kind == "navigation" and self.kinds.kind(url) == "content":
            row = self.state.url(url)
            if row and row.get("last_checked") and not self.due(row):
                self.frontier.add_seen(url)
                return
        self.enqueue(Item(url, depth, "embed" if scope_kind == "embed" else kind, via=item.url))

    def _maybe_on_unread_page(self, url: str) -> bool:
        """Where paging stopped at page N of a listing, pages 0..N were read in order: a link older than
        the oldest of them may sit on a page after N (pages read out of order, such as a listing's
        new tail pages, say nothing about that)."""
        section = _section(url)
        if section not in self.stopped_at:
            return False
        read = [
            key
            for (sec, page), key in self.oldest_on_page.items()
            if sec == section and page <= self.stopped_at[section]
        ]
        return not read or url_order_key(url) <= min(read)

    # -- several workers on one run: each reads some listings; the lead tells vanished pages from all --
    @property
    def tells_vanished(self) -> bool:
        return self.enabled and self.job.check_deleted_links

    def reading(self) -> dict:
        """What this worker read of the listings, as JSON-able data (``add_reading`` adds another's)."""
        return {
            "index_links": sorted(self.index_links),
            "index_pages_done": sorted(self.index_pages_done),
            "fetched": sorted(self.fetched),
            "stopped_at": self.stopped_at,
            "oldest_on_page": [[section, page, list(key)] for (section, page), key in self.oldest_on_page.items()],
        }

    def add_reading(self, other: dict) -> None:
        self.index_links.update(other["index_links"])
        self.index_pages_done.update(other["index_pages_done"])
        self.fetched.update(other["fetched"])
        for section, page in other["stopped_at"].items():
            self.stopped_at[section] = min(page, self.stopped_at.get(section, page))
        for section, page, key in other["oldest_on_page"]:
            # a listing page is read by one worker in a run; the older key if two did
            oldest = tuple(key)
            known = self.oldest_on_page.get((section, page))
            self.oldest_on_page[(section, page)] = oldest if known is None else min(known, oldest)

    def record_vanished(self) -> None:
        """Content pages that were listed on an index page read this run, and are on none now. Only
        when every listing was read to its end: where paging stopped early, an article may just
        have moved to a page not read, and its due recheck (a 404) is the evidence to wait for."""
        if not self.tells_vanished:
            return
        unsure = 0
        for row in self.state.job_urls(self.job_key):
            if row["page_kind"] != "content" or row["deleted_at"] or row["url"] in self.index_links:
                continue
            if row["found_on"] not in self.index_pages_done or row["url"] in self.fetched:
                continue
            if self._maybe_on_unread_page(row["url"]):
                unsure += 1  # as old as links on pages not read: it may just have moved there
                continue
            now = iso(datetime.now(UTC))
            self.state.add_check(
                self.run_id,
                row["url"],
                "deleted",
                f"no longer linked from any index page (was on {row['found_on']})",
                now,
            )
            self.state.update_url(row["url"], **decision.not_stored(row, "deleted", now, self.run_id))
            self.figures.deleted += 1
        if unsure:
            self.notes.append(
                f"{unsure} content page(s) not on the listing pages read were left to their due "
                "recheck: paging stopped before links as old as theirs"
            )
