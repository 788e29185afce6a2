"""Type stub of the compiled move generator of the big board (_bigboard.pyx): the same
functions and constants as the one-word board's (_board.pyi), compiled for a board of up to
12 houses and 600 seeds."""

from ._board import BOARD_MAX_HOUSES as BOARD_MAX_HOUSES
from ._board import BOARD_MAX_SEEDS as BOARD_MAX_SEEDS
from ._board import SWAP_CODE as SWAP_CODE
from ._board import final_stores as final_stores
from ._board import is_game_over as is_game_over
from ._board import legal_moves as legal_moves
from ._board import perft as perft
from ._board import play_move as play_move
