"""The settings tables: every setting documented, every default valid, job files round-trip."""

from __future__ import annotations

import tomllib

import pytest
from click.testing import CliRunner

from cli import cli
from harvester.job import JOB_SETTINGS, validate_job
from replay.config import REPLAY_SETTINGS
from replay.staff.app import STAFF_SETTINGS
from strata.errors import ConfigError
from strata.settings import apply_settings

TABLES = {"job": JOB_SETTINGS, "replay": REPLAY_SETTINGS, "staff": STAFF_SETTINGS}


@pytest.mark.parametrize("table", TABLES.values(), ids=TABLES.keys())
def test_every_setting_has_help_and_a_default_its_own_check_accepts(table):
    names = [s.name for s in table]
    assert len(names) == len(set(names))
    for setting in table:
        assert setting.help and len(setting.help) > 15, setting.name
        if setting.name != "seeds":   # a job has no default seed
            setting.check(setting.default)


def test_strata_settings_prints_every_job_setting():
    out = CliRunner().invoke(cli, ["settings"]).output
    for setting in JOB_SETTINGS:
        assert setting.name in out and setting.help in out


def test_job_round_trips_through_toml():
    job = validate_job("j", {"seeds": ["http://127.0.0.1:9/"], "depth": 2, "exclude": ["/x/"], "min_interval": "2d",
                             "store_soft_changes": False, "login_form_fields": ["user=a"]})
    again = validate_job("j", tomllib.loads(job.to_toml()))
    assert again.values == job.values


def test_unknown_and_bad_values_name_the_setting():
    with pytest.raises(ConfigError, match="unknown field 'colour'"):
        validate_job("j", {"seeds": ["http://127.0.0.1/"], "colour": 1})
    with pytest.raises(ConfigError, match="replay setting 'nearby_limit'"):
        apply_settings(REPLAY_SETTINGS, {"nearby_limit": -1}, "replay")
    with pytest.raises(ConfigError, match="unknown staff setting 'x'"):
        apply_settings(STAFF_SETTINGS, {"x": 1}, "staff")
    with pytest.raises(ConfigError, match="field 'frequency'"):
        validate_job("j", {"seeds": ["http://127.0.0.1/"], "frequency": "61 * * * *"})
