# cython: language_level=3
"""Exact and heuristic search: negamax alpha-beta with a transposition table.

Everything is relative to the player to move. A node's *value* is the final store difference
(mover minus opponent) under perfect play, stores included. Outside ``majority`` the future does
not depend on the stores, so the table is keyed on the houses only and stores the *future gain*
g = value - (my_store - opp_store); one house layout reached with different stores is one entry.
Under ``majority`` the mover's store joins the key (the opponent's follows from the total).
Nodes where the pie rule is pending are never stored: the swap's gain depends on the stores.
Nor are nodes within UNSTORED_ABOVE_DB seeds of the endgame database (see ``make_child``).

The hot path (``exact``, ``heuristic``) runs without the GIL on C structs only.
"""

from libc.stdint cimport uint64_t, int64_t
from libc.stdlib cimport abs, calloc, free
from libc.string cimport memset
from cython.parallel cimport parallel, threadid
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

from kalah_core._egdb cimport EGDB, EndgameTable, egdb_probe, egdb_rank
from kalah_core._board cimport (
    Board, CRules, Sowing, SWAP, FLAG_PIE, FLAG_NORTH, MAX_HOUSES, MAX_SEEDS,
    play, is_over, seeds_in, houses_used, byte_at, swap_legal, make_crules, make_board,
)
from kalah_core._table cimport (
    Table, Probe, TT_PROVEN as PROVEN, TT_NO_MOVE as NO_MOVE, TT_RULES_SALT, TT_STORE_MUL,
    fmix, tt_probe, tt_load, tt_store_word, __builtin_prefetch, tt_store, tt_prefetch, tt_init, tt_free, tt_clear,
)

cdef extern from *:
    """
    #include <stdint.h>
    static inline int64_t atomic_add(int64_t* p, int64_t v) {
        return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
    }
    static inline int atomic_load_int(const int* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
    static inline void atomic_store_int(int* p, int v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
    """
    int64_t atomic_add(int64_t* p, int64_t v) noexcept nogil
    int atomic_load_int(const int* p) noexcept nogil
    void atomic_store_int(int* p, int v) noexcept nogil

cdef extern from *:
    """
    /* Compile with KALAH_DEBUG=1 (setup.py reads the environment variable of that name) to
       check the search's return contract on small subtrees. */
    #ifndef KALAH_DEBUG
    #define KALAH_DEBUG 0
    #endif
    """
    const int KALAH_DEBUG

cdef enum:
    INF = 1000
    CHECK_EVERY = 1023       # nodes between clock and budget checks
    EVAL_STORES = 0          # heuristic leaf: store difference only
    EVAL_SIDES = 1           # store difference plus a quarter of the house-seed difference
    # Children of a node: at most 8 houses and the swap. The table's move is played first,
    # into the last slot, before the others are generated into slots 0..MAX_CHILDREN - 2.
    MAX_CHILDREN = MAX_HOUSES + 1
    TABLE_MOVE_SLOT = MAX_CHILDREN - 1
    # Static move order, best first: children of known value (they cost nothing), best first;
    # then extra turns; then seeds gained, less 3/8 of a seed for each house the opponent can
    # then move from; then the house nearer the store. A move that leaves the opponent fewer
    # replies leaves a smaller subtree to refute where it cuts, and most nodes of a proof are
    # such cuts: Kalah(6,5)'s proof takes 39 % fewer nodes. A gain is at most MAX_SEEDS, so
    # GAIN_WEIGHT * MAX_SEEDS + MOBILITY_WEIGHT * MAX_HOUSES + a house < EXTRA_TURN_WEIGHT and
    # EXTRA_TURN_WEIGHT + GAIN_WEIGHT * MAX_SEEDS + a house < KNOWN_FIRST - MAX_SEEDS.
    KNOWN_FIRST = 1 << 20
    EXTRA_TURN_WEIGHT = 1 << 16
    GAIN_WEIGHT = 128
    MOBILITY_WEIGHT = 48
    # Debug builds check exact()'s answers against a plain minimax below this many seeds.
    DEBUG_VERIFY_SEEDS = 7
    BUSY_SLOTS = 1 << 14     # the parallel search's set of nodes being searched
    MAX_THREADS = 64
    SMP_LAZY = 1
    SMP_ABDADA = 2
    DEFER_MIN_SEEDS = 12     # ABDADA defers at nodes with this many seeds or more in houses
    DEFER_ABOVE_DB = 4       # ... or this many more than the endgame database holds
    MAX_WATCH = 32           # nodes a thread watches for another thread's cut (see exact)
    UNSTORED_ABOVE_DB = 4    # nodes with at most this many seeds more than the database holds
                             # are searched without the table (see make_child)

