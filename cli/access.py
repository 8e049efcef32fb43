"""``strata access COLL add|list|remove|check``: the collection's access rules (``index.access.rules``).

Rules are written to ``collections/<c>/acl/rules.aclj`` in pywb's format, each change with an audit
line (who: ``--by`` or the login name). Replay, search and every listing read them again at their
next request. Bad input (a prefix that is not a URL, an unknown level, a duration that is not one)
is refused with the field and the reason, exit 2.
"""

from __future__ import annotations

import getpass
import json
import re
from datetime import UTC, datetime

import click

from cli._base import cli, root_option
from index.access.rules import ACCESS, LEVELS, AccessRules, Rule, check_level, urlkey
from index.collection import Collection
from strata.errors import ConfigError


def _collection(root, name: str) -> Collection:
    coll = Collection(root, name)  # checks the name
    if not coll.path.is_dir():
        raise ConfigError(f"COLL: no collection {name!r} under {root}")
    return coll


def _who(by: str | None) -> str:
    if by:
        return by
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


@cli.group("access")
@click.argument("coll")
@click.pass_context
def access(ctx, coll: str) -> None:
    """Access rules of collection COLL: public, reading room, staff only, embargo, takedown."""
    ctx.obj = coll


def _rules(coll: str, root) -> AccessRules:
    return AccessRules(_collection(root, coll).path)


@access.command("add")
@click.argument("prefix")
@click.option("--access", "access_", required=True, help=f"What those below the level get: {', '.join(ACCESS)}.")
@click.option("--level", help=f"Who sees the captures: {', '.join(LEVELS)} (default: public for allow, nobody else).")
@click.option("--embargo", metavar="DURATION", help="Only captures newer than this (30d, 6m, 1y): pywb's newer.")
@click.option("--reason", default="", help="Why (kept with the rule and in the audit log).")
@click.option("--by", help="Who sets the rule (default: your login name).")
@root_option
@click.pass_obj
def add(coll: str, prefix, access_, level, embargo, reason, by, root) -> None:
    """Add a rule for PREFIX: a URL (http://example.gov/news/ and below; .../a.html one URL; ...*
    what starts so), a host (example.gov), a whole site (*.example.gov) or * (the default)."""
    rule = _rules(coll, root).add(Rule.new(prefix, access_, level, embargo, reason, _who(by)))
    click.echo(f"added {rule.id}: {rule.describe()}")
    if rule.prefix == "*" and rule.level != "public":
        # pywb's lookup stops at the first key below the URL's top-level domain and may never reach "*,"
        click.echo(
            "note: an unmodified pywb does not reach a * rule for every URL; give it default_access: "
            f"{rule.access} in its config.yaml too",
            err=True,
        )


@access.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object with every rule.")
@root_option
@click.pass_obj
def list_rules(coll: str, as_json: bool, root) -> None:
    """List the rules, most specific first."""
    found = sorted(_rules(coll, root).rules().rules_with_default(), key=lambda r: r.keys, reverse=True)
    if as_json:
        click.echo(json.dumps({"rules": [r.as_dict() for r in found]}, indent=2, ensure_ascii=False))
        return
    if not found:
        click.echo("no rules: every capture is public")
    for rule in found:
        extra = f"  ({rule.reason})" if rule.reason else ""
        click.echo(f"{rule.id}  {rule.describe()}{extra}  [{rule.by or '?'} {rule.at}]")


@access.command("remove")
@click.argument("rule")
@click.option("--reason", default="", help="Why (kept in the audit log).")
@click.option("--by", help="Who removes it (default: your login name).")
@root_option
@click.pass_obj
def remove(coll: str, rule: str, reason: str, by: str | None, root) -> None:
    """Remove RULE (its id from `list`, or its prefix as given)."""
    gone = _rules(coll, root).remove(rule, _who(by), reason)
    click.echo(f"removed {gone.id}: {gone.describe()}")


@access.command("check")
@click.argument("url")
@click.option("--at", "at", metavar="TS", help="Capture time, 4 to 14 digits (default: now).")
@click.option("--as", "as_", default="public", show_default=True, help=f"Request level: {', '.join(LEVELS)}.")
@root_option
@click.pass_obj
def check(coll: str, url: str, at: str | None, as_: str, root) -> None:
    """Print what a request at level --as gets for URL captured at --at, and the deciding rule."""
    check_level(as_, "--as")
    if at is not None and not re.fullmatch(r"\d{4,14}", at):
        raise ConfigError(f"--at: {at!r} is not a timestamp; use 4 to 14 digits, e.g. 20240115120000")
    stamp = (at or datetime.now(UTC).strftime("%Y%m%d%H%M%S")).ljust(14, "0")
    if not url.strip() or any(c.isspace() for c in url.strip()):
        raise ConfigError(f"URL: {url!r} is not a URL")
    target = url if "://" in url else "http://" + url
    verdict = _rules(coll, root).rules().verdict_key(urlkey(target), stamp, as_)
    answer = "visible" if verdict.visible else f"{verdict.access} ({verdict.status})"
    click.echo(f"{answer}: needs {verdict.level}; as {as_}")
    click.echo(f"rule: {verdict.rule.id} {verdict.rule.describe()}" if verdict.rule else "rule: none (default)")
