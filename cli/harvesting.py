"""``strata harvest``, ``runs``, ``recover``, ``report``, ``settings`` and ``demo``."""

from __future__ import annotations

import asyncio
import json
import signal
import sys

import click

from cli._base import ProgressLine, cli, human_size, root_option
from cli.serving import serve_archive
from strata import eventloop
from strata.errors import ConfigError, StrataError
from strata.ports import check_port_free, listen_error

#: The demo's sample site listens here by default, so that a second demo in the same root
#: harvests the same URLs again (an incremental run) rather than a new random port's.
DEMO_SITE_PORT = 8765


# -- harvest ---------------------------------------------------------------------------------------
def _run_harvest(
    coll, job, mode: str | None, as_json: bool, adhoc: bool = False, index_in_background: bool = False
) -> dict:
    from harvester.run import Harvest

    progress = None if as_json else ProgressLine()
    harvest = Harvest(coll, job, mode=mode, progress=progress, adhoc=adhoc, index_in_background=index_in_background)

    async def go() -> dict:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, harvest.request_stop)
        return await harvest.run()

    summary = eventloop.run(go())
    if progress:
        progress.finish()
    return summary


def print_summary(s: dict, coll) -> None:
    click.echo(f"Run {s['run_id']} of collection {s['collection']} ({s['mode']}, {s['status']})")
    click.echo(f"  {s['started']} -> {s['finished']}   snapshot {s['snapshot']}")
    click.echo(
        f"  fetched {s['urls_fetched']} URLs ({s['requests']} requests, {s['errors']} errors, {s['skipped']} skipped)"
    )
    click.echo(
        f"  new {s['new']}  changed {s['changed']}  unchanged {s['unchanged']}  "
        f"not modified {s['not_modified']}  deleted {s['deleted']}  redirect {s.get('redirect', 0)}"
        + (f"  soft {s['soft']}" if s.get("soft") else "")
    )
    click.echo(
        f"  downloaded {human_size(s['bytes_downloaded'])}, stored {human_size(s['bytes_stored'])} of WARC, "
        f"saved {human_size(s['bytes_saved'])} by {s['revisits']} revisits"
    )
    if s["warc_files"]:
        click.echo(f"  WARC files in {coll.archive_dir}:")
    for name in s["warc_files"]:
        click.echo(f"    {name}")
    fulltext = s.get("fulltext") or {}
    if fulltext.get("background"):
        during = fulltext.get("indexed_during_run")
        click.echo(
            "  full text: "
            + (f"{during} documents indexed during the run; " if during is not None else "")
            + f"the rest in the background (process {fulltext.get('pid')}); "
            + f"`strata runs {coll.name}` says when search has this run"
        )
    elif fulltext.get("error"):
        click.echo(f"  full text: {fulltext['error']}")
    elif fulltext:
        click.echo(f"  full text: {fulltext.get('added', 0)} documents added, {fulltext.get('documents', 0)} in all")
    for note in s.get("notes") or []:
        click.echo(f"  note: {note}")
    if s.get("recent_errors"):
        click.echo("  latest errors:")
        for err in s["recent_errors"][-5:]:
            click.echo(f"    {err['url']}: {err['error']}")


@cli.command()
@click.argument("collection")
@click.option("--seed", "seeds", multiple=True, help="Start URL (repeatable).")
@click.option("--job", "job_name", help="Run collections/COLLECTION/jobs/JOB.toml.")
@click.option("--depth", type=int, help="Link hops from a seed (default 3).")
@click.option("--delay", type=float, help="Seconds between requests to one host (default 1.0).")
@click.option("--concurrency", type=int, help="Connections at once (default 4).")
@click.option(
    "--capture",
    type=click.Choice(["http", "browser"]),
    help="How pages are captured, for this run: http, or browser (headless Chromium; the job's capture setting "
    "otherwise).",
)
@click.option(
    "--mode",
    type=click.Choice(["full", "incremental"]),
    help="Default: incremental once a full run has finished (an interrupted or cancelled one does not count).",
)
@click.option(
    "--wait-for-index",
    is_flag=True,
    help="Wait at the run's end until its pages are searchable (default: the rest of the run's full-text "
    "indexing goes on in the background after the command returns).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the run report as one JSON object.")
