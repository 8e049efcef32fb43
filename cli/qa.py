"""``strata qa``: each page of a run loaded from replay in Chromium and compared with its capture
(``replay.qa``): what failed in replay, how close it came, a score; optionally the missing
resources queued for a patch capture of the run."""

from __future__ import annotations

import json

import click

from cli._base import cli, root_option
from strata.errors import ConfigError


@cli.command("qa")
@click.argument("collection")
@click.option("--run", "run_id", metavar="RUN", help="The run to check (default: the latest run that ended).")
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as one JSON object.")
@click.option("--limit", type=click.IntRange(1, None), metavar="N", help="Check at most N pages (capture order).")
@click.option(
    "--click",
    "click_selectors",
    multiple=True,
    metavar="SELECTOR",
    help="CSS selector clicked until it is gone, as the capture did (a 'load more' button); repeatable.",
)
@click.option("--pages-at-once", type=click.IntRange(1, 16), default=2, show_default=True, help="Pages loaded at once.")
@click.option("--page-deadline", type=click.FloatRange(1, 600), default=60, show_default=True, help="Seconds a page.")
@click.option("--patch", is_flag=True, help="Queue every resource missing in replay for a patch capture of the run.")
@root_option
def qa_command(collection, run_id, as_json, limit, click_selectors, pages_at_once, page_deadline, patch, root) -> None:
    """Check COLLECTION's run in replay: every page loaded in headless Chromium with nothing but the
    replay reachable; per page the resources that failed, the screenshot and text closeness to the
    capture (browser-captured pages), a score; the run's summary. The report is kept in
    COLLECTION/qa/RUN/report.json, where the staff console shows it."""
    from harvester.browser.settings import BrowserSettings
    from index.collection import Collection
    from index.storage.state import HarvestState
    from replay.qa import store
    from replay.qa.check import check_run, patch_candidates

    coll = Collection.open(root, collection)
    if run_id is None:
        if not coll.db_path.is_file():
            raise ConfigError(f"collection {collection!r} has no runs yet")
        with HarvestState(coll.db_path) as state:
            ended = [r for r in state.runs() if r["status"] != "running"]
        if not ended:
            raise ConfigError(f"collection {collection!r} has no run that ended; name one with --run")
        run_id = ended[0]["run_id"]
    settings = BrowserSettings(pages=pages_at_once, page_deadline=page_deadline, click_selectors=tuple(click_selectors))

    def progress(p: dict) -> None:
        if not as_json:
            click.echo(f"checked {p['done']} of {p['pages']}: {p['url']}", err=True)

    report = check_run(coll, run_id, settings=settings, limit=limit, progress=progress)
    queued = store.queue_patch(coll, run_id, patch_candidates(report), by="strata qa") if patch else None
    if as_json:
        click.echo(json.dumps({**report, "patch_queued": queued}, ensure_ascii=False))
        return
    _print(report, queued)


def _print(report: dict, queued: int | None) -> None:
    s = report["summary"]
    click.echo(
        f"QA of run {report['run']} in {report['collection']}: {s['pages_checked']} pages checked, "
        f"{s['pages_with_problems']} with problems, mean score {s['mean_score']}, "
        f"{s['seconds_per_page']} s a page"
    )
    if s["missing_by_kind"]:
        kinds = ", ".join(f"{kind} {count}" for kind, count in s["missing_by_kind"].items())
        click.echo(f"  missing in replay, by kind: {kinds}")
    for page in report["pages"]:
        if not page["problems"]:
            continue
        close = [f"{name} {page[name]:.2f}" for name in ("screenshot", "text") if page[name] is not None]
        click.echo(f"{page['score']:.2f}  {page['url']}  ({', '.join(close) or page['captured_by'] + ' capture'})")
        if page["error"]:
            click.echo(f"      page: {page['error']}")
        for failed in page["failed"]:
            click.echo(f"      {failed['reason']:<7} {failed['kind']:<10} {failed['status'] or '-':<4} {failed['url']}")
    if queued is not None:
        click.echo(f"{queued} resources queued for a patch capture of the run (qa/{report['run']}/patch.json)")