ctypedef struct Shared:
    int stop                 # a thread has the answer: the others stop
    int defer                # simplified ABDADA: defer children another thread is searching
    int defer_min_seeds      # ... at nodes with at least this many seeds in houses
    int64_t nodes            # every thread's nodes, counted CHECK_EVERY + 1 at a time
    uint64_t busy[BUSY_SLOTS] # hashes of nodes being searched (a lossy set)

ctypedef struct Watch:
    uint64_t hash            # a node whose younger children this thread searches early
    int alpha, beta          # its window
    int d                    # its store difference (table bounds are on the gain to come)

ctypedef struct Search:
    CRules r
    Shared* shared           # NULL in a search on one thread
    int perturb              # Lazy SMP helper k > 0: its own move order at some nodes
    int move_depth           # the exact search tries first the move of an entry this deep
                             # (PROVEN: proven entries only; see Searcher.heuristic_move_depth)
    Table* tt
    int keyed_on_store       # majority: the mover's store is part of the key
    uint64_t salt            # the rule key mixed into every hash: one table serves all rules
    int64_t nodes
    int64_t node_limit       # 0: none
    int64_t deadline_ns      # 0: none
    int* interrupt           # the searcher's interrupt flag (Searcher.interrupt), or NULL
    int aborted
    int64_t horizon          # leaves scored by the evaluation (or by a heuristic entry)
    int eval_kind
    int etc_min_seeds        # enhanced transposition cutoff at nodes with at least this many
                             # seeds in houses (none with a database: see etc_min_seeds below)
    const EGDB* db           # endgame database for these rules, or NULL
    int db_max_seeds         # boards with at most this many seeds in houses are in db
    int table_min_seeds      # boards with fewer seeds in houses are never probed nor stored
    int watch_n              # nodes on the watch list, outermost first
    int cancel               # 1 + the index of the watched node another thread decided
    int cancel_value         # ... and its value (a bound outside its window)
    Watch watch[MAX_WATCH]
    int64_t cancels          # watched nodes decided by another thread while searched here
    int64_t contract_checks  # debug builds: exact() answers checked against minimax
    int64_t contract_broken  # debug builds: answers that broke the return contract

cdef inline int64_t now_ns() noexcept nogil:
    cdef timespec t
    clock_gettime(CLOCK_MONOTONIC, &t)
    return <int64_t>t.tv_sec * 1000000000 + t.tv_nsec

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

# ---------------------------------------------------------------------------------------------
# Threads of one search: each its own Search struct (counters, budget flag), sharing the
# table, a stop flag and the set of nodes being searched.
# ---------------------------------------------------------------------------------------------

cdef inline int busy_slot(uint64_t h) noexcept nogil:
    return <int>((h >> 40) & (BUSY_SLOTS - 1))   # bits the table's bucket index does not use

cdef inline bint is_busy(Shared* sh, uint64_t h) noexcept nogil:
    return tt_load(&sh.busy[busy_slot(h)]) == h

cdef inline void set_busy(Shared* sh, uint64_t h) noexcept nogil:
    if h:
        tt_store_word(&sh.busy[busy_slot(h)], h)

cdef inline void clear_busy(Shared* sh, uint64_t h) noexcept nogil:
    if h and tt_load(&sh.busy[busy_slot(h)]) == h:
        tt_store_word(&sh.busy[busy_slot(h)], 0)

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
    cdef uint64_t x = fmix(b.me ^ fmix(b.opp + s.salt))
    if s.keyed_on_store:
        x = fmix(x ^ (<uint64_t>b.my_store * TT_STORE_MUL))
    return x

