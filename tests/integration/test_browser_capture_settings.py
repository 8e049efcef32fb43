"""The job settings of browser capture (``capture = "browser"`` and the page settings), how they reach
the browser layer, and how a run that cannot have a browser is refused: with a message that says
what to install, a non-zero exit and nothing written. No browser is started here."""

from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from cli import cli
from harvester.browser.visitor import browser_settings
from harvester.job import validate_job
from harvester.shared_harvest import shared_harvest
from index.collection import Collection
from index.storage.state import HarvestState
from strata.errors import ConfigError, HarvestError

SEED = "http://127.0.0.1:9/"


def test_the_browser_settings_map_onto_the_browser_layer():
    job = validate_job(
        "j",
        {
            "seeds": [SEED],
            "capture": "browser",
            "browser_pages": 3,
            "page_deadline": "2m",
            "click_selectors": ["#more", "button.load-more"],
            "clicks": 5,
            "scroll_steps": 0,
            "quiet_timeout": 4,
            "max_resource_size": "5MB",
        },
    )
    settings = browser_settings(job)
    assert (settings.pages, settings.page_deadline, settings.click_selectors) == (
        3,
        120.0,
        ("#more", "button.load-more"),
    )
    assert (settings.clicks, settings.scroll_steps, settings.quiet_timeout, settings.max_body) == (5, 0, 4.0, 5 * 10**6)
    assert browser_settings(validate_job("j", {"seeds": [SEED]})).pages == 2


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("capture", "chrome", "must be one of http, browser"),
        ("click_selectors", ["#more", "a[href"], "is not a CSS selector"),
        ("page_deadline", 0, "must be from 1 s to 1 h"),
        ("browser_pages", 0, "must be from 1 to 16"),
    ],
)
def test_bad_browser_settings_are_refused_with_the_field(field, value, message):
    with pytest.raises(ConfigError, match=f"field '{field}': .*{message}"):
        validate_job("j", {"seeds": [SEED], field: value})


# The command as installed (``cli.main`` renders errors), in a process whose browser is missing: one
# line of Python first stands for an uninstalled extra or a machine without Chromium.
NO_CHROMIUM = "import harvester.browser.chromium as c; c.CHROMIUM = sys.argv.pop(1)"
NO_PLAYWRIGHT = "sys.modules['playwright'] = None; sys.argv.pop(1)"


def strata(missing: str, what: str, *args: str) -> subprocess.CompletedProcess:
    code = f"import sys; {missing}; from cli import main; sys.argv[0] = 'strata'; main()"
    return subprocess.run(
        [sys.executable, "-c", code, what, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_a_browser_harvest_without_chromium_says_what_to_install_and_writes_nothing(root):
    result = strata(NO_CHROMIUM, str(root / "no-chromium"), "harvest", "c", "--seed", SEED, "--capture", "browser",
                    "--root", str(root))  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip() == (
        f"Error: {root / 'no-chromium'} is missing: install Debian's chromium (apt-get install chromium)"
    )
    assert not Collection(root, "c").path.exists()


def test_a_browser_harvest_without_playwright_says_what_to_install(root):
    result = strata(NO_PLAYWRIGHT, "-", "harvest", "c", "--seed", SEED, "--capture", "browser", "--root", str(root))
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip() == (
        "Error: browser capture needs Playwright's Python package: pip install 'strata-archive[browser]'"
    )
    assert not Collection(root, "c").path.exists()


def test_a_job_file_asking_for_the_browser_is_refused_the_same_way(root):
    coll = Collection.open(root, "c", create=True)
    coll.job_path("js").write_text(f'seeds = ["{SEED}"]\ncapture = "browser"\n')
    result = strata(NO_CHROMIUM, "/nowhere/chromium", "harvest", "c", "--job", "js", "--root", str(root))
    assert result.returncode == 1 and "install Debian's chromium" in result.stderr
    assert "Traceback" not in result.stderr and coll.warc_files(include_open=True) == []
    # --capture http runs the same job over HTTP, without asking for a browser
    over_http = CliRunner().invoke(cli, ["harvest", "c", "--job", "js", "--capture", "http", "--root", str(root)])
    assert "chromium" not in over_http.output and coll.warc_files()


def test_a_shared_run_refuses_browser_capture(root):
    job = validate_job("j", {"seeds": [SEED], "capture": "browser"})
    with pytest.raises(HarvestError, match="runs on one machine only, not as a shared run"):
        shared_harvest(Collection(root, "c"), job, redis_url="redis://127.0.0.1:9/0", label="w1", lead=True)


def test_a_patch_needs_a_queue_and_the_latest_run(root):
    CliRunner().invoke(cli, ["harvest", "c", "--seed", SEED, "--root", str(root)])  # port 9: a failed run
    coll = Collection.open(root, "c")
    with HarvestState(coll.db_path) as state:
        (run,) = state.runs()

    def patch(*args: str) -> str:
        result = CliRunner().invoke(cli, ["harvest", "c", *args, "--root", str(root)])
        assert isinstance(result.exception, ConfigError), result.output
        return result.exception.message

    assert "nothing is queued for a patch of run" in patch("--patch", run["run_id"])
    assert "no run 'nope' in c" in patch("--patch", "nope")
    assert "is not a run id" in patch("--patch", "../x")
    assert "give one of --seed URL" in patch("--patch", run["run_id"], "--seed", SEED)
    assert "give no --mode" in patch("--patch", run["run_id"], "--mode", "full")
