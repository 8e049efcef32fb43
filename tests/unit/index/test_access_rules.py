"""index.access.rules: prefixes as URLs, most specific wins, levels, embargo dates, pywb's own lines, and the
sorted lookup checked against a plain linear scan of 10,000 rules."""

from __future__ import annotations

import dataclasses
import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from index.access.rules import LEVELS, AccessRules, Rule, RuleSet, compile_lines, parse_duration, prefix_keys, urlkey
from strata.errors import ConfigError

NOW = datetime.now(UTC)
RECENT = (NOW - timedelta(days=10)).strftime("%Y%m%d%H%M%S")
OLD = (NOW - timedelta(days=800)).strftime("%Y%m%d%H%M%S")


def ruleset(*rules: Rule) -> RuleSet:
    return compile_lines([line for r in rules for line in r.lines()])


def seen(rules: RuleSet, url: str, ts: str = RECENT) -> tuple:
    return tuple(rules.verdict(url, ts, level).status for level in LEVELS)


def test_prefix_forms():
    assert prefix_keys("*") == ["*,"]
    assert prefix_keys("*.example.gov") == ["gov,example)", "gov,example,"]
    assert prefix_keys("example.gov") == prefix_keys("http://example.gov/") == ["gov,example)/"]
    assert prefix_keys("http://example.gov/news/") == ["gov,example)/news###", "gov,example)/news/"]
    assert prefix_keys("https://example.gov/news/a.html") == ["gov,example)/news/a.html###"]
    assert prefix_keys("http://example.gov/news/a*") == ["gov,example)/news/a"]


@pytest.mark.parametrize(
    "bad", ["", "   ", "ftp://example.gov/", "http:///x", "http://exa mple.gov/", "*.example.gov/path", "http://*x/"]
)
def test_bad_prefixes_are_refused_with_the_field(bad):
    with pytest.raises(ConfigError, match="^PREFIX: "):
        prefix_keys(bad)


def test_bad_levels_access_and_durations():
    with pytest.raises(ConfigError, match="^--level: 'boss'"):
        Rule.new("example.gov", "block", "boss")
    with pytest.raises(ConfigError, match="^--access: 'hide'"):
        Rule.new("example.gov", "hide")
    for text in ("3x", "", "1y2", "0d", "y"):
        with pytest.raises(ConfigError, match="^--embargo: "):
            parse_duration(text)
    assert parse_duration("1y6m") == {"years": 1, "months": 6}
    assert parse_duration("2w 3d") == {"weeks": 2, "days": 3}


def test_prefix_one_url_host_and_site():
    rules = ruleset(
        Rule.new("http://example.gov/news/", "block"),
        Rule.new("http://example.gov/one.html", "exclude"),
        Rule.new("*.site.gov", "block"),
        Rule.new("host.gov", "exclude"),
    )
    assert seen(rules, "http://example.gov/news/") == (451, 451, 451)
    assert seen(rules, "http://example.gov/news") == (451, 451, 451)
    assert seen(rules, "http://example.gov/news/a/b.html?x=1") == (451, 451, 451)
    assert seen(rules, "http://example.gov/newsletter") == (200, 200, 200)  # a path, not a string prefix
    assert seen(rules, "http://example.gov/one.html") == (404, 404, 404)
    assert seen(rules, "http://example.gov/one.html2") == (200, 200, 200)  # one URL only
    assert seen(rules, "http://www.site.gov/x") == (451, 451, 451)
    assert seen(rules, "http://a.b.site.gov:8080/") == (451, 451, 451)
    assert seen(rules, "http://site.gov/") == (451, 451, 451)
    assert seen(rules, "http://othersite.gov/") == (200, 200, 200)
    assert seen(rules, "http://host.gov/deep/path") == (404, 404, 404)
    assert seen(rules, "http://sub.host.gov/") == (200, 200, 200)  # a bare host is that host


