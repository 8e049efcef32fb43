"""The job form: one field per row of ``strata.settings.JOB_SETTINGS``, validated by the same
``validate_job`` that reads the TOML files, then written back as TOML (the files stay the source
of truth and editable by hand).

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

from harvester.frequency import check_frequency
from harvester.guard import GuardError, NetworkPolicy, check_url_sync

# The choices of the three choice fields, as the job table defines them (a test checks they agree).
from harvester.job import JOB_SETTINGS, SECRET_SETTINGS, JobSettings, load_job_file, validate_job
from harvester.login import parse_cookies
from strata.errors import ConfigError
from strata.settings import Setting

# The choices of the three choice fields, as the job table defines them (a test checks they agree).
CHOICES = {
    "scope": ("same-host", "same-domain", "any"),
    "robots": ("obey", "ignore"),
    "default_page_kind": ("index", "content"),
}
FREQUENCY_SUGGESTIONS = ("manual", "hourly", "daily", "weekly", "monthly", "quarterly", "adaptive", "0 3 * * *")
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
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


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
        raw[name] = _number(text) if isinstance(setting.default, (int, float)) else text
    return raw


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


def file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return ""


def write_job(path: Path, job: JobSettings) -> JobSettings:
    """Write atomically, then read back through the file loader: what staff saved is what runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(job.to_toml(), encoding="utf-8")
    if job.login_cookies or job.proxies:
        os.chmod(tmp, 0o600)
    os.replace(tmp, path)
    reread = load_job_file(path)
    if reread.values != job.values:
        raise ConfigError(f"job {job.name!r}: the written file does not read back the same; it was kept at {path}")
    return reread
