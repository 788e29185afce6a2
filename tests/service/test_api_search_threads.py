"""KALAH_SEARCH_THREADS: the threads of each of the service's searches (default 1)."""

from __future__ import annotations

import pytest

from kalah_service.base.config import load_settings
from kalah_service.core.analyser import Analyser


def test_search_threads_setting() -> None:
    assert load_settings(environ={}).search_threads == 1
    settings = load_settings({"KALAH_SEARCH_THREADS": "2", "KALAH_EGDB_PATH": "off"}, environ={})
    analyser = Analyser(settings, cache=None)  # type: ignore[arg-type]
    with analyser.engines().engine(100) as engine:  # one of the worker's engines
        assert engine.threads == 2
    with pytest.raises(ValueError, match="KALAH_SEARCH_THREADS"):
        load_settings({"KALAH_SEARCH_THREADS": "0"}, environ={})