def test_most_specific_wins_and_levels():
    rules = ruleset(
        Rule.new("http://example.gov/docs/", "block"),
        Rule.new("http://example.gov/docs/open.html", "allow"),
        Rule.new("http://example.gov/docs/rr/", "allow", "reading-room"),
        Rule.new("http://example.gov/docs/rr/staff.html", "exclude", "staff"),
    )
    assert seen(rules, "http://example.gov/docs/x") == (451, 451, 451)
    assert seen(rules, "http://example.gov/docs/open.html") == (200, 200, 200)
    assert seen(rules, "http://example.gov/docs/rr/a") == (451, 200, 200)
    assert seen(rules, "http://example.gov/docs/rr/staff.html") == (404, 404, 200)
    verdict = rules.verdict("http://example.gov/docs/rr/a", RECENT, "public")
    assert verdict.rule is not None and verdict.rule.prefix == "http://example.gov/docs/rr/"
    assert verdict.level == "reading-room" and not verdict.visible


def test_embargo_hides_recent_captures_only_and_default_level():
    rules = ruleset(
        Rule.new("http://example.gov/", "block", "staff", embargo="1y"),
        Rule.new("*", "allow", "reading-room"),
    )
    assert seen(rules, "http://example.gov/a", RECENT) == (451, 451, 200)
    # outside the embargo, pywb's rule: the collection default applies (here reading room)
    assert seen(rules, "http://example.gov/a", OLD) == (451, 200, 200)
    assert seen(rules, "http://other.gov/", OLD) == (451, 200, 200)


def test_pywb_lines_written_by_hand():
    lines = [
        ("com,example)/a", {"access": "block"}),
        ("com,example)/a", {"access": "allow", "user": "staff"}),
        ("com,example)/b", {"access": "allow", "user": "admin"}),  # a user Strata does not know
        ("com,example)/c", {"access": "mystery"}),  # an access pywb does not know: fail closed
        ("com,example)/d", {"access": "allow_ignore_embargo"}),
        ("com,example)/e###", {"access": "exclude"}),
        ("com,example)/f", {"access": "block", "before": "20200101"}),
    ]
    rules = compile_lines(lines)
    assert seen(rules, "http://example.com/a") == (451, 451, 200)
    assert seen(rules, "http://example.com/b") == (200, 200, 200)  # no line for everyone: default
    assert seen(rules, "http://example.com/c") == (404, 404, 404)
    assert seen(rules, "http://example.com/d") == (200, 200, 200)
    assert seen(rules, "http://example.com/e") == (404, 404, 404)
    assert seen(rules, "http://example.com/e/x") == (200, 200, 200)
    assert seen(rules, "http://example.com/f", "20190101000000") == (451, 451, 451)
    assert seen(rules, "http://example.com/f", "20210101000000") == (200, 200, 200)


def test_every_line_pywb_reads_without_a_user_fails_closed(tmp_path):
    acl = AccessRules(tmp_path / "coll")
    for rule in (
        Rule.new("http://example.gov/a/", "allow", "reading-room"),
        Rule.new("http://example.gov/b/", "exclude", "staff", embargo="30d"),
        Rule.new("*.example.org", "block"),
        Rule.new("http://example.gov/c.html", "allow"),
    ):
        acl.add(rule)
    lines = [line.split(" ", 2) for line in acl.path.read_text().splitlines()]
    assert [k for k, _, _ in lines] == sorted((k for k, _, _ in lines), reverse=True)  # pywb's order
    for key, _, data in lines:
        fields = json.loads(data)
        if "user" not in fields:
            assert fields["access"] != "allow" or fields["level"] == "public", (key, fields)
        else:
            assert fields["user"] in ("reading-room", "staff") and fields["access"] == "allow"


