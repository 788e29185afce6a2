"""Type stub of the compiled move generator (_board.pyx)."""

from .position import Position
from .rules import Rules

SWAP_CODE: int
"""Move code of the pie swap (the same on every board); houses are codes 0..houses-1."""
BOARD_MAX_HOUSES: int
"""The most houses a side of this board holds."""
BOARD_MAX_SEEDS: int
"""The most seeds (houses and stores) this board holds."""

def legal_moves(position: Position, rules: Rules) -> list[int]: ...
def is_game_over(position: Position, rules: Rules) -> bool: ...
def final_stores(position: Position, rules: Rules) -> tuple[int, int]: ...
def play_move(position: Position, rules: Rules, move: int) -> tuple[Position, bool, int, bool]: ...
def perft(position: Position, rules: Rules, depth: int) -> int: ...
