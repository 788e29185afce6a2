# The search, compiled once for each board type: included by ``_search.pyx`` (the small board
# of ``_board.pxd``) and ``_search_big.pyx`` (the big board of ``_bigboard.pxd``) after they
# cimport their board's names (Board, play, seeds_in, byte_at, houses_used, words8,
# houses_hash, board_mix, ...). The state, the budget and the table are ``_searchdefs.pxd``'s.
# See ``_search.pyx`` for what the values and the table's entries mean.

cdef enum:
    # Children of a node: at most MAX_HOUSES houses and the swap. The table's move is played
    # first, into the last slot, before the others are generated into slots 0..MAX_CHILDREN - 2.
    MAX_CHILDREN = MAX_HOUSES + 1
    TABLE_MOVE_SLOT = MAX_CHILDREN - 1
    EXTRA_TURN_WEIGHT = ORDER_EXTRA_TURN     # see the move order in _searchdefs.pxd
    GROW_MARGIN_NS = 1000000000              # the table grows only this long before a deadline

# The budget: compiled into each search (not inline: called once in 1024 nodes).

cdef inline void count_node(Search* s) noexcept nogil:
    s.nodes += 1
    if (s.nodes & CHECK_EVERY) == 0:
        check_budget(s)

cdef void check_budget(Search* s) noexcept nogil:
    cdef int64_t total = s.nodes
    if s.interrupt != NULL and atomic_load_int(s.interrupt):
        s.aborted = 1
        return
    if s.shared != NULL:
        total = atomic_add(&s.shared.nodes, CHECK_EVERY + 1) + CHECK_EVERY + 1
        if atomic_load_int(&s.shared.stop):
            s.aborted = 1
            return
    if s.node_limit and total >= s.node_limit:
        s.aborted = 1
    elif s.deadline_ns and now_ns() >= s.deadline_ns:
        s.aborted = 1
    elif s.watch_n:
        check_watch(s)
    if s.tt.grow_at and s.tt.written >= s.tt.grow_at and s.shared == NULL and not s.aborted:
        # Grow the table (one thread only: a parallel search grows it to its cap first), unless
        # the deadline is near: populating the new pages can take a few hundred ms.
        if not s.deadline_ns or now_ns() + GROW_MARGIN_NS <= s.deadline_ns:
            tt_grow(s.tt)

cdef void check_watch(Search* s) noexcept nogil:
    """Cancel the search of the outermost watched node whose proven bounds in the table (another
    thread's, found meanwhile) already decide its window: the rest of its search is waste."""
    cdef Probe p
    cdef Watch* w
    cdef int i
    for i in range(s.watch_n):
        w = &s.watch[i]
        tt_probe(s.tt, w.hash, &p)
        if not p.found or p.depth != PROVEN:
            continue
        if p.lower + w.d >= w.beta:
            s.cancel_value = p.lower + w.d
        elif p.upper + w.d <= w.alpha:
            s.cancel_value = p.upper + w.d
        else:
            continue
        s.cancel = i + 1
        s.aborted = 1
        return

cdef inline uint64_t hash_of(const Search* s, const Board* b) noexcept nogil:
    cdef uint64_t x = houses_hash(b, s.salt)
    if s.keyed_on_store:
        x = fmix(x ^ (<uint64_t>b.my_store * TT_STORE_MUL))
    return x

# ---------------------------------------------------------------------------------------------
# Children: each move played on a copy of the board.
# ---------------------------------------------------------------------------------------------

ctypedef struct Child:
    Board board
    int move
    int extra
    int over
    int score                # ordering key: extra turns, then seeds gained, then nearer the store
    int value                # the mover's final value when over (a bound outside the window
                             # when futility decided the child: see make_child)
    uint64_t hash            # table hash of the child (0 when it is not stored)
    int upper                # proven upper bound on the child's value for the mover (or INF)
    int64_t db_index         # entry of the child in the database, -1 if none (see resolve)
    int db_seeds             # its seeds in houses (the packed format decodes with them)

