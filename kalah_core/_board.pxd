# cython: language_level=3
"""The board in machine words and the sowing, shared by the move generator and the search.

Everything here is relative to the player to move ("me"): ``me`` holds my houses, one byte per
house, house 1 (my leftmost) in the lowest byte; ``opp`` holds the opponent's houses the same way,
counted from the opponent's own left. With at most 8 houses a side and at most 255 seeds in all,
a side is one 64-bit word and every count fits its byte, so a whole lap of sowing is one add.

The sowing cycle seen from the mover is: my houses 0..h-1, my store (index h), the opponent's
houses h+1..2h; the opponent's store is skipped, so the cycle length is 2h+1.

Bigger boards (up to 12 houses, up to 600 seeds) have their own board of 16-bit lanes in
``_bigboard.pxd``, with the same names; the search is compiled once for each (``_search.pyx``,
``_search_big.pyx``). A position is searched on this board when it fits: at most MAX_HOUSES
houses and MAX_SEEDS seeds in all.
"""

from libc.stdint cimport uint64_t

from kalah_core._table cimport fmix

cdef enum:
    MAX_HOUSES = 8
    MAX_SEEDS = 255          # the engine's maximum total of seeds in a position
    ANY_MAX_HOUSES = 12      # houses of the biggest board of any board type (_bigboard.pxd)
    SWAP = ANY_MAX_HOUSES    # move code of the pie swap, above the houses of every board type
    # Move order (see _search_body.pxi): an extra turn outweighs any gain of seeds.
    ORDER_EXTRA_TURN = 1 << 16

cdef enum:
    FLAG_NORTH = 1           # the player to move sits on North
    FLAG_PIE = 2             # the pie rule is still pending in this game

ctypedef struct CRules:
    int houses
    int capture_always       # capture even when the facing house is empty
    int end_mover_empty      # end when the player to move is empty (else: when either side is)
    int remaining_empty_side # the empty side takes the rest (else: each side keeps its own)
    int majority             # a store holding more than half of all seeds ends the game
    int pie
    int total                # all seeds in the game, houses and stores (for `majority`)

ctypedef struct Board:
    uint64_t me
    uint64_t opp
    int my_store
    int opp_store
    int flags

ctypedef struct Sowing:
    int extra                # the last seed fell in my store: I move again
    int captured             # seeds moved to my store by a capture, the capturing seed included
    int over                 # the game ended; remaining seeds are already in the stores

cdef inline uint64_t ones(int k) noexcept nogil:
    """A word with the low k bytes set to 1 (k = 0..8)."""
    if k <= 0:
        return 0
    return (<uint64_t>0x0101010101010101) >> (64 - 8 * k)

cdef inline int byte_at(uint64_t w, int i) noexcept nogil:
    return <int>((w >> (8 * i)) & 0xFF)

cdef inline int seeds_in(uint64_t w) noexcept nogil:
    """Sum of the bytes of w; exact because no board holds more than 255 seeds."""
    return <int>((w * <uint64_t>0x0101010101010101) >> 56)

cdef inline int houses_used(uint64_t w) noexcept nogil:
    """The number of non-empty houses (non-zero bytes) of w: each byte folded to its low bit."""
    w |= w >> 4
    w |= w >> 2
    w |= w >> 1
    return seeds_in(w & <uint64_t>0x0101010101010101)

cdef inline uint64_t words8(uint64_t w) noexcept nogil:
    """A side as the endgame database reads it: one byte per house (this board's own form)."""
    return w

cdef inline uint64_t houses_hash(const Board* b, uint64_t salt) noexcept nogil:
    """The houses of b (both sides, in the mover's frame) hashed with ``salt``."""
    return fmix(b.me ^ fmix(b.opp + salt))

cdef inline uint64_t board_mix(const Board* b) noexcept nogil:
    """A cheap mix of the houses, for the parallel search's move-order perturbation."""
    return b.me * <uint64_t>0x9e3779b97f4a7c15 + b.opp

cdef inline bint side_empty(uint64_t w) noexcept nogil:
    return w == 0

cdef inline void clear_house(uint64_t* s, int i) noexcept nogil:
    s[0] &= ~((<uint64_t>0xFF) << (8 * i))

cdef inline void clear_side(uint64_t* s) noexcept nogil:
    s[0] = 0

cdef inline void add_run(uint64_t* s, int start, int count, uint64_t times) noexcept nogil:
    """Add ``times`` seeds to each of the houses start..start+count-1."""
    s[0] += times * (ones(count) << (8 * start))

include "_sowing.pxi"

cdef CRules make_crules(object rules, int total) except *
cdef Board make_board(object position) except *
cdef object board_to_position(const Board* b, object template)
