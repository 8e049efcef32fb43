"""The ``strata`` command. Every user-facing error is a ``StrataError`` rendered here, once: a
message on stderr and the error's exit code, never a traceback."""

from __future__ import annotations

import sys

import click

# Each module adds its commands to the group.
from cli import (  # noqa: E402,F401,I001
    access,
    backend,
    capturing,
    comparing,
    exporting,
    harvesting,
    importing,
    qa,
    searching,
    serving,
    staffing,
    verifying,
)
from cli._base import cli, root_option
from strata.errors import StrataError

__all__ = ["cli", "main", "root_option"]


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