cdef inline void make_child(const Search* s, const Board* b, int move, Child* c, int alpha,
                            int beta) noexcept nogil:
    cdef Sowing sw
    cdef int gain, n
    c.board = b[0]
    play(&c.board, move, &s.r, &sw)
    c.move = move
    c.extra = sw.extra
    c.over = sw.over
    if sw.extra:
        gain = c.board.my_store - b.my_store
        c.value = c.board.my_store - c.board.opp_store
    else:
        gain = c.board.opp_store - b.my_store
        c.value = c.board.opp_store - c.board.my_store
    if move == SWAP:
        c.score = 0
    elif sw.extra:
        c.score = EXTRA_TURN_WEIGHT + gain * GAIN_WEIGHT + move
    else:
        # c.board.me: the houses of the opponent, to move next.
        c.score = gain * GAIN_WEIGHT + (MAX_HOUSES - houses_used(c.board.me)) * MOBILITY_WEIGHT \
            + move
    if sw.over:
        c.score = KNOWN_FIRST + c.value
    c.hash = 0
    c.upper = INF
    c.db_index = -1
    if sw.over or c.board.flags & FLAG_PIE:
        return
    n = seeds_in(c.board.me) + seeds_in(c.board.opp)
    if n <= s.db_max_seeds:
        # Futility first: when even every seed left going one way cannot bring the child inside
        # the window (alpha, beta), that bound stands in for its value (as fail-soft allows) and
        # the database is not read.
        if c.value - n >= beta:
            c.value -= n
        elif c.value + n <= alpha:
            c.value += n
        else:
            # An exact leaf: the database knows the rest of the game. Start loading its entry;
            # resolve() reads it once every sibling's load is under way too.
            c.db_index = <int64_t>egdb_index(s.db, words8(c.board.me), words8(c.board.opp), n,
                                                 c.board.my_store)
            c.db_seeds = n
            egdb_prefetch(s.db, c.db_index)
            return
        c.over = 1
        c.score = KNOWN_FIRST + c.value
    elif n >= s.table_min_seeds:
        # Start loading the child's bucket now; it is probed soon after. Not for boards a few
        # seeds above the database: they are many, their subtrees small (a seed that reaches a
        # store drops a board into the database), and a probe costs a trip to memory where
        # searching a transposition again mostly does not.
        c.hash = hash_of(s, &c.board)
        tt_prefetch(s.tt, c.hash)

cdef inline void resolve(const Search* s, Child* c) noexcept nogil:
    """Read a child's database entry, if it has one: it becomes a leaf of known value."""
    cdef int g
    if c.db_index < 0:
        return
    g = egdb_at(s.db, c.db_index, c.db_seeds, egdb_context(words8(c.board.me), words8(c.board.opp)))
    c.db_index = -1
    c.over = 1
    c.value = g + c.board.my_store - c.board.opp_store
    if not c.extra:
        c.value = -c.value
    c.score = KNOWN_FIRST + c.value

cdef inline bint is_legal(const Search* s, const Board* b, int move) noexcept nogil:
    if move == SWAP:
        return swap_legal(b)
    return move < s.r.houses and byte_at(b.me, move) != 0

cdef inline int gen_children(const Search* s, const Board* b, int skip, Child* kids,
                             int* order, int alpha, int beta) noexcept nogil:
    """Play every legal move but ``skip`` into kids; order[] lists them best first."""
    cdef int n = 0, i, j, t
    for i in range(s.r.houses):
        if i != skip and byte_at(b.me, i):
            make_child(s, b, i, &kids[n], alpha, beta)
            n += 1
    if skip != SWAP and swap_legal(b):
        make_child(s, b, SWAP, &kids[n], alpha, beta)
        n += 1
    for i in range(n):
        resolve(s, &kids[i])
    for i in range(n):                       # insertion sort of indices, descending score
        t = i
        j = i - 1
        while j >= 0 and kids[order[j]].score < kids[t].score:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = t
    if s.perturb and n > 2 and not kids[order[0]].over and not kids[order[1]].over:
        # A Lazy SMP helper: at some nodes (a different half for each helper) try the
        # second move first, so that the threads' searches part ways.
        if (board_mix(b) >> (60 - s.perturb)) & 1:
            t = order[0]
            order[0] = order[1]
            order[1] = t
    return n

