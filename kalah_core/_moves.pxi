# The move generator's Python entry points, compiled once for each board type: included by
# ``_board.pyx`` (the small board) and ``_bigboard.pyx`` (the big one), each of which defines
# ``pack``/``unpack`` (a side to and from a tuple of counts) before including it.
# Arguments are checked with the GIL; the work runs on the C board.

cdef Board make_board(object position) except *:
    cdef Board b
    south, north = position.south, position.north
    if position.to_move is Side.SOUTH:
        b.me, b.opp = pack(south), pack(north)
        b.my_store, b.opp_store = position.stores[0], position.stores[1]
        b.flags = 0
    else:
        b.me, b.opp = pack(north), pack(south)
        b.my_store, b.opp_store = position.stores[1], position.stores[0]
        b.flags = FLAG_NORTH
    if position.swap_available:
        b.flags |= FLAG_PIE
    return b


cdef object board_to_position(const Board* b, object template):
    cdef int h = len(template.south)
    mine, theirs = unpack(b.me, h), unpack(b.opp, h)
    if b.flags & FLAG_NORTH:
        return Position(theirs, mine, (b.opp_store, b.my_store), Side.NORTH, bool(b.flags & FLAG_PIE))
    return Position(mine, theirs, (b.my_store, b.opp_store), Side.SOUTH, bool(b.flags & FLAG_PIE))


def legal_moves(position, rules) -> list:
    """Move codes (0-based houses, then SWAP) legal in ``position``; empty when it is over."""
    cdef Board b = make_board(position)
    cdef CRules r = make_crules(rules, position.total_seeds)
    if is_over(&b, &r):
        return []
    moves = [i for i in range(r.houses) if byte_at(b.me, i)]
    if r.pie and swap_legal(&b):
        moves.append(SWAP)
    return moves


def is_game_over(position, rules) -> bool:
    cdef Board b = make_board(position)
    cdef CRules r = make_crules(rules, position.total_seeds)
    return is_over(&b, &r)


def final_stores(position, rules) -> tuple:
    """The stores (south, north) once the seeds left in houses are swept by the end rules."""
    cdef Board b = make_board(position)
    cdef CRules r = make_crules(rules, position.total_seeds)
    sweep(&b, &r)
    p = board_to_position(&b, position)
    return p.stores


def play_move(position, rules, int move) -> tuple:
    """Play a legal move code: ``(next position, extra_turn, captured, over)``."""
    cdef Board b = make_board(position)
    cdef CRules r = make_crules(rules, position.total_seeds)
    cdef Sowing s
    play(&b, move, &r, &s)
    return board_to_position(&b, position), bool(s.extra), s.captured, bool(s.over)


cdef unsigned long long perft_c(const Board* b, const CRules* r, int depth) noexcept nogil:
    # Every move is played, leaves included (no bulk counting), so perft(d) costs exactly
    # perft(1) + ... + perft(d) sowings: the figure the benchmark divides by.
    cdef unsigned long long total = 0
    cdef Board child
    cdef Sowing s
    cdef int i
    for i in range(r.houses):
        if byte_at(b.me, i):
            child = b[0]
            play(&child, i, r, &s)
            if depth == 1:
                total += 1
            elif not s.over:
                total += perft_c(&child, r, depth - 1)
    if r.pie and swap_legal(b):
        child = b[0]
        play(&child, SWAP, r, &s)
        total += 1 if depth == 1 else perft_c(&child, r, depth - 1)
    return total


def perft(position, rules, int depth) -> int:
    """Number of move sequences (sowings or swaps) of exactly ``depth`` moves from
    ``position``; a game that ends sooner counts nothing (as in chess perft). 1 at depth 0."""
    cdef Board b = make_board(position)
    cdef CRules r = make_crules(rules, position.total_seeds)
    cdef unsigned long long n
    if depth < 0:
        raise ValueError("depth must be >= 0")
    if depth == 0:
        return 1
    if is_over(&b, &r):
        return 0
    with nogil:
        n = perft_c(&b, &r, depth)
    return n
