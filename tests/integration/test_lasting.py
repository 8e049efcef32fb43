"""Lasting addresses: ``/web/<ts>/<url>`` in the default collection, the permanent id of every capture
with its resolver ``/id/<pid>``, and the "cite this" line, before and after ``strata index rebuild``
(which re-derives every index from the WARCs: the ids are computed, never stored)."""

from __future__ import annotations

import shutil

import lxml.html
import pytest
from click.testing import CliRunner

from cli import cli
from index.cdx.pid import capture_pid

PAGE = "http://reading.example/"
FIRST, REVISIT, EDITED = "20240110090000", "20240210090000", "20240310090000"


def app_for(root, **config):
    from replay import create_app

    return create_app(root, config or None).test_client()


def banner(html: bytes):
    doc = lxml.html.fromstring(html)
    template = doc.xpath('//template[@id="strata-banner-content"]')[0]
    return lxml.html.fromstring(lxml.html.tostring(template)).get_element_by_id("strata-banner")


def cite_line(client, path: str) -> tuple[str, str]:
    r = client.get(path)
    assert r.status_code == 200
    b = banner(r.data)
    return b.get_element_by_id("strata-cite-url").get("href"), b.get_element_by_id("strata-pid").text


def test_web_address_resolves_in_the_only_collection(mixed_archive):
    client = app_for(mixed_archive.root)
    r = client.get(f"/web/{REVISIT}/{PAGE}")
    assert r.status_code == 302 and r.headers["Location"] == f"/mixed/{REVISIT}/{PAGE}"
    assert client.get(f"/web/{REVISIT}id_/{PAGE}").headers["Location"] == f"/mixed/{REVISIT}id_/{PAGE}"
    assert client.get(f"/web/*/{PAGE}").headers["Location"] == f"/mixed/*/{PAGE}"
    replayed = client.get(f"/web/{REVISIT}/{PAGE}", follow_redirects=True)
    assert replayed.status_code == 200 and b"opens at nine" in replayed.data
    home = lxml.html.fromstring(client.get("/").data).get_element_by_id("default-collection")
    assert "resolve in mixed" in " ".join(home.text_content().split())


def test_web_address_needs_the_setting_among_several_collections(archives):
    root = archives["three"].root  # holds "two" and "three"
    url = archives["three"].url("/")
    plain = app_for(root)
    r = plain.get(f"/web/2030/{url}")
    assert r.status_code == 404 and b"--default-collection" in r.data
    home = lxml.html.fromstring(plain.get("/").data).get_element_by_id("default-collection")
    assert "There is no default collection" in home.text_content()
    chosen = app_for(root, default_collection="two")
    assert chosen.get(f"/web/2030/{url}").headers["Location"] == f"/two/2030/{url}"
    assert "resolve in two" in " ".join(
        lxml.html.fromstring(chosen.get("/").data).get_element_by_id("default-collection").text_content().split()
    )
    # the cite line names /web/ only for the default collection
    snapshot = archives["three"].snapshots[0]
    cite, _ = cite_line(chosen, f"/three/{snapshot}/{url}")
    assert cite.startswith("http://localhost/three/")
    cite, _ = cite_line(chosen, f"/two/{archives['two'].snapshots[0]}/{archives['two'].url('/')}")
    assert cite.startswith("http://localhost/web/")


def test_cite_line_and_permanent_id_resolve_also_after_rebuild(mixed_archive, tmp_path):
    root = tmp_path / "collections"
    shutil.copytree(mixed_archive.root, root)
    before = app_for(root)
    cite, pid = cite_line(before, f"/mixed/2024/{PAGE}")  # as of the end of 2024: the edited capture
    assert cite == f"http://localhost/web/{EDITED}/{PAGE}"
    assert pid == capture_pid("mixed", PAGE, EDITED) and len(pid) == 15
    assert before.get(f"/id/{pid}").headers["Location"] == f"/mixed/{EDITED}/{PAGE}"
    ids = {ts: cite_line(before, f"/mixed/{ts}/{PAGE}")[1] for ts in (FIRST, REVISIT, EDITED)}
    assert len(set(ids.values())) == 3

    # Every derived file goes; the WARCs alone give the indexes back, and the same ids.
    shutil.rmtree(root / "mixed" / "indexes")
    shutil.rmtree(root / "mixed" / "strata")
    assert app_for(root).get(f"/id/{pid}").status_code == 404  # nothing indexed: nothing resolves
    result = CliRunner().invoke(cli, ["index", "rebuild", "mixed", "--root", str(root)])
    assert result.exit_code == 0, result.output
    after = app_for(root)
    for ts, known in ids.items():
        r = after.get(f"/id/{known}")
        assert r.status_code == 302 and r.headers["Location"] == f"/mixed/{ts}/{PAGE}"
        assert cite_line(after, f"/mixed/{ts}/{PAGE}")[1] == known
        replayed = after.get(f"/id/{known}", follow_redirects=True)
        assert banner(replayed.data).get("data-capture") == ts
    assert after.get(f"/web/{FIRST}/{PAGE}", follow_redirects=True).status_code == 200


@pytest.mark.parametrize(
    "pid, status, says",
    [
        ("zzz", 400, b"is not a permanent capture id"),
        ("1jswq4gvtm70dr1".upper().replace("1", "I"), 400, b"is not a permanent capture id"),
        (capture_pid("mixed", PAGE, "20240110090001"), 404, b"No capture in this archive"),
        (capture_pid("other", PAGE, FIRST), 404, b"No capture in this archive"),
    ],
)
def test_bad_and_unknown_ids(mixed_archive, pid, status, says):
    r = app_for(mixed_archive.root).get(f"/id/{pid}")
    assert r.status_code == status and says in r.data and b"Traceback" not in r.data
