"""The ``strata`` command. Every user-facing error is a ``StrataError`` rendered here, once."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from pathlib import Path

import click

from strata.errors import ConfigError, StrataError

root_option = click.option(
    "--root", type=click.Path(file_okay=False, path_type=Path), envvar="STRATA_ROOT", default="collections",
    show_default=True, help="Collections root (pywb layout). Also STRATA_ROOT.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="strata-archive")
def cli() -> None:
    """Strata: incremental web archiving (harvest, replay, search)."""


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except StrataError as exc:
        click.echo(f"Error: {exc.message}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)


# -- harvest ---------------------------------------------------------------------------------------
def _run_harvest(coll, job, mode: str | None, as_json: bool) -> dict:
    from harvester.run import Harvest

    progress = None if as_json else _ProgressLine()
    harvest = Harvest(coll, job, mode=mode, progress=progress)

    async def go() -> dict:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, harvest.request_stop)
        return await harvest.run()

    summary = asyncio.run(go())
    if progress:
        progress.finish()
    return summary


class _ProgressLine:
    """One status line on stderr: rewritten in place on a terminal, every few seconds in a log."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last_line = 0.0

    def __call__(self, p: dict) -> None:
        now = time.monotonic()
        if not self.tty and not p.get("final") and now - self.last_line < 3:
            return
        self.last_line = now
        text = (f"fetched {p['urls_fetched']} | queued {p['queued']} | new {p['new']} changed {p['changed']} "
                f"unchanged {p['unchanged']} 304 {p['not_modified']} deleted {p['deleted']} errors {p['errors']} "
                f"| {_size(p['bytes_downloaded'])} down, {_size(p['bytes_stored'])} stored")
        if self.tty:
            click.echo("\r\033[K" + text, err=True, nl=False)
        else:
            click.echo(text, err=True)

    def finish(self) -> None:
        if self.tty:
            click.echo("", err=True)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def print_summary(s: dict, coll) -> None:
    click.echo(f"Run {s['run_id']} of collection {s['collection']} ({s['mode']}, {s['status']})")
    click.echo(f"  {s['started']} -> {s['finished']}   snapshot {s['snapshot']}")
    click.echo(f"  fetched {s['urls_fetched']} URLs ({s['requests']} requests, {s['errors']} errors, "
               f"{s['skipped']} skipped)")
    click.echo(f"  new {s['new']}  changed {s['changed']}  unchanged {s['unchanged']}  "
               f"not modified {s['not_modified']}  deleted {s['deleted']}" + (f"  soft {s['soft']}" if s.get("soft") else ""))
    click.echo(f"  downloaded {_size(s['bytes_downloaded'])}, stored {_size(s['bytes_stored'])} of WARC, "
               f"saved {_size(s['bytes_saved'])} by {s['revisits']} revisits")
    if s["warc_files"]:
        click.echo(f"  WARC files in {coll.archive_dir}:")
    for name in s["warc_files"]:
        click.echo(f"    {name}")
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
@click.option("--mode", type=click.Choice(["full", "incremental"]), help="Default: incremental once the collection holds a run.")
@click.option("--json", "as_json", is_flag=True, help="Print the run report as one JSON object.")
@root_option
def harvest(collection, seeds, job_name, depth, delay, concurrency, mode, as_json, root) -> None:
    """Harvest into COLLECTION: from --seed URLs, or from a job file with --job."""
    from index.collection import Collection
    from strata.settings import load_job_file, validate_job

    if bool(seeds) == bool(job_name):
        raise ConfigError("give either --seed URL (one or more) or --job NAME, not both and not neither")
    coll = Collection.open(root, collection, create=True)
    overrides = {k: v for k, v in (("depth", depth), ("delay", delay), ("concurrency", concurrency)) if v is not None}
    if job_name:
        job = load_job_file(coll.job_path(job_name))
        if overrides:
            job = job.replace(**overrides)
    else:
        job = validate_job("cli", {"seeds": list(seeds), **overrides})
    summary = _run_harvest(coll, job, mode, as_json)
    if as_json:
        click.echo(json.dumps(summary, ensure_ascii=False))
    else:
        print_summary(summary, coll)
    if summary["status"] == "cancelled":
        sys.exit(130)
    if summary["urls_fetched"] == 0 and summary["errors"]:
        click.echo("Error: no URL could be fetched; see the errors above.", err=True)
        sys.exit(1)


