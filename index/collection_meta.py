"""What a collection says about itself: title, description, curator, organisation, rights statement,
subjects and language, one table of fields (``METADATA_FIELDS``), each with its check and help.

Kept in ``<collection>/metadata.yaml``, the file pywb keeps a collection's metadata in (``wb-manager
metadata COLL --set title=...`` writes it and an unmodified ``wayback`` shows its title), so the
collection stays in pywb's own layout. Keys this table does not know (a pywb user's own) are kept
as they are. Set with ``strata collection COLL set`` or the staff console; shown on the public home
and collection pages; written into a WACZ package's ``datapackage.json``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from index.collection import Collection
from strata.errors import ConfigError
from strata.settings import Setting

__all__ = ["METADATA_FIELDS", "FILE", "read_metadata", "update_metadata"]

FILE = "metadata.yaml"
_LANGUAGE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$")


def _text(limit: int):
    def check(value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError("expected text")
        value = value.strip()
        if len(value) > limit:
            raise ValueError(f"longer than {limit} characters")
        if any(ord(c) < 32 and c not in "\n\t" for c in value):
            raise ValueError("holds control characters")
        return value

    return check


def _subjects(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [part for part in value.split(";")]
    if not isinstance(value, (list, tuple)):
        raise ValueError("expected a list of subjects")
    subjects = tuple(dict.fromkeys(_text(100)(v) for v in value if str(v).strip()))
    if len(subjects) > 50:
        raise ValueError("more than 50 subjects")
    return subjects


def _language(value: Any) -> str:
    value = _text(35)(value)
    if value and not _LANGUAGE.match(value):
        raise ValueError(f"{value!r} is not a language tag such as en, ja or zh-Hant (BCP 47)")
    return value


METADATA_FIELDS: tuple[Setting, ...] = (
    Setting("title", "", _text(200), "The collection's name as readers see it."),
    Setting("description", "", _text(5000), "What the collection holds and why it was made."),
    Setting("curator", "", _text(200), "Who selects what the collection holds."),
    Setting("organisation", "", _text(200), "The institution that keeps the collection."),
    Setting("rights", "", _text(2000), "The rights statement readers and re-users must follow."),
    Setting("subjects", (), _subjects, "Subjects or keywords (in a form field: separated by ';')."),
    Setting("language", "", _language, "The main language of the collection's pages, a BCP 47 tag (en, ja, zh-Hant)."),
)
FIELDS_BY_NAME = {s.name: s for s in METADATA_FIELDS}


def read_metadata(collection: Collection) -> dict[str, Any]:
    """Every field of the table (its default when unset), checked; a broken file reads as empty
    fields (it is reported when written to)."""
    raw = _read_raw(collection.path / FILE, strict=False)
    out = {}
    for field in METADATA_FIELDS:
        try:
            out[field.name] = field.check(raw[field.name]) if raw.get(field.name) is not None else field.default
        except ValueError:
            out[field.name] = field.default
    return out


def update_metadata(collection: Collection, changes: dict[str, Any]) -> dict[str, Any]:
    """Set (or, with an empty value, clear) some fields; the file is replaced atomically."""
    path = collection.path / FILE
    raw = _read_raw(path, strict=True)
    for name, value in changes.items():
        field = FIELDS_BY_NAME.get(name)
        if field is None:
            raise ConfigError(f"unknown field {name!r}; the fields: {', '.join(FIELDS_BY_NAME)}")
        try:
            checked = field.check(value)
        except ValueError as exc:
            raise ConfigError(f"field {name!r}: {exc}") from None
        if checked in ("", ()):
            raw.pop(name, None)
        else:
            raw[name] = list(checked) if isinstance(checked, tuple) else checked
    tmp = path.with_name(f".{FILE}.{os.getpid()}.tmp")
    tmp.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    os.replace(tmp, path)
    return read_metadata(collection)


def _read_raw(path: Path, strict: bool) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        if strict:
            raise ConfigError(f"{path} cannot be read: {exc}") from None
        return {}
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        if strict:
            raise ConfigError(f"{path} is not valid YAML ({exc}); fix it or remove it") from None
        return {}
    if data is None:
        return {}
    if not isinstance(data, dict):
        if strict:
            raise ConfigError(f"{path} does not hold a mapping of fields; fix it or remove it")
        return {}
    return data
