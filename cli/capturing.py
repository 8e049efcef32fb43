"""``strata captures``: every capture of a URL, from the harvest state."""

from __future__ import annotations

import json

import click

from cli._base import cli, root_option
from strata.errors import ConfigError, StrataError


@cli.command("captures")
@click.argument("collection")
@click.argument("url")
@click.option("--json", "as_json", is_flag=True, help="Print the captures as a JSON list.")
@root_option
def captures_command(collection, url, as_json, root) -> None:
    """Every capture of URL in COLLECTION, oldest first: time, kind, HTTP status, record, payload
    digest, run, WARC file and offset, and for a revisit the date and URL of its original."""
    from index.cdx.versions import original_finder
    from index.collection import Collection
    from index.storage import state

    coll = Collection.open(root, collection)
    conn = state.open_readonly(coll.db_path)
    if conn is None:
        raise ConfigError(
            f"collection {collection!r} has no harvest state yet; build it with: "
            f"strata index rebuild {collection} --root {root}"
        )
    try:
        found = state.find_captured_url(conn, url)
        if found is None:
            raise StrataError(f"no capture of {url} in {collection}")
        entries = state.capture_entries(conn, found, original_finder(coll))
    finally:
        conn.close()
    if as_json:
        click.echo(json.dumps(entries, ensure_ascii=False))
        return
    click.echo(f"{len(entries)} capture{'' if len(entries) == 1 else 's'} of {found} in {collection}")
    click.echo(f"{'time':<19}  {'kind':<12} {'HTTP':>4}  {'record':<8} {'run':<24} {'WARC file @ offset':<40} digest")
    for e in entries:
        ts = e["timestamp"]
        when = f"{ts[:4]}-{ts[4:6]}-{ts[6:8]} {ts[8:10]}:{ts[10:12]}:{ts[12:14]}"
        where = f"{e['warc']} @ {e['offset']}"
        click.echo(
            f"{when:<19}  {e['kind']:<12} {e['status'] if e['status'] is not None else '-':>4}  "
            f"{e['record_type']:<8} {e['run_id']:<24} {where:<40} {e['digest'] or '-'}"
        )
        original = e["original"]
        if original:
            held = "" if original["warc"] else "  (not in this collection)"
            click.echo(f"{'':<21}revisit of {original['date'] or '?'} {original['url'] or '?'}{held}")