@cli.command()
@click.argument("collection")
@click.option("--json", "as_json", is_flag=True)
@root_option
def runs(collection, as_json, root) -> None:
    """List the harvest runs of COLLECTION with their figures."""
    from index.collection import Collection
    from index.state import HarvestState

    coll = Collection.open(root, collection)
    with HarvestState(coll.db_path) as state:
        rows = state.runs()
    out = []
    for run in rows:
        out.append({"run_id": run["run_id"], "collection": collection, "job": run["job"], "mode": run["mode"],
                    "status": run["status"], "started": run["started"], "finished": run["finished"],
                    "snapshot": run["snapshot"], **run["figures"]})
    if as_json:
        click.echo(json.dumps(out, ensure_ascii=False))
        return
    if not out:
        click.echo(f"No runs in {collection} yet.")
        return
    click.echo(f"{'run':<20} {'mode':<11} {'status':<11} {'fetched':>7} {'new':>5} {'chg':>5} {'same':>5} "
               f"{'304':>5} {'del':>4} {'err':>4} {'stored':>9} {'saved':>9}")
    for r in out:
        click.echo(f"{r['run_id']:<20} {r['mode']:<11} {r['status']:<11} {r.get('urls_fetched', 0):>7} "
                   f"{r.get('new', 0):>5} {r.get('changed', 0):>5} {r.get('unchanged', 0):>5} "
                   f"{r.get('not_modified', 0):>5} {r.get('deleted', 0):>4} {r.get('errors', 0):>4} "
                   f"{_size(r.get('bytes_stored', 0)):>9} {_size(r.get('bytes_saved', 0)):>9}")


@cli.command()
@click.argument("collection")
@root_option
def recover(collection, root) -> None:
    """Repair COLLECTION after a crash: seal torn WARCs, re-index, mark interrupted runs."""
    from harvester.recovery import recover as do_recover
    from index.collection import Collection
    from index.state import HarvestState

    coll = Collection.open(root, collection)
    with coll.harvest_lock(), HarvestState(coll.db_path) as state:
        report = do_recover(coll, state)
    if not report:
        click.echo(f"{collection}: nothing to recover.")
    for name, old, new in report.repaired:
        click.echo(f"repaired {name}: {old} -> {new} bytes")
    for name in report.indexed:
        click.echo(f"indexed {name}")
    for run_id in report.interrupted_runs:
        click.echo(f"run {run_id} marked interrupted")


@cli.command()
@click.argument("collection")
@click.option("--run", "run_id", help="Also list what this run looked at without writing (skipped, not due, soft).")
@click.option("--json", "as_json", is_flag=True)
@root_option
def report(collection, run_id, as_json, root) -> None:
    """Per site: pages, change rate, pages due; per run: what it stored and saved against the last full run."""
    from index.collection import Collection
    from index.report import build_report
    from index.state import HarvestState

    coll = Collection.open(root, collection)
    with HarvestState(coll.db_path) as state:
        data = build_report(state)
        if run_id:
            if state.run(run_id) is None:
                raise ConfigError(f"no run {run_id!r} in {collection}; see: strata runs {collection}")
            data["checks"] = state.checks(run_id)
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False))
        return
    click.echo(f"{'site':<28} {'urls':>6} {'pages':>6} {'index':>6} {'content':>7} {'due':>5} {'deleted':>7} "
               f"{'changes/day':>11}")
    for s in data["sites"]:
        click.echo(f"{s['site']:<28} {s['urls']:>6} {s['pages']:>6} {s['index_pages']:>6} {s['content_pages']:>7} "
                   f"{s['due']:>5} {s['deleted']:>7} {s['change_rate_per_day']:>11}")
    click.echo("")
    click.echo(f"{'run':<20} {'mode':<11} {'secs':>6} {'reqs':>6} {'stored':>9} {'saved':>9}  vs last full run")
    for r in data["runs"]:
        vs = r.get("vs_full")
        cmp = (f"storage x{vs['storage']}, bandwidth x{vs['bandwidth']}, time x{vs['time']}" if vs else "")
        secs = f"{r['seconds']:.1f}" if r["seconds"] is not None else "-"
        click.echo(f"{r['run_id']:<20} {r['mode']:<11} {secs:>6} {r['requests']:>6} {_size(r['bytes_stored']):>9} "
                   f"{_size(r['bytes_saved']):>9}  {cmp}")
    for c in data.get("checks", []):
        click.echo(f"{c['outcome']:<13} {c['url']}  {c['reason']}")


