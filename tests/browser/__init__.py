"""Browser tests of the analysis board (a package: its conftest does not shadow tests/api/)."""
