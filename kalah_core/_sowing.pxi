# The rules of a move, written once for every board type: included at the end of each board's
# .pxd (_board.pxd, _bigboard.pxd), after its own Board and primitives (byte_at, seeds_in,
# side_empty, clear_house, clear_side, add_run), as the search is for each (_search_body.pxi).

cdef inline bint is_over(const Board* b, const CRules* r) noexcept nogil:
    """Whether the game has ended in b, with b.me the player to move."""
    if r.majority and (2 * b.my_store > r.total or 2 * b.opp_store > r.total):
        return True
    if side_empty(b.me):
        return True
    return side_empty(b.opp) and not r.end_mover_empty

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
    b.me, b.opp = b.opp, b.me
    b.my_store, b.opp_store = b.opp_store, b.my_store
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