cdef inline void probe(const Search* s, uint64_t h, Probe* p) noexcept nogil:
    tt_probe(s.tt, h, p)

cdef inline void store(Search* s, uint64_t h, int lower, int upper, int move, int depth,
                       int64_t work) noexcept nogil:
    tt_store(s.tt, h, lower, upper, move, depth, work)

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
            c.db_index = <int64_t>(s.db.offset[n] + egdb_rank(s.db, c.board.me, c.board.opp))
            __builtin_prefetch(s.db.values + c.db_index)
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
    g = s.db.values[c.db_index]
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
        if ((b.me * <uint64_t>0x9e3779b97f4a7c15 + b.opp) >> (60 - s.perturb)) & 1:
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
        return d + egdb_probe(s.db, b.me, b.opp, rest)
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
    cdef int move, v, best = -INF
    for move in range(MAX_CHILDREN):
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

cdef inline int evaluate(const Search* s, const Board* b) noexcept nogil:
    """Heuristic value of a node: the store difference, and with EVAL_SIDES a quarter of the
    seeds each side still holds (under `owner`, seeds tend to end with the side holding them)."""
    cdef int d = b.my_store - b.opp_store
    if s.eval_kind == EVAL_SIDES:
        return d + (seeds_in(b.me) - seeds_in(b.opp)) // 4
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
        return d + egdb_probe(s.db, b.me, b.opp, rest)
    if depth <= 0:
        s.horizon += 1
        return evaluate(s, b)
    p.move = NO_MOVE
    if use_table:
        probe(s, h, &p)
        if p.found and p.depth >= depth:
            if p.depth != PROVEN and (p.lower + d >= beta or p.upper + d <= alpha or p.lower == p.upper):
                s.horizon += 1
            if p.lower + d >= beta or p.lower == p.upper:
                return p.lower + d
            if p.upper + d <= alpha:
                return p.upper + d
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


cdef inline uint64_t rules_salt(const CRules* r, int keyed_on_store) noexcept nogil:
    """Hash salt of the options that values depend on (not ``seeds``, nor ``pie``: no entry is
    stored while a swap is pending); under majority, the total of seeds too."""
    cdef uint64_t code = <uint64_t>r.houses | (<uint64_t>r.capture_always << 8) \
        | (<uint64_t>r.end_mover_empty << 9) | (<uint64_t>r.remaining_empty_side << 10) \
        | (<uint64_t>r.majority << 11)
    if keyed_on_store:
        code |= <uint64_t>r.total << 16
    return TT_RULES_SALT + fmix(code)


