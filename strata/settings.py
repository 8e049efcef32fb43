"""The one table of harvest-job settings.

Every field a job file (``collections/<c>/jobs/<name>.toml``), the ``strata harvest`` options or the
staff console may set is listed in ``JOB_SETTINGS`` with its type, default and help text. Job files
are validated against it: unknown or bad fields are rejected with the field name and the reason.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from strata.errors import ConfigError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)?\s*$")
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, None: 1}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|kib|mib|gib)?\s*$", re.I)
_SIZE_UNITS = {None: 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30}
FREQUENCIES = ("hourly", "daily", "weekly", "monthly", "quarterly")


def parse_duration(value: Any) -> float:
    """Seconds from a number or a string such as ``"90s"``, ``"12h"``, ``"7d"``, ``"2w"``."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 30, '90s', '12h' or '7d'")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError("must not be negative")
        return float(value)
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a duration; use a number of seconds or '90s', '12h', '7d', '2w'")
    return float(match.group(1)) * _DURATION_UNITS[match.group(2)]


def parse_size(value: Any) -> int:
    """Bytes from a number or a string such as ``"100MB"``, ``"1GiB"``."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 1000000 or '100MB'")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("must not be negative")
        return value
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a size; use a number of bytes or '100MB', '1GiB'")
    unit = match.group(2).lower() if match.group(2) else None
    return int(float(match.group(1)) * _SIZE_UNITS[unit])


def check_int(lo: int, hi: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected a whole number from {lo} to {hi}")
        if not lo <= value <= hi:
            raise ValueError(f"must be from {lo} to {hi}, not {value}")
        return value

    return check


def _float(lo: float, hi: float) -> Callable[[Any], float]:
    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected a number from {lo} to {hi}")
        if not lo <= value <= hi:
            raise ValueError(f"must be from {lo} to {hi}, not {value}")
        return float(value)

    return check


def check_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a non-empty string")
    if len(value) > 1000:
        raise ValueError("longer than 1000 characters")
    return value.strip()


def _choice(*choices: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, not {value!r}")
        return value

    return check


def _str_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError("expected a list of non-empty strings")
    if len(value) > 10000:
        raise ValueError("more than 10000 entries")
    return tuple(v.strip() for v in value)


def _regex_list(value: Any) -> tuple[str, ...]:
    patterns = _str_list(value)
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{pattern!r} is not a valid regular expression ({exc})") from None
    return patterns


def _seeds(value: Any) -> tuple[str, ...]:
    from harvester.urls import normalize_url

    seeds = _str_list(value)
    if not seeds:
        raise ValueError("at least one seed URL is needed")
    out = []
    for seed in seeds:
        url = normalize_url(seed)
        if url is None:
            raise ValueError(f"{seed!r} is not an http(s) URL")
        out.append(url)
    return tuple(out)


def _frequency(value: Any) -> str:
    value = _str(value)
    if value in FREQUENCIES or value == "manual":
        return value
    fields = value.split()
    if len(fields) == 5 and all(re.fullmatch(r"[\d*/,\-]+", f) for f in fields):
        from harvester.scheduler import check_frequency

        try:
            check_frequency(value)   # one with no next time at all (`61 * * * *`) is refused here too
        except ConfigError as exc:
            raise ValueError(exc.message.split(": ", 1)[-1]) from None
        return value
    raise ValueError(f"must be manual, {', '.join(FREQUENCIES)} or a 5-field cron expression, not {value!r}")


def _optional_url(value: Any) -> str:
    if value == "":
        return ""
    from harvester.urls import normalize_url

    url = normalize_url(_str(value))
    if url is None:
        raise ValueError(f"{value!r} is not an http(s) URL")
    return url


def _form_fields(value: Any) -> tuple[str, ...]:
    fields = _str_list(value)
    for field in fields:
        if "=" not in field or not field.split("=", 1)[0].strip():
            raise ValueError("each entry must look like name=value")
    return fields


def _duration(value: Any) -> float:
    return parse_duration(value)


def _size(value: Any) -> int:
    return parse_size(value)


@dataclasses.dataclass(frozen=True)
class Setting:
    """One row of a settings table: its name, default, checker (raises ValueError) and help text.
    The job table below, the replay app's and the staff console's tables are all made of these."""

    name: str
    default: Any
    check: Callable[[Any], Any]
    help: str


def apply_settings(table: tuple[Setting, ...], values: dict | None, what: str) -> dict[str, Any]:
    """Defaults overridden by ``values``, each checked; ``ConfigError`` names the setting and why."""
    by_name = {s.name: s for s in table}
    config = {s.name: s.default for s in table}
    for name, value in (values or {}).items():
        setting = by_name.get(name)
        if setting is None:
            raise ConfigError(f"unknown {what} setting {name!r}; known: {', '.join(sorted(by_name))}")
        try:
            config[name] = setting.check(value)
        except ValueError as exc:
            raise ConfigError(f"{what} setting {name!r}: {exc}") from None
    return config


JOB_SETTINGS: tuple[Setting, ...] = (
    Setting("seeds", (), _seeds, "Start URLs (http or https). Seeds are index pages."),
    Setting("depth", 3, check_int(0, 100), "Link hops followed from a seed; embedded resources are fetched whatever the depth."),
    Setting("scope", "same-host", _choice("same-host", "same-domain", "any"), "Which hosts navigation links may lead to."),
    Setting("same_host_any_port", False, check_bool, "With scope same-host, let navigation lead to the seeds' hosts on other ports too (by default a port is part of the host)."),
    Setting("include", (), _regex_list, "Regexes; when given, navigation URLs must match one of them."),
    Setting("exclude", (), _regex_list, "Regexes; URLs matching any of them are never fetched."),
    Setting("embeds_offsite", True, check_bool, "Fetch embedded resources (images, CSS, scripts, frames) of in-scope pages on any host."),
    Setting("delay", 1.0, _float(0.0, 3600.0), "Politeness: seconds between request starts to one host."),
    Setting("concurrency", 4, check_int(1, 64), "Connections open at once, across hosts (at most this many to one host)."),
    Setting("fetch_process", True, check_bool, "Fetch in a second process, so that HTTP work runs on a core of its own (when the machine has two); false: in the harvest's process. Runs with a login or behind the console's network guard always fetch in-process."),
    Setting("robots", "obey", _choice("obey", "ignore"), "Obey robots.txt (RFC 9309) or ignore it."),
    Setting("user_agent", "Strata/0.1 (+https://example.org/strata; web archive)", _str, "User-Agent header sent with every request."),
    Setting("timeout", 60.0, _float(0.5, 3600.0), "Overall deadline for one fetch, headers and body, in seconds."),
    Setting("connect_timeout", 10.0, _float(0.1, 600.0), "Deadline for connecting to a host, in seconds."),
    Setting("max_resource_size", 100 * 10**6, _size, "Largest body stored; a larger one is cut and recorded as truncated."),
    Setting("max_urls", 100_000, check_int(1, 100_000_000), "Most URLs fetched in one run."),
    Setting("warc_max_size", 10**9, _size, "Roll over to a new WARC file past this size."),
    Setting("fulltext", True, check_bool, "Add each run's new payloads to the collection's full-text (Whoosh) index."),
    Setting("frequency", "manual", _frequency, "How often the scheduler runs the job: manual, hourly, daily, weekly, monthly, quarterly or cron."),
    # Incremental strategies (index pages, content pages, noise-tolerant change detection).
    Setting("index_patterns", (), _regex_list, "Regexes for index pages (re-read every incremental run). Seeds are always index pages."),
    Setting("content_patterns", (), _regex_list, "Regexes for content pages (re-fetched only when due)."),
    Setting("default_page_kind", "index", _choice("index", "content"), "Kind of an HTML page that matches neither pattern list."),
    Setting("recheck_all", False, check_bool, "In incremental runs, recheck every known URL, due or not."),
    Setting("check_deleted_links", False, check_bool, "Record a content page as deleted when it vanished from every index page."),
    Setting("noise_selectors", (), _str_list, "CSS selectors of page parts ignored by change detection (counters, timestamps)."),
    Setting("noise_patterns", (), _regex_list, "Regexes of text ignored by change detection."),
    Setting("change_threshold", 1.0, _float(0.0, 1.0), "Main-text similarity (Jaccard of 3-shingles) at or above which a changed payload is soft-changed; 1.0: only when the main text, noise removed, is the same."),
    Setting("store_soft_changes", True, check_bool, "Store soft-changed pages in full (lossless); false writes nothing for them."),
    Setting("min_interval", 86400.0, _duration, "Shortest recheck interval for a content page."),
    Setting("max_interval", 90 * 86400.0, _duration, "Longest recheck interval for a content page."),
    Setting("login_cookies", (), _str_list, "Cookies sent with every request, as 'name=value' strings (secret)."),
    Setting("login_form_url", "", _optional_url, "A login form to POST before the run; the cookies it sets go to the seeds' hosts."),
    Setting("login_form_fields", (), _form_fields, "The login form's fields, as 'name=value' strings (secret)."),
    Setting("proxies", (), _str_list, "Proxy URLs rotated per request (secret)."),
)

SETTINGS_BY_NAME = {s.name: s for s in JOB_SETTINGS}
SECRET_SETTINGS = frozenset({"login_cookies", "login_form_fields", "proxies"})


@dataclasses.dataclass(frozen=True)
class JobSettings:
    """A validated job: one attribute per row of ``JOB_SETTINGS``, plus the job's name."""

    name: str
    values: dict[str, Any]

    def __getattr__(self, item: str) -> Any:
        try:
            return self.values[item]
        except KeyError:
            raise AttributeError(item) from None

    def replace(self, **changes: Any) -> JobSettings:
        return validate_job(self.name, {**self.values, **changes})

    def to_toml(self) -> str:
        lines = [f"# Strata job {self.name!r}: see `strata settings` for every field."]
        for setting in JOB_SETTINGS:
            value = self.values[setting.name]
            if value == setting.default and setting.name != "seeds":
                continue
            lines.append(f"{setting.name} = {_toml_value(value)}")
        return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def validate_job(name: str, raw: dict[str, Any]) -> JobSettings:
    """Check ``raw`` against ``JOB_SETTINGS``; raise ``ConfigError`` naming the field and the reason."""
    if not isinstance(raw, dict):
        raise ConfigError(f"job {name!r}: expected a table of settings")
    unknown = sorted(set(raw) - set(SETTINGS_BY_NAME))
    if unknown:
        raise ConfigError(
            f"job {name!r}: unknown field {unknown[0]!r}; known fields: {', '.join(SETTINGS_BY_NAME)}"
        )
    values: dict[str, Any] = {}
    for setting in JOB_SETTINGS:
        if setting.name in raw and raw[setting.name] is not None:
            try:
                values[setting.name] = setting.check(raw[setting.name])
            except ValueError as exc:
                raise ConfigError(f"job {name!r}: field {setting.name!r}: {exc}") from None
        else:
            values[setting.name] = setting.default
    if not values["seeds"]:
        raise ConfigError(f"job {name!r}: field 'seeds': at least one seed URL is needed")
    if values["min_interval"] > values["max_interval"]:
        raise ConfigError(f"job {name!r}: field 'min_interval': must not exceed max_interval")
    return JobSettings(name=name, values=values)


def load_job_file(path: Path) -> JobSettings:
    name = path.stem
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"job file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"job file {path} cannot be read: {exc}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"job file {path} is not valid TOML: {exc}") from None
    return validate_job(name, raw)


def settings_help() -> str:
    """The table as text, for ``strata settings`` and the docs."""
    rows = []
    for s in JOB_SETTINGS:
        default = _toml_value(s.default)
        rows.append(f"{s.name:<22} default {default:<24} {s.help}")
    return "\n".join(rows)
