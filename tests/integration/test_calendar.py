"""The calendar of a URL against a collection whose captures are known (``history_fixtures``):
the year strip, the month grids (each day's count and most significant kind), the timeline, and the
table of the chosen period, which stays the detail view."""

from __future__ import annotations

import lxml.html

from tests.support.history_fixtures import KNOWN_KINDS, SITE


def doc(client, path):
    r = client.get(path)
    assert r.status_code == 200, r.get_data(as_text=True)[:500]
    return lxml.html.fromstring(r.get_data())


def title(page) -> str:
    return " ".join(page.get_element_by_id("table-title").text_content().split())


def days_of(page) -> dict[str, tuple[str, str]]:
    """date -> (kind class, aria-label) of every day with captures in the grids."""
    out = {}
    for a in page.xpath('//section[@id="months"]//td/a'):
        kind = next(c for c in a.getparent().get("class").split() if c.startswith("k-"))[2:]
        out[a.get("href").split("/")[2].rstrip("*")] = (kind, a.get("aria-label"))
    return out


def test_years_months_and_days_say_what_each_capture_found(known_client):
    home = SITE + "/"
    page = doc(known_client, f"/known/*/{home}")
    years = page.xpath('//nav[@id="years"]//a')
    assert [a.text_content().strip() for a in years] == ["2023", "2024"]
    assert years[1].get("aria-current") == "page"  # the last capture's year
    assert "3 captures, 2 with changes" in years[1].get("aria-label")
    days = days_of(page)
    assert {d: k for d, (k, _) in days.items()} == {
        "20240115": "changed",
        "20240305": "unchanged",
        "20240320": "changed",
    }
    assert days["20240115"][1].startswith("Monday 15 January 2024: 1 capture: 1 changed")
    # every capture is listed (a few): the table is the detail view, with its kinds
    rows = page.xpath('//table[@id="captures"]//tr[contains(@class, "capture")]')
    assert [(r.get("data-timestamp"), r.get("data-kind")) for r in rows] == [
        (ts, kind) for (url, ts), kind in KNOWN_KINDS.items() if url == home
    ]
    # how much changed: a new page its size, an unchanged one nothing
    changes = {r.get("data-timestamp"): int(r.get("data-change")) for r in rows}
    assert changes["20230510100000"] > 400 and changes["20231102100000"] == 0
    bars = page.xpath('//figure[@id="timeline"]//*[local-name()="rect"]')
    assert len(bars) == 3 and {b.get("class") for b in bars} == {"k-changed", "k-unchanged"}


def test_a_year_a_month_and_a_day_choose_the_table(known_client):
    url = SITE + "/news/a.html"
    page = doc(known_client, f"/known/2023*/{url}")
    assert page.xpath('//nav[@id="years"]//a[@aria-current]')[0].text_content().strip() == "2023"
    assert {d: k for d, (k, _) in days_of(page).items()} == {"20231102": "new"}
    assert title(page).split(":")[0].strip() == "November 2023"
    page = doc(known_client, f"/known/2024*/{url}")
    assert {d: k for d, (k, _) in days_of(page).items()} == {"20240115": "unchanged", "20240305": "deleted"}
    page = doc(known_client, f"/known/20240305*/{url}")
    rows = page.xpath('//table[@id="captures"]//tr[contains(@class, "capture")]')
    assert [r.get("data-kind") for r in rows] == ["deleted"]
    assert title(page).startswith("5 March 2024: 1 capture")
    page = doc(known_client, f"/known/202402*/{url}")
    assert page.get_element_by_id("table-empty") is not None


def test_the_table_of_a_long_history_is_one_period_at_a_time(tmp_path):
    from demo.history import Event, write_history
    from index.capture.rebuild import rebuild_state
    from index.collection import Collection
    from replay import create_app

    root = tmp_path / "collections"
    root.mkdir()
    coll = Collection.open(root, "long", create=True)
    url = "http://long.test/"
    events = [
        Event(f"r{i:03d}", url, f"2024-{1 + i // 100:02d}-{1 + (i % 100) // 4:02d}T{i % 4:02d}:00:00Z", i // 3)
        for i in range(400)
    ]
    write_history(coll.archive_dir, events)
    rebuild_state(coll)
    client = create_app(root).test_client()
    page = doc(client, f"/long/*/{url}")  # 400 captures: the last month's, not all
    assert title(page).startswith("April 2024: 100 captures")
    assert len(page.xpath('//tr[contains(@class, "capture")]')) == 100
    grid_total = sum(
        int(a.get("aria-label").split(": ")[1].split()[0]) for a in page.xpath('//section[@id="months"]//td/a')
    )
    assert grid_total == 400
