"""The pieces every ``strata`` command shares: the command group, the ``--root`` option, progress."""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

import click

root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="STRATA_ROOT",
    default="collections",
    show_default=True,
    help="Collections root (pywb layout). Also STRATA_ROOT.",
)

allow_network_option = click.option(
    "--allow-network",
    "allow_networks",
    multiple=True,
    metavar="CIDR",
    help="A non-public range harvests may reach (SSRF guard; repeatable). Also STRATA_ALLOW_NETWORKS.",
)

# Whose view a research command takes (index.access.rules): public unless told otherwise, so that nothing
# restricted leaves by accident.
level_option = click.option(
    "--as",
    "level",
    type=click.Choice(["public", "reading-room", "staff"]),
    default="public",
    show_default=True,
    help="Whose view: only the captures the access rules (strata access) show that level.",
)


# Where each command is defined. A command's module is imported when the command is run (or listed
# with its help), not before: ``strata verify --quick`` does not pay for the harvester's imports.
# ``tests/unit/strata/test_cli_commands.py`` holds this table equal to what the modules define.
COMMAND_MODULES = {
    "access": "cli.access",
    "backend": "cli.backend",
    "captures": "cli.capturing",
    "collection": "cli.describing",
    "demo": "cli.harvesting",
    "diff": "cli.comparing",
    "export": "cli.exporting",
    "harvest": "cli.harvesting",
    "import": "cli.importing",
    "qa": "cli.qa",
    "index": "cli.searching",
    "recover": "cli.harvesting",
    "report": "cli.harvesting",
    "runs": "cli.harvesting",
    "scheduler": "cli.staffing",
    "search": "cli.searching",
    "serve": "cli.serving",
    "settings": "cli.harvesting",
    "user": "cli.staffing",
    "verify": "cli.verifying",
    "worker": "cli.staffing",
}


class _LazyGroup(click.Group):
    """A group whose commands' modules are imported when first asked for (each module adds its
    commands to the group as before)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMAND_MODULES) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            importlib.import_module(COMMAND_MODULES[cmd_name])
        return self.commands.get(cmd_name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="strata-archive")
def cli() -> None:
    """Strata: incremental web archiving (harvest, replay, search)."""


class ProgressLine:
    """One status line on stderr: rewritten in place on a terminal, every few seconds in a log."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last_line = 0.0

    def __call__(self, p: dict) -> None:
        now = time.monotonic()
        if not self.tty and not p.get("final") and now - self.last_line < 3:
            return
        self.last_line = now
        text = (
            f"fetched {p['urls_fetched']} | queued {p['queued']} | new {p['new']} changed {p['changed']} "
            f"unchanged {p['unchanged']} 304 {p['not_modified']} deleted {p['deleted']} "
            f"redirect {p.get('redirect', 0)} "
            f"errors {p['errors']} "
            f"| {human_size(p['bytes_downloaded'])} down, {human_size(p['bytes_stored'])} stored"
        )
        if self.tty:
            click.echo("\r\033[K" + text, err=True, nl=False)
        else:
            click.echo(text, err=True)

    def finish(self) -> None:
        if self.tty:
            click.echo("", err=True)


def human_size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)