# ---------------------------------------------------------------------------------------------
# Exact search.
# ---------------------------------------------------------------------------------------------

cdef inline int exact_child(Search* s, Child* c, int alpha, int beta) noexcept nogil:
    """The value of a child for the player who made its move."""
    if c.over:
        return c.value
    if c.extra:
        return exact(s, &c.board, alpha, beta, c.hash)
    return -exact(s, &c.board, -beta, -alpha, c.hash)

cdef inline int exact(Search* s, const Board* b, int alpha, int beta, uint64_t h) noexcept nogil:
    """The value of the non-final node b, fail-soft, for alpha < beta:
    returns v with  v <= alpha  =>  true value <= v  (an upper bound);
                    v >= beta   =>  true value >= v  (a lower bound);
                    otherwise       v is the true value.
    h is the table hash of b (0 where b is not stored: the pie rule is pending, or b is
    just above the database).
    When s.aborted is set on return the result means nothing.
    A thread that has left an elder child to another thread and searches the younger ones
    first watches the node (see exact_node): those searches are wasted if the elder cuts. Once
    the table holds bounds that decide the node (the other thread's), check_watch cancels the
    watcher's search of it, which unwinds as an abort to here and returns the table's bound.
    Debug builds (KALAH_DEBUG) check this contract against minimax on small subtrees."""
    cdef int watched = s.watch_n
    cdef int v = exact_node(s, b, alpha, beta, h)
    if s.watch_n != watched:
        s.watch_n = watched
        if s.cancel == watched + 1:      # this node's search was cancelled: the table decides it
            s.cancel = 0
            s.aborted = 0
            s.cancels += 1
            v = s.cancel_value
    if KALAH_DEBUG and not s.aborted:
        check_contract(s, b, alpha, beta, v)
    return v

