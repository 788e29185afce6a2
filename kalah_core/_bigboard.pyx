# cython: language_level=3
"""Python entry points of the move generator on the big board (``_bigboard.pxd``): the same as
``_board``'s (``_moves.pxi``), for positions of more than 8 houses or 255 seeds.
"""

from libc.stdint cimport uint64_t

from kalah_core.position import Position, Side

SWAP_CODE = SWAP
BOARD_MAX_HOUSES = MAX_HOUSES
BOARD_MAX_SEEDS = MAX_SEEDS


cdef Lanes pack(object houses) except *:
    cdef Lanes s
    cdef int i
    if len(houses) > MAX_HOUSES or sum(houses) > MAX_SEEDS:
        raise ValueError(f"the big board holds at most {MAX_HOUSES} houses and {MAX_SEEDS} seeds")
    clear_side(&s)
    for i in range(len(houses)):
        s.w[i >> 2] |= (<uint64_t>houses[i]) << (16 * (i & 3))
    return s


cdef tuple unpack(Lanes s, int h):
    return tuple([byte_at(s, i) for i in range(h)])


include "_moves.pxi"