@cli.command()
def settings() -> None:
    """Every job-file field with its default and meaning."""
    from strata.settings import settings_help

    click.echo(settings_help())


@cli.command()
@click.option("--collection", default="sample", show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.option("--serve", "serve_after", is_flag=True, help="Then serve the archive and print where to browse it.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="Port for --serve.")
@root_option
def demo(collection, as_json, serve_after, port, root) -> None:
    """Harvest Strata's built-in sample site twice (v1, then v2) into a collection; --serve to browse it."""
    from index.collection import Collection
    from strata.sample_site import serve_sample_site
    from strata.settings import validate_job

    coll = Collection.open(root, collection, create=True)
    summaries = []
    with serve_sample_site(version=1) as site:
        job = validate_job("demo", {"seeds": [site.base_url + "/"], "delay": 0.0, "depth": 5})
        for version in (1, 2):
            site.version = version
            if not as_json:
                click.echo(f"Harvesting the sample site, version {version}, at {site.base_url}/ ...", err=True)
            summary = _run_harvest(coll, job, None, as_json)
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


# -- search and the full-text index (index.fulltext, index.query) ----------------------------------
@cli.command()
@click.argument("collection")
@click.argument("query", default="")
@click.option("--from", "date_from", metavar="WHEN", help="Captures from: 2024, 2024-03-05, ISO 8601 date-time or 14 digits.")
@click.option("--to", "date_to", metavar="WHEN", help="Captures up to (inclusive; a date means its whole day).")
@click.option("--site", help="Host or domain (example.org also matches www.example.org).")
@click.option("--type", "mime_type", metavar="T", help="html, pdf, text, image, audio, video ... or a MIME type.")
@click.option("--sort", type=click.Choice(["relevance", "date", "oldest"]), default="relevance", show_default=True)
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True, help="Hits (URLs) to print.")
@click.option("--json", "as_json", is_flag=True, help="Print every hit up to --limit as JSON.")
@root_option
def search(collection, query, date_from, date_to, site, mime_type, sort, limit, as_json, root) -> None:
    """Full-text search of COLLECTION: words, "phrases", AND, OR, NOT, -word, parentheses."""
    from index.collection import Collection
    from index.query import SearchParams
    from index.query import search as run_search

    Collection.open(root, collection)
    result = run_search(root, SearchParams(q=query, date_from=date_from, date_to=date_to, site=site,
                                           type=mime_type, collections=[collection], sort=sort, per_page=limit))
    if result["unindexed"]:
        raise ConfigError(f"collection {collection!r} has no full-text index yet; build it with: "
                          f"strata index rebuild {collection} --root {root}")
    if as_json:
        keys = ("url", "title", "captures", "count", "first", "last", "replay_ts", "snippet", "mime", "host", "collection")
        click.echo(json.dumps([{k: h[k] for k in keys} for h in result["hits"]], ensure_ascii=False, indent=1))
        return
    click.echo(f"{result['total_urls']} URLs ({result['total_documents']} versions) in {result['elapsed_ms']:.0f} ms"
               + ("" if result["exhaustive"] else "; only the best matches were grouped"))
    for hit in result["hits"]:
        click.echo(f"\n{hit['title'] or '(no title)'}\n  {hit['url']}")
        click.echo(f"  {hit['count']} capture(s) {_ts_text(hit['first'])} .. {_ts_text(hit['last'])}"
                   f"  replay: /{collection}/{hit['replay_ts']}/{hit['url']}")
        if hit["snippet"]:
            click.echo(f"  {hit['snippet']}")


def _ts_text(ts: str) -> str:
    return f"{ts[:4]}-{ts[4:6]}-{ts[6:8]} {ts[8:10]}:{ts[10:12]}:{ts[12:14]}"


@cli.group("index")
def index_group() -> None:
    """Derived indexes of a collection (all rebuildable from its WARC files)."""


@index_group.command("rebuild")
@click.argument("collection")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as one JSON object.")
@root_option
@click.option("--only", type=click.Choice(["all", "state", "fulltext"]), default="all", show_default=True,
              help="state: the CDXJ index, harvest state and digest index; fulltext: the Whoosh index.")
def index_rebuild(collection, as_json, root, only) -> None:
    """Rebuild COLLECTION's indexes (CDXJ, harvest state, digests, full text) from its WARC files."""
    from index.collection import Collection
    from index.fulltext import rebuild
    from index.rebuild import rebuild_state

    coll = Collection.open(root, collection)
    line = _ProgressLine()
    if only in ("all", "state"):
        def state_progress(p: dict) -> None:
            if not as_json:
                text = f"reading WARCs: file {p['files_done']} of {p['files']}, {p['records']} captures"
                click.echo(("\r\033[K" + text) if line.tty else text, err=True, nl=not line.tty)

        state_figures = rebuild_state(coll, progress=state_progress)
        line.finish()
        if not as_json:
            click.echo(f"CDXJ index and harvest state of {collection} rebuilt: {state_figures['records']} captures "
                       f"in {state_figures['runs']} runs from {state_figures['files']} WARC files")
        if only == "state":
            if as_json:
                click.echo(json.dumps(state_figures, ensure_ascii=False))
            return

    def progress(p: dict) -> None:
        if as_json:
            return
        if "warning" in p:
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
        click.echo(f"Full-text index of {collection} rebuilt: {figures['documents']} documents from "
                   f"{len(figures['runs'])} runs ({figures['parsed']} payloads parsed, {figures['orphans']} "
                   f"revisits without their original) in {figures['seconds']:.1f} s")


# -- serve (replay) --------------------------------------------------------------------------------
@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free port).")
@root_option
def serve(host, port, root) -> None:
    """Serve the collections under --root: replay, calendars, Memento (production WSGI server)."""
    serve_archive(root, host, port)


