"""Staff accounts, the worker and the scheduler: ``strata user``, ``worker``, ``scheduler``."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from cli._base import allow_network_option, cli, root_option
from strata.errors import ConfigError

# -- staff console: accounts, worker, scheduler (harvester.jobs.worker, harvester.jobs.scheduler) -------------


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
    from replay.staff.users import Users

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
    from replay.staff.users import Users

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
    from replay.staff.users import Users

    users = Users.for_root(root)
    try:
        if not users.remove(name):
            raise ConfigError(f"no user {name!r}; see: strata user list --root {root}")
    finally:
        users.close()
    click.echo(f"User {name} removed.")


@cli.command()
@click.option(
    "--parallel",
    default=2,
    show_default=True,
    type=click.IntRange(1, 64),
    help="Runs at once (never two of one collection).",
)
@click.option("--once", is_flag=True, help="Exit when nothing is left that this worker can take.")
@click.option("--with-scheduler", is_flag=True, help="Also run the scheduler in this process.")
@click.option(
    "--poll", default=1.0, show_default=True, type=click.FloatRange(0.05, 60), help="Seconds between queue checks."
)
@click.option(
    "--label",
    help="This worker's name in its WARC files and in shared runs, unique on this machine (default: host name).",
)
@click.option(
    "--lease",
    "lease_seconds",
    type=click.FloatRange(1, 86400),
    help="Seconds a URL of a shared run (Redis) stays leased to this worker before others may take it "
    "(default: 3 x the job's timeout, at least 60).",
)
@allow_network_option
@root_option
def worker(parallel, once, with_scheduler, poll, label, lease_seconds, allow_networks, root) -> None:
    """Run the harvests queued by the staff console and the scheduler (Ctrl-C or SIGTERM stops cleanly)."""
    import threading

    from harvester.guard import NetworkPolicy
    from harvester.jobs.worker import run_worker

    policy = NetworkPolicy.from_env(allow_networks)
    Path(root).mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    if with_scheduler:
        threading.Thread(target=_scheduler_loop, args=(root, 30.0, stop), daemon=True, name="scheduler").start()
    click.echo(f"Worker on {root} (allowed non-public ranges: {policy.describe()})", err=True)
    try:
        run_worker(
            root,
            policy,
            max_parallel=parallel,
            once=once,
            poll=poll,
            report=lambda text: click.echo(text, err=True),
            label=label,
            lease_seconds=lease_seconds,
        )
    finally:
        stop.set()


def _scheduler_loop(root: Path, interval: float, stop, once: bool = False) -> None:
    from harvester.jobs.queue import open_queue
    from harvester.jobs.scheduler import Scheduler

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
@click.option(
    "--interval",
    default=30.0,
    show_default=True,
    type=click.FloatRange(1, 3600),
    help="Seconds between looks at the job files.",
)
@click.option("--once", is_flag=True, help="Queue what is due now, then exit.")
@root_option
def scheduler(interval, once, root) -> None:
    """Queue each job when its frequency comes due (runs go to `strata worker`)."""
    import threading

    Path(root).mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    if not once:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        click.echo(f"Scheduler on {root}, every {interval:g} s", err=True)
    _scheduler_loop(root, interval, stop, once=once)
