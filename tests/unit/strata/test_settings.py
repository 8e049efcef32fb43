"""The settings tables: every setting documented, every default valid, job files round-trip."""

from __future__ import annotations

import dataclasses
import tomllib
import typing

import pytest
from click.testing import CliRunner

from cli import cli
from harvester.job import JOB_SETTINGS, JobSettings, validate_job
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
        if setting.name != "seeds":  # a job has no default seed
            setting.check(setting.default)


def test_strata_settings_prints_every_job_setting():
    out = CliRunner().invoke(cli, ["settings"]).output
    for setting in JOB_SETTINGS:
        assert setting.name in out and setting.help in out


def test_job_round_trips_through_toml():
    job = validate_job(
        "j",
        {
            "seeds": ["http://127.0.0.1:9/"],
            "depth": 2,
            "exclude": ["/x/"],
            "min_interval": "2d",
            "store_soft_changes": False,
            "login_form_fields": ["user=a"],
        },
    )
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


def _checked_type(setting) -> object:
    """The type a row's checker returns (its annotation): what the row's field must be typed as."""
    return typing.get_type_hints(setting.check)["return"]


def _field_line(setting) -> str:
    checked = _checked_type(setting)
    hint = repr(checked) if typing.get_origin(checked) else checked.__name__
    return f'    {setting.name}: {hint} = _default("{setting.name}")'


def test_job_settings_dataclass_has_one_typed_field_per_row_of_the_table():
    fields = dataclasses.fields(JobSettings)
    hints = typing.get_type_hints(JobSettings)
    assert fields[0].name == "name" and hints["name"] is str
    by_name = {f.name: f for f in fields[1:]}
    rows = [s.name for s in JOB_SETTINGS]
    for i, setting in enumerate(JOB_SETTINGS):
        after = JOB_SETTINGS[i - 1].name if i else "name"
        assert setting.name in by_name, (
            f"JobSettings (harvester/job.py) has no field for the setting {setting.name!r}; "
            f"add this line after the {after!r} field:\n{_field_line(setting)}"
        )
    extra = [name for name in by_name if name not in rows]
    assert not extra, f"JobSettings fields with no row in JOB_SETTINGS: {extra}; remove them or add the rows"
    assert list(by_name) == rows, "JobSettings fields must follow JOB_SETTINGS' order:\n" + "\n".join(
        _field_line(s) for s in JOB_SETTINGS
    )
    for setting in JOB_SETTINGS:
        field = by_name[setting.name]
        assert field.default == setting.default and type(field.default) is type(setting.default), (
            f"JobSettings.{setting.name} defaults to {field.default!r}, the table to {setting.default!r}; "
            f"use the line:\n{_field_line(setting)}"
        )
        assert hints[setting.name] == _checked_type(setting), (
            f"JobSettings.{setting.name} is typed {hints[setting.name]}, its checker returns "
            f"{_checked_type(setting)}; use the line:\n{_field_line(setting)}"
        )
        kind = typing.get_origin(hints[setting.name]) or hints[setting.name]
        if setting.name != "seeds":  # `()` stands for "no seed yet": validate_job refuses it
            assert isinstance(setting.check(setting.default), kind), setting.name


def test_job_settings_values_and_attributes_are_the_checked_values():
    job = validate_job("j", {"seeds": ["http://127.0.0.1:9/"], "depth": 2, "delay": 0, "min_interval": "2d"})
    assert job.depth == 2 and job.delay == 0.0 and isinstance(job.delay, float) and job.min_interval == 2 * 86400
    assert job.scope == "same-host" and job.seeds == ("http://127.0.0.1:9/",)
    assert list(job.values) == [s.name for s in JOB_SETTINGS]
    assert job.replace(depth=4) == dataclasses.replace(job, depth=4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.depth = 5
    with pytest.raises(AttributeError):
        job.colour  # noqa: B018  # no row, no attribute
