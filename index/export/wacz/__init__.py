"""The WACZ export: a self-contained package of part of a collection (``package.export_wacz``)."""

from index.export.wacz.package import Selection, export_wacz
from index.export.wacz.signing import PackageCheck, Signer, generate_key, verify_package

__all__ = ["PackageCheck", "Selection", "Signer", "export_wacz", "generate_key", "verify_package"]