cdef class Searcher:
    """A transposition table and the searches that use it. Reusable across positions and
    rules: the rules are salted into every hash, so entries of different rule sets never meet
    and a server keeps one warm table for all of them. Not thread-safe: one per thread or
    process."""

    cdef Search s
    cdef Table table
    cdef Shared* shared              # state shared by the threads of a parallel search
    cdef Search* helpers             # threads 1..threads-1 (thread 0 searches with s)
    cdef int _threads
    cdef int _smp                    # SMP_LAZY, SMP_ABDADA or both
    cdef readonly size_t size_bytes
    cdef object _rules_key
    cdef EndgameTable _table         # the database mapped for the current rules, kept alive
    cdef object _databases           # rule key -> EndgameTable
    cdef bint _dirty                 # something was stored since the last clear
    cdef int _unstored_above_db
    cdef int _etc_min_seeds
    cdef int _cut_move               # the root's move at the last fail-high (NO_MOVE: none)
    cdef int _interrupt              # set by interrupt(): every search aborts within 1024 nodes
    cdef int _live_lower             # mtdf's proven bounds so far (see live_bounds)
    cdef int _live_upper

    def __cinit__(self, int tt_mb=64):
        tt_init(&self.table, tt_mb)
        self.size_bytes = self.table.size_bytes
        self.s.tt = &self.table
        self.s.interrupt = &self._interrupt
        self._etc_min_seeds = 8
        self._unstored_above_db = UNSTORED_ABOVE_DB
        self.s.eval_kind = EVAL_SIDES
        self.s.move_depth = PROVEN
        self._rules_key = None
        self._databases = {}
        self.s.db = NULL
        self.s.db_max_seeds = -1
        self.threads = 1
        self._smp = SMP_ABDADA
        self._cut_move = NO_MOVE

    def __dealloc__(self):
        tt_free(&self.table)
        free(self.helpers)
        free(self.shared)

    property threads:
        """Threads of every exact search (one proof on many cores, sharing the table)."""
        def __get__(self):
            return self._threads
        def __set__(self, int n):
            cdef Search* helpers
            if n < 1 or n > MAX_THREADS:
                raise ValueError(f"threads must be 1..{MAX_THREADS}")
            if n > 1 and self.shared == NULL:
                self.shared = <Shared*>calloc(1, sizeof(Shared))
                if self.shared == NULL:
                    raise MemoryError()
            helpers = <Search*>calloc(n, sizeof(Search))
            if helpers == NULL:
                raise MemoryError()
            free(self.helpers)
            self.helpers = helpers
            self._threads = n

    property smp:
        """How the threads share a proof: 1 Lazy SMP (helpers order some nodes their own way),
        2 simplified ABDADA (every thread defers the children another is searching), 3 both."""
        def __get__(self):
            return self._smp
        def __set__(self, int mode):
            if mode not in (SMP_LAZY, SMP_ABDADA, SMP_LAZY | SMP_ABDADA):
                raise ValueError("smp must be 1, 2 or 3")
            self._smp = mode

    cdef int run(self, const Board* b, int alpha, int beta, int depth, uint64_t h) noexcept nogil:
        """exact() (``depth`` PROVEN) or heuristic() to ``depth`` sowings on every thread of the
        searcher. The first thread to finish has the answer and stops the others (any finished
        thread's is valid: an exact search finds proven bounds only in the table, and a
        heuristic one estimates as well as the others); their nodes and estimated leaves are
        added to s. s.aborted is set only when none finished."""
        cdef int n = self._threads, t, v, answer = 0, found = 0
        cdef int results[MAX_THREADS]
        cdef int finished[MAX_THREADS]
        cdef Search* w
        cdef Search* main = &self.s
        cdef Search* helpers = self.helpers
        cdef Shared* sh = self.shared
        self._dirty = True               # a clear between searches of one analysis counts too
        if n == 1:
            return search(main, b, alpha, beta, depth, h)
        # The helpers' nodes reach main.nodes only after the region, past its checks: a budget
        # spent by short searches is caught here.
        check_budget(main)
        if main.aborted:
            return 0
        sh.stop = 0
        sh.nodes = main.nodes
        main.watch_n = 0
        main.cancel = 0
        sh.defer = (self._smp & SMP_ABDADA) != 0
        sh.defer_min_seeds = self.s.db_max_seeds + DEFER_ABOVE_DB if self.s.db != NULL \
            else DEFER_MIN_SEEDS
        memset(sh.busy, 0, sizeof(sh.busy))
        main.shared = sh
        for t in range(1, n):
            helpers[t] = main[0]
            helpers[t].nodes = 0
            helpers[t].aborted = 0
            helpers[t].horizon = 0
            helpers[t].cancels = 0           # counters summed into main's after the region
            helpers[t].contract_checks = 0
            helpers[t].contract_broken = 0
            helpers[t].perturb = t if self._smp & SMP_LAZY else 0
        for t in range(n):
            finished[t] = 0
        with parallel(num_threads=n):
            t = threadid()
            w = main if t == 0 else &helpers[t]
            v = search(w, b, alpha, beta, depth, h)
            if not w.aborted:
                results[t] = v
                finished[t] = 1
                atomic_store_int(&sh.stop, 1)
        main.shared = NULL
        for t in range(1, n):
            main.nodes += helpers[t].nodes
            main.horizon += helpers[t].horizon
            main.cancels += helpers[t].cancels
            main.contract_checks += helpers[t].contract_checks
            main.contract_broken += helpers[t].contract_broken
        for t in range(n):
            if finished[t] and not found:
                answer = results[t]
                found = 1
        main.aborted = 0 if found else 1
        return answer

    def clear(self):
        """Empty the table (free when it is already empty)."""
        if self._dirty:
            with nogil:
                tt_clear(&self.table)
            self._dirty = False

    property etc_min_seeds:
        """Enhanced transposition cutoffs at nodes with at least this many seeds in houses, in
        searches without an endgame database. With one, a search probes none: the children's
        buckets cost more time than the nodes they save (hard set 1.08x faster without them,
        Kalah(6,5) equal; without a database 1.5x fewer nodes in equal time)."""
        def __get__(self):
            return self._etc_min_seeds
        def __set__(self, int v):
            self._etc_min_seeds = v
            self._rules_key = None       # re-select on the next search

    property unstored_above_db:
        """Nodes with at most this many seeds in houses more than the endgame database holds
        are searched without the table (0: every node above the database uses it)."""
        def __get__(self):
            return self._unstored_above_db
        def __set__(self, int v):
            if v < 0:
                raise ValueError("unstored_above_db must be >= 0")
            self._unstored_above_db = v
            self._rules_key = None       # re-select the database on the next search

    property heuristic_move_depth:
        """The exact search tries first the move of a heuristic entry searched at least this
        many sowings deep (and of every proven entry); 255 (the default): proven entries only."""
        def __get__(self):
            return self.s.move_depth
        def __set__(self, int v):
            if not 1 <= v <= PROVEN:
                raise ValueError(f"heuristic_move_depth must be 1..{PROVEN}")
            self.s.move_depth = v

    property eval_kind:
        def __get__(self):
            return self.s.eval_kind
        def __set__(self, int v):
            if v not in (EVAL_STORES, EVAL_SIDES):
                raise ValueError("eval_kind must be 0 (stores) or 1 (sides)")
            self.s.eval_kind = v

    cdef Board _prepare(self, object position, object rules, double time_ms, long long nodes) except *:
        if rules != self._rules_key:
            self._rules_key = rules
            self._select_database(rules)
        self.s.r = make_crules(rules, position.total_seeds)
        self.s.keyed_on_store = rules.majority
        self.s.salt = rules_salt(&self.s.r, self.s.keyed_on_store)
        self.s.nodes = 0
        if self.shared != NULL:
            self.shared.nodes = 0        # live_nodes reads it
        self.s.horizon = 0
        self.s.aborted = 0
        self.s.node_limit = nodes if nodes > 0 else 0
        self.s.deadline_ns = now_ns() + <int64_t>(time_ms * 1e6) if time_ms > 0 else 0
        return make_board(position)

    cdef uint64_t _hash(self, const Board* b) noexcept:
        return 0 if b.flags & FLAG_PIE else hash_of(&self.s, b)

    def add_database(self, key, EndgameTable table, int max_seeds):
        """Probe ``table`` (built for the rule key ``key``: houses, capture, end, remaining)
        in searches under matching rules."""
        self._databases[key] = (table, max_seeds)
        self._rules_key = None       # re-select on the next search

    cdef _select_database(self, rules):
        entry = None
        if not rules.majority:
            entry = self._databases.get((rules.houses, rules.capture, rules.end, rules.remaining))
        if entry is None:
            self._table = None
            self.s.db = NULL
            self.s.db_max_seeds = -1
            self.s.table_min_seeds = 0
            self.s.etc_min_seeds = self._etc_min_seeds
        else:
            self._table = entry[0]
            self.s.db = &self._table.db
            self.s.db_max_seeds = entry[1]
            self.s.table_min_seeds = entry[1] + self._unstored_above_db + 1
            self.s.etc_min_seeds = MAX_SEEDS + 1

    @property
    def database_seeds(self):
        """Seeds in houses covered by the database of the current rules (-1: none)."""
        return self.s.db_max_seeds

    def set_budget(self, double time_ms, long long nodes):
        """Restart the budget clock without touching the table (between calls of one analysis)."""
        self.s.node_limit = self.s.nodes + nodes if nodes > 0 else 0
        self.s.deadline_ns = now_ns() + <int64_t>(time_ms * 1e6) if time_ms > 0 else 0
        self.s.aborted = 0

    def mtdf(self, position, rules, int guess, int lower, int upper, double time_ms=0,
             long long nodes=0, bint fresh=True, long long pause_after=0):
        """Narrow proven bounds [lower, upper] on the value of ``position`` (not over) with
        null-window probes around ``guess``. Returns (lower, upper, nodes, aborted).
        ``pause_after``: stop once this call has searched that many nodes, with the bounds
        proven so far and ``aborted`` False (the budget is not spent; a caller may resume)."""
        cdef Board b
        cdef int g, beta, v
        cdef uint64_t root_hash
        cdef int64_t start_nodes, budget_limit
        self._cut_move = NO_MOVE
        if fresh:
            b = self._prepare(position, rules, time_ms, nodes)
        else:
            b = make_board(position)
        start_nodes = self.s.nodes
        budget_limit = self.s.node_limit
        if pause_after > 0 and (budget_limit == 0 or start_nodes + pause_after < budget_limit):
            self.s.node_limit = start_nodes + pause_after
        if is_over(&b, &self.s.r):
            raise ValueError("the game is over in this position")
        g = min(max(guess, lower), upper)
        root_hash = self._hash(&b)
        atomic_store_int(&self._live_lower, lower)
        atomic_store_int(&self._live_upper, upper)
        with nogil:
            while lower < upper:
                beta = g + 1 if g == lower else g
                v = self.run(&b, beta - 1, beta, PROVEN, root_hash)
                if self.s.aborted:
                    break
                if v < beta:
                    upper = v
                    atomic_store_int(&self._live_upper, upper)
                else:
                    lower = v
                    self._cut_move = self._stored_move(root_hash)
                    atomic_store_int(&self._live_lower, lower)
                g = v
        if self.s.node_limit != budget_limit:   # paused, unless the budget ran out too
            self.s.node_limit = budget_limit
            if self.s.aborted and not (budget_limit and self.s.nodes >= budget_limit) \
                    and not atomic_load_int(&self._interrupt) \
                    and not (self.s.deadline_ns and now_ns() >= self.s.deadline_ns):
                self.s.aborted = 0
        return lower, upper, self.s.nodes - start_nodes, bool(self.s.aborted)

    def probe(self, position, rules, int alpha, int beta):
        """One alpha-beta search of ``position`` with the window (alpha, beta): the fail-soft
        value (see ``exact``), or None when the budget ran out."""
        cdef Board b = make_board(position)
        cdef int v
        cdef uint64_t h = self._hash(&b)
        self._cut_move = NO_MOVE
        with nogil:
            v = self.run(&b, alpha, beta, PROVEN, h)
        if self.s.aborted:
            return None
        if v >= beta:
            self._cut_move = self._stored_move(h)
        return v

    def test(self, position, rules, int beta):
        """One null-window probe: True if the value is >= beta, False if < beta, None when the
        budget ran out."""
        cdef Board b = make_board(position)
        cdef int v
        cdef uint64_t h = self._hash(&b)
        with nogil:
            v = self.run(&b, beta - 1, beta, PROVEN, h)
        if self.s.aborted:
            return None
        return v >= beta

    def heuristic(self, position, rules, int depth, int alpha=-INF, int beta=INF,
                  double time_ms=0, long long nodes=0, bint fresh=True):
        """Depth-limited value (``depth`` sowings) of ``position``, on every thread (Lazy SMP:
        the helpers order some nodes their own way). Returns (value, nodes, aborted, horizon);
        horizon == 0 means no leaf was estimated, so the value is exact."""
        cdef Board b
        cdef int v
        cdef uint64_t h
        cdef int64_t start_nodes, start_horizon
        if fresh:
            b = self._prepare(position, rules, time_ms, nodes)
        else:
            b = make_board(position)
        if not 0 <= depth < PROVEN:
            raise ValueError(f"depth must be 0..{PROVEN - 1}")
        start_nodes = self.s.nodes
        start_horizon = self.s.horizon
        if is_over(&b, &self.s.r):
            raise ValueError("the game is over in this position")
        h = self._hash(&b)
        with nogil:
            v = self.run(&b, alpha, beta, depth, h)
        return v, self.s.nodes - start_nodes, bool(self.s.aborted), self.s.horizon - start_horizon

    cdef int _stored_move(self, uint64_t h) noexcept nogil:
        """The move of the table's entry for ``h`` (NO_MOVE without one). Right after a search
        of that node failed high it is the move that proved the bound (``exact`` stores it)."""
        cdef Probe p
        if h == 0:
            return NO_MOVE
        probe(&self.s, h, &p)
        return p.move if p.found and p.depth == PROVEN else NO_MOVE

    @property
    def cut_move(self):
        """The root's move (a move code) that proved the lower bound of the last ``mtdf`` or
        ``probe`` to fail high, as the table recorded it right after that search; None when
        none failed high or the table holds no move. A hint: a caller checks it before relying
        on it (a bound read from the table, not searched, may carry an older move)."""
        return None if self._cut_move == NO_MOVE else self._cut_move

    def begin(self, position, rules, double time_ms=0, long long nodes=0):
        """Start an analysis: select the rules and start the budget clock."""
        self._prepare(position, rules, time_ms, nodes)

    def table_move(self, position):
        """The best move stored for ``position`` (a move code), or None."""
        cdef Board b = make_board(position)
        cdef Probe p
        if b.flags & FLAG_PIE:
            return None
        probe(&self.s, hash_of(&self.s, &b), &p)
        return p.move if p.found and p.move != NO_MOVE else None

    def table_bounds(self, position):
        """Proven (lower, upper) bounds on the value of ``position`` from the table, or None."""
        cdef Board b = make_board(position)
        cdef Probe p
        cdef int d = b.my_store - b.opp_store
        if b.flags & FLAG_PIE:
            return None
        probe(&self.s, hash_of(&self.s, &b), &p)
        if p.found and p.depth == PROVEN:
            return p.lower + d, p.upper + d
        return None

    @property
    def nodes(self):
        return self.s.nodes

    @property
    def live_nodes(self):
        """Nodes so far, read from another thread while a search runs (every thread's)."""
        cdef int64_t n = self.s.nodes
        if self.shared != NULL and self.shared.nodes > n:
            n = self.shared.nodes
        return n

    @property
    def live_bounds(self):
        """The bounds the running (or last) ``mtdf`` has proven so far on its position, as
        (lower, upper): safe to read from another thread while it runs."""
        return atomic_load_int(&self._live_lower), atomic_load_int(&self._live_upper)

    def interrupt(self):
        """Stop the running search from another thread: every search aborts (as when its
        budget runs out) within CHECK_EVERY + 1 nodes, until ``clear_interrupt``."""
        atomic_store_int(&self._interrupt, 1)

    def clear_interrupt(self):
        atomic_store_int(&self._interrupt, 0)

    @property
    def interrupted(self):
        return atomic_load_int(&self._interrupt) != 0

    @property
    def debug_build(self):
        """Whether this extension was compiled with KALAH_DEBUG (return-contract checks)."""
        return bool(KALAH_DEBUG)

    @property
    def contract_checks(self):
        """Debug builds: answers of the exact search checked against minimax so far, and how
        many broke the return contract, as (checked, broken)."""
        return self.s.contract_checks, self.s.contract_broken

    @property
    def cancelled(self):
        """Searches of a node cut short because another thread decided it meanwhile (the
        table held bounds outside its window), over this searcher's life, every thread's."""
        return self.s.cancels

    @property
    def aborted(self):
        return bool(self.s.aborted)
