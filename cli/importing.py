"""``strata import``: WARC and ARC files written by other tools, into a collection."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from cli._base import cli, human_size, root_option


@cli.command("import")
@click.argument("collection")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print what was imported, skipped and refused as JSON.")
@click.option("--no-fulltext", is_flag=True, help="Do not bring the full-text index up to date.")
@root_option
def import_command(collection, paths, as_json, no_fulltext, root) -> None:
    """Add WARC and ARC files (gzipped or not) to COLLECTION, copied unmodified, after checking every
    record; then derive the CDXJ index and harvest state again. Exit 1 if a file was refused."""
    from index.capture.importing import import_files
    from index.collection import check_name

    check_name(collection)
    tty = sys.stderr.isatty() and not as_json

    def progress(p: dict) -> None:
        if not tty:
            return
        what = {"check": "checking", "copy": "copying", "state": "deriving the index and state: file"}[p["phase"]]
        text = f"{what} {p['file']}{' ' if p['file'] else ''}({p['done'] + 1} of {p['files']})"
        click.echo("\r\033[K" + text, err=True, nl=False)

    report = import_files(root, collection, paths, progress=progress, fulltext=not no_fulltext)
    if tty:
        click.echo("\r\033[K", err=True, nl=False)
    if as_json:
        click.echo(json.dumps(report.as_dict(), ensure_ascii=False))
    else:
        for item in report.imported:
            renamed = f" (renamed: {item.renamed_because})" if item.renamed_because else ""
            click.echo(
                f"imported {item.source} as archive/{item.name}{renamed}: {item.records} records, "
                f"{'/'.join(item.versions)}, {human_size(item.size)}, sha256 {item.sha256}"
            )
        for skipped in report.skipped:
            click.echo(f"skipped {skipped.source}: the same bytes are already in archive/{skipped.same_as}")
        for refused in report.refused:
            click.echo(f"refused {refused}", err=True)
        for damage in report.damage:
            click.echo(f"damaged: {damage['file']}: damaged at byte {damage['offset']}: {damage['reason']}", err=True)
        summary = (
            f"{collection}: {len(report.imported)} imported, {len(report.skipped)} skipped, "
            f"{len(report.refused)} refused"
        )
        if report.state is not None:
            summary += (
                f"; index and state derived again: {report.state['records']} captures in "
                f"{report.state['runs']} runs from {report.state['files']} files"
            )
        elif report.refused and not report.skipped:
            summary += "; nothing was changed"
        click.echo(summary)
    if report.refused or report.damage:
        sys.exit(1)