def test_a_rule_added_with_an_id_already_taken_gets_its_own(tmp_path):
    """Lines are grouped into rules by id: two rules sharing one would be read as one rule (one
    access for both prefixes). Ids are short random strings, so a new rule may draw a taken one."""
    acl = AccessRules(tmp_path / "coll")
    first = acl.add(Rule.new("http://example.gov/a/", "block"))
    twin = dataclasses.replace(Rule.new("http://example.gov/b/", "allow", "staff"), id=first.id)
    second = acl.add(twin)
    assert second.id != first.id and second.prefix == "http://example.gov/b/"
    rules = {r.id: r for r in acl.rules().rules_with_default()}
    assert (rules[first.id].prefix, rules[first.id].access) == ("http://example.gov/a/", "block")
    assert (rules[second.id].prefix, rules[second.id].level) == ("http://example.gov/b/", "staff")
    assert acl.rules().verdict("http://example.gov/a/x", RECENT, "staff").status == 451
    assert acl.rules().verdict("http://example.gov/b/x", RECENT, "staff").status == 200
    assert acl.rules().verdict("http://example.gov/b/x", RECENT, "public").status != 200


def test_add_remove_and_audit(tmp_path):
    acl = AccessRules(tmp_path / "coll")
    rule = acl.add(Rule.new("http://example.gov/x.html", "exclude", reason="request 7", by="ana"))
    with pytest.raises(ConfigError, match="^PREFIX: a rule for"):
        acl.add(Rule.new("http://example.gov/x.html", "block"))
    assert acl.rules().verdict("http://example.gov/x.html", RECENT, "staff").status == 404
    acl.remove(rule.id, "ben", "withdrawn")
    assert acl.rules().verdict("http://example.gov/x.html", RECENT, "staff").visible
    with pytest.raises(ConfigError, match="^RULE: "):
        acl.remove("nope")
    audit = acl.audit()
    assert [(e["action"], e["by"], e["reason"]) for e in audit] == [
        ("remove", "ben", "withdrawn"),
        ("add", "ana", "request 7"),
    ]


def _linear(pairs: list[tuple[str, bool, Rule]], url: str, ts: str, level: str) -> int:
    """The reference: scan every rule's keys, keep the longest that covers the URL."""
    key = urlkey(url)
    best, best_len = None, -1
    for k, exact, rule in pairs:
        if (key == k if exact else key.startswith(k)) and len(k) + 3 * exact > best_len:
            best, best_len = rule, len(k) + 3 * exact
    if best is None:
        return 200
    rank = LEVELS.index(level)
    need = {"public": 0, "reading-room": 1, "staff": 2, "none": 3}[best.level]
    return 200 if rank >= need else (451 if best.access == "block" else 404)


def test_ten_thousand_rules_agree_with_a_linear_scan():
    rng = random.Random(15)
    hosts = [f"h{n}.example{n % 7}.gov" for n in range(300)]
    rules, used = [], set()
    while len(rules) < 10_000:
        host = rng.choice(hosts)
        depth = rng.randint(0, 3)
        path = "/".join(f"p{rng.randint(0, 9)}" for _ in range(depth))
        form = rng.choice(["dir", "one", "star"]) if depth else "dir"
        prefix = f"http://{host}/{path}" + {"dir": "/" if depth else "", "one": ".html", "star": "*"}[form]
        keys = tuple(prefix_keys(prefix))
        if used.intersection(keys):
            continue
        used.update(keys)
        access = rng.choice(["allow", "block", "exclude"])
        level = rng.choice([None, "reading-room", "staff"]) if access != "allow" else rng.choice([None, "staff"])
        # ids of their own (``AccessRules.add`` makes them unique; two drawn alike would be one rule)
        rules.append(dataclasses.replace(Rule.new(prefix, access, level), id=f"r{len(rules):08x}"))
    compiled = ruleset(*rules)
    assert len(compiled) == 10_000
    pairs = [(k.removesuffix("###"), k.endswith("###"), r) for r in rules for k in r.keys]
    for _ in range(150):
        host = rng.choice(hosts)
        path = "/".join(f"p{rng.randint(0, 9)}" for _ in range(rng.randint(0, 4)))
        url = f"http://{host}/{path}" + rng.choice(["", "/", ".html", "x"])
        level = rng.choice(LEVELS)
        assert compiled.verdict(url, RECENT, level).status == _linear(pairs, url, RECENT, level), (url, level)
