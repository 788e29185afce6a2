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

from kalah_core._egdb cimport EGDB, EndgameTable, egdb_probe, egdb_index, egdb_rank, egdb_at, egdb_prefetch, egdb_context
from kalah_core._board cimport (
    Board, CRules, Sowing, SWAP, FLAG_PIE, FLAG_NORTH, MAX_HOUSES, MAX_SEEDS, ORDER_EXTRA_TURN,
    play, is_over, seeds_in, houses_used, byte_at, swap_legal, make_crules, make_board, words8,
    houses_hash, board_mix,
)
from kalah_core._bigboard cimport (
    Board as BigBoard, MAX_HOUSES as BIG_MAX_HOUSES, MAX_SEEDS as BIG_MAX_SEEDS,
    is_over as big_is_over, make_board as make_big_board,
)
from kalah_core._search_big cimport big_search, big_hash
from kalah_core._table cimport (
    tt_import,
    Table, Probe, TT_PROVEN as PROVEN, TT_NO_MOVE as NO_MOVE, TT_RULES_SALT, TT_STORE_MUL,
    fmix, tt_probe, tt_load, tt_store_word, __builtin_prefetch, tt_store, tt_prefetch, tt_grow,
    tt_init, tt_free, tt_clear, TT_START_MB,
)
from kalah_core._searchdefs cimport *

include "_search_body.pxi"


# ---------------------------------------------------------------------------------------------
# The root: a position on the small board when it fits (at most MAX_HOUSES houses and MAX_SEEDS
# seeds in all), else on the big board, searched by the search compiled for it. Every node of
# a search is on the root's board: seeds are never created, houses never added.
# ---------------------------------------------------------------------------------------------

ctypedef struct Root:
    int big
    Board small
    BigBoard large

cdef int make_root(object position, Root* root) except -1:
    if len(position.south) <= MAX_HOUSES and position.total_seeds <= MAX_SEEDS:
        root.big = 0
        root.small = make_board(position)
    else:
        if len(position.south) > BIG_MAX_HOUSES or position.total_seeds > BIG_MAX_SEEDS:
            raise ValueError(f"the engine takes at most {BIG_MAX_HOUSES} houses and "
                             f"{BIG_MAX_SEEDS} seeds")
        root.big = 1
        root.large = make_big_board(position)
    return 0

cdef inline int root_flags(const Root* root) noexcept nogil:
    return root.large.flags if root.big else root.small.flags

cdef inline int root_difference(const Root* root) noexcept nogil:
    """The store difference of the root, for its mover."""
    if root.big:
        return root.large.my_store - root.large.opp_store
    return root.small.my_store - root.small.opp_store

cdef inline bint root_over(const Root* root, const CRules* r) noexcept nogil:
    return big_is_over(&root.large, r) if root.big else is_over(&root.small, r)

cdef inline uint64_t root_hash_of(const Search* s, const Root* root) noexcept nogil:
    return big_hash(s, &root.large) if root.big else hash_of(s, &root.small)

cdef inline int search_root(Search* s, const Root* root, int alpha, int beta, int depth,
                            uint64_t h) noexcept nogil:
    if root.big:
        return big_search(s, &root.large, alpha, beta, depth, h)
    return search(s, &root.small, alpha, beta, depth, h)


DEFAULT_EVAL_WEIGHTS = (1, 16, 7, 0, 0)
"""Evaluation 2's weights (sixteenths of a seed; see ``Searcher.eval_weights``). A least-squares
fit to depth-8 values of positions from noisy self-play on KGP boards of 10 and 12 houses gave
about (2, 32, 13, 0, 0): the mover's extra-turn houses and its capture carry the weight, the
opponent's capture and the seeds sown past the store fit near 0. Searched deeper, the fitted
weights overshoot (they stand for the next sowing, which a deeper search sees), so these are
half of them (``benchmarks/eval_match.py`` compares them; the scores: docs/search.md)."""


cpdef int board_evaluation(int houses) noexcept:
    """The evaluation of the depth-limited search on a board of ``houses`` a side: the
    house-seed term on up to 6 houses, the features (``DEFAULT_EVAL_WEIGHTS``) on more. On long
    rows the seeds a side holds are the opponent's to capture or to receive as much as its own,
    and the house-seed term loses to the store difference alone (``benchmarks/eval_match.py``;
    the scores: docs/search.md)."""
    return EVAL_SIDES if houses <= 6 else EVAL_FEATURES


