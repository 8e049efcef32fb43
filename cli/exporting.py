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
@click.option(
    "--sign-key",
    "sign_key",
    metavar="FILE",
    type=click.Path(path_type=Path),
    help="Sign the package with this key (made by strata export keygen); ReplayWeb.page shows the signature.",
)
@click.option("--force", is_flag=True, help="Replace --out if it is an existing file (never anything else).")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
@root_option
def export_wacz_command(
    collection, out, date_from, date_to, url_prefix, run_id, level, sign_key, force, as_json, root
) -> None:
    """Write a WACZ 1.1.1 package of COLLECTION: every revisit in it comes with its original, every
    page is listed with its title and text (pages.jsonl)."""
    import sys

    from index.collection import Collection
    from index.export.wacz import Selection, Signer, export_wacz

    signer = Signer.from_file(sign_key) if sign_key else None  # a bad key is refused before any work
    coll = Collection.open(root, collection)
    tty = sys.stderr.isatty()

    def progress(p: dict) -> None:
        if tty:
            text = f"copied {p['records']} records, {human_size(p['bytes_copied'])}"
            click.echo("\r\033[K" + text, err=True, nl=bool(p.get("final")))

    selection = Selection(date_from, date_to, url_prefix, run_id, level)
    figures = export_wacz(coll, out, selection, progress=progress, signer=signer, replace=force)
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
        ("withheld", "records left out that would name what this level may not see (run reports, redirects)"),
        (
            "refers_to_unresolved",
            "revisits whose WARC-Refers-To names no record held; pywb's match by URL and digest is included",
        ),
    ):
        if figures[key]:
            click.echo(f"warning: {figures[key]} {text}", err=True)


@export_group.command("keygen")
@click.argument("key_file", type=click.Path(path_type=Path))
def keygen_command(key_file) -> None:
    """Make a signing key for WACZ packages (ECDSA P-384, PEM, readable by you only) and print its
    public key: publish that, so readers can check that a package was signed by you."""
    from index.export.wacz import generate_key

    public = generate_key(key_file)
    click.echo(f"Key written to {key_file}. Its public key (what signed packages carry):", err=True)
    click.echo(public)


@export_group.command("verify")
@click.argument("package", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--public-key",
    "public_key",
    metavar="KEY",
    help="The signer's public key (base64, as keygen printed it) or a PEM key file: it must have signed the package.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as one JSON object.")
def verify_command(package, public_key, as_json) -> None:
    """Check a WACZ package: every file against datapackage.json, its digest, and its signature.
    Exit 0 when all holds, 1 when anything does not."""
    from index.export.wacz import verify_package

    if public_key and Path(public_key).is_file():
        public_key = Path(public_key).read_text(encoding="utf-8")
    check = verify_package(package, public_key)
    if as_json:
        click.echo(json.dumps(check.as_dict(), ensure_ascii=False))
    else:
        signed = {
            "no": "not signed",
            "anonymous": f"signed {check.created} by a key ({check.public_key[:24]}…): "
            + ("the signature verifies" if check.signature_valid else "the signature does NOT verify"),
            "domain": "signed with a domain certificate (authsign's): not checked here",
        }[check.signed]
        click.echo(f"{package}: {check.resources} files checked; {signed}")
        for problem in check.problems:
            click.echo(f"problem: {problem}", err=True)
    if not check.ok:
        raise SystemExit(1)
