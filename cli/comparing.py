"""``strata diff``: two captures of a URL compared, as the web page ``/<coll>/diff/<ts1>/<ts2>/<url>`` does."""

from __future__ import annotations

import json

import click

from cli._base import cli, level_option, root_option


@cli.command("diff")
@click.argument("collection")
@click.argument("url")
@click.argument("ts1")
@click.argument("ts2")
@level_option
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as one JSON object.")
@root_option
def diff_command(collection, url, ts1, ts2, level, as_json, root) -> None:
    """Compare the captures of URL in COLLECTION as of TS1 and TS2 (4 to 14 digits, YYYYMMDDhhmmss;
    each the latest capture at or before it). Same payload digest: "identical", and which capture is
    a revisit of which, without reading either body; text and HTML: the main text with deletions
    as [-...-] and insertions as {+...+}; images and other types: their sizes. Exit 0 once compared
    (identical or not), 2 for an unknown collection, URL or timestamp, 1 when a payload cannot be
    read from the WARCs."""
    from index.collection import Collection
    from index.compare.diff import compare

    result = compare(Collection.open(root, collection), url, ts1, ts2, {"level": level})
    if as_json:
        click.echo(json.dumps(result.as_dict(), ensure_ascii=False))
        return
    old, new = result.old, result.new
    click.echo(f"{result.url} in {collection}")
    for mark, side in (("---", old), ("+++", new)):
        v = side.version
        click.echo(f"{mark} {_when(v.timestamp)} UTC  {side.record}  HTTP {v.status or '-'}  id {side.pid}")
    if result.identical:
        click.echo(f"identical (payload digest {old.version.digest}): {result.relation}")
        return
    if result.kind == "text":
        deleted = f"{result.deleted_words} word{'' if result.deleted_words == 1 else 's'}"
        click.echo(f"main text: {deleted} deleted, {result.inserted_words} inserted")
        click.echo(_marked(result.inline).rstrip("\n"))
        return
    click.echo(f"{result.kind}: payloads differ ({old.size} bytes, then {new.size} bytes). {result.note}".rstrip())


def _when(ts: str) -> str:
    return f"{ts[:4]}-{ts[4:6]}-{ts[6:8]} {ts[8:10]}:{ts[10:12]}:{ts[12:14]}"


def _marked(chunks) -> str:
    """wdiff's notation: [-deleted-] {+inserted+}, a space between a deletion and its replacement
    (none in CJK text: ``Chunk.gap``)."""
    out = []
    for chunk in chunks:
        text = chunk.text
        if chunk.op == "delete":
            text = f"[-{text}-]" + (" " if chunk.gap else "")
        elif chunk.op == "insert":
            text = f"{{+{text}+}}"
        out.append(text + ("\n" if chunk.line else ""))
    return "".join(out)