cdef int exact_node(Search* s, const Board* b, int alpha, int beta, uint64_t h) noexcept nogil:
    """exact() without the debug check."""
    cdef int d = b.my_store - b.opp_store
    cdef int rest = seeds_in(b.me) + seeds_in(b.opp)
    cdef int lo = d - rest, hi = d + rest        # futility: every seed left goes one way
    cdef int n = 0, k, i, v, best = -INF, best_move = NO_MOVE, a = alpha, first = NO_MOVE
    cdef int use_table = h != 0, may_defer, deferred
    cdef int64_t nodes_before = s.nodes
    cdef Probe p, q
    cdef Child kids[MAX_CHILDREN]
    cdef int order[MAX_CHILDREN]
    count_node(s)
    if s.aborted:
        return 0
    if rest <= s.db_max_seeds and not (b.flags & FLAG_PIE):
        return d + egdb_probe(s.db, words8(b.me), words8(b.opp), rest, b.my_store)
    if b.flags & FLAG_PIE:
        # A swap to come exchanges the stores: the difference may change sign.
        lo = -abs(d) - rest
        hi = abs(d) + rest
    p.move = NO_MOVE
    if use_table:
        probe(s, h, &p)
        if p.found and p.depth == PROVEN:
            if p.lower + d > lo:
                lo = p.lower + d
            if p.upper + d < hi:
                hi = p.upper + d
            if lo >= beta or lo == hi:
                return lo
            if hi <= alpha:
                return hi
    if lo >= beta:
        return lo
    if hi <= alpha:
        return hi
    s.expanded += 1                  # not settled on entry: its children are generated
    # The table's move first, before the other moves are even generated. Only a proven
    # entry's: a heuristic search's favourite orders short proofs worse than the static order.
    # After a deep estimate, deep entries' moves order a long one better (heuristic_move_depth,
    # Engine._mtdf).
    if p.move != NO_MOVE and p.depth >= s.move_depth and is_legal(s, b, p.move):
        first = p.move
        make_child(s, b, first, &kids[TABLE_MOVE_SLOT], a, beta)
        resolve(s, &kids[TABLE_MOVE_SLOT])
        best = exact_child(s, &kids[TABLE_MOVE_SLOT], a, beta)
        if s.aborted:
            return 0
        best_move = first
        if best > a:
            a = best
    if a < beta:
        n = gen_children(s, b, first, kids, order, a, beta)
        # No table probes when a child of known value (ordered first, best first) already fails
        # high: the loop below cuts on it. Half the cut nodes next to the database are such.
        if use_table and rest >= s.etc_min_seeds \
                and not (n and kids[order[0]].over and kids[order[0]].value >= beta):
            # Enhanced transposition cutoff: a child whose stored bounds already prove v >= beta;
            # and each child's proven upper bound, to skip those that cannot raise alpha.
            for k in range(n):
                if kids[k].hash == 0:
                    continue
                probe(s, kids[k].hash, &q)
                if q.found and q.depth == PROVEN:
                    if kids[k].extra:
                        v = q.lower + kids[k].board.my_store - kids[k].board.opp_store
                        kids[k].upper = q.upper + kids[k].board.my_store - kids[k].board.opp_store
                    else:
                        v = -(q.upper + kids[k].board.my_store - kids[k].board.opp_store)
                        kids[k].upper = -(q.lower + kids[k].board.my_store - kids[k].board.opp_store)
                    if v >= beta:
                        store(s, h, v - d, hi - d, kids[k].move, PROVEN, 1)
                        return v
        # Parallel searches leave for later the children another thread is searching now
        # (simplified ABDADA): their bounds will likely be in the table by then. A node that
        # defers one is watched (see exact) until it returns.
        may_defer = s.shared != NULL and s.shared.defer and rest >= s.shared.defer_min_seeds
        deferred = 0
        for k in range(n):
            i = order[k]
            if kids[i].upper <= a:
                # Proven unable to raise alpha: its bound stands in for its value.
                if kids[i].upper > best:
                    best = kids[i].upper
                    best_move = kids[i].move
                continue
            if may_defer:
                if best > -INF and kids[i].hash and is_busy(s.shared, kids[i].hash):
                    order[deferred] = i      # slots already read: deferred <= k
                    deferred += 1
                    if deferred == 1 and use_table and s.watch_n < MAX_WATCH:
                        # Its younger brothers now go first: wasted if the deferred one cuts.
                        s.watch[s.watch_n].hash = h
                        s.watch[s.watch_n].alpha = alpha
                        s.watch[s.watch_n].beta = beta
                        s.watch[s.watch_n].d = d
                        s.watch_n += 1
                    continue
                set_busy(s.shared, kids[i].hash)
                v = exact_child(s, &kids[i], a, beta)
                clear_busy(s.shared, kids[i].hash)
            else:
                v = exact_child(s, &kids[i], a, beta)
            if s.aborted:
                return 0
            if v > best:
                best = v
                best_move = kids[i].move
                if v > a:
                    a = v
                    if a >= beta:
                        break
        if a < beta:
            for k in range(deferred):
                i = order[k]
                if kids[i].upper <= a:
                    if kids[i].upper > best:
                        best = kids[i].upper
                        best_move = kids[i].move
                    continue
                v = exact_child(s, &kids[i], a, beta)
                if s.aborted:
                    return 0
                if v > best:
                    best = v
                    best_move = kids[i].move
                    if v > a:
                        a = v
                        if a >= beta:
                            break
    if use_table:
        if best <= alpha:
            hi = best
        elif best >= beta:
            lo = best
        else:
            lo = best
            hi = best
        store(s, h, lo - d, hi - d, best_move, PROVEN, s.nodes - nodes_before)
    return best