cdef class Searcher:
    """A transposition table and the searches that use it. Reusable across positions and
    rules: the rules are salted into every hash, so entries of different rule sets never meet
    and a server keeps one warm table for all of them. Not thread-safe: one per thread or
    process."""

    cdef Search s
    cdef Table table
    cdef Table side                  # a transient table of its own for an estimate (side_table)
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
    cdef int _eval_set               # an evaluation set by the caller; -1: the board's (see below)

    def __cinit__(self, int tt_mb=64, int start_mb=TT_START_MB):
        cdef int i
        tt_init(&self.table, tt_mb, start_mb)
        self.size_bytes = self.table.cap_bytes
        self.s.tt = &self.table
        self.s.interrupt = &self._interrupt
        self._etc_min_seeds = 8
        self._unstored_above_db = UNSTORED_ABOVE_DB
        self.s.eval_kind = EVAL_SIDES
        for i in range(EVAL_TERMS):
            self.s.eval_w[i] = DEFAULT_EVAL_WEIGHTS[i]
        self._eval_set = -1
        self.s.move_depth = PROVEN
        self.s.same_draft = 0
        self._rules_key = None
        self._databases = {}
        self.s.db = NULL
        self.s.db_max_seeds = -1
        self.threads = 1
        self._smp = SMP_ABDADA
        self._cut_move = NO_MOVE

    def __dealloc__(self):
        tt_free(&self.table)
        tt_free(&self.side)
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

    cdef int run(self, const Root* b, int alpha, int beta, int depth, uint64_t h) noexcept nogil:
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
            return search_root(main, b, alpha, beta, depth, h)
        while tt_grow(main.tt):          # threads share the table: it cannot grow under them
            pass
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
            helpers[t].expanded = 0
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
            v = search_root(w, b, alpha, beta, depth, h)
            if not w.aborted:
                results[t] = v
                finished[t] = 1
                atomic_store_int(&sh.stop, 1)
        main.shared = NULL
        for t in range(1, n):
            main.nodes += helpers[t].nodes
            main.expanded += helpers[t].expanded
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

    def grow_table(self):
        """Grow the table one step now (as it does by itself when it fills): False when it is at
        its cap already."""
        return tt_grow(self.s.tt) == 1

    property table_bytes:
        """The table's memory in use now: it starts at ``start_mb`` and grows, as it fills, up
        to ``size_bytes`` (the ``tt_mb`` it was made with)."""
        def __get__(self):
            return self.s.tt.size_bytes

    def clear(self):
        """Empty the table (free when it is already empty)."""
        if self._dirty:
            with nogil:
                tt_clear(&self.table)
            self._dirty = False

    def side_table(self, int tt_mb):
        """Search on a transient, empty table of ``tt_mb`` MiB of its own until ``main_table``:
        the main table keeps what it holds meanwhile (a long proof's pause for a deep estimate:
        ``Engine._mtdf``)."""
        if self.s.tt == &self.side:
            raise RuntimeError("a side table is already in use")
        tt_init(&self.side, tt_mb)
        self.s.tt = &self.side

    def main_table(self, int import_depth=0):
        """Back to the main table, the side table freed; returns the entries stored into the
        main table first: with ``import_depth`` > 0, each of the side table's entries searched
        at least that many sowings deep (proven ones included), stored as the search would."""
        cdef int64_t copied = 0
        if self.s.tt != &self.side:
            return 0
        if import_depth > 0:
            with nogil:
                copied = tt_import(&self.table, &self.side, import_depth)
        self.s.tt = &self.table
        tt_free(&self.side)
        return copied

    property etc_min_seeds:
        """Enhanced transposition cutoffs at nodes with at least this many seeds in houses, in
        searches without an endgame database. With one, a search probes none: the children's
        buckets cost more time than the nodes they save; without a database they pay (the
        measurements: HISTORY.md)."""
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

    property same_draft:
        """Whether a heuristic table entry cuts only a search of its own depth. False (the
        default): an entry searched deeper cuts too, as in most engines. True: estimates of
        different depths are never compared, so the root's moves are weighed at one depth even
        when an earlier search (the agent's pondering) looked deeper along some of them; the
        deeper entries' moves still order the search."""
        def __get__(self):
            return bool(self.s.same_draft)
        def __set__(self, bint v):
            self.s.same_draft = v

    property eval_weights:
        """The weights of evaluation 2 (features), in sixteenths of a seed: the house-seed
        difference, the difference of houses that end in their store, the mover's largest
        capture, the opponent's largest capture (subtracted), the difference of seeds sown past
        the store into the other row."""
        def __get__(self):
            return tuple(self.s.eval_w[i] for i in range(EVAL_TERMS))
        def __set__(self, weights):
            cdef int i
            values = [int(w) for w in weights]
            if len(values) != EVAL_TERMS or any(abs(w) > 1024 for w in values):
                raise ValueError(f"eval_weights must be {EVAL_TERMS} integers in [-1024, 1024]")
            for i in range(EVAL_TERMS):
                self.s.eval_w[i] = values[i]

    property eval_kind:
        """The heuristic evaluation: 0 the store difference, 1 plus a quarter of the house-seed
        difference, 2 plus weighted features (eval_weights); by default (or after setting -1)
        the one for the board of each search's rules (:func:`board_evaluation`)."""
        def __get__(self):
            return self.s.eval_kind
        def __set__(self, int v):
            if v not in (-1, EVAL_STORES, EVAL_SIDES, EVAL_FEATURES):
                raise ValueError("eval_kind must be 0 (stores), 1 (sides), 2 (features) "
                                 "or -1 (the board's)")
            self._eval_set = v
            if v >= 0:
                self.s.eval_kind = v

    cdef int _prepare(self, object position, object rules, double time_ms, long long nodes,
                      Root* root) except -1:
        # Under majority a database serves one game's total of seeds.
        key = (rules, position.total_seeds) if rules.majority else rules
        if key != self._rules_key:
            self._rules_key = key
            self._select_database(rules, position.total_seeds)
        self.s.r = make_crules(rules, position.total_seeds)
        if self._eval_set < 0:
            self.s.eval_kind = board_evaluation(rules.houses)
        self.s.keyed_on_store = rules.majority
        self.s.salt = rules_salt(&self.s.r, self.s.keyed_on_store)
        self.s.nodes = 0
        self.s.expanded = 0
        if self.shared != NULL:
            self.shared.nodes = 0        # live_nodes reads it
        self.s.horizon = 0
        self.s.aborted = 0
        self.s.node_limit = nodes if nodes > 0 else 0
        self.s.deadline_ns = now_ns() + <int64_t>(time_ms * 1e6) if time_ms > 0 else 0
        return make_root(position, root)

    cdef uint64_t _hash(self, const Root* b) noexcept:
        return 0 if root_flags(b) & FLAG_PIE else root_hash_of(&self.s, b)

    def add_database(self, key, EndgameTable table, int max_seeds):
        """Probe ``table`` (built for the rule key ``key``: houses, capture, end, remaining
        and, under `majority`, the game's seeds, else 0) in searches under matching rules."""
        self._databases[key] = (table, max_seeds)
        self._rules_key = None       # re-select on the next search

    cdef _select_database(self, rules, int total):
        entry = self._databases.get((rules.houses, rules.capture, rules.end, rules.remaining,
                                     total if rules.majority else 0))
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
            self.s.etc_min_seeds = BIG_MAX_SEEDS + 1

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
        cdef Root b
        cdef int g, beta, v
        cdef uint64_t root_hash
        cdef int64_t start_nodes, budget_limit
        self._cut_move = NO_MOVE
        if fresh:
            self._prepare(position, rules, time_ms, nodes, &b)
        else:
            make_root(position, &b)
        start_nodes = self.s.nodes
        budget_limit = self.s.node_limit
        if pause_after > 0 and (budget_limit == 0 or start_nodes + pause_after < budget_limit):
            self.s.node_limit = start_nodes + pause_after
        if root_over(&b, &self.s.r):
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
        cdef Root b
        cdef int v
        cdef uint64_t h
        make_root(position, &b)
        h = self._hash(&b)
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
        cdef Root b
        cdef int v
        cdef uint64_t h
        make_root(position, &b)
        h = self._hash(&b)
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
        cdef Root b
        cdef int v
        cdef uint64_t h
        cdef int64_t start_nodes, start_horizon
        if fresh:
            self._prepare(position, rules, time_ms, nodes, &b)
        else:
            make_root(position, &b)
        if not 0 <= depth < PROVEN:
            raise ValueError(f"depth must be 0..{PROVEN - 1}")
        start_nodes = self.s.nodes
        start_horizon = self.s.horizon
        if root_over(&b, &self.s.r):
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
        cdef Root b
        self._prepare(position, rules, time_ms, nodes, &b)

    def table_move(self, position):
        """The best move stored for ``position`` (a move code), or None."""
        cdef Root b
        cdef Probe p
        make_root(position, &b)
        if root_flags(&b) & FLAG_PIE:
            return None
        probe(&self.s, root_hash_of(&self.s, &b), &p)
        return p.move if p.found and p.move != NO_MOVE else None

    def table_bounds(self, position):
        """Proven (lower, upper) bounds on the value of ``position`` from the table, or None."""
        cdef Root b
        cdef Probe p
        cdef int d
        make_root(position, &b)
        d = root_difference(&b)
        if root_flags(&b) & FLAG_PIE:
            return None
        probe(&self.s, root_hash_of(&self.s, &b), &p)
        if p.found and p.depth == PROVEN:
            return p.lower + d, p.upper + d
        return None

    @property
    def nodes(self):
        return self.s.nodes

    @property
    def expanded(self):
        """Of ``nodes``, those not settled on entry (by the database, futility or their own
        table entry): the nodes whose children were generated, as the published solver
        counts its nodes."""
        return self.s.expanded

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

