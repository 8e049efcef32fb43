"""The ``strata`` command imports a command's module only when that command is run: the table
of which module defines which command (``cli._base.COMMAND_MODULES``) must be what the modules define."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys

import cli as cli_package
from cli._base import COMMAND_MODULES, cli


def test_the_table_names_every_command_and_its_module():
    for info in pkgutil.iter_modules(cli_package.__path__):
        importlib.import_module(f"cli.{info.name}")
    defined = {name: cmd.callback.__module__ for name, cmd in cli.commands.items() if cmd.callback}
    groups = {name: mod for name, mod in COMMAND_MODULES.items() if cli.commands[name].callback is None}
    assert {**defined, **groups} == COMMAND_MODULES


def test_a_quick_verification_imports_neither_the_verifier_nor_the_harvester(tmp_path):
    probe = (
        "import sys, json\nfrom cli import main\n"
        "sys.argv = ['strata', 'verify', 'c', '--quick', '--root', sys.argv[1]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\nprint(json.dumps(sorted(sys.modules)))\n"
    )
    (tmp_path / "c" / "archive").mkdir(parents=True)
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "index.integrity.fixitycheck" in loaded
    assert not loaded & {"index.integrity.verify", "index.integrity.recordscan", "harvester.run", "asyncio", "pywb"}
