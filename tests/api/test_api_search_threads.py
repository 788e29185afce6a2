"""KALAH_SEARCH_THREADS: the threads of each of the service's searches (default 1)."""

from __future__ import annotations

import pytest

from api.analysis.analyser import Analyser
from api.config import load_settings


def test_search_threads_setting() -> None:
    assert load_settings(environ={}).search_threads == 1
    settings = load_settings({"KALAH_SEARCH_THREADS": "2", "KALAH_EGDB_PATH": "off"}, environ={})
    state = Analyser(settings, cache=None)._engine_for_process()  # type: ignore[arg-type]
    assert state.engine.threads == 2
    with pytest.raises(ValueError, match="KALAH_SEARCH_THREADS"):
        load_settings({"KALAH_SEARCH_THREADS": "0"}, environ={})
