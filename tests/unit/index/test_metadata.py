"""Page metadata: dates as pages and PDFs write them, JSON-LD shapes, hostile blocks, and the
histogram's time axis."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from index.fulltext.histogram import histogram
from index.fulltext.metadata import date_key, from_jsonld, normalize_date
from index.fulltext.text import extract


@pytest.mark.parametrize(
    "value,expected",
    [
        ("2024-03-05T10:00:00+09:00", "2024-03-05"),
        ("2024-03-05", "2024-03-05"),
        ("2024/3/5", "2024-03-05"),
        ("20240305", "2024-03-05"),
        ("D:20240305101010+01'00'", "2024-03-05"),
        ("2024年3月5日", "2024-03-05"),
        ("令和6年 2024年3月", "2024-03"),
        ("March 5, 2024", "2024-03-05"),
        ("5 Mar 2024", "2024-03-05"),
        ("2024", "2024"),
        ("2024-13-01", "2024"),  # no such month: the year is what is known
        ("2024-02-30", "2024-02"),
        ("yesterday", ""),
        ("0999-01-01", ""),
        (datetime(2021, 6, 15, tzinfo=UTC), "2021-06-15"),
    ],
)
def test_normalize_date(value, expected):
    assert normalize_date(value) == expected


def test_date_keys_compare_as_ranges():
    assert date_key("2024-03") == "20240300" and date_key("2024-03", end=True) == "20240399"
    assert date_key("2024") <= date_key("2024-03-05") <= date_key("2024", end=True)
    assert date_key("") == "" and date_key("24") == ""


def test_jsonld_graph_lists_and_people():
    block = json.dumps(
        {
            "@context": "https://schema.org",
            "@graph": [
                {"@type": "WebSite", "name": "Site"},
                {
                    "@type": "Article",
                    "headline": "Headline",
                    "author": [{"@type": "Person", "name": "A"}, {"name": "B"}, "C"],
                    "publisher": {"@type": "Organization", "name": "P"},
                    "datePublished": "2020-01-02",
                    "keywords": "x, y",
                },
            ],
        }
    )
    got = from_jsonld(["not json", block])
    assert got["title"] == "Site"  # the first item that names itself
    assert (got["author"], got["publisher"], got["published"], got["keywords"]) == (
        "A; B; C",
        "P",
        "2020-01-02",
        "x, y",
    )


def test_hostile_jsonld_and_meta_never_lose_the_page():
    deep = "[" * 5000 + "]" * 5000
    nested = json.dumps({"author": [[[[[[[[{"name": "x"}]]]]]]]]})
    page = (
        f'<html><head><script type="application/ld+json">{deep}</script>'
        f'<script type="application/ld+json">{nested}</script>'
        f'<script type="application/ld+json">{"{" * 300000}</script>'
        '<meta name="date" content="99999-99-99"><meta property="og:locale" content="en_GB"></head>'
        "<body><p>Still here.</p></body></html>"
    )
    out = extract(page.encode(), "text/html")
    assert out.error == "" and out.text == "Still here." and out.published == "" and out.language == "en"


def test_histogram_keeps_empty_periods():
    hits = [{"captures": ["20241003000000", "20241020000000"]}, {"captures": ["20261201000000"]}]
    h = histogram(hits)
    assert h["unit"] == "month" and len(h["buckets"]) == 27
    assert [b["count"] for b in h["buckets"]][:3] == [2, 0, 0] and h["buckets"][-1]["count"] == 1
    assert h["buckets"][1] == {"value": "202411", "from": "202411", "to": "202411", "label": "2024-11", "count": 0}
    years = histogram([{"captures": ["19960101000000", "20261231000000"]}])
    assert years["unit"] == "year" and len(years["buckets"]) == 31
    decades = histogram([{"captures": ["18000101000000", "20261231000000"]}])
    assert decades["unit"] == "decade" and decades["buckets"][0]["to"] == "1809"
    hours = histogram([{"captures": ["20240301100000", "20240302093000"]}])
    assert hours["unit"] == "hour" and len(hours["buckets"]) == 24
