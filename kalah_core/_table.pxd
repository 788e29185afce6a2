# cython: language_level=3
"""The transposition table: 16-byte entries, four to a 64-byte bucket (one cache line).

A table starts small (``TT_START_MB``) within the address space of its cap and grows by
``TT_GROWTH`` as it fills (``tt_grow``): a search that needs few entries keeps them in the
caches and pays no kernel zeroing of memory it never uses; a long one reaches the cap.

An entry holds proven or depth-limited bounds on a node's *future gain* g (the node's value
minus its store difference now; see ``_search.pyx``), the best move found and the work spent.
The table is shared by every thread of a search without locks: an entry is written as two
64-bit words, ``check`` and ``data``, with ``check = key ^ data``. A reader takes one copy of
``data`` and accepts it only when ``check ^ data`` is its key, so an entry torn by two writers
racing on it reads as a miss, never as another position's bounds (Hyatt and Mann's lockless
hashing). A key of 0 marks an empty slot (a real key of 0 is stored as 1).

Replacement: the same key is overwritten in place (but proven bounds are never traded for a
heuristic score); otherwise the slot with the least work, heuristic entries before proven ones.
"""

from libc.stdint cimport uint8_t, int16_t, uint64_t, int64_t

cdef enum:
    TT_BUCKET = 4            # entries per bucket: 4 x 16 bytes = one cache line
    TT_PROVEN = 255          # depth of an entry holding proven bounds on the true g
    TT_NO_MOVE = 15          # no best move stored
    TT_HEURISTIC_FIRST = 256 # replacement priority bonus of proven entries over heuristic ones
    TT_START_MB = 16         # a table's first size (at most its cap): it grows as it fills
    TT_GROWTH = 4            # each growth multiplies its buckets by this ...
    TT_GROW_LOAD = 1         # ... once it has written this many new entries a slot

ctypedef struct EntryFields:
    int16_t lower            # lower bound on g
    int16_t upper            # upper bound on g
    uint8_t move             # best move: 0..7 a house, 8 the swap, TT_NO_MOVE none
    uint8_t depth            # sowings searched below a heuristic entry; TT_PROVEN: proven bounds
    uint8_t work             # log2 of the nodes searched below the entry: replacement priority
    uint8_t spare

ctypedef union EntryData:
    EntryFields f
    uint64_t word

ctypedef struct Entry:
    uint64_t check           # key ^ data.word; 0 with data 0: an empty slot
    EntryData data

ctypedef struct Table:
    Entry* entries
    uint64_t mask            # buckets - 1
    size_t size_bytes        # in use now: the first buckets of the reservation
    size_t cap_bytes         # the most it grows to (the caller's MiB): its address space
    void* reserved           # the reservation (mapped without access beyond size_bytes)
    size_t reserved_bytes
    uint64_t written         # entries written over another's or into an empty slot since it
                             # last grew or was cleared, counted while it may still grow
    uint64_t grow_at         # ... at which it grows; 0: it never will

ctypedef struct Probe:
    int found
    int lower
    int upper
    int move
    int depth

cdef extern from *:
    """
    /* Relaxed atomic loads and stores: every thread sees whole 64-bit words, and the compiler
       reads an entry's words exactly once (no locks, no fences: torn entries fail the check). */
    #include <stdint.h>
    static inline uint64_t tt_load(const uint64_t* p) {
        return __atomic_load_n(p, __ATOMIC_RELAXED);
    }
    static inline void tt_store_word(uint64_t* p, uint64_t v) {
        __atomic_store_n(p, v, __ATOMIC_RELAXED);
    }
    /* Hash constants: Murmur3's finaliser multipliers; odd salts from the fractional digits
       of sqrt(2) (the key), the golden ratio (the rules) and a 64-bit LCG multiplier (the store
       under `majority`). Any odd constants with mixed bits would do. */
    #define TT_FMIX_MUL_1 0xff51afd7ed558ccdULL
    #define TT_FMIX_MUL_2 0xc4ceb9fe1a85ec53ULL
    #define TT_KEY_SALT 0x6a09e667f3bcc909ULL
    #define TT_RULES_SALT 0x9e3779b97f4a7c15ULL
    #define TT_STORE_MUL 0x2545f4914f6cdd1dULL
    /* The multipliers' inverses modulo 2^64: fmix is a bijection, undone by unfmix. */
    #define TT_FMIX_INV_1 0x4f74430c22a54005ULL
    #define TT_FMIX_INV_2 0x9cb4b2f8129337dbULL
    """
    const uint64_t TT_FMIX_MUL_1, TT_FMIX_MUL_2, TT_KEY_SALT, TT_RULES_SALT, TT_STORE_MUL
    const uint64_t TT_FMIX_INV_1, TT_FMIX_INV_2
    uint64_t tt_load(const uint64_t* p) noexcept nogil
    void tt_store_word(uint64_t* p, uint64_t v) noexcept nogil
    void __builtin_prefetch(const void* addr) noexcept nogil