@root_option
def harvest(
    collection, seeds, job_name, depth, delay, concurrency, capture, mode, wait_for_index, as_json, root
) -> None:
    """Harvest into COLLECTION: from --seed URLs, or from a job file with --job."""
    from harvester.job import load_job_file, validate_job
    from index.collection import Collection

    if bool(seeds) == bool(job_name):
        raise ConfigError("give either --seed URL (one or more) or --job NAME, not both and not neither")
    coll = Collection(root, collection)  # created by the harvest, once the command is known to be good
    given = (("depth", depth), ("delay", delay), ("concurrency", concurrency), ("capture", capture))
    overrides = {k: v for k, v in given if v is not None}
    if job_name:
        job = load_job_file(coll.job_path(job_name))
        if overrides:
            job = job.replace(**overrides)
    else:
        job = validate_job("cli", {"seeds": list(seeds), **overrides})
    summary = _run_harvest(coll, job, mode, as_json, adhoc=not job_name, index_in_background=not wait_for_index)
    if as_json:
        click.echo(json.dumps(summary, ensure_ascii=False))
    else:
        print_summary(summary, coll)
    if summary["status"] == "cancelled":
        sys.exit(130)
    if summary["status"] == "failed":
        click.echo(f"Error: the run failed: {summary['failure']}", err=True)
        sys.exit(1)
    if summary["urls_fetched"] == 0 and summary["errors"]:
        click.echo("Error: no URL could be fetched; see the errors above.", err=True)
        sys.exit(1)
    if summary.get("failed_hosts"):  # the run is finished, but these sites were not harvested
        click.echo(
            f"Error: {', '.join(summary['failed_hosts'])} could not be harvested (every request failed, or "
            "robots.txt could not be read); the other sites were; see the notes above.",
            err=True,
        )
        sys.exit(1)


@cli.command()
@click.argument("collection")
@click.option("--json", "as_json", is_flag=True)
@root_option
def runs(collection, as_json, root) -> None:
    """List the harvest runs of COLLECTION with their figures, job and who started them."""
    from harvester.jobs.origin import run_origins, started_by
    from index.collection import Collection
    from index.fulltext.followproc import searchable_runs
    from index.storage.state import HarvestState

    coll = Collection.open(root, collection)
    with HarvestState(coll.db_path) as state:
        rows = state.runs()
    origins = run_origins(root, collection)
    out = []
    for run in rows:
        out.append(
            {
                "run_id": run["run_id"],
                "collection": collection,
                "job": run["job"],
                "started_by": origins.get(run["run_id"]) or started_by(None, run["mode"]),
                "mode": run["mode"],
                "status": run["status"],
                "started": run["started"],
                "finished": run["finished"],
                "snapshot": run["snapshot"],
                **(run["figures"] or {}),
            }
        )
    if as_json:
        click.echo(json.dumps(out, ensure_ascii=False))
        return
    if not out:
        click.echo(f"No runs in {collection} yet.")
        return
    # runs the full-text index holds: one indexed in the background not until it is done, and one
    # harvested with ``fulltext = false`` never
    searchable = searchable_runs(coll)
    click.echo(
        f"{'run':<20} {'job':<12} {'started by':<16} {'mode':<11} {'status':<11} {'fetched':>7} {'new':>5} "
        f"{'chg':>5} {'same':>5} "
        f"{'304':>5} {'del':>4} {'err':>4} {'stored':>9} {'saved':>9}  searchable"
    )
    for r in out:
        click.echo(
            f"{r['run_id']:<20} {r['job'] or '-':<12} {r['started_by'][:16]:<16} {r['mode'] or '-':<11} "
            f"{r['status'] or '-':<11} {r.get('urls_fetched') or 0:>7} "
            f"{r.get('new') or 0:>5} {r.get('changed') or 0:>5} {r.get('unchanged') or 0:>5} "
            f"{r.get('not_modified') or 0:>5} {r.get('deleted') or 0:>4} {r.get('errors') or 0:>4} "
            f"{human_size(r.get('bytes_stored') or 0):>9} {human_size(r.get('bytes_saved') or 0):>9}  "
            + ("yes" if r["run_id"] in searchable else "no")
        )


@cli.command()
@click.argument("collection")
@root_option
def recover(collection, root) -> None:
    """Repair COLLECTION after a crash: seal torn WARCs, re-index, mark interrupted runs."""
    from harvester.recovery import recover as do_recover
    from index.capture.rebuild import finish_interrupted
    from index.collection import Collection
    from index.storage.statestore import open_harvest_state

    coll = Collection.open(root, collection)
    with coll.harvest_lock():
        finished = finish_interrupted(coll)  # an import or rebuild killed half way through
        with open_harvest_state(coll) as state:
            report = do_recover(coll, state)
    if finished:
        click.echo(f"{collection}: an interrupted import or index rebuild was finished.")
    if not report and not finished:
        click.echo(f"{collection}: nothing to recover.")
    for name, old, new in report.repaired:
        click.echo(f"repaired {name}: {old} -> {new} bytes")
    if report.captures_added:
        click.echo(
            f"added {report.captures_added} capture rows for records written before the commit the crash cut off"
        )
    for name in report.indexed:
        click.echo(f"indexed {name}")
    for run_id in report.interrupted_runs:
        click.echo(f"run {run_id} marked interrupted")
    for name in report.removed:
        click.echo(f"removed leftover temp file {name}")