def serve_archive(root: Path, host: str = "127.0.0.1", port: int = 8080, paths: tuple | list = ()) -> None:
    """Run the replay application until interrupted; prints the address to open (and ``paths`` on it)."""
    from replay import create_app
    from replay import serve as run_server

    if not Path(root).is_dir():
        raise ConfigError(f"no collections root at {root}; harvest into it first: "
                          f"strata harvest NAME --seed URL --root {root}")
    app = create_app(Path(root))
    shown = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host

    def ready(server) -> None:
        base = f"http://{shown}:{server.address[1]}"
        click.echo(f"Serving {root} at {base}/ (Ctrl-C to stop)", err=True)
        for path in paths:
            click.echo(f"  {base}{path}", err=True)

    run_server(app, host, port, ready=ready)


# -- staff console: accounts, worker, scheduler (harvester.worker, harvester.scheduler) -------------
allow_network_option = click.option(
    "--allow-network", "allow_networks", multiple=True, metavar="CIDR",
    help="A non-public range harvests may reach (SSRF guard; repeatable). Also STRATA_ALLOW_NETWORKS.",
)


@cli.group("user")
def user_group() -> None:
    """Staff accounts for the console (kept hashed in ROOT/.strata/staff.sqlite)."""


@user_group.command("add")
@click.argument("name")
@click.option("--replace", is_flag=True, help="Give an existing user a new password (ends their sessions).")
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input instead of prompting.")
@root_option
def user_add(name, replace, password_stdin, root) -> None:
    """Add staff user NAME; the password is prompted for (twice) and stored as an scrypt hash."""
    from strata.users import Users

    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    Path(root).mkdir(parents=True, exist_ok=True)
    users = Users.for_root(root)
    try:
        users.add(name, password, replace=replace)
    finally:
        users.close()
    click.echo(f"User {name} {'updated' if replace else 'added'}.")


