"""``strata search`` and ``strata index rebuild``."""

from __future__ import annotations

import dataclasses
import json
import sys

import click

from cli._base import ProgressLine, cli, level_option, root_option
from cli.search_filters import search_field_options
from strata.errors import ArchiveError, ConfigError


# -- search and the full-text index (index.fulltext, index.fulltext.query) ----------------------------------
@cli.command()
@click.argument("collection")
@click.argument("query", default="")
@search_field_options
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True, help="Hits (URLs) to print.")
@click.option("--json", "as_json", is_flag=True, help="Print one page of hits as {total, hits, page, per_page, pages}.")
@click.option("--page", type=click.IntRange(1), default=1, show_default=True, help="With --json: the page.")
@click.option(
    "--per-page", type=click.IntRange(1, 1000), default=20, show_default=True, help="With --json: hits a page."
)
@click.option("--all", "every", is_flag=True, help="Print every hit (no cap), as --format says.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True)
@click.option(
    "--archive-url",
    envvar="STRATA_ARCHIVE_URL",
    metavar="URL",
    help="The archive's public address (https://host[/path]): replay addresses in --all and --json "
    "output are absolute under it, as the web export's are (default: $STRATA_ARCHIVE_URL, else paths).",
)
@level_option
@root_option
def search(
    collection, query, limit, as_json, page, per_page, every, fmt, archive_url, level, root, search_fields
) -> None:
    """Full-text search of COLLECTION: words, "phrases", AND, OR, NOT, -word, parentheses."""
    from index.collection import Collection
    from index.fulltext.params import SearchParams
    from index.fulltext.query import search as run_search

    Collection.open(root, collection)
    params = SearchParams(q=query, collections=[collection], **search_fields)
    base = archive_base(archive_url) if archive_url else ""
    if every or as_json:
        _export(root, params, every, fmt, as_json, page, per_page, level, base)
        return
    result = run_search(root, dataclasses.replace(params, per_page=limit), access_level=level)
    if result["unindexed"]:
        raise ConfigError(
            f"collection {collection!r} has no full-text index yet; build it with: "
            f"strata index rebuild {collection} --root {root}"
        )
    about = "" if result["total_exact"] else "about "
    click.echo(
        f"{result['total_urls']} URLs ({about}{result['total_documents']} versions) in {result['elapsed_ms']:.0f} ms"
        + ("" if result["exhaustive"] else "; only the best matches were grouped")
    )
    for hit in result["hits"]:
        click.echo(f"\n{hit['title'] or '(no title)'}\n  {hit['url']}")
        byline = " · ".join(x for x in (hit["published"], hit["author"] or hit["publisher"]) if x)
        if byline:
            click.echo(f"  {byline}")
        click.echo(
            f"  {hit['count']} capture(s) {_ts_text(hit['first'])} .. {_ts_text(hit['last'])}"
            f"  replay: /{collection}/{hit['replay_ts']}/{hit['url']}"
        )
        if hit["snippet"]:
            click.echo(f"  {hit['snippet']}")


def archive_base(url: str) -> str:
    """``--archive-url`` as the prefix of a replay address: ``scheme://host[:port][/path]``, with no
    query, fragment or trailing slash; anything else is a ConfigError naming what to give."""
    from urllib.parse import urlsplit

    hint = "give the archive's public address, e.g. https://archive.example.org or https://example.org/wayback"
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        raise ConfigError(f"--archive-url {url!r} is not an address; {hint}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment or parts.username:
        raise ConfigError(f"--archive-url {url!r} is not an http(s) address of a host alone or with a path; {hint}")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def _export(
    root, params, every: bool, fmt: str, as_json: bool, page: int, per_page: int, level: str, base: str = ""
) -> None:
    """Every hit (``--all``), or one exact page of them (``--json``): ``index.fulltext.export``;
    replay addresses under ``base`` when it is given."""
    from index.fulltext.export import all_hits, csv_lines, hit_page, jsonl_lines

    if as_json and not every:
        click.echo(
            json.dumps(
                hit_page(root, params, page, per_page, private=True, level=level, base=base),
                ensure_ascii=False,
                indent=1,
            )
        )
        return
    hits = all_hits(root, params, private=True, level=level)
    if hits.unindexed:
        raise ConfigError(
            f"collection {hits.unindexed[0]!r} has no full-text index yet; build it with: "
            f"strata index rebuild {hits.unindexed[0]} --root {root}"
        )
    out = sys.stdout
    for line in csv_lines(hits, base=base) if fmt == "csv" else jsonl_lines(hits, base=base):
        out.write(line)
    out.flush()


def _ts_text(ts: str) -> str:
    return f"{ts[:4]}-{ts[4:6]}-{ts[6:8]} {ts[8:10]}:{ts[10:12]}:{ts[12:14]}"


@cli.group("index")
def index_group() -> None:
    """Derived indexes of a collection (all rebuildable from its WARC files)."""


@index_group.command("rebuild")
@click.argument("collection")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
@root_option
@click.option(
    "--only",
    type=click.Choice(["all", "state", "fulltext"]),
    default="all",
    show_default=True,
    help="state: the CDXJ index, harvest state and digest index; fulltext: the Whoosh index.",
)
def index_rebuild(collection, as_json, root, only) -> None:
    """Rebuild COLLECTION's indexes (CDXJ, harvest state, digests, full text) from its WARC files."""
    from index.capture.rebuild import finish_interrupted, rebuild_state
    from index.collection import Collection

    coll = Collection.open(root, collection)
    finish_interrupted(coll)  # an import or rebuild killed half way through: finished first
    line = ProgressLine()
    damaged: list[str] = []  # one line per damaged file: what was read of it, and where it stops
    if only in ("all", "state"):

        def state_progress(p: dict) -> None:
            if not as_json:
                text = f"reading WARCs: file {p['files_done']} of {p['files']}, {p['records']} captures"
                click.echo(("\r\033[K" + text) if line.tty else text, err=True, nl=not line.tty)

        state_figures = rebuild_state(coll, progress=state_progress)
        line.finish()
        damaged = [f"{d['file']}: damaged at byte {d['offset']}: {d['reason']}" for d in state_figures["damage"]]
        if not as_json:
            click.echo(
                f"CDXJ index and harvest state of {collection} rebuilt: {state_figures['records']} captures "
                f"in {state_figures['runs']} runs from {state_figures['files']} WARC files"
            )
            for text in damaged:
                click.echo(f"damaged: {text}", err=True)
        if only == "state":
            if as_json:
                click.echo(json.dumps(state_figures, ensure_ascii=False))
            _fail_if_damaged(damaged)
            return

    from index.fulltext.rebuild import rebuild  # not for --only state: the engine's imports take a while

    def progress(p: dict) -> None:
        if as_json:
            return
        if "warning" in p:
            if p["warning"] not in damaged:
                click.echo(f"warning: {p['warning']}", err=True)
        elif p["phase"] == "scan":
            text = f"reading WARC headers: file {p['files_done']} of {p['files']}, {p['documents']} documents"
            click.echo(("\r\033[K" + text) if line.tty else text, err=True, nl=not line.tty)
        elif p["phase"] == "index":
            text = f"indexing: {p['done']} of {p['total']} documents"
            click.echo(("\r\033[K" + text) if line.tty else text, err=True, nl=not line.tty)

    figures = rebuild(coll, progress=progress)
    line.finish()
    if as_json:
        click.echo(json.dumps(figures, ensure_ascii=False))
    else:
        click.echo(
            f"Full-text index of {collection} rebuilt: {figures['documents']} documents from "
            f"{len(figures['runs'])} runs ({figures['parsed']} payloads parsed, {figures['orphans']} "
            f"revisits without their original) in {figures['seconds']:.1f} s"
        )
    _fail_if_damaged(damaged)


def _fail_if_damaged(damaged: list[str]) -> None:
    if damaged:
        files = "1 WARC file is" if len(damaged) == 1 else f"{len(damaged)} WARC files are"
        raise ArchiveError(
            f"{files} damaged; every whole record before the damage was indexed, nothing after it "
            f"({damaged[0]}{'; ...' if len(damaged) > 1 else ''})"
        )
