"""Signed WACZ packages, and the check of a package and its signature.

The signature is the WACZ Signing and Verification specification's (0.1.0) anonymous one, as
ArchiveWeb.page writes it and ReplayWeb.page checks it: ``datapackage-digest.json`` holds, besides
the SHA-256 of ``datapackage.json``, a ``signedData`` object with that same ``hash`` string, when and
by what it was signed, the ``signature`` (ECDSA over SHA-256 of the hash string's UTF-8 bytes, the
two numbers r and s side by side, as the browsers' WebCrypto writes and reads them) and the
``publicKey`` (base64 of its DER SubjectPublicKeyInfo). The key is P-384, the curve ReplayWeb.page
imports such keys with. Who the key belongs to is said elsewhere (the spec's "external key
management"): ``verify_package`` checks the signature with the key in the package, and, given the
key its holder published, that the package was signed with that one.

The cryptography is the ``cryptography`` library's (OpenSSL); nothing of it is written here. The
domain-name signatures of ``authsign`` (a TLS certificate and an RFC 3161 timestamp, from a signing
server) are read and reported, not checked: their trust chains need the network.

    verify_package(path) checks, in order: every resource ``datapackage.json`` lists is in the ZIP
    with its size and SHA-256; ``datapackage-digest.json``'s hash is that of ``datapackage.json``;
    then the signature, if there is one.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import zipfile
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from strata.errors import ArchiveError, ConfigError

__all__ = ["PackageCheck", "Signer", "generate_key", "public_key_text", "verify_package"]

CURVE = ec.SECP384R1()
NUMBER_BYTES = 48  # r and s of P-384, each
SOFTWARE = "Strata (strata export wacz)"


class Signer:
    """Signs the hash of a package's ``datapackage.json`` with one private key."""

    def __init__(self, key: ec.EllipticCurvePrivateKey):
        if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != CURVE.name:
            raise ConfigError("the signing key must be an ECDSA P-384 key: make one with strata export keygen FILE")
        self.key = key

    @classmethod
    def from_file(cls, path: Path) -> Signer:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise ConfigError(f"cannot read the signing key {path}: {exc.strerror}") from None
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError):
            raise ConfigError(
                f"{path} is not an unencrypted PEM private key: make one with strata export keygen FILE"
            ) from None
        return cls(key)  # type: ignore[arg-type]

    def signed_data(self, hash_text: str, created: str) -> dict:
        der = self.key.sign(hash_text.encode("utf-8"), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        raw = r.to_bytes(NUMBER_BYTES, "big") + s.to_bytes(NUMBER_BYTES, "big")
        return {
            "hash": hash_text,
            "created": created,
            "software": SOFTWARE,
            "signature": base64.b64encode(raw).decode("ascii"),
            "publicKey": public_key_text(self.key.public_key()),
        }


def public_key_text(key: ec.EllipticCurvePublicKey) -> str:
    """The key as ``publicKey`` holds it: base64 of its DER SubjectPublicKeyInfo."""
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(der).decode("ascii")


def generate_key(path: Path) -> str:
    """Write a new P-384 private key to ``path`` (PEM, readable by its owner only); return its
    public key as packages will carry it. An existing file is never overwritten."""
    path = Path(path)
    key = ec.generate_private_key(CURVE)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise ConfigError(f"{path} exists: give another file name (a key is never overwritten)") from None
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    return public_key_text(key.public_key())


@dataclasses.dataclass
class PackageCheck:
    path: str
    resources: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)
    signed: str = "no"  # no | anonymous | domain
    signature_valid: bool | None = None  # None: not signed, or not checked (domain)
    public_key: str = ""
    created: str = ""
    software: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict:
        return {**dataclasses.asdict(self), "ok": self.ok}


