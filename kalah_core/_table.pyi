"""Type stub of the transposition table's extension (_table.pyx): no Python-level API; the
search uses it from C (_table.pxd)."""
