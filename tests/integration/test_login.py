"""A job's login recipe: a form posted before the run, its cookies sent to the seeds' host only and
never written into the archive."""

from __future__ import annotations

import gzip
import subprocess

from warcio.archiveiterator import ArchiveIterator

from demo.sample_site import SampleSite
from tests.conftest import VENV_BIN, harvest


def _records(root, name):
    out = {}
    for path in sorted((root / name / "archive").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type in ("response", "request"):
                    out.setdefault(record.rec_headers.get_header("WARC-Target-URI"), {})[record.rec_type] = (
                        record.http_headers,
                        record.content_stream().read(),
                    )
    return out


def test_login_form_opens_the_members_area_and_the_secret_stays_out_of_the_warc(root, site):
    summary = harvest(
        root,
        site,
        name="m",
        seeds=[site.base_url + "/members/"],
        robots="ignore",
        login_form_url=site.base_url + "/login",
        login_form_fields=list(SampleSite.LOGIN_FIELDS),
    )
    records = _records(root, "m")
    members = records[site.base_url + "/members/"]
    assert members["response"][0].get_statuscode() == "200"
    assert b"mkmembers" in members["response"][1]
    assert records[site.base_url + "/members/minutes.html"]["response"][0].get_statuscode() == "200"
    assert summary["urls_fetched"] == 2
    # the server saw the cookie; the archive did not keep it, nor the password
    assert any(SampleSite.SESSION_COOKIE in (r.header("Cookie") or "") for r in site.request_log)
    assert members["request"][0].get_header("Cookie") is None
    data = b"".join(gzip.decompress(p.read_bytes()) for p in (root / "m" / "archive").glob("*.gz"))
    assert b"members-0123456789" not in data and b"letmein" not in data
    assert not any(r.path == "/login" for r in site.request_log if r.method == "GET")


def test_without_the_login_the_members_area_is_refused(root, site):
    harvest(root, site, name="m", seeds=[site.base_url + "/members/"], robots="ignore")
    assert _records(root, "m")[site.base_url + "/members/"]["response"][0].get_statuscode() == "403"


def test_a_refused_login_stops_the_run_with_a_message(root, site):
    jobs = root / "m" / "jobs"
    jobs.mkdir(parents=True)
    (jobs / "bad.toml").write_text(
        f'seeds = ["{site.base_url}/members/"]\nlogin_form_url = "{site.base_url}/login"\n'
        'login_form_fields = ["user=archivist", "password=wrong"]\nrobots = "ignore"\n'
    )
    out = subprocess.run(
        [str(VENV_BIN / "strata"), "harvest", "m", "--job", "bad", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1
    assert "login form" in out.stderr and "403" in out.stderr and "Traceback" not in out.stderr
