# cython: language_level=3
"""Python entry points of the move generator: legal moves, one move, the end, perft.

Arguments are checked here with the GIL; the work runs on the C board of ``_board.pxd``.
Moves are 0-based house indices or SWAP at this level; ``game.py`` speaks house numbers.
Positions that do not fit this board (more than MAX_HOUSES houses or MAX_SEEDS seeds) go to
``_bigboard``, which has the same entry points (``_moves.pxi``); ``game.py`` picks the module.
"""

from libc.stdint cimport uint64_t

from kalah_core.position import Position, Side

SWAP_CODE = SWAP
BOARD_MAX_HOUSES = MAX_HOUSES
BOARD_MAX_SEEDS = MAX_SEEDS


cdef CRules make_crules(object rules, int total) except *:
    cdef CRules r
    r.houses = rules.houses
    r.capture_always = rules.capture == "always"
    r.end_mover_empty = rules.end == "mover-empty"
    r.remaining_empty_side = rules.remaining == "empty-side"
    r.majority = rules.majority
    r.pie = rules.pie
    r.total = total
    return r


cdef uint64_t pack(object houses) except? 0:
    cdef uint64_t w = 0
    cdef int i
    for i in range(len(houses)):
        w |= (<uint64_t>houses[i]) << (8 * i)
    return w


cdef tuple unpack(uint64_t w, int h):
    return tuple([byte_at(w, i) for i in range(h)])


include "_moves.pxi"
