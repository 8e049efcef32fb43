"""``strata collection COLL show | set``: what a collection says about itself (``index.collection_meta``):
title, description, curator, organisation, rights, subjects, language."""

from __future__ import annotations

import json

import click

from cli._base import cli, root_option


@cli.group("collection")
@click.argument("name")
@click.pass_context
def collection_group(ctx, name) -> None:
    """Describe collection NAME: shown on its public pages and written into its WACZ packages."""
    ctx.obj = {"name": name}


@collection_group.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print the fields as one JSON object.")
@root_option
@click.pass_context
def show_command(ctx, as_json, root) -> None:
    """Print the collection's description, field by field."""
    from index.collection import Collection
    from index.collection_meta import METADATA_FIELDS, read_metadata

    meta = read_metadata(Collection.open(root, ctx.obj["name"]))
    if as_json:
        click.echo(json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in meta.items()}, ensure_ascii=False))
        return
    for field in METADATA_FIELDS:
        value = meta[field.name]
        shown = "; ".join(value) if isinstance(value, tuple) else value
        click.echo(f"{field.name:<13} {shown or '-'}")


@collection_group.command("set")
@click.option("--title", help="The collection's name as readers see it.")
@click.option("--description", help="What it holds and why.")
@click.option("--curator", help="Who selects what it holds.")
@click.option("--organisation", "--organization", "organisation", help="The institution that keeps it.")
@click.option("--rights", help="The rights statement readers and re-users must follow.")
@click.option("--subject", "subjects", multiple=True, help="A subject (repeatable; replaces the subjects held).")
@click.option("--language", help="Its main language, a BCP 47 tag: en, ja, zh-Hant.")
@click.option("--clear", "clear", multiple=True, metavar="FIELD", help="Remove a field (repeatable).")
@root_option
@click.pass_context
def set_command(ctx, title, description, curator, organisation, rights, subjects, language, clear, root) -> None:
    """Set some fields; the others stay as they are. An empty value ('') clears one too."""
    from index.collection import Collection
    from index.collection_meta import update_metadata

    changes = {
        k: v
        for k, v in {
            "title": title,
            "description": description,
            "curator": curator,
            "organisation": organisation,
            "rights": rights,
            "language": language,
        }.items()
        if v is not None
    }
    if subjects:
        changes["subjects"] = list(subjects)
    for name in clear:
        changes[name] = ""
    if not changes:
        raise click.UsageError("give a field to set, e.g. --title 'Municipal websites 2024'")
    update_metadata(Collection.open(root, ctx.obj["name"]), changes)
    click.echo(f"{ctx.obj['name']}: {', '.join(sorted(changes))} saved", err=True)
