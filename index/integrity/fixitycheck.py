"""What can be known of a collection's WARC files without reading them, and the report every
depth of ``strata verify`` gives: the files in ``archive/``, the fixity manifest and recorded sizes,
and the manifest against the record of each file's ingest.

``quick_verify`` is ``strata verify --quick``: every file in ``archive/`` is in the manifest, every
manifest entry has its file, of the size recorded, and every manifest line gives the SHA-256 that
``fixity/events.jsonl`` recorded when the file was ingested (sealed, imported or adopted): a manifest
line changed since is noticed, without hashing a file. It imports nothing that reads a WARC, so it
costs a small part of a full verification (``index.integrity.verify``, which builds on ``ArchiveCheck``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable

from index.collection import Collection
from index.integrity.fixity import ALGORITHM, Fixity, now_iso

MODES = ("quick", "fixity", "full")
OPEN_SUFFIX = ".open"
WARC_SUFFIXES = (".warc.gz", ".warc")
ARCHIVE_SUFFIXES = WARC_SUFFIXES + (".arc.gz", ".arc")


@dataclasses.dataclass
class Problem:
    kind: str
    file: str | None  # "archive/<name>", or a fixity/ or indexes/ file
    offset: int | None = None
    url: str | None = None
    detail: str = ""
    dependents: list[dict] = dataclasses.field(default_factory=list)  # revisits that need this record

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class VerifyReport:
    collection: str
    mode: str
    started: str = ""
    finished: str = ""
    seconds: float = 0.0
    files: int = 0
    bytes: int = 0
    records: int = 0
    revisits: int = 0
    cdxj_lines: int = 0
    problems: list[Problem] = dataclasses.field(default_factory=list)
    adopted: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    deviations: list[Problem] = dataclasses.field(default_factory=list)  # tolerated: see the module's docstring
    strict: bool = False  # deviations count as problems

    @property
    def intact(self) -> bool:
        return not self.problems and not (self.strict and self.deviations)

    def as_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["intact"] = self.intact
        data["problems"] = [p.as_dict() for p in self.problems]
        data["deviations"] = [p.as_dict() for p in self.deviations]
        return data


def _payload(name: str) -> str:
    return f"archive/{name}"


class ArchiveCheck:
    """The listing, manifest and ingest checks; ``index.integrity.verify.Verifier`` reads the files too."""

    def __init__(
        self,
        collection: Collection,
        mode: str = "quick",
        adopt: bool = False,
        progress: Callable[[dict], None] | None = None,
        strict: bool = False,
    ):
        if mode not in MODES:
            raise ValueError(mode)
        self.coll = collection
        self.mode = mode
        self.adopt = adopt and mode == "full"
        self.progress = progress
        self.fixity = Fixity(collection.fixity_dir)
        self.report = VerifyReport(collection.name, mode, strict=strict)
        self._events: list[dict] = []
        self._missing: dict[str, Problem] = {}  # file name -> problem

    def run(self) -> VerifyReport:
        report = self.report
        report.started = now_iso()
        clock = time.monotonic()
        if self.coll.is_locked():
            report.notes.append("a harvest is running: files it seals meanwhile are not checked")
        files = self._list_archive()
        recorded = self._read_manifest()
        sizes = self.fixity.sizes()
        present = {name: size for name, size in files.items() if not name.endswith(OPEN_SUFFIX)}
        for name in sorted(set(recorded) - set(present)):
            problem = Problem("missing-file", _payload(name), detail="listed in the fixity manifest, not in archive/")
            self._missing[name] = problem
            self._problem(problem)
            self._event(name, "missing")
        for name, size in sorted(present.items()):
            if name in sizes and sizes[name] != size:
                what = "shorter" if size < sizes[name] else "longer"
                self._problem(
                    Problem(
                        "size-mismatch",
                        _payload(name),
                        detail=f"{size} bytes, {what} than the {sizes[name]} recorded when it was sealed",
                    )
                )
        report.files = len(present)
        report.bytes = sum(present.values())
        self._check_ingest(recorded)
        if self.mode == "quick":
            for name in sorted(present):
                if name in recorded:
                    ok = sizes.get(name) in (None, present[name])
                    self._event(name, "pass" if ok else "fail", algorithm="size")
        else:
            self._read(present, recorded)
        self._not_in_manifest(present)
        report.problems.sort(key=lambda p: (p.file or "", p.offset or 0, p.kind))
        report.deviations.sort(key=lambda p: (p.file or "", p.offset or 0, p.kind))
        report.finished = now_iso()
        report.seconds = round(time.monotonic() - clock, 3)
        self._events.append(
            {
                "type": "verification",
                "file": None,
                "algorithm": ALGORITHM if self.mode != "quick" else "size",
                "outcome": "intact" if report.intact else "problems",
                "mode": self.mode,
                "files": report.files,
                "records": report.records,
                "problems": len(report.problems),
                "kinds": sorted({p.kind for p in report.problems}),
                "deviations": len(report.deviations),
                "strict": report.strict,
                "started": report.started,
            }
        )
        self.fixity.log(self._events)
        return report

    def _problem(self, problem: Problem) -> Problem:
        self.report.problems.append(problem)
        return problem

    def _event(self, name: str, outcome: str, algorithm: str = ALGORITHM) -> None:
        self._events.append(
            {"type": "fixity-check", "file": _payload(name), "algorithm": algorithm, "outcome": outcome}
        )

    def _tick(self, **figures) -> None:
        if self.progress:
            self.progress({"files": self.report.files, "bytes_total": self.report.bytes, **figures})

    def _read(self, present: dict[str, int], recorded: dict[str, str]) -> None:
        """The files read (``index.integrity.verify``)."""
        raise NotImplementedError

    # -- archive/ and the manifest -------------------------------------------------------------
    def _list_archive(self) -> dict[str, int]:
        out: dict[str, int] = {}
        archive = self.coll.archive_dir
        if not archive.is_dir():
            return out
        busy = None
        for entry in os.scandir(archive):
            if not entry.is_file(follow_symlinks=False):
                self._problem(Problem("unexpected-entry", _payload(entry.name), detail="not a regular file"))
                continue
            if entry.name.endswith(OPEN_SUFFIX):
                busy = self.coll.is_locked() if busy is None else busy
                if not busy:
                    self._problem(
                        Problem(
                            "unsealed-file",
                            _payload(entry.name),
                            detail=f"left by a harvest that died; run: strata recover {self.coll.name}",
                        )
                    )
                continue
            out[entry.name] = entry.stat().st_size
        return out

    def _read_manifest(self) -> dict[str, str]:
        recorded: dict[str, str] = {}
        manifest = "fixity/" + self.fixity.manifest_path.name
        for entry in self.fixity.entries():
            if entry.name is None:
                self._problem(
                    Problem(
                        "manifest-malformed",
                        manifest,
                        detail=f"line {entry.line_no} is not '<sha256>  archive/<file>': {entry.text[:120]!r}",
                    )
                )
            elif entry.name in recorded and recorded[entry.name] != entry.sha256:
                self._problem(
                    Problem(
                        "manifest-conflict",
                        _payload(entry.name),
                        detail=f"line {entry.line_no} gives the file a second, different digest",
                    )
                )
            else:
                recorded[entry.name] = entry.sha256 or ""
        return recorded

    def _not_in_manifest(self, present: dict[str, int]) -> None:
        recorded = self.fixity.digests()  # read again: a harvest may have sealed a file meanwhile
        for name in sorted(set(present) - set(recorded)):
            if name in self.report.adopted:
                continue
            hint = (
                f"written before the manifest existed? adopt it with: strata verify {self.coll.name} --adopt"
                if name.endswith(ARCHIVE_SUFFIXES)
                else "not a WARC file"
            )
            self._problem(Problem("not-in-manifest", _payload(name), detail=hint))
            self._event(name, "not-in-manifest")

    def _check_ingest(self, recorded: dict[str, str]) -> None:
        """Every manifest line against what ``events.jsonl`` recorded when its file was taken in."""
        ingested = ingest_record(self.fixity)
        for name, digest in sorted(recorded.items()):
            at_ingest = ingested.get(name)
            if at_ingest is not None and at_ingest != digest:
                self._problem(
                    Problem(
                        "manifest-changed",
                        _payload(name),
                        detail=(
                            f"the manifest gives SHA-256 {digest}; the file was recorded with {at_ingest} when it "
                            "was taken in (fixity/events.jsonl): the manifest line was changed since"
                        ),
                    )
                )


def ingest_record(fixity: Fixity) -> dict[str, str]:
    """File name -> the SHA-256 its ``ingest`` event recorded (the first, as the manifest keeps the
    first line too). Only the ingest lines are decoded: the log grows with every verification."""
    out: dict[str, str] = {}
    if not fixity.events_path.exists():
        return out
    with open(fixity.events_path, "rb") as fh:
        for line in fh:
            if b'"ingest"' not in line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            name = str(event.get("file") or "").removeprefix("archive/")
            if event.get("type") == "ingest" and event.get("digest") and name and name not in out:
                out[name] = str(event["digest"]).lower()
    return out


def quick_verify(collection: Collection, strict: bool = False) -> VerifyReport:
    """``strata verify --quick`` (see the module's docstring)."""
    return ArchiveCheck(collection, "quick", strict=strict).run()
