"""Everything derived from a collection's WARC files: the CDXJ index, the harvest state and digest
index (SQLite), the full-text index (Whoosh), reports; all rebuildable (``index.capture.rebuild``).

Other packages use: ``collection.Collection``, ``state.HarvestState``, ``cdxj``, ``payload``,
``fulltext.index_run``, ``query.search``, ``report.build_report``, ``rebuild.rebuild_state``,
``fixity.Fixity`` (and ``HashingFile``), ``verify.verify``, ``digestscan.scan`` / ``check_record_at``,
``capture_index`` (where a collection's CDXJ lines are read from: files, or Redis on a Redis root).
"""
