"""Kalah engine: rules, positions, moves, notations and an exact solver.

The move generator and the search are compiled (Cython); see ``_board.pxd`` for the board.
"""

from .errors import (
    IllegalMoveError,
    InvalidNotationError,
    InvalidPositionError,
    InvalidRulesError,
    KalahError,
)
from .game import (
    SWAP,
    Game,
    Move,
    MoveResult,
    Outcome,
    is_over,
    legal_moves,
    outcome,
    perft,
    play,
)
from .position import MAX_SEEDS, Position, Side, Status, parse_position
from .results import INFINITY
from .rules import PRESETS, Rules

__version__ = "0.1.0"

__all__ = [
    "INFINITY",
    "MAX_SEEDS",
    "PRESETS",
    "SWAP",
    "Game",
    "IllegalMoveError",
    "InvalidNotationError",
    "InvalidPositionError",
    "InvalidRulesError",
    "KalahError",
    "Move",
    "MoveResult",
    "Outcome",
    "Position",
    "Rules",
    "Side",
    "Status",
    "__version__",
    "is_over",
    "legal_moves",
    "outcome",
    "parse_position",
    "perft",
    "play",
]
