"""The job form: one field per row of ``strata.settings.JOB_SETTINGS``, in groups as staff think of a
harvest (``GROUPS``: basics, scope, politeness, incremental, capture, advanced), each with its help
from the table, validated by the same ``validate_job`` that reads the TOML files, then written into
the job's TOML file with tomlkit: the file stays the source of truth and editable by hand, and what
was written by hand stays (comments, order, ``"7d"`` as typed) where the form did not change it.

Durations and sizes are shown as people write them (``7d``, ``100MB``) and accepted so.

Form values are turned into what a TOML file would hold (lines become lists, numbers become
numbers, a checkbox a boolean, an empty box leaves the default), so a value is accepted in the
console exactly when it would be accepted in a file. On top of the file rules, the console checks
URLs staff type in (seeds, proxies) against the SSRF guard, and that a cron expression has a next
time. Secret fields (``SECRET_SETTINGS``) are never sent back to the browser: left empty they keep
their stored value; a "clear" box removes it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from pathlib import Path
from typing import Any

import tomlkit

from harvester.frequency import check_frequency
from harvester.guard import GuardError, NetworkPolicy, check_url_sync
from harvester.job import JOB_SETTINGS, SECRET_SETTINGS, JobSettings, load_job_file, validate_job
from harvester.login import parse_cookies
from strata.errors import ConfigError
from strata.settings import Setting, check_duration, check_size

# The choices of the choice fields, as the job table defines them (a test checks they agree).
CHOICES = {
    "scope": ("same-host", "same-domain", "any"),
    "robots": ("obey", "ignore"),
    "default_page_kind": ("index", "content"),
    "capture": ("http", "browser"),
}
FREQUENCY_SUGGESTIONS = ("manual", "hourly", "daily", "weekly", "monthly", "quarterly", "adaptive", "0 3 * * *")
# The form's groups, in order; every row of the job table is in exactly one (a test checks it).
# "open": shown unfolded even when nothing in it differs from the defaults.
GROUPS: tuple[tuple[str, str, bool, tuple[str, ...]], ...] = (
    ("basics", "Basics", True, ("seeds", "frequency", "depth", "max_urls", "fulltext")),
    (
        "scope",
        "Scope: which URLs",
        True,
        ("scope", "same_host_any_port", "include", "exclude", "embeds_offsite", "robots"),
    ),
    (
        "politeness",
        "Politeness: how fast",
        False,
        ("delay", "max_crawl_delay", "concurrency", "user_agent", "timeout", "connect_timeout"),
    ),
    (
        "incremental",
        "Incremental: what to fetch again, and what counts as a change",
        False,
        (
            "index_patterns",
            "content_patterns",
            "default_page_kind",
            "recheck_all",
            "check_deleted_links",
            "min_interval",
            "max_interval",
            "adaptive_target",
            "adaptive_min",
            "adaptive_max",
            "noise_selectors",
            "noise_patterns",
            "change_threshold",
            "store_soft_changes",
        ),
    ),
    (
        "capture",
        "Capture: how pages are captured, what is stored",
        False,
        (
            "capture",
            "browser_pages",
            "page_deadline",
            "click_selectors",
            "clicks",
            "click_time",
            "scroll_steps",
            "scroll_time",
            "quiet_timeout",
            "max_resource_size",
            "warc_max_size",
            "request_records",
        ),
    ),
    (
        "advanced",
        "Advanced: logins, proxies, processes",
        False,
        ("login_cookies", "login_form_url", "login_form_fields", "proxies", "fetch_process"),
    ),
)
_DURATION_UNITS = (("d", 86400), ("h", 3600), ("m", 60))  # "7d", as people write a week
_SIZE_UNITS = (("GB", 10**9), ("MB", 10**6), ("KB", 10**3), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))
_FIELD = re.compile(r"field '(\w+)'")


@dataclasses.dataclass
class Field:
    setting: Setting
    widget: str  # lines | checkbox | select | text
    value: Any  # what the form shows
    secret_count: int = 0  # secrets: how many values are stored (never the values)

    @property
    def name(self) -> str:
        return self.setting.name


def widget(setting: Setting) -> str:
    if setting.name in CHOICES:
        return "select"
    if setting.check is check_duration:
        return "duration"
    if setting.check is check_size:
        return "size"
    if isinstance(setting.default, tuple):
        return "lines"
    if isinstance(setting.default, bool):
        return "checkbox"
    return "text"


def _shown(setting: Setting, value: Any) -> Any:
    kind = widget(setting)
    if setting.name in SECRET_SETTINGS:
        return ""
    if kind == "lines":
        return "\n".join(value)
    if kind == "checkbox":
        return bool(value)
    if kind == "duration":
        return as_duration(value)
    if kind == "size":
        return as_size(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


def as_duration(seconds: float) -> str:
    """``604800`` -> ``7d``: the largest unit that says it exactly (``90`` stays ``90s``)."""
    for unit, size in _DURATION_UNITS:
        if seconds and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def as_size(n: int) -> str:
    """``100000000`` -> ``100MB``: the largest unit that says it exactly."""
    for unit, size in _SIZE_UNITS:
        if n and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def groups_of(fields: list[Field], error_field: str | None) -> list[dict]:
    """The form's fields in ``GROUPS``; a group is open when it is open by default, when one of its
    fields differs from its default, or holds the field in error."""
    by_name = {f.name: f for f in fields}
    out = []
    for key, title, open_, names in GROUPS:
        members = [by_name[n] for n in names]
        changed = any(f.value != _shown(f.setting, f.setting.default) for f in members if f.name not in SECRET_SETTINGS)
        secrets = any(f.secret_count for f in members)
        out.append(
            {
                "key": key,
                "title": title,
                "fields": members,
                "open": open_ or changed or secrets or error_field in names,
            }
        )
    return out


def fields_for(job: JobSettings | None, submitted: dict | None = None) -> list[Field]:
    """The form's fields: from the stored job, or as submitted (after an error), secrets blank."""
    out = []
    for setting in JOB_SETTINGS:
        value = job.values[setting.name] if job else setting.default
        count = len(value) if setting.name in SECRET_SETTINGS and value else 0
        shown = _shown(setting, value)
        if submitted is not None and setting.name not in SECRET_SETTINGS:
            if widget(setting) == "checkbox":
                shown = setting.name in submitted
            else:
                shown = submitted.get(setting.name, "")
        out.append(Field(setting, widget(setting), shown, count))
    return out


