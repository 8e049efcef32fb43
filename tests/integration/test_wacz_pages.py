"""The WACZ export's page list and signature, on the collection whose captures are known: every
page of the range (revisited ones too) with its capture time, title and main text as full-text
search holds them; a signed package verifies, a tampered one and one signed with another key do not."""

from __future__ import annotations

import json
import shutil
import zipfile

import pytest
from click.testing import CliRunner

from cli import cli
from index.collection import Collection
from index.fulltext.rebuild import rebuild
from tests.support.history_fixtures import KNOWN_KINDS, write_known


@pytest.fixture(scope="module")
def indexed_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("wacz-pages") / "collections"
    root.mkdir()
    rebuild(write_known(root))
    return root


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    error = getattr(result.exception, "message", "") if not isinstance(result.exception, SystemExit) else ""
    return result.exit_code, result.stdout, result.stderr + error


def pages_of(path) -> list[dict]:
    with zipfile.ZipFile(path) as zf:
        lines = zf.read("pages/pages.jsonl").decode().splitlines()
    return [json.loads(line) for line in lines[1:]]


def test_every_page_with_its_title_and_text(indexed_root, tmp_path):
    out = tmp_path / "known.wacz"
    code, stdout, _ = run("export", "wacz", "known", "--root", str(indexed_root), "--out", str(out), "--json")
    assert code == 0, stdout
    pages = pages_of(out)
    expected = {(url, ts) for (url, ts), kind in KNOWN_KINDS.items() if kind != "deleted"}
    got = {(p["url"], p["ts"].replace("-", "").replace("T", "").replace(":", "").rstrip("Z")) for p in pages}
    assert got == expected  # unchanged captures (revisits) included, the 404 left out
    assert len(pages) == json.loads(stdout)["pages"] == 11
    for page in pages:
        name = page["url"].rsplit("/", 1)[-1] or "home"
        assert page["title"].startswith(name + " v"), page
        assert f"of {page['url']}" in page["text"] and "word" in page["text"]
    by_ts = {p["ts"]: p for p in pages if p["url"] == "http://site.test/"}
    assert by_ts["2023-11-02T10:00:00Z"]["title"] == "home v1"  # a revisit: its original's text
    assert by_ts["2024-01-15T10:00:00Z"]["title"] == "home v2"


def test_a_signed_package_verifies_and_a_tampered_one_does_not(indexed_root, tmp_path):
    key, other = tmp_path / "key.pem", tmp_path / "other.pem"
    code, public, _ = run("export", "keygen", str(key))
    assert code == 0 and len(public.strip()) > 100
    assert run("export", "keygen", str(key))[0] == 1  # never overwritten
    run("export", "keygen", str(other))
    out = tmp_path / "signed.wacz"
    args = ["export", "wacz", "known", "--root", str(indexed_root), "--out", str(out), "--sign-key", str(key)]
    assert run(*args)[0] == 0
    with zipfile.ZipFile(out) as zf:
        signed = json.loads(zf.read("datapackage-digest.json"))["signedData"]
    assert signed["publicKey"] == public.strip() and len(signed["signature"]) == 128  # r and s, 48 bytes each

    code, stdout, _ = run("export", "verify", str(out), "--public-key", public.strip(), "--json")
    report = json.loads(stdout)
    assert code == 0 and report["ok"] and report["signature_valid"] and report["resources"] == 4
    assert run("export", "verify", str(out), "--public-key", str(key))[0] == 0  # the key file will do
    code, _, stderr = run("export", "verify", str(out), "--public-key", str(other))
    assert code == 1 and "another key" in stderr

    # one byte of the page list changed: its hash no longer matches; the signature still covers the
    # old datapackage.json, and a datapackage.json rewritten to match breaks the signature
    tampered = tmp_path / "tampered.wacz"
    _rewrite(out, tampered, "pages/pages.jsonl", lambda b: b.replace(b"home v1", b"home v9", 1))
    code, stdout, _ = run("export", "verify", str(tampered), "--json")
    assert code == 1 and any("pages.jsonl" in p for p in json.loads(stdout)["problems"])
    forged = tmp_path / "forged.wacz"
    _rewrite(out, forged, "datapackage.json", lambda b: json.dumps({**json.loads(b), "title": "forged"}).encode())
    _rewrite_digest(forged)
    code, stdout, _ = run("export", "verify", str(forged), "--json")
    report = json.loads(stdout)
    assert code == 1 and report["signature_valid"] is False and "the signature does not verify" in report["problems"]
    unsigned = tmp_path / "unsigned.wacz"
    shutil.copy(out, unsigned)
    _rewrite(
        out,
        unsigned,
        "datapackage-digest.json",
        lambda b: json.dumps({k: v for k, v in json.loads(b).items() if k != "signedData"}).encode(),
    )
    assert run("export", "verify", str(unsigned))[0] == 0
    code, _, stderr = run("export", "verify", str(unsigned), "--public-key", public.strip())
    assert code == 1 and "not signed" in stderr


def _rewrite(src, dst, name, change) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            zout.writestr(info, change(data) if info.filename == name else data)


def _rewrite_digest(path) -> None:
    """A forger's digest file: the new datapackage.json's hash, the old signature."""
    import hashlib

    with zipfile.ZipFile(path) as zf:
        data = zf.read("datapackage.json")
        digest = json.loads(zf.read("datapackage-digest.json"))
    new_hash = "sha256:" + hashlib.sha256(data).hexdigest()
    digest["hash"] = digest["signedData"]["hash"] = new_hash
    copy = path.with_suffix(".tmp")
    _rewrite(path, copy, "datapackage-digest.json", lambda _: json.dumps(digest).encode())
    copy.replace(path)


def test_a_bad_key_is_refused_before_any_work(indexed_root, tmp_path):
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key")
    code, _, stderr = run(
        "export",
        "wacz",
        "known",
        "--root",
        str(indexed_root),
        "--out",
        str(tmp_path / "x.wacz"),
        "--sign-key",
        str(bad),
    )
    assert code != 0 and "strata export keygen" in stderr and not (tmp_path / "x.wacz").exists()
    assert Collection(indexed_root, "known").path.is_dir()
