# cython: language_level=3
"""The search's state and budget, the same for every board type (see ``_search.pyx``).

``_search.pyx`` and ``_search_big.pyx`` compile the search (``_search_body.pxi``) for the small
and the big board; both work on these structs, so one ``Searcher`` drives either.
"""

from libc.stdint cimport uint64_t, int64_t
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

from kalah_core._board cimport CRules
from kalah_core._egdb cimport EGDB
from kalah_core._table cimport (
    Table, Probe, TT_PROVEN as PROVEN, TT_RULES_SALT, fmix, tt_probe, tt_load, tt_store_word,
    tt_store,
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
    EVAL_SIDES = 1           # plus a quarter of the house-seed difference (on <= 6 houses)
    EVAL_FEATURES = 2        # plus weighted board features (Search.eval_w; see evaluate())
    EVAL_TERMS = 5           # the features' count
    # Static move order, best first: children of known value (they cost nothing), best first;
    # then extra turns; then seeds gained, less 3/8 of a seed for each house the opponent can
    # then move from; then the house nearer the store. A move that leaves the opponent fewer
    # replies leaves a smaller subtree to refute where it cuts, and most nodes of a proof are
    # such cuts: Kalah(6,5)'s proof takes 39 % fewer nodes. A gain is at most MAX_SEEDS, so
    # GAIN_WEIGHT * MAX_SEEDS + MOBILITY_WEIGHT * MAX_HOUSES + a house < EXTRA_TURN_WEIGHT and
    # EXTRA_TURN_WEIGHT + GAIN_WEIGHT * MAX_SEEDS + a house < KNOWN_FIRST - MAX_SEEDS, on every
    # board type (EXTRA_TURN_WEIGHT is each board's ORDER_EXTRA_TURN: see _search_body.pxi).
    KNOWN_FIRST = 1 << 20
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
    int same_draft           # heuristic entries cut only at their own depth (Searcher.same_draft)
    Table* tt
    int keyed_on_store       # majority: the mover's store is part of the key
    uint64_t salt            # the rule key mixed into every hash: one table serves all rules
    int64_t nodes
    int64_t expanded         # nodes whose children were generated: the published solver's count
    int64_t node_limit       # 0: none
    int64_t deadline_ns      # 0: none
    int* interrupt           # the searcher's interrupt flag (Searcher.interrupt), or NULL
    int aborted
    int64_t horizon          # leaves scored by the evaluation (or by a heuristic entry)
    int eval_kind
    int eval_w[EVAL_TERMS]   # EVAL_FEATURES: each feature's weight in 1/16 of a seed
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

cdef inline void probe(const Search* s, uint64_t h, Probe* p) noexcept nogil:
    tt_probe(s.tt, h, p)

cdef inline void store(Search* s, uint64_t h, int lower, int upper, int move, int depth,
                       int64_t work) noexcept nogil:
    tt_store(s.tt, h, lower, upper, move, depth, work)


cdef inline uint64_t rules_salt(const CRules* r, int keyed_on_store) noexcept nogil:
    """Hash salt of the options that values depend on (not ``seeds``, nor ``pie``: no entry is
    stored while a swap is pending); under majority, the total of seeds too."""
    cdef uint64_t code = <uint64_t>r.houses | (<uint64_t>r.capture_always << 8) \
        | (<uint64_t>r.end_mover_empty << 9) | (<uint64_t>r.remaining_empty_side << 10) \
        | (<uint64_t>r.majority << 11)
    if keyed_on_store:
        code |= <uint64_t>r.total << 16
    return TT_RULES_SALT + fmix(code)


