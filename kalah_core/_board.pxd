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

cdef inline bint is_over(const Board* b, const CRules* r) noexcept nogil:
    """Whether the game has ended in b, with b.me the player to move."""
    if r.majority and (2 * b.my_store > r.total or 2 * b.opp_store > r.total):
        return True
    if b.me == 0:
        return True
    return b.opp == 0 and not r.end_mover_empty

cdef inline void sweep(Board* b, const CRules* r) noexcept nogil:
    """Move the seeds left in houses to the stores at the end of the game."""
    cdef int mine = seeds_in(b.me), theirs = seeds_in(b.opp)
    if r.remaining_empty_side and (b.me == 0 or b.opp == 0):
        # The player whose houses are empty takes what is left on the other side.
        if b.me == 0:
            b.my_store += theirs
        else:
            b.opp_store += mine
    else:
        # `owner`, or a majority end with neither side empty.
        b.my_store += mine
        b.opp_store += theirs
    b.me = 0
    b.opp = 0

cdef inline void flip(Board* b) noexcept nogil:
    """Hand the turn to the opponent: swap the frames."""
    cdef uint64_t w = b.me
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
        # The players exchange sides as they stand; the first player now moves from North,
        # which is the same board seen from the same frame, with the pie rule spent.
        b.flags &= ~FLAG_PIE
        out.over = 0
        return
    if b.flags & FLAG_NORTH:
        b.flags &= ~FLAG_PIE         # North has played its first turn: no swap any more
    n = byte_at(b.me, move)
    b.me &= ~((<uint64_t>0xFF) << (8 * move))
    laps = n // L
    rem = n - laps * L
    if laps:
        b.me += laps * ones(h)
        b.opp += laps * ones(h)
        b.my_store += laps
    ahead = h - 1 - move             # my houses after the one sown
    if rem <= ahead:
        if rem:
            b.me += ones(rem) << (8 * (move + 1))
    else:
        if ahead:
            b.me += ones(ahead) << (8 * (move + 1))
        rem -= ahead + 1
        b.my_store += 1
        if rem:
            k = rem if rem < h else h
            b.opp += ones(k)
            rem -= k
            if rem:                  # round past the opponent's store onto my first houses
                b.me += ones(rem)
    last = (move + n) % L
    if last == h:
        out.extra = 1
    elif last < h and byte_at(b.me, last) == 1:
        j = h - 1 - last
        facing = byte_at(b.opp, j)
        if facing or r.capture_always:
            b.me &= ~((<uint64_t>0xFF) << (8 * last))
            b.opp &= ~((<uint64_t>0xFF) << (8 * j))
            b.my_store += facing + 1
            out.captured = facing + 1
    if not out.extra:
        flip(b)
    out.over = is_over(b, r)
    if out.over:
        sweep(b, r)
        b.flags &= ~FLAG_PIE         # nothing left to swap for

cdef CRules make_crules(object rules, int total) except *
cdef Board make_board(object position) except *
cdef object board_to_position(const Board* b, object template)
