"""``strata verify``: fixity and consistency of a collection (``index.integrity.verify``)."""

from __future__ import annotations

import json
import sys
import time

import click

from cli._base import cli, human_size, root_option
from strata.errors import CollectionError

DEPENDENTS_SHOWN = 5


class _VerifyProgress:
    """One line on stderr, rewritten in place; only on a terminal."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.last = 0.0
        self.shown = False

    def __call__(self, p: dict) -> None:
        now = time.monotonic()
        if now - self.last < 0.2 and p.get("file") is not None:
            return
        self.last = now
        rate = p["bytes_done"] / max(now - self.started, 1e-6)
        text = (
            f"verifying: file {min(p['file_index'] + 1, p['files'])}/{p['files']}, "
            f"{human_size(p['bytes_done'])} of {human_size(p['bytes_total'])} ({human_size(rate)}/s)"
        )
        click.echo("\r\033[K" + text, err=True, nl=False)
        self.shown = True

    def finish(self) -> None:
        if self.shown:
            click.echo("\r\033[K", err=True, nl=False)


@cli.command()
@click.argument("collection")
@click.option("--quick", is_flag=True, help="Presence, sizes and the manifest only: no file is read.")
@click.option(
    "--fixity-only",
    is_flag=True,
    help="Hash every file against the manifest, without parsing records (sha256sum -c's check).",
)
@click.option(
    "--adopt",
    is_flag=True,
    help=(
        "Take files in archive/ that are not in the manifest (written before it existed) into it, with "
        "their SHA-256 as read now, if every record in them checks out. Full check only."
    ),
)
@click.option("--json", "as_json", is_flag=True, help="The report as JSON on stdout.")
@root_option
def verify(collection, quick, fixity_only, adopt, as_json, root) -> None:
    """Check that COLLECTION's WARC files are intact and its index agrees with them.

    By default: every file in archive/ is re-hashed against fixity/manifest-sha256.txt (BagIt; also
    `sha256sum -c fixity/manifest-sha256.txt` from the collection directory), every record is parsed
    and its block and payload digests checked, every revisit's original must be in the collection with
    the same payload digest, and the CDXJ index must point at every capture and at nothing else. Files
    missing from the manifest, and manifest entries without their file, are listed.

    WARCs written before the manifest existed are reported as "not-in-manifest"; --adopt records them
    (only those whose records all check out). Every check is logged in fixity/events.jsonl.

    Exit status: 0 intact, 1 problems found (each with its kind, file, offset and URL, and the revisits
    that depend on a missing or damaged record), 2 could not run.
    """
    from index.collection import Collection
    from index.integrity.verify import verify as run_verify

    if quick and fixity_only:
        raise click.UsageError("--quick and --fixity-only are different depths; give one of them")
    if adopt and (quick or fixity_only):
        raise click.UsageError("--adopt needs the full check (records are checked before a file is taken in)")
    mode = "quick" if quick else "fixity" if fixity_only else "full"
    coll = Collection.open(root, collection)
    progress = _VerifyProgress() if sys.stderr.isatty() and not as_json else None
    try:
        report = run_verify(coll, mode, adopt=adopt, progress=progress)
    except OSError as exc:  # the collection's own directories cannot be read or written
        raise CollectionError(
            f"cannot verify {collection}: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")
        ) from None
    finally:
        if progress:
            progress.finish()
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        _print(report)
    sys.exit(0 if report.intact else 1)


def _print(report) -> None:
    what = {
        "quick": "presence, sizes and manifest",
        "fixity": "checksums",
        "full": "checksums, records, revisits and CDXJ",
    }[report.mode]
    figures = f"{report.files} files, {human_size(report.bytes)}"
    if report.mode == "full":
        figures += f", {report.records} records, {report.revisits} revisits, {report.cdxj_lines} CDXJ lines"
    for note in report.notes:
        click.echo(f"note: {note}")
    for name in report.adopted:
        click.echo(f"adopted archive/{name} into the fixity manifest")
    if report.intact:
        click.echo(f"{report.collection}: intact ({what}; {figures}; {report.seconds:.1f} s)")
        return
    click.echo(f"{report.collection}: {len(report.problems)} problem(s) ({what}; {figures})")
    for p in report.problems:
        where = p.file or ""
        if p.offset is not None:
            where += f" @{p.offset}"
        click.echo(f"  {p.kind:<24} {where}" + (f"  {p.url}" if p.url else ""))
        if p.detail:
            click.echo(f"      {p.detail}")
        if p.dependents:
            click.echo(f"      {len(p.dependents)} revisit(s) depend on it:")
            for dep in p.dependents[:DEPENDENTS_SHOWN]:
                click.echo(f"        {dep['file']} @{dep['offset']}  {dep['url']}")
            if len(p.dependents) > DEPENDENTS_SHOWN:
                click.echo(f"        ... and {len(p.dependents) - DEPENDENTS_SHOWN} more (--json lists all)")