@user_group.command("list")
@root_option
def user_list(root) -> None:
    """List staff users."""
    from strata.users import Users

    users = Users.for_root(root)
    try:
        for name in users.names():
            click.echo(name)
    finally:
        users.close()


@user_group.command("remove")
@click.argument("name")
@root_option
def user_remove(name, root) -> None:
    """Remove staff user NAME and end their sessions."""
    from strata.users import Users

    users = Users.for_root(root)
    try:
        if not users.remove(name):
            raise ConfigError(f"no user {name!r}; see: strata user list --root {root}")
    finally:
        users.close()
    click.echo(f"User {name} removed.")


@cli.command()
@click.option("--parallel", default=2, show_default=True, type=click.IntRange(1, 64),
              help="Runs at once (never two of one collection).")
@click.option("--once", is_flag=True, help="Exit when nothing is left that this worker can take.")
@click.option("--with-scheduler", is_flag=True, help="Also run the scheduler in this process.")
@click.option("--poll", default=1.0, show_default=True, type=click.FloatRange(0.05, 60), help="Seconds between queue checks.")
@allow_network_option
@root_option
def worker(parallel, once, with_scheduler, poll, allow_networks, root) -> None:
    """Run the harvests queued by the staff console and the scheduler (Ctrl-C or SIGTERM stops cleanly)."""
    import threading

    from harvester.guard import NetworkPolicy
    from harvester.worker import run_worker

    policy = NetworkPolicy.from_env(allow_networks)
    Path(root).mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    if with_scheduler:
        threading.Thread(target=_scheduler_loop, args=(root, 30.0, stop), daemon=True, name="scheduler").start()
    click.echo(f"Worker on {root} (allowed non-public ranges: {policy.describe()})", err=True)
    try:
        run_worker(root, policy, max_parallel=parallel, once=once, poll=poll,
                   report=lambda text: click.echo(text, err=True))
    finally:
        stop.set()


def _scheduler_loop(root: Path, interval: float, stop, once: bool = False) -> None:
    from harvester.scheduler import Scheduler
    from index.queue import open_queue

    queue = open_queue(root)

    def report(result) -> None:
        for entry in result.queued:
            click.echo(f"scheduler: queued {entry.collection}/{entry.job} (run {entry.id})", err=True)
        for coll, job, why in result.errors:
            click.echo(f"scheduler: {coll}/{job}: {why}", err=True)

    try:
        scheduler = Scheduler(root, queue)
        if once:
            report(scheduler.tick())
        else:
            scheduler.run_forever(interval, stop, report)
    finally:
        queue.close()


@cli.command()
@click.option("--interval", default=30.0, show_default=True, type=click.FloatRange(1, 3600),
              help="Seconds between looks at the job files.")
@click.option("--once", is_flag=True, help="Queue what is due now, then exit.")
@root_option
def scheduler(interval, once, root) -> None:
    """Queue each job when its frequency comes due (runs go to `strata worker`)."""
    import signal
    import threading

    Path(root).mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    if not once:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        click.echo(f"Scheduler on {root}, every {interval:g} s", err=True)
    _scheduler_loop(root, interval, stop, once=once)
