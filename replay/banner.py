"""What the replay banner shows around the capture on screen: its previous and next capture (and
whether each differs, by payload digest), the collection's snapshots at the same URL, the
calendar and diff links, and the "cite this" line (lasting address and permanent id).

pywb picks the capture while it renders the page, after Flask's view has run, so the view passes
a ``BannerNav`` in the template parameters and ``custom_banner.html`` calls ``nav.around(cdx)``
with the capture chosen. Only the top-level page's banner calls it (frames get no banner), and the
captures are read once, from the CDXJ, through ``index.cdx.versions.filter_captures``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from index.cdx.pid import capture_pid
from index.cdx.versions import Version, neighbours, read_versions
from index.collection import Collection
from strata.times import pad_as_of


@dataclasses.dataclass
class Snapshot:
    timestamp: str  # the run's snapshot (its end)
    run_id: str
    href: str
    shows: str | None  # the capture of the URL a reader sees in it; None: not archived yet
    current: bool


@dataclasses.dataclass
class Around:
    current: Version | None
    previous: Version | None
    next: Version | None
    previous_differs: bool
    next_differs: bool
    count: int
    snapshots: list[Snapshot]
    pid: str
    cite_url: str
    pid_url: str


class BannerNav:
    def __init__(
        self,
        collection: Collection,
        requested: str,
        runs: list[dict],
        script_root: str,
        public_base: str,
        default_collection: str | None,
        viewer: Mapping | None = None,
    ):
        self.collection = collection
        self.requested = requested  # the timestamp asked for, as typed ("" for the latest)
        self.runs = runs
        self.script_root = script_root
        self.public_base = public_base  # scheme://host[:port] + script root, for the citation
        self.default_collection = default_collection
        self.viewer = viewer  # who asks, for index.cdx.versions.filter_captures

    def href(self, timestamp: str, url: str, mod: str = "") -> str:
        return f"{self.script_root}/{self.collection.name}/{timestamp}{mod}/{url}"

    def diff_href(self, old: Version, new: Version) -> str:
        return f"{self.script_root}/{self.collection.name}/diff/{old.timestamp}/{new.timestamp}/{new.url}"

    def around(self, cdx: Mapping) -> Around:
        url, ts = str(cdx.get("url", "")), str(cdx.get("timestamp", ""))
        versions = read_versions(self.collection, url, viewer=self.viewer)
        current = _find(versions, cdx)
        if current is not None:
            previous, following = neighbours(versions, current)
        else:
            previous = following = None
        name = self.collection.name
        if name == self.default_collection:
            cite = f"{self.public_base}/web/{ts}/{url}"
        else:
            cite = f"{self.public_base}/{name}/{ts}/{url}"
        pid = capture_pid(name, url, ts) if ts else ""
        return Around(
            current=current,
            previous=previous,
            next=following,
            previous_differs=bool(previous and current and not previous.same_payload(current)),
            next_differs=bool(following and current and not following.same_payload(current)),
            count=len(versions),
            snapshots=self._snapshots(versions, url),
            pid=pid,
            cite_url=cite,
            pid_url=f"{self.public_base}/id/{pid}",
        )

    def _snapshots(self, versions: list[Version], url: str) -> list[Snapshot]:
        as_of = pad_as_of(self.requested) if self.requested else None
        snapshots = sorted((r for r in self.runs if r.get("snapshot")), key=lambda r: r["snapshot"])
        current = None
        for run in snapshots:
            if as_of is not None and run["snapshot"] <= as_of:
                current = run["snapshot"]
        if as_of is None and snapshots:
            current = snapshots[-1]["snapshot"]
        out = []
        for run in snapshots:
            seen = [v for v in versions if v.timestamp <= run["snapshot"]]
            out.append(
                Snapshot(
                    timestamp=run["snapshot"],
                    run_id=run["run_id"],
                    href=self.href(run["snapshot"], url),
                    shows=seen[-1].timestamp if seen else None,
                    current=run["snapshot"] == current,
                )
            )
        return out


def _find(versions: list[Version], cdx: Mapping) -> Version | None:
    ts, filename = str(cdx.get("timestamp", "")), str(cdx.get("filename", ""))
    same_second = [v for v in versions if v.timestamp == ts]
    for v in same_second:
        if v.filename == filename and str(v.offset) == str(cdx.get("offset", "")):
            return v
    return same_second[-1] if same_second else None
