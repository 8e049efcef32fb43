"""The WACZ export: a self-contained package of part of a collection (``package.export_wacz``)."""

from index.export.wacz.package import Selection, export_wacz

__all__ = ["Selection", "export_wacz"]
