"""The compiled move generator must be the one in use, never a silent pure-Python stand-in."""

from __future__ import annotations

import importlib.machinery
import inspect

import pytest

import kalah_core
from kalah_core import Position, Rules, _bigboard, _board, _search, _search_big, game

MODULES = [_board, _bigboard, _search, _search_big]


@pytest.mark.parametrize("module", MODULES, ids=[m.__name__ for m in MODULES])
def test_extension_module_is_compiled(module: object) -> None:
    path = getattr(module, "__file__", None)
    assert path is not None, f"{module!r} has no __file__"
    assert path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), path
    assert not path.endswith((".py", ".pyc")), path
    assert isinstance(module.__loader__, importlib.machinery.ExtensionFileLoader)  # type: ignore[attr-defined]


def test_functions_are_compiled() -> None:
    # Cython functions are not Python functions: no Python bytecode behind them.
    for func in (
        _board.legal_moves,
        _board.play_move,
        _board.perft,
        _bigboard.legal_moves,
        _bigboard.play_move,
        _bigboard.perft,
    ):
        assert not inspect.isfunction(func), func
        assert type(func).__name__ in ("cython_function_or_method", "builtin_function_or_method")


def test_package_uses_the_compiled_boards() -> None:
    """Today's boards run on the one-word board, bigger ones on the big board, both compiled."""
    assert kalah_core.perft is game.perft
    small = Rules.preset("kgp")
    assert game.board_module(Position.start(small)) is _board
    for big in (small.replace(houses=12, seeds=12), small.replace(houses=6, seeds=24)):
        assert game.board_module(Position.start(big)) is _bigboard
