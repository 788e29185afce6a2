"""Browser tests of the analysis board (a package: its conftest is ``browser.conftest``)."""
