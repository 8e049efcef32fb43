"""The staff console's jobs page shows each collection's last verification, read from the fixity
events that real ``strata verify`` runs wrote over a real harvest."""

from __future__ import annotations

import lxml.html
from click.testing import CliRunner

from cli import cli
from index.collection import Collection
from tests.conftest import harvest


def fixity_rows(staff) -> dict[str, dict[str, str]]:
    response = staff.get("/jobs")
    assert response.status_code == 200
    page = lxml.html.fromstring(response.text)
    rows = {}
    for tr in page.cssselect("#fixity tr[data-collection]"):
        rows[tr.get("data-collection")] = {
            td.get("class").split()[0]: td.text_content().strip() for td in tr.cssselect("td[class]")
        }
    return rows


def verify(root, name: str, *args: str) -> int:
    return CliRunner().invoke(cli, ["verify", name, "--root", str(root), *args]).exit_code


def test_last_verification_and_its_outcome_per_collection(staff, staff_root, site):
    assert harvest(staff_root, site, name="c")["status"] == "finished"
    Collection.open(staff_root, "empty", create=True)
    rows = fixity_rows(staff)
    assert set(rows) == {"c", "empty"}
    assert "never verified" in rows["c"]["when"]

    assert verify(staff_root, "c") == 0
    rows = fixity_rows(staff)
    assert rows["c"]["outcome"] == "intact" and rows["c"]["mode"] == "full"
    assert rows["c"]["when"].startswith("20") and rows["c"]["when"].endswith("Z")
    assert "never verified" in rows["empty"]["when"]

    warc = Collection(staff_root, "c").warc_files()[0]
    (Collection(staff_root, "c").archive_dir / warc).unlink()
    assert verify(staff_root, "c", "--quick") == 1
    rows = fixity_rows(staff)
    assert rows["c"]["mode"] == "quick"
    assert rows["c"]["outcome"] == "1 problem (missing-file)"
