"""``strata export wacz``: a WACZ package of part of a collection (``index.export.wacz``)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cli._base import cli, human_size, level_option, root_option


@cli.group("export")
def export_group() -> None:
    """Take holdings out of Strata in formats other tools read."""


@export_group.command("wacz")
@click.argument("collection")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), help="The package to write (.wacz).")
@click.option("--from", "date_from", metavar="WHEN", help="Captures from: 2024, 2024-03-05, ISO 8601 or 14 digits.")
@click.option("--to", "date_to", metavar="WHEN", help="Captures up to (inclusive; a date means its whole day).")
@click.option("--url-prefix", metavar="P", help="Only URLs starting with P (e.g. https://example.org/news/).")
@click.option(
    "--run", "run_id", metavar="RUN", help="Only the captures of this harvest run (strata report lists them)."
)
@level_option
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
@root_option
def export_wacz_command(collection, out, date_from, date_to, url_prefix, run_id, level, as_json, root) -> None:
    """Write a WACZ 1.1.1 package of COLLECTION: every revisit in it comes with its original."""
    import sys

    from index.collection import Collection
    from index.export.wacz import Selection, export_wacz

    coll = Collection.open(root, collection)
    tty = sys.stderr.isatty()

    def progress(p: dict) -> None:
        if tty:
            text = f"copied {p['records']} records, {human_size(p['bytes_copied'])}"
            click.echo("\r\033[K" + text, err=True, nl=bool(p.get("final")))

    figures = export_wacz(coll, out, Selection(date_from, date_to, url_prefix, run_id, level), progress=progress)
    if as_json:
        click.echo(json.dumps(figures, ensure_ascii=False))
        return
    click.echo(
        f"{out}: {human_size(figures['bytes'])}, {figures['records']} records ({figures['responses']} responses, "
        f"{figures['revisits']} revisits, {figures['originals_added']} originals of revisits added), "
        f"{figures['pages']} pages, in {figures['seconds']:.1f} s"
    )
    for key, text in (
        ("revisits_without_original", "revisits left out: their original is not in the collection"),
        ("damaged_skipped", "damaged records left out (strata verify tells more)"),
        ("arc_skipped", "ARC records left out (a WARC cannot hold them)"),
        (
            "refers_to_unresolved",
            "revisits whose WARC-Refers-To names no record held; pywb's match by URL and digest is included",
        ),
    ):
        if figures[key]:
            click.echo(f"warning: {figures[key]} {text}", err=True)