cdef inline uint64_t fmix(uint64_t x) noexcept nogil:
    """Murmur3's 64-bit finaliser: every input bit reaches every output bit."""
    x ^= x >> 33
    x *= TT_FMIX_MUL_1
    x ^= x >> 33
    x *= TT_FMIX_MUL_2
    x ^= x >> 33
    return x

cdef inline uint64_t unfmix(uint64_t x) noexcept nogil:
    """The inverse of fmix."""
    x ^= x >> 33
    x *= TT_FMIX_INV_2
    x ^= x >> 33
    x *= TT_FMIX_INV_1
    x ^= x >> 33
    return x

cdef inline int log2_work(int64_t n) noexcept nogil:
    cdef int w = 0
    while n > 1 and w < 255:
        n >>= 1
        w += 1
    return w

cdef inline Entry* tt_bucket(const Table* t, uint64_t h) noexcept nogil:
    return t.entries + ((h & t.mask) * TT_BUCKET)

cdef inline void tt_prefetch(const Table* t, uint64_t h) noexcept nogil:
    __builtin_prefetch(tt_bucket(t, h))

cdef inline uint64_t tt_key(uint64_t h) noexcept nogil:
    """The key checked in a bucket: a second hash, independent of the bucket index."""
    cdef uint64_t k = fmix(h ^ TT_KEY_SALT)
    return k if k else 1

cdef inline uint64_t tt_hash_of(uint64_t k) noexcept nogil:
    """The hash whose key is k (tt_key is a bijection but for the key 0, stored as 1)."""
    return unfmix(k) ^ TT_KEY_SALT

cdef inline void tt_probe(const Table* t, uint64_t h, Probe* p) noexcept nogil:
    cdef Entry* e = tt_bucket(t, h)
    cdef uint64_t k = tt_key(h)
    cdef EntryData d
    cdef int i
    p.found = 0
    p.move = TT_NO_MOVE
    for i in range(TT_BUCKET):
        d.word = tt_load(&e[i].data.word)
        if tt_load(&e[i].check) ^ d.word == k:
            p.found = 1
            p.lower = d.f.lower
            p.upper = d.f.upper
            p.move = d.f.move
            p.depth = d.f.depth
            return

cdef inline void tt_store(Table* t, uint64_t h, int lower, int upper, int move, int depth,
                          int64_t work) noexcept nogil:
    cdef Entry* e = tt_bucket(t, h)
    cdef uint64_t k = tt_key(h)
    cdef EntryData d, old
    cdef int i, victim = 0, prio, best_prio = 1 << 30
    for i in range(TT_BUCKET):
        old.word = tt_load(&e[i].data.word)
        if tt_load(&e[i].check) ^ old.word == k:
            if depth != TT_PROVEN and old.f.depth == TT_PROVEN:
                return               # never trade proven bounds for a heuristic score
            victim = i
            best_prio = -2           # the same position's entry: not a new one
            break
        if tt_load(&e[i].check) ^ old.word == 0:
            prio = -1                # an empty slot
        else:
            prio = old.f.work + (TT_HEURISTIC_FIRST if old.f.depth == TT_PROVEN else 0)
        if prio < best_prio:
            best_prio = prio
            victim = i
    d.f.lower = <int16_t>lower
    d.f.upper = <int16_t>upper
    d.f.move = <uint8_t>move
    d.f.depth = <uint8_t>depth
    d.f.work = <uint8_t>log2_work(work)
    d.f.spare = 0
    tt_store_word(&e[victim].check, k ^ d.word)
    tt_store_word(&e[victim].data.word, d.word)
    if t.grow_at and best_prio != -2:
        t.written += 1           # a new entry (only one thread uses a table that may grow)

cdef inline int64_t tt_import(Table* dst, const Table* src, int min_depth) noexcept nogil:
    """Store every entry of ``src`` at least ``min_depth`` deep into ``dst`` (its hash
    recovered from its key)."""
    cdef uint64_t i, n = (src.mask + 1) * TT_BUCKET, k
    cdef int64_t copied = 0
    cdef EntryData d
    for i in range(n):
        d.word = src.entries[i].data.word
        k = src.entries[i].check ^ d.word
        if k == 0 or d.f.depth < min_depth:
            continue
        tt_store(dst, tt_hash_of(k), d.f.lower, d.f.upper, d.f.move, d.f.depth,
                 (<int64_t>1) << d.f.work)
        copied += 1
    return copied

cdef int tt_init(Table* t, int tt_mb, int start_mb=*) except -1
cdef int tt_grow(Table* t) noexcept nogil
cdef void tt_free(Table* t) noexcept
cdef void tt_clear(Table* t) noexcept nogil
