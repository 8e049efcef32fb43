"""The one table of harvest-job settings.

Every field a job file (``collections/<c>/jobs/<name>.toml``), the ``strata harvest`` options or the
staff console may set is listed in ``JOB_SETTINGS`` with its type, default and help text. Job files
are validated against it: unknown or bad fields are rejected with the field name and the reason.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from harvester.change import NoiseRules
from harvester.frequency import ADAPTIVE, FREQUENCIES, check_frequency
from strata.errors import ConfigError
from strata.settings import (
    Setting,
    check_bool,
    check_choice,
    check_duration,
    check_float,
    check_header_value,
    check_int,
    check_regex_list,
    check_size,
    check_str,
    check_str_list,
)
from strata.urls import normalize_url


def _check_selectors(value: Any) -> tuple[str, ...]:
    """CSS selectors, or XPath expressions (starting ``/`` or ``(``), each compiled now as change
    detection will compile it (``harvester.change.NoiseRules``): a bad one is refused with the job,
    not met halfway through a run."""
    selectors = check_str_list(value)
    for selector in selectors:
        try:
            NoiseRules((selector,))
        except Exception as exc:  # cssselect's SelectorError, lxml's XPathSyntaxError: each its own
            raise ValueError(f"{selector!r} is not a CSS selector or XPath expression ({exc})") from None
    return selectors


def _seeds(value: Any) -> tuple[str, ...]:
    seeds = check_str_list(value)
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
    value = check_str(value)
    if value in FREQUENCIES or value in ("manual", ADAPTIVE):
        return value
    fields = value.split()
    if len(fields) == 5 and all(re.fullmatch(r"[\d*/,\-]+", f) for f in fields):
        try:
            check_frequency(value)  # one with no next time at all (`61 * * * *`) is refused here too
        except ConfigError as exc:
            raise ValueError(exc.message.split(": ", 1)[-1]) from None
        return value
    raise ValueError(
        f"must be manual, {', '.join(FREQUENCIES)}, {ADAPTIVE} or a 5-field cron expression, not {value!r}"
    )


def _optional_url(value: Any) -> str:
    if value == "":
        return ""
    url = normalize_url(check_str(value))
    if url is None:
        raise ValueError(f"{value!r} is not an http(s) URL")
    return url


def _proxies(value: Any) -> tuple[str, ...]:
    from harvester.proxies import check_proxy_url  # httpx, imported only for a job with proxies

    return tuple(check_proxy_url(proxy) for proxy in check_str_list(value))


def _css_selectors(value: Any) -> tuple[str, ...]:
    """CSS selectors, each parsed now (cssselect, as lxml uses it): a bad one is refused with the job,
    not met in every page's clicks."""
    from cssselect import SelectorError, parse

    selectors = check_str_list(value)
    for selector in selectors:
        try:
            parse(selector)
        except SelectorError as exc:
            raise ValueError(f"{selector!r} is not a CSS selector ({exc})") from None
    return selectors


def _positive_duration(value: Any) -> float:
    seconds = check_duration(value)
    if not 1 <= seconds <= 3600:
        raise ValueError(f"must be from 1 s to 1 h, not {value!r}")
    return seconds


def _form_fields(value: Any) -> tuple[str, ...]:
    fields = check_str_list(value)
    for field in fields:
        if "=" not in field or not field.split("=", 1)[0].strip():
            raise ValueError("each entry must look like name=value")
    return fields


JOB_SETTINGS: tuple[Setting, ...] = (
    Setting("seeds", (), _seeds, "Start URLs (http or https). Seeds are index pages."),
    Setting(
        "depth",
        3,
        check_int(0, 100),
        "Link hops followed from a seed; embedded resources are fetched whatever the depth.",
    ),
    Setting(
        "scope",
        "same-host",
        check_choice("same-host", "same-domain", "any"),
        "Which hosts navigation links may lead to.",
    ),
    Setting(
        "same_host_any_port",
        False,
        check_bool,
        "With scope same-host, let navigation lead to the seeds' hosts on other ports too (by default a port is "
        "part of the host).",
    ),
    Setting("include", (), check_regex_list, "Regexes; when given, navigation URLs must match one of them."),
    Setting("exclude", (), check_regex_list, "Regexes; URLs matching any of them are never fetched."),
    Setting(
        "embeds_offsite",
        True,
        check_bool,
        "Fetch embedded resources (images, CSS, scripts, frames) of in-scope pages on any host.",
    ),
    Setting("delay", 1.0, check_float(0.0, 3600.0), "Politeness: seconds between request starts to one host."),
    Setting(
        "max_crawl_delay",
        30.0,
        check_float(0.0, 86400.0),
        "Longest robots.txt Crawl-delay honoured, in seconds: requests to a host are spaced by the larger of its "
        "Crawl-delay (at most this) and delay.",
    ),
    Setting(
        "concurrency", 4, check_int(1, 64), "Connections open at once, across hosts (at most this many to one host)."
    ),
    Setting(
        "fetch_process",
        True,
        check_bool,
        "Fetch in a second process, so that HTTP work runs on a core of its own (when the machine has two); false: "
        "in the harvest's process. Runs with a login or behind the console's network guard always fetch in-process.",
    ),
    Setting(
        "capture",
        "http",
        check_choice("http", "browser"),
        "How pages are captured: http (each URL fetched on its own, a page's links read from its payload) or "
        "browser (each HTML page loaded in headless Chromium, every request it makes fetched and recorded as "
        "HTTP capture records it; the rendered DOM's links followed; a screenshot and the rendered text kept).",
    ),
    Setting(
        "browser_pages",
        2,
        check_int(1, 16),
        "With capture = browser: pages loaded in the browser at once.",
    ),
    Setting(
        "page_deadline",
        60.0,
        _positive_duration,
        "With capture = browser: the longest one page may take, loading and behaviours (its text, links and "
        "screenshot are read after it, within 10 s more).",
    ),
    Setting(
        "click_selectors",
        (),
        _css_selectors,
        "With capture = browser: CSS selectors of elements clicked until none visible is left (a 'load more' "
        "button), at most clicks times each.",
    ),
    Setting(
        "clicks", 20, check_int(0, 1000), "With capture = browser: clicks per selector of click_selectors, at most."
    ),
    Setting(
        "click_time", 15.0, check_duration, "With capture = browser: the longest a page's clicking may take, in all."
    ),
    Setting(
        "scroll_steps",
        30,
        check_int(0, 1000),
        "With capture = browser: viewport-high scroll steps to the end of a page, at most (infinite scroll, lazy "
        "images); 0: no scrolling.",
    ),
    Setting("scroll_time", 15.0, check_duration, "With capture = browser: the longest a page's scrolling may take."),
    Setting(
        "quiet_timeout",
        10.0,
        check_duration,
        "With capture = browser: the longest wait, after loading and after each behaviour, for no request to be in "
        "flight (a page that polls is never quiet).",
    ),
    Setting("robots", "obey", check_choice("obey", "ignore"), "Obey robots.txt (RFC 9309) or ignore it."),
    Setting(
        "user_agent",
        "Strata/0.1 (+https://example.org/strata; web archive)",
        check_header_value,
        "User-Agent header sent with every request.",
    ),
    Setting("timeout", 60.0, check_float(0.5, 3600.0), "Overall deadline for one fetch, headers and body, in seconds."),
    Setting("connect_timeout", 10.0, check_float(0.1, 600.0), "Deadline for connecting to a host, in seconds."),
    Setting(
        "max_resource_size",
        100 * 10**6,
        check_size,
        "Largest body stored; a larger one is cut and recorded as truncated.",
    ),
    Setting("max_urls", 100_000, check_int(1, 100_000_000), "Most URLs fetched in one run."),
    Setting("warc_max_size", 10**9, check_size, "Roll over to a new WARC file past this size."),
    Setting("fulltext", True, check_bool, "Add each run's new payloads to the collection's full-text (Whoosh) index."),
    Setting(
        "frequency",
        "manual",
        _frequency,
        "How often the scheduler runs the job: manual, hourly, daily, weekly, monthly, quarterly, cron, or adaptive "
        "(as often as the job's observed change rate warrants, see adaptive_target).",
    ),
    Setting(
        "adaptive_target",
        0.1,
        check_float(0.01, 0.99),
        "With frequency = adaptive: the expected share of the job's pages changed since its last run at which it "
        "runs again (Poisson estimate from its last runs' change rates).",
    ),
    Setting("adaptive_min", 86400.0, check_duration, "With frequency = adaptive: the shortest interval between runs."),
    Setting(
        "adaptive_max", 90 * 86400.0, check_duration, "With frequency = adaptive: the longest interval between runs."
    ),
    # Incremental strategies (index pages, content pages, noise-tolerant change detection).
    Setting(
        "index_patterns",
        (),
        check_regex_list,
        "Regexes for index pages (re-read every incremental run). Seeds are always index pages.",
    ),
    Setting("content_patterns", (), check_regex_list, "Regexes for content pages (re-fetched only when due)."),
    Setting(
        "default_page_kind",
        "index",
        check_choice("index", "content"),
        "Kind of an HTML page that matches neither pattern list.",
    ),
    Setting("recheck_all", False, check_bool, "In incremental runs, recheck every known URL, due or not."),
    Setting(
        "check_deleted_links",
        False,
        check_bool,
        "Record a content page as deleted when it vanished from every index page.",
    ),
    Setting(
        "noise_selectors",
        (),
        _check_selectors,
        "CSS selectors of page parts ignored by change detection (counters, timestamps).",
    ),
    Setting("noise_patterns", (), check_regex_list, "Regexes of text ignored by change detection."),
    Setting(
        "change_threshold",
        1.0,
        check_float(0.0, 1.0),
        "Main-text similarity (Jaccard of 3-shingles) at or above which a changed payload is soft-changed; 1.0: "
        "only when the main text, noise removed, is the same.",
    ),
    Setting(
        "store_soft_changes",
        True,
        check_bool,
        "Store soft-changed pages in full (lossless); false writes nothing for them.",
    ),
    Setting(
        "request_records",
        "changed",
        check_choice("changed", "all"),
        "Which captures get a WARC request record: 'changed' (every response; a revisit, which stores no "
        "payload, none) or 'all' (also every revisit: the request as sent, about 0.5 KB more per unchanged URL).",
    ),
    Setting("min_interval", 86400.0, check_duration, "Shortest recheck interval for a content page."),
    Setting("max_interval", 90 * 86400.0, check_duration, "Longest recheck interval for a content page."),
    Setting("login_cookies", (), check_str_list, "Cookies sent with every request, as 'name=value' strings (secret)."),
    Setting(
        "login_form_url",
        "",
        _optional_url,
        "A login form to POST before the run; the cookies it sets go to the seeds' hosts.",
    ),
    Setting("login_form_fields", (), _form_fields, "The login form's fields, as 'name=value' strings (secret)."),
    Setting(
        "proxies",
        (),
        _proxies,
        "http:// or socks5:// proxy URLs rotated per request (https URLs go through http:// ones with CONNECT); one "
        "that cannot be reached rests 60 s while the others carry its requests (secret).",
    ),
)

SETTINGS_BY_NAME = {s.name: s for s in JOB_SETTINGS}
SECRET_SETTINGS = frozenset({"login_cookies", "login_form_fields", "proxies"})


def _default(name: str) -> Any:
    """The default of one row of ``JOB_SETTINGS``, so that ``JobSettings`` holds no second copy."""
    return SETTINGS_BY_NAME[name].default


@dataclasses.dataclass(frozen=True)
class JobSettings:
    """A validated job: the job's name, then one typed field per row of ``JOB_SETTINGS``.

    It is generated from the one settings table in this sense: the table stays the single source
    of truth for the names, order, defaults, checking and help; this class only gives each value
    the type its checker returns, so that a type checker sees ``job.depth`` as an ``int``. Build it
    with ``validate_job``. tests/test_settings.py fails, naming the line to add, when a row has no
    field here (or a field's name, order, default or type disagrees with its row).
    """

    name: str
    seeds: tuple[str, ...] = _default("seeds")
    depth: int = _default("depth")
    scope: str = _default("scope")
    same_host_any_port: bool = _default("same_host_any_port")
    include: tuple[str, ...] = _default("include")
    exclude: tuple[str, ...] = _default("exclude")
    embeds_offsite: bool = _default("embeds_offsite")
    delay: float = _default("delay")
    max_crawl_delay: float = _default("max_crawl_delay")
    concurrency: int = _default("concurrency")
    fetch_process: bool = _default("fetch_process")
    capture: str = _default("capture")
    browser_pages: int = _default("browser_pages")
    page_deadline: float = _default("page_deadline")
    click_selectors: tuple[str, ...] = _default("click_selectors")
    clicks: int = _default("clicks")
    click_time: float = _default("click_time")
    scroll_steps: int = _default("scroll_steps")
    scroll_time: float = _default("scroll_time")
    quiet_timeout: float = _default("quiet_timeout")
    robots: str = _default("robots")
    user_agent: str = _default("user_agent")
    timeout: float = _default("timeout")
    connect_timeout: float = _default("connect_timeout")
    max_resource_size: int = _default("max_resource_size")
    max_urls: int = _default("max_urls")
    warc_max_size: int = _default("warc_max_size")
    fulltext: bool = _default("fulltext")
    frequency: str = _default("frequency")
    adaptive_target: float = _default("adaptive_target")
    adaptive_min: float = _default("adaptive_min")
    adaptive_max: float = _default("adaptive_max")
    index_patterns: tuple[str, ...] = _default("index_patterns")
    content_patterns: tuple[str, ...] = _default("content_patterns")
    default_page_kind: str = _default("default_page_kind")
    recheck_all: bool = _default("recheck_all")
    check_deleted_links: bool = _default("check_deleted_links")
    noise_selectors: tuple[str, ...] = _default("noise_selectors")
    noise_patterns: tuple[str, ...] = _default("noise_patterns")
    change_threshold: float = _default("change_threshold")
    store_soft_changes: bool = _default("store_soft_changes")
    request_records: str = _default("request_records")
    min_interval: float = _default("min_interval")
    max_interval: float = _default("max_interval")
    login_cookies: tuple[str, ...] = _default("login_cookies")
    login_form_url: str = _default("login_form_url")
    login_form_fields: tuple[str, ...] = _default("login_form_fields")
    proxies: tuple[str, ...] = _default("proxies")

    @property
    def shapes_transport(self) -> bool:
        """Whether the job's requests need a transport of their own: login cookies or proxies
        (``harvester.login.harvest_transport``), which the fetch process cannot apply."""
        return bool(self.login_cookies or self.proxies)

    @property
    def values(self) -> dict[str, Any]:
        """Every setting's value by name, in the table's order (the job's name not included)."""
        return {setting.name: getattr(self, setting.name) for setting in JOB_SETTINGS}

    def replace(self, **changes: Any) -> JobSettings:
        return validate_job(self.name, {**self.values, **changes})

    def to_toml(self) -> str:
        lines = [f"# Strata job {self.name!r}: see `strata settings` for every field."]
        for setting in JOB_SETTINGS:
            value = getattr(self, setting.name)
            if value == setting.default and setting.name != "seeds":
                continue
            lines.append(f"{setting.name} = {_toml_value(value)}")
        return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
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
        raise ConfigError(f"job {name!r}: unknown field {unknown[0]!r}; known fields: {', '.join(SETTINGS_BY_NAME)}")
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
    if values["adaptive_min"] > values["adaptive_max"]:
        raise ConfigError(f"job {name!r}: field 'adaptive_min': must not exceed adaptive_max")
    return JobSettings(name=name, **values)


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
