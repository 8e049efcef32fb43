"""``/<coll>/cdx``: the same answers as an unmodified pywb's ``/<coll>/cdx`` on the same collection,
checked parameters, a line cap and a time bound."""

from __future__ import annotations

import json
from urllib.parse import quote

import httpx
import pytest

from replay import create_app


def _queries(archive) -> list[str]:
    base = archive.base_url
    host = base.split("://", 1)[1]
    first, second, third = archive.snapshots
    return [
        f"url={base}/",
        f"url={base}/&output=json",
        f"url={base}/&output=text",
        f"url={base}/&output=link",
        f"url={base}/*&output=json",
        f"url={base}/&matchType=prefix&limit=7",
        f"url={host}&matchType=host&output=json",
        f"url={host}&matchType=domain&limit=20",
        f"url={base}/&matchType=prefix&from={second}&to={third}&output=json",
        f"url={base}/&matchType=prefix&to={first}",
        f"url={base}/&sort=reverse&limit=2&output=json",
        f"url={base}/&closest={second}&sort=closest&limit=2&output=json",
        f"url={base}/&matchType=prefix&filter=!mime:warc/revisit&output=json",
        f"url={base}/&matchType=prefix&filter=mime:warc/revisit&filter=~url:.*html$",
        f"url={base}/&matchType=prefix&filter==status:200&fl=url,timestamp,status&output=json",
        f"url={base}/&matchType=prefix&fl=urlkey,timestamp,digest&output=text",
        f"url={base}/&matchType=prefix&fl=url,mime&limit=5",
        f"url={base}/never-archived.html",
        f"url={quote(base + '/articles/', safe='')}&matchType=prefix&output=json",
    ]


@pytest.mark.slow
def test_the_same_lines_as_pywb_cdx(archives, client, wayback_server):
    archive = archives["three"]
    compared = 0
    for query in _queries(archive):
        ours = client.get(f"/three/cdx?{query}")
        theirs = httpx.get(f"{wayback_server.base_url}/three/cdx?{query}", timeout=30)
        assert ours.status_code == theirs.status_code, query
        assert ours.headers["Content-Type"] == theirs.headers["Content-Type"], query
        assert ours.data == theirs.content, query
        compared += len(theirs.content.splitlines())
    assert compared > 200  # the table reaches real answers, not only empty ones
    # revisits are there too (pointing into the earlier runs)
    lines = client.get(f"/three/cdx?url={archive.base_url}/*&filter=mime:warc/revisit&output=json").data
    assert len(lines.splitlines()) > 10


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("", "url is required"),
        ("url=example.org&matchType=subdomain", "matchType must be one of"),
        ("url=example.org&output=xml", "output must be one of"),
        ("url=example.org&from=2024-01", "from must be a timestamp"),
        ("url=example.org&limit=-3", "limit must be a whole number"),
        ("url=example.org&limit=ten", "limit must be a whole number"),
        ("url=example.org&sort=closest", "sort=closest needs closest"),
        ("url=example.org&sort=newest", "sort must be one of"),
        ("url=example.org&filter=status", "filter must be"),
        ("url=example.org&filter=~url:(unclosed", "not a valid regular expression"),
        ("url=example.org&fl=url,,status", "fl must be field names"),
    ],
)
def test_bad_parameters_are_answered_400_with_the_reason(client, query, says):
    response = client.get(f"/three/cdx?{query}")
    assert response.status_code == 400
    assert says in response.get_json()["error"]


def test_an_unknown_collection_is_404_and_cdx_is_not_read_as_an_archived_url(client, archives):
    response = client.get("/nosuch/cdx?url=example.org")
    assert response.status_code == 404
    assert "nosuch" in response.get_json()["error"]
    ok = client.get(f"/three/cdx?url={archives['three'].base_url}/")
    assert ok.status_code == 200 and ok.data.count(b"\n") == 3  # one capture per run, not a replay page


def test_answers_are_capped_and_say_so(replay_root, archives):
    client = create_app(replay_root, {"cdx_limit": 5}).test_client()
    base = archives["three"].base_url
    capped = client.get(f"/three/cdx?url={base}/*&output=json")
    assert capped.status_code == 200
    assert len(capped.data.splitlines()) == 5
    assert "at most 5" in capped.headers["X-Strata-CDX-Truncated"]
    asked_more = client.get(f"/three/cdx?url={base}/*&limit=1000")
    assert len(asked_more.data.splitlines()) == 5 and "X-Strata-CDX-Truncated" in asked_more.headers
    as_asked = client.get(f"/three/cdx?url={base}/*&limit=5")  # the limit asked for, not the cap, cut it
    assert len(as_asked.data.splitlines()) == 5 and "X-Strata-CDX-Truncated" not in as_asked.headers
    exact = client.get(f"/three/cdx?url={base}/&limit=5")  # 3 lines: under the cap, not cut
    assert len(exact.data.splitlines()) == 3 and "X-Strata-CDX-Truncated" not in exact.headers
    assert [json.loads(line)["url"] for line in capped.data.splitlines()][0] == f"{base}/"


def test_a_slow_query_is_stopped_at_the_time_bound(tmp_path):
    """300,000 index lines and a filter that matches none: pywb would read them all; the bound stops it."""
    root = tmp_path / "collections"
    (root / "big" / "archive").mkdir(parents=True)
    (root / "big" / "indexes").mkdir()
    with open(root / "big" / "indexes" / "index.cdxj", "w") as out:
        for n in range(300_000):
            blob = {"url": f"http://example.org/p{n:06d}", "mime": "text/html", "status": "200", "digest": "X"}
            out.write(f"org,example)/p{n:06d} 20240101000000 {json.dumps(blob)}\n")
    client = create_app(root, {"cdx_time_limit": 0.1}).test_client()
    response = client.get("/big/cdx?url=example.org/&matchType=prefix&filter=status:404")
    assert response.status_code == 503
    assert "longer than 0.1 s" in response.get_json()["error"]
    quick = client.get("/big/cdx?url=example.org/p000042&output=json")
    assert quick.status_code == 200 and json.loads(quick.data)["url"] == "http://example.org/p000042"