@cli.command()
@click.argument("collection")
@click.option("--run", "run_id", help="Also list what this run looked at without writing (skipped, not due, soft).")
@click.option("--json", "as_json", is_flag=True)
@root_option
def report(collection, run_id, as_json, root) -> None:
    """Per site: pages, change rate, pages due; per run: what it stored and saved against the last full run."""
    from harvester.collection_report import build_report
    from index.collection import Collection
    from index.storage.state import HarvestState

    coll = Collection.open(root, collection)
    with HarvestState(coll.db_path) as state:
        data = build_report(state, **_intervals_of_last_job(coll, state))
        if run_id:
            if state.run(run_id) is None:
                raise ConfigError(f"no run {run_id!r} in {collection}; see: strata runs {collection}")
            data["checks"] = state.checks(run_id)
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False))
        return
    click.echo(
        f"{'site':<28} {'urls':>6} {'pages':>6} {'index':>6} {'content':>7} {'due':>5} {'deleted':>7} "
        f"{'changes/day':>11}"
    )
    for s in data["sites"]:
        click.echo(
            f"{s['site']:<28} {s['urls']:>6} {s['pages']:>6} {s['index_pages']:>6} {s['content_pages']:>7} "
            f"{s['due']:>5} {s['deleted']:>7} {s['change_rate_per_day']:>11}"
        )
    click.echo("")
    click.echo(
        f"{'run':<20} {'mode':<11} {'secs':>6} {'reqs':>6} {'stored':>9} {'saved':>9} {'full est.':>9} "
        f"{'x est.':>6}  vs last full run"
    )
    for r in data["runs"]:
        vs = r.get("vs_full")
        cmp = f"storage x{vs['storage']}, bandwidth x{vs['bandwidth']}, time x{vs['time']}" if vs else ""
        secs = f"{r['seconds']:.1f}" if r["seconds"] is not None else "-"
        click.echo(
            f"{r['run_id']:<20} {r['mode'] or '-':<11} {secs:>6} {r['requests']:>6} {human_size(r['bytes_stored']):>9} "
            f"{human_size(r['bytes_saved']):>9} {human_size(r['full_estimate']):>9} "
            f"{r['vs_estimate'] if r['vs_estimate'] is not None else '-':>6}  {cmp}"
        )
        if r.get("failed_hosts"):
            click.echo(f"{'':<20} every request failed to: {', '.join(r['failed_hosts'])}")
    if data["change_rates"]:
        click.echo("")
        click.echo(f"{'run':<20} {'site':<28} {'index changed/checked':>22} {'content changed/checked':>24}")
    for c in data["change_rates"]:
        cells = [
            f"{c[k]['changed']}/{c[k]['checked']}" + (f" ({c[k]['share_changed']:.0%})" if c[k]["checked"] else "")
            for k in ("index", "content")
        ]
        click.echo(f"{c['run_id']:<20} {c['site']:<28} {cells[0]:>22} {cells[1]:>24}")
    for c in data.get("checks", []):
        click.echo(f"{c['outcome']:<13} {c['url']}  {c['reason']}")


def _intervals_of_last_job(coll, state) -> dict:
    """Pages due are counted with the intervals of the job that ran last, when its file is there."""
    from harvester.job import load_job_file

    runs = state.runs()
    if runs and runs[-1]["job"]:
        try:
            path = coll.job_path(runs[-1]["job"])
            if path.exists():
                job = load_job_file(path)
                return {"min_interval": job.min_interval, "max_interval": job.max_interval}
        except StrataError:
            pass
    return {}


@cli.command()
def settings() -> None:
    """Every job-file field with its default and meaning."""
    from harvester.job import settings_help

    click.echo(settings_help())


@cli.command()
@click.option("--collection", default="sample", show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.option("--serve", "serve_after", is_flag=True, help="Then serve the archive and print where to browse it.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="Port for --serve.")
@click.option(
    "--site-port",
    default=DEMO_SITE_PORT,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port of the sample site on 127.0.0.1 (0: any free port; then a second demo harvests new URLs).",
)
@root_option
def demo(collection, as_json, serve_after, port, site_port, root) -> None:
    """Harvest Strata's built-in sample site twice (v1, then v2) into a collection; --serve to browse it."""
    from demo.sample_site import serve_sample_site
    from harvester.job import validate_job
    from index.collection import Collection

    if serve_after:
        check_port_free("127.0.0.1", port)  # say so now, not after the harvests
    try:
        site_server = serve_sample_site(version=1, port=site_port)
    except OSError as exc:
        raise listen_error("127.0.0.1", site_port, exc, "--site-port") from None
    coll = Collection.open(root, collection, create=True)
    summaries = []
    with site_server as site:
        job = validate_job("demo", {"seeds": [site.base_url + "/"], "delay": 0.0, "depth": 5})
        for version in (1, 2):
            site.version = version
            if not as_json:
                click.echo(f"Harvesting the sample site, version {version}, at {site.base_url}/ ...", err=True)
            summary = _run_harvest(coll, job, None, as_json, adhoc=True)
            summaries.append(summary)
            if not as_json:
                print_summary(summary, coll)
    if as_json:
        click.echo(json.dumps(summaries, ensure_ascii=False))
    else:
        click.echo(f"\nRun reports: strata runs {collection} --root {root}")
        click.echo(f"Index: {coll.cdxj_path}")
    if serve_after:
        seed = job.seeds[0]
        serve_archive(root, "127.0.0.1", port, [f"/{collection}/{s['snapshot']}/{seed}" for s in summaries])