def verify_package(path: Path, expected_key: str | None = None) -> PackageCheck:
    """Check a WACZ package's hashes and signature (see the module's docstring). ``expected_key``:
    the signer's public key (base64 DER, or a PEM file's text); then a package signed with another
    key, or not signed, is a problem."""
    check = PackageCheck(str(path))
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ArchiveError(f"{path} is not a readable WACZ (ZIP) file: {exc}") from None
    with zf:
        names = set(zf.namelist())
        for required in ("datapackage.json", "datapackage-digest.json"):
            if required not in names:
                check.problems.append(f"{required} is missing")
        if check.problems:
            return check
        package_bytes = zf.read("datapackage.json")
        try:
            package = json.loads(package_bytes)
            digest = json.loads(zf.read("datapackage-digest.json"))
        except ValueError as exc:
            check.problems.append(f"datapackage.json or its digest is not JSON: {exc}")
            return check
        _check_resources(zf, names, package, check)
        actual = "sha256:" + hashlib.sha256(package_bytes).hexdigest()
        if digest.get("hash") != actual:
            check.problems.append("datapackage-digest.json's hash is not that of datapackage.json")
        signed = digest.get("signedData")
        if signed:
            _check_signature(signed, actual, check)
    if expected_key is not None:
        wanted = _key_text(expected_key)
        if check.signed != "anonymous":
            check.problems.append("the package is not signed with a public key")
        elif check.public_key != wanted:
            check.problems.append("the package is signed with another key than the one given")
    return check


def _check_resources(zf: zipfile.ZipFile, names: set[str], package: dict, check: PackageCheck) -> None:
    for res in package.get("resources") or []:
        check.resources += 1
        name = res.get("path", "")
        if name not in names:
            check.problems.append(f"{name}: listed in datapackage.json, not in the package")
            continue
        sha, size = hashlib.sha256(), 0
        with zf.open(name) as fh:
            while chunk := fh.read(1 << 20):
                sha.update(chunk)
                size += len(chunk)
        if res.get("hash") != "sha256:" + sha.hexdigest() or res.get("bytes") not in (None, size):
            check.problems.append(f"{name}: its bytes are not those datapackage.json lists")


def _check_signature(signed: dict, actual: str, check: PackageCheck) -> None:
    check.created, check.software = str(signed.get("created", "")), str(signed.get("software", ""))
    if signed.get("hash") != actual:
        check.problems.append("the signed hash is not that of datapackage.json")
    if not signed.get("publicKey"):
        check.signed = "domain"  # authsign's: certificate chains and a timestamp, checked by authsign
        return
    check.signed = "anonymous"
    check.public_key = str(signed["publicKey"])
    try:
        key = serialization.load_der_public_key(base64.b64decode(check.public_key))
        raw = base64.b64decode(str(signed.get("signature", "")))
    except (ValueError, TypeError):
        check.signature_valid = False
        check.problems.append("the signature or its public key cannot be read")
        return
    if not isinstance(key, ec.EllipticCurvePublicKey):
        check.signature_valid = False
        check.problems.append("the public key is not an ECDSA key")
        return
    check.signature_valid = _verifies(key, raw, str(signed.get("hash", "")).encode("utf-8"))
    if not check.signature_valid:
        check.problems.append("the signature does not verify")


def _verifies(key: ec.EllipticCurvePublicKey, raw: bytes, message: bytes) -> bool:
    """r and s side by side (WebCrypto's form), or DER (py-wacz accepts both)."""
    half = len(raw) // 2
    forms = [raw]
    if len(raw) % 2 == 0 and half:
        forms.insert(0, encode_dss_signature(int.from_bytes(raw[:half], "big"), int.from_bytes(raw[half:], "big")))
    for der in forms:
        try:
            key.verify(der, message, ec.ECDSA(hashes.SHA256()))
            return True
        except (InvalidSignature, ValueError):
            continue
    return False


def _key_text(given: str) -> str:
    """A public key given as base64 DER, or as PEM text (a public or a private key's file)."""
    text = given.strip()
    if text.startswith("-----BEGIN"):
        data = text.encode()
        try:
            public = serialization.load_pem_public_key(data)
        except ValueError:
            try:
                public = serialization.load_pem_private_key(data, password=None).public_key()
            except (ValueError, TypeError):
                raise ConfigError("the key given is not a PEM public or private key") from None
        return public_key_text(public)  # type: ignore[arg-type]
    return text