cdef int minimax(const Search* s, const Board* b) noexcept nogil:
    """The value of the non-final node b by plain negamax: no table, no database, no pruning."""
    cdef Board c
    cdef Sowing sw
    cdef int k, move, v, best = -INF
    for k in range(MAX_CHILDREN):
        move = k if k < MAX_CHILDREN - 1 else SWAP
        if not is_legal(s, b, move):
            continue
        c = b[0]
        play(&c, move, &s.r, &sw)
        if sw.over:
            v = c.my_store - c.opp_store if sw.extra else c.opp_store - c.my_store
        elif sw.extra:
            v = minimax(s, &c)
        else:
            v = -minimax(s, &c)
        if v > best:
            best = v
    return best

cdef void check_contract(Search* s, const Board* b, int alpha, int beta, int v) noexcept nogil:
    """Debug builds: count an answer of exact() that breaks its return contract."""
    cdef int true_value
    if alpha >= beta:
        s.contract_broken += 1
        return
    if seeds_in(b.me) + seeds_in(b.opp) > DEBUG_VERIFY_SEEDS:
        return
    true_value = minimax(s, b)
    s.contract_checks += 1
    if (v <= alpha and true_value > v) or (v >= beta and true_value < v) \
            or (alpha < v < beta and true_value != v):
        s.contract_broken += 1

# ---------------------------------------------------------------------------------------------
# Depth-limited heuristic search (same contract, for the value of the depth-limited tree).
# ---------------------------------------------------------------------------------------------

cdef inline void side_features(const int* mine, const int* theirs, int n,
                               int* extra, int* capture, int* overflow) noexcept nogil:
    """One side's features (its houses ``mine``, the opponent's ``theirs``, house 1 first):
    the houses that end in its store (an extra turn), the largest capture one sowing without a
    lap makes, and the seeds its houses would sow past its store into the opponent's row."""
    cdef int i, k, land
    extra[0] = 0
    capture[0] = 0
    overflow[0] = 0
    for i in range(n):
        k = mine[i]
        if k == 0:
            continue
        if k == n - i:
            extra[0] += 1
        elif k > n - i:
            overflow[0] += k - (n - i)
        else:
            land = i + k
            if mine[land] == 0 and theirs[n - 1 - land] > 0 \
                    and theirs[n - 1 - land] + 1 > capture[0]:
                capture[0] = theirs[n - 1 - land] + 1

cdef inline int evaluate(const Search* s, const Board* b) noexcept nogil:
    """Heuristic value of a node: the store difference, and with EVAL_SIDES a quarter of the
    seeds each side still holds (under `owner`, seeds tend to end with the side holding them);
    with EVAL_FEATURES weighted features of both sides (side_features: the mover's capture and
    the opponent's weigh separately, the mover moving first)."""
    cdef int d = b.my_store - b.opp_store
    cdef int i, n, t
    cdef int mine[MAX_HOUSES]
    cdef int theirs[MAX_HOUSES]
    cdef int me_extra, me_cap, me_over, op_extra, op_cap, op_over
    if s.eval_kind == EVAL_SIDES:
        return d + (seeds_in(b.me) - seeds_in(b.opp)) // 4
    if s.eval_kind == EVAL_FEATURES:
        n = s.r.houses
        for i in range(n):
            mine[i] = byte_at(b.me, i)
            theirs[i] = byte_at(b.opp, i)
        side_features(mine, theirs, n, &me_extra, &me_cap, &me_over)
        side_features(theirs, mine, n, &op_extra, &op_cap, &op_over)
        t = (s.eval_w[0] * (seeds_in(b.me) - seeds_in(b.opp))
             + s.eval_w[1] * (me_extra - op_extra)
             + s.eval_w[2] * me_cap - s.eval_w[3] * op_cap
             + s.eval_w[4] * (me_over - op_over))
        # round to the nearest seed, halves away from zero (C division truncates)
        return d + (t + 8) // 16 if t >= 0 else d - (8 - t) // 16
    return d

