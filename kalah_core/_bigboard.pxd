# cython: language_level=3
"""The big board: up to 12 houses a side and up to 600 seeds in all, in 16-bit lanes.

The same frame, sowing and names as ``_board.pxd`` (read that first), for the positions that do
not fit its one byte per house in one word: a side is three 64-bit words of four 16-bit lanes,
house 1 (the mover's leftmost) in the lowest lane of the first word. A whole lap of sowing is
one add per word, as on the small board; a run of houses is at most one add per word.

Why lanes: the sowing stays the small board's few adds (a lap, a run of houses) instead of a
loop over up to 2h+1 pits, and seeds_in / houses_used stay a multiply per word. An array of
counts was not built to compare; docs/boards.md gives this board's speed against the one-word
board on the same trees. The search is compiled for this board from the same source as for
the small one (``_search_body.pxi``), so today's boards keep their code and their speed.
"""

from libc.stdint cimport uint64_t

from kalah_core._board cimport (
    CRules, Sowing, SWAP, FLAG_NORTH, FLAG_PIE, ANY_MAX_HOUSES, make_crules,
)
from kalah_core._table cimport fmix

cdef enum:
    MAX_HOUSES = ANY_MAX_HOUSES
    MAX_SEEDS = 600          # the engine's maximum total of seeds in a position
    WORDS = 3                # 64-bit words per side: 4 lanes each, MAX_HOUSES lanes
    # Move order (see _search_body.pxi): an extra turn outweighs any gain of seeds
    # (GAIN_WEIGHT * MAX_SEEDS + MOBILITY_WEIGHT * MAX_HOUSES + a house < 1 << 17).
    ORDER_EXTRA_TURN = 1 << 17

ctypedef struct Lanes:
    uint64_t w[WORDS]

ctypedef struct Board:
    Lanes me
    Lanes opp
    int my_store
    int opp_store
    int flags

cdef inline uint64_t ones16(int k) noexcept nogil:
    """A word with the low k lanes set to 1 (k = 0..4)."""
    if k <= 0:
        return 0
    return (<uint64_t>0x0001000100010001) >> (64 - 16 * k)

cdef inline void add_run(Lanes* s, int start, int count, uint64_t times) noexcept nogil:
    """Add ``times`` seeds to each of the houses start..start+count-1."""
    cdef int j, lo, hi, end = start + count
    for j in range(WORDS):
        lo = start if start > 4 * j else 4 * j
        hi = end if end < 4 * j + 4 else 4 * j + 4
        if lo < hi:
            s.w[j] += times * (ones16(hi - lo) << (16 * (lo - 4 * j)))

cdef inline int byte_at(Lanes s, int i) noexcept nogil:
    """The seeds in house i (named as on the small board, where a house is a byte)."""
    return <int>((s.w[i >> 2] >> (16 * (i & 3))) & 0xFFFF)

cdef inline void clear_house(Lanes* s, int i) noexcept nogil:
    s.w[i >> 2] &= ~((<uint64_t>0xFFFF) << (16 * (i & 3)))

cdef inline int seeds_in(Lanes s) noexcept nogil:
    """Sum of the lanes; exact because no board holds more than 65535 seeds."""
    cdef int n = 0, j
    for j in range(WORDS):
        n += <int>((s.w[j] * <uint64_t>0x0001000100010001) >> 48)
    return n

cdef inline int houses_used(Lanes s) noexcept nogil:
    """The number of non-empty houses: each lane folded to its low bit."""
    cdef int n = 0, j
    cdef uint64_t w
    for j in range(WORDS):
        w = s.w[j]
        w |= w >> 8
        w |= w >> 4
        w |= w >> 2
        w |= w >> 1
        n += <int>(((w & <uint64_t>0x0001000100010001) * <uint64_t>0x0001000100010001) >> 48)
    return n

cdef inline bint side_empty(Lanes s) noexcept nogil:
    return (s.w[0] | s.w[1] | s.w[2]) == 0

cdef inline uint64_t words8(Lanes s) noexcept nogil:
    """A side of at most 8 houses and 255 seeds as the endgame database reads it, one byte per
    house: lanes 0..7 packed into bytes."""
    cdef uint64_t lo = s.w[0], hi = s.w[1]
    lo = (lo | (lo >> 8)) & <uint64_t>0x0000FFFF0000FFFF
    lo = (lo | (lo >> 16)) & <uint64_t>0x00000000FFFFFFFF
    hi = (hi | (hi >> 8)) & <uint64_t>0x0000FFFF0000FFFF
    hi = (hi | (hi >> 16)) & <uint64_t>0x00000000FFFFFFFF
    return lo | (hi << 32)

cdef inline uint64_t houses_hash(const Board* b, uint64_t salt) noexcept nogil:
    """The houses of b (both sides, in the mover's frame) hashed with ``salt``."""
    cdef uint64_t x = salt
    cdef int j
    for j in range(WORDS):
        x = fmix(x ^ b.me.w[j])
        x = fmix(x + b.opp.w[j])
    return x

cdef inline uint64_t board_mix(const Board* b) noexcept nogil:
    """A cheap mix of the houses, for the parallel search's move-order perturbation."""
    return (b.me.w[0] ^ b.me.w[1] ^ b.me.w[2]) * <uint64_t>0x9e3779b97f4a7c15 \
        + (b.opp.w[0] ^ b.opp.w[1] ^ b.opp.w[2])

cdef inline void clear_side(Lanes* s) noexcept nogil:
    cdef int j
    for j in range(WORDS):
        s.w[j] = 0

include "_sowing.pxi"

cdef Board make_board(object position) except *
cdef object board_to_position(const Board* b, object template)
