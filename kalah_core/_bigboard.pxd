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

cdef inline bint is_over(const Board* b, const CRules* r) noexcept nogil:
    """Whether the game has ended in b, with b.me the player to move."""
    if r.majority and (2 * b.my_store > r.total or 2 * b.opp_store > r.total):
        return True
    if side_empty(b.me):
        return True
    return side_empty(b.opp) and not r.end_mover_empty

cdef inline void clear_side(Lanes* s) noexcept nogil:
    cdef int j
    for j in range(WORDS):
        s.w[j] = 0

cdef inline void sweep(Board* b, const CRules* r) noexcept nogil:
    """Move the seeds left in houses to the stores at the end of the game."""
    cdef int mine = seeds_in(b.me), theirs = seeds_in(b.opp)
    if r.remaining_empty_side and (mine == 0 or theirs == 0):
        # The player whose houses are empty takes what is left on the other side.
        if mine == 0:
            b.my_store += theirs
        else:
            b.opp_store += mine
    else:
        # `owner`, or a majority end with neither side empty.
        b.my_store += mine
        b.opp_store += theirs
    clear_side(&b.me)
    clear_side(&b.opp)

cdef inline void flip(Board* b) noexcept nogil:
    """Hand the turn to the opponent: swap the frames."""
    cdef Lanes w = b.me
    cdef int s = b.my_store
    b.me = b.opp
    b.opp = w
    b.my_store = b.opp_store
    b.opp_store = s
    b.flags ^= FLAG_NORTH

cdef inline bint swap_legal(const Board* b) noexcept nogil:
    return (b.flags & (FLAG_PIE | FLAG_NORTH)) == (FLAG_PIE | FLAG_NORTH)

cdef inline void play(Board* b, int move, const CRules* r, Sowing* out) noexcept nogil:
    """Play a legal move (a non-empty house 0..h-1, or SWAP) and leave b in the frame of the
    player to move next, with the game's end applied (``out.over``)."""
    cdef int h = r.houses, L = 2 * r.houses + 1
    cdef int n, laps, rem, ahead, k, last, j, facing
    out.extra = 0
    out.captured = 0
    if move == SWAP:
        b.flags &= ~FLAG_PIE
        out.over = 0
        return
    if b.flags & FLAG_NORTH:
        b.flags &= ~FLAG_PIE         # North has played its first turn: no swap any more
    n = byte_at(b.me, move)
    clear_house(&b.me, move)
    laps = n // L
    rem = n - laps * L
    if laps:
        add_run(&b.me, 0, h, <uint64_t>laps)
        add_run(&b.opp, 0, h, <uint64_t>laps)
        b.my_store += laps
    ahead = h - 1 - move             # my houses after the one sown
    if rem <= ahead:
        if rem:
            add_run(&b.me, move + 1, rem, 1)
    else:
        if ahead:
            add_run(&b.me, move + 1, ahead, 1)
        rem -= ahead + 1
        b.my_store += 1
        if rem:
            k = rem if rem < h else h
            add_run(&b.opp, 0, k, 1)
            rem -= k
            if rem:                  # round past the opponent's store onto my first houses
                add_run(&b.me, 0, rem, 1)
    last = (move + n) % L
    if last == h:
        out.extra = 1
    elif last < h and byte_at(b.me, last) == 1:
        j = h - 1 - last
        facing = byte_at(b.opp, j)
        if facing or r.capture_always:
            clear_house(&b.me, last)
            clear_house(&b.opp, j)
            b.my_store += facing + 1
            out.captured = facing + 1
    if not out.extra:
        flip(b)
    out.over = is_over(b, r)
    if out.over:
        sweep(b, r)
        b.flags &= ~FLAG_PIE         # nothing left to swap for

cdef Board make_board(object position) except *
cdef object board_to_position(const Board* b, object template)