cdef inline int heuristic_child(Search* s, Child* c, int alpha, int beta, int depth) noexcept nogil:
    if c.over:
        return c.value
    if c.extra:
        return heuristic(s, &c.board, alpha, beta, depth, c.hash)
    return -heuristic(s, &c.board, -beta, -alpha, depth, c.hash)

cdef int heuristic(Search* s, const Board* b, int alpha, int beta, int depth,
                   uint64_t h) noexcept nogil:
    cdef int d = b.my_store - b.opp_store
    cdef int rest
    cdef int n = 0, k, v, best = -INF, best_move = NO_MOVE, a = alpha, first = NO_MOVE
    cdef int use_table = h != 0, stored_depth
    cdef int64_t nodes_before = s.nodes, horizon_before = s.horizon
    cdef Probe p
    cdef Child kids[MAX_CHILDREN]
    cdef int order[MAX_CHILDREN]
    count_node(s)
    if s.aborted:
        return 0
    rest = seeds_in(b.me) + seeds_in(b.opp)
    if rest <= s.db_max_seeds and not (b.flags & FLAG_PIE):
        return d + egdb_probe(s.db, words8(b.me), words8(b.opp), rest, b.my_store)
    if depth <= 0:
        s.horizon += 1
        return evaluate(s, b)
    p.move = NO_MOVE
    if use_table:
        probe(s, h, &p)
        if p.found and p.depth >= depth and (
                p.depth == depth or p.depth == PROVEN or not s.same_draft):
            if p.depth != PROVEN and (p.lower + d >= beta or p.upper + d <= alpha or p.lower == p.upper):
                s.horizon += 1
            if p.lower + d >= beta or p.lower == p.upper:
                return p.lower + d
            if p.upper + d <= alpha:
                return p.upper + d
    s.expanded += 1
    if p.move != NO_MOVE and is_legal(s, b, p.move):
        first = p.move
        make_child(s, b, first, &kids[TABLE_MOVE_SLOT], a, beta)
        resolve(s, &kids[TABLE_MOVE_SLOT])
        best = heuristic_child(s, &kids[TABLE_MOVE_SLOT], a, beta, depth - 1)
        if s.aborted:
            return 0
        best_move = first
        if best > a:
            a = best
    if a < beta:
        n = gen_children(s, b, first, kids, order, a, beta)
        for k in range(n):
            v = heuristic_child(s, &kids[order[k]], a, beta, depth - 1)
            if s.aborted:
                return 0
            if v > best:
                best = v
                best_move = kids[order[k]].move
                if v > a:
                    a = v
                    if a >= beta:
                        break
    if use_table:
        # A subtree with no estimated leaf (every line ended or reached the database within
        # the depth) was searched exactly: its fail-soft bound is proven, and stored as such.
        stored_depth = PROVEN if s.horizon == horizon_before else depth
        if best <= alpha:
            store(s, h, -INF, best - d, best_move, stored_depth, s.nodes - nodes_before)
        elif best >= beta:
            store(s, h, best - d, INF, best_move, stored_depth, s.nodes - nodes_before)
        else:
            store(s, h, best - d, best - d, best_move, stored_depth, s.nodes - nodes_before)
    return best


cdef inline int search(Search* s, const Board* b, int alpha, int beta, int depth,
                       uint64_t h) noexcept nogil:
    """exact() when ``depth`` is PROVEN, else heuristic() to ``depth`` sowings."""
    if depth == PROVEN:
        return exact(s, b, alpha, beta, h)
    return heuristic(s, b, alpha, beta, depth, h)