def _number(text: str) -> Any:
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            continue
    return text


def raw_from_form(form, existing: JobSettings | None) -> dict[str, Any]:
    """What a TOML file with these values would hold."""
    raw: dict[str, Any] = {}
    for setting in JOB_SETTINGS:
        name, kind = setting.name, widget(setting)
        if kind == "checkbox":
            raw[name] = name in form
            continue
        text = form.get(name, "")
        if kind == "lines":
            values = [line.strip() for line in text.replace("\r", "").split("\n") if line.strip()]
            if name in SECRET_SETTINGS and not values and existing is not None and f"clear_{name}" not in form:
                values = list(existing.values[name])
            if values or name == "seeds":
                raw[name] = values
            continue
        text = text.strip()
        if not text:
            continue
        # a duration or size stays as typed ("7d", "100MB"): the file keeps what staff wrote
        numeric = isinstance(setting.default, (int, float)) and kind not in ("duration", "size")
        raw[name] = _number(text) if numeric else (_number(text) if _is_number(text) else text)
    return raw


def _is_number(text: str) -> bool:
    return not isinstance(_number(text), str)


def field_of(message: str) -> str | None:
    match = _FIELD.search(message)
    return match.group(1) if match else None


def validate_form(name: str, form, existing: JobSettings | None, policy: NetworkPolicy) -> JobSettings:
    """The job the form describes, or ``ConfigError`` naming the field (as for a job file)."""
    job = validate_job(name, raw_from_form(form, existing))
    check_frequency(job.frequency)
    parse_cookies(job.login_cookies)
    for field in ("seeds", "proxies", "login_form_url"):
        values = job.values[field]
        for url in filter(None, [values] if isinstance(values, str) else values):
            try:
                check_url_sync(url, policy)
            except GuardError as exc:
                shown = url if field != "proxies" else "a proxy"
                raise ConfigError(f"job {name!r}: field {field!r}: {shown} refused: {exc}") from None
    return job


def validate_and_raw(name: str, form, existing: JobSettings | None, policy: NetworkPolicy) -> tuple[JobSettings, dict]:
    """``validate_form``, and what the TOML file is to hold (the values as typed)."""
    return validate_form(name, form, existing, policy), raw_from_form(form, existing)


def file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return ""


def write_job(path: Path, job: JobSettings, raw: dict[str, Any] | None = None) -> JobSettings:
    """Write the job into its TOML file atomically, then read it back through the file loader: what
    staff saved is what runs. With tomlkit: a field whose value did not change keeps its line as it
    was written (its comment, ``"7d"``, its place); a changed one gets the value as typed (``raw``:
    what the form held, ``raw_from_form``); one set back to its default, or left empty, is removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = raw if raw is not None else {s.name: getattr(job, s.name) for s in JOB_SETTINGS}
    try:
        doc = tomlkit.parse(path.read_text(encoding="utf-8"))
        before = load_job_file(path).values
    except (FileNotFoundError, ConfigError, tomlkit.exceptions.TOMLKitError):
        doc = tomlkit.document()
        doc.add(tomlkit.comment(f"Strata job {job.name!r}: see `strata settings` for every field."))
        before = {}
    for setting in JOB_SETTINGS:
        name, value = setting.name, getattr(job, setting.name)
        if name in doc and before.get(name) == value:
            continue  # as written
        if value == setting.default and name != "seeds":
            if name in doc:
                del doc[name]
            continue
        typed = raw.get(name, value)
        doc[name] = list(typed) if isinstance(typed, tuple) else typed
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(tomlkit.dumps(doc), encoding="utf-8")
    if job.login_cookies or job.proxies:
        os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    reread = load_job_file(path)
    if reread.values != job.values:
        raise ConfigError(f"job {job.name!r}: the written file does not read back the same; it was kept at {path}")
    return reread
