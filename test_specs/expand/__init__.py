"""From specs to the universe of spec items: ``universe.expand`` reads ``op_db`` / ``module_db``
entries (with upstream's own OpInfo skips, ``opinfo_skips``) and captured-input entries
(``captured_run``).
"""
