# cython: language_level=3
"""Endgame database: the builder (OpenMP over both cores) and the read-only memory map.

See ``_egdb.pxd`` for the index and ``egdb.py`` for the file format and the Python API.

Building. Level n (boards with n seeds in houses) needs only lower levels and itself: sowing
never takes a seed out of a store. A move that stays in the level (no seed reaches a store, no
capture) only moves seeds toward the mover's store, so the potential
P = sum over both sides of seeds x (distance of their house to its owner's store) strictly falls
and a level has no cycles. The builder walks each level in rank order, in chunks spread over
the threads (OpenMP dynamic schedule); a board whose same-level child is not solved yet solves
the child first (a memoized recursion, at most P deep). Two threads may solve the same child at
once: both compute the same byte, and every access to the level being built is a relaxed
atomic byte load or store, so that race is benign and defined. Lower levels are complete and
read plainly (the end of each parallel region is a barrier).

g of a board = max over its moves of (gain + g(child)) when the move gives an extra turn and
(gain - g(child)) when the turn passes, where gain is played on a copy with both stores zero:
the child's stores then hold exactly what this move put in each store (sowing, capture, and the
sweep when the move ends the game), and g(child) = 0 when the game is over. A board where the
game is already over holds its sweep's result.

The packed format (``packed``, 4 bits a board: see ``_egdb.pxd``) is built the same way, a
level at a time in bytes; while level n is solved each thread counts, for each context (seeds
and non-empty houses), how often each k = (g + n) / 2 occurs. Then the 15 values of k seen
most often become the context's window, two parallel passes write the escapes a chunk holds
and then the nibbles and escapes, and the level's bytes are given back to the kernel chunk by
chunk. Lower levels are read packed, so the build holds the packed levels below n and the
bytes of level n only.

The radix format (``packed`` = 2, see ``_egdb.pxd``) is built the same way: from the same
counts each context gets a window of 13 values (for the digits of radix 14) and of 12 (radix
13); two parallel passes over superblocks of 34,816 boards (whole words and blocks) count and
then write the words, the escape codes (3 bits, or-ed in atomically: a chunk's first and last
word of codes may be shared) and the far bytes; then, in order, the far count before each 504
codes of the level. A level's first word may hold the level below's last boards: it is read
back to its number (whose digits of this level are still 0) and completed.
"""

from libc.stdint cimport int8_t, int16_t, uint8_t, uint16_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset
from posix.fcntl cimport O_RDONLY, open as c_open
from posix.mman cimport (
    MADV_DONTNEED, MADV_HUGEPAGE, MADV_WILLNEED, MAP_ANONYMOUS, MAP_FAILED, MAP_NORESERVE,
    MAP_PRIVATE, MAP_SHARED, PROT_READ, PROT_WRITE, madvise, mmap, munmap,
)
from posix.stat cimport fstat, struct_stat
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec
from posix.unistd cimport close as c_close

from cpython.buffer cimport PyBUF_READ
from cpython.memoryview cimport PyMemoryView_FromMemory
from cython.parallel cimport prange, threadid

from kalah_core._board cimport Board, CRules, MAX_HOUSES, Sowing, byte_at, is_over, play, \
    seeds_in, sweep

cdef extern from *:
    """
    #include <stdint.h>
    static inline signed char egdb_load(const signed char* p) {
        return __atomic_load_n(p, __ATOMIC_RELAXED);
    }
    static inline void egdb_store(signed char* p, signed char v) {
        __atomic_store_n(p, v, __ATOMIC_RELAXED);
    }
    static inline int egdb_ctz(unsigned long long x) { return __builtin_ctzll(x); }
    static inline int egdb_load_int(const int* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
    static inline void egdb_store_int(int* p, int v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
    static inline uint64_t egdb_load_u64(const uint64_t* p) {
        return __atomic_load_n(p, __ATOMIC_RELAXED);
    }
    static inline void egdb_add(uint64_t* p, uint64_t v) {
        __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
    }
    static inline void egdb_or_u64(uint64_t* p, uint64_t v) {
        __atomic_fetch_or(p, v, __ATOMIC_RELAXED);
    }
    """
    int8_t egdb_load(const int8_t* p) noexcept nogil
    void egdb_store(int8_t* p, int8_t v) noexcept nogil
    int egdb_ctz(unsigned long long x) noexcept nogil
    int egdb_load_int(const int* p) noexcept nogil
    void egdb_store_int(int* p, int v) noexcept nogil
    uint64_t egdb_load_u64(const uint64_t* p) noexcept nogil
    void egdb_add(uint64_t* p, uint64_t v) noexcept nogil
    void egdb_or_u64(uint64_t* p, uint64_t v) noexcept nogil

cdef enum:
    CHUNK = 1 << 15          # boards per unit of parallel work
    WINDOW_CONST = EGDB_ESCAPE
    BLOCK_CONST = 1 << EGDB_BLOCK_SHIFT
    RADIX_CHUNK = EGDB_DIGITS << (EGDB_WORD_SHIFT + EGDB_SUPER_SHIFT)  # a superblock of boards

MAX_SEEDS = EGDB_MAX_SEEDS
HEADER_SIZE = EGDB_HEADER_SIZE
WINDOW = EGDB_ESCAPE     # values of k a nibble codes (the 16th nibble is the escape)
BLOCK = 1 << EGDB_BLOCK_SHIFT
RADIX_MAX_SEEDS = EGDB_RADIX_MAX_SEEDS
MAX_SEEDS_IN_GAME = 255   # a majority database's most seeds in a game (the one-word board's)

# ---------------------------------------------------------------------------------------------
# Index: binomials, level offsets, unranking and the walk in rank order.
# ---------------------------------------------------------------------------------------------

cdef uint64_t* make_binom(int houses) except NULL:
    """C(s, k) for k = 0..2h-1 and s < EGDB_STRIDE, row after row, and zero rows for
    k = 2h..EGDB_ROWS-1 (values too big for 64 bits wrap: every value a rank uses is below
    its level's size)."""
    cdef int k, s
    cdef uint64_t* t = <uint64_t*>malloc(sizeof(uint64_t) * EGDB_ROWS * EGDB_STRIDE)
    if t == NULL:
        raise MemoryError()
    for k in range(EGDB_ROWS):
        for s in range(EGDB_STRIDE):
            if k == 0:
                t[s] = 1
            elif s == 0:
                t[k * EGDB_STRIDE] = 0
            else:
                t[k * EGDB_STRIDE + s] = t[(k - 1) * EGDB_STRIDE + s - 1] \
                    + t[k * EGDB_STRIDE + s - 1]
    for k in range(2 * houses, EGDB_ROWS):
        for s in range(EGDB_STRIDE):
            t[k * EGDB_STRIDE + s] = 0
    return t

cdef void fill_offsets(EGDB* db) noexcept:
    """Each level's first entry; under `majority` (db.total > 0) also each level's stores: the
    mover's store s and the opponent's, total - n - s, both at most half the total."""
    cdef int n, lo, hi, k = 2 * db.houses - 1, half = db.total // 2
    db.offset[0] = 0
    for n in range(db.max_seeds + 1):
        db.store_lo[n] = 0
        db.width[n] = 1
        if db.total:
            lo = max(0, db.total - n - half)
            hi = min(half, db.total - n)
            db.store_lo[n] = lo
            db.width[n] = max(0, hi - lo + 1)
        db.offset[n + 1] = db.offset[n] + db.binom[k * EGDB_STRIDE + n + k] * <uint64_t>db.width[n]

cdef inline uint64_t compact_cells(uint64_t x) noexcept nogil:
    """Bytes 0, 2, 4, 6 of x to bytes 0..3 (the inverse of egdb_spread)."""
    x &= <uint64_t>0x00FF00FF00FF00FF
    x = (x | (x >> 8)) & <uint64_t>0x0000FFFF0000FFFF
    return (x | (x >> 16)) & <uint64_t>0xFFFFFFFF

cdef inline void board_of(uint64_t lo, uint64_t hi, uint64_t* me, uint64_t* opp) noexcept nogil:
    """The sides from the interleaved cells (see _egdb.pxd)."""
    me[0] = compact_cells(lo) | (compact_cells(hi) << 32)
    opp[0] = compact_cells(lo >> 8) | (compact_cells(hi >> 8) << 32)

def level_size(int houses, int n) -> int:
    """Boards with n seeds in the 2h houses: C(n + 2h - 1, 2h - 1)."""
    from math import comb
    return comb(n + 2 * houses - 1, 2 * houses - 1)

def entry_count(int houses, int max_seeds, int total=0) -> int:
    """Boards with at most max_seeds seeds in houses: C(N + 2h, 2h); under `majority` (a
    game of ``total`` seeds) the entries: a board's for each store the mover may hold."""
    from math import comb
    if not total:
        return comb(max_seeds + 2 * houses, 2 * houses)
    half = total // 2
    return sum(comb(n + 2 * houses - 1, 2 * houses - 1)
               * max(0, min(half, total - n) - max(0, total - n - half) + 1)
               for n in range(max_seeds + 1))

cdef inline uint64_t pad8(uint64_t x) noexcept nogil:
    return (x + 7) & ~(<uint64_t>7)

def packed_layout(int houses, int max_seeds, unsigned long long escapes=0) -> dict:
    """Byte offsets (after the header) and lengths of the packed format's sections: the window
    table (level n's row at n * EGDB_CONTEXTS), the nibbles, the escape counts before each block of 512
    boards, and the escape bytes."""
    cdef uint64_t e = entry_count(houses, max_seeds)
    cdef uint64_t window = <uint64_t>(max_seeds + 1) * EGDB_CONTEXTS
    cdef uint64_t nibbles = pad8((e + 1) // 2)
    cdef uint64_t blocks = 8 * ((e >> EGDB_BLOCK_SHIFT) + 1)
    return {
        "window": 0,
        "nibbles": window,
        "blocks": window + nibbles,
        "escapes": window + nibbles + blocks,
        "fixed": window + nibbles + blocks,   # every section but the escapes
        "total": window + nibbles + blocks + escapes,
    }

def radix_layout(int houses, int max_seeds, unsigned long long escapes=0,
                 unsigned long long far=0) -> dict:
    """Byte offsets (after the header) and lengths of the radix format's sections: the windows
    ((N + 1) x 2 x EGDB_RADIX_CONTEXTS int8), the words (17 boards each), the escapes before
    each block (uint16, from the superblock's) and superblock (uint64), then the escapes' codes
    (3 bits each, 21 a uint64), the far escapes before each 504 codes (uint64) and the far
    bytes."""
    cdef uint64_t e = entry_count(houses, max_seeds)
    cdef uint64_t words = e // EGDB_DIGITS + 1
    cdef uint64_t blocks = (words >> EGDB_WORD_SHIFT) + 2
    cdef uint64_t supers = (blocks >> EGDB_SUPER_SHIFT) + 2
    cdef uint64_t window = pad8(<uint64_t>(max_seeds + 1) * 2 * EGDB_RADIX_CONTEXTS)
    cdef uint64_t at = 0
    out = {"window": 0}
    at = window
    out["words"] = at
    at += 8 * words
    out["blocks"] = at
    at += pad8(2 * blocks)
    out["supers"] = at
    at += 8 * supers
    out["fixed"] = at           # every section but the escapes'
    out["codes"] = at
    at += 8 * (escapes // EGDB_CODES + 1)
    out["code_blocks"] = at
    at += 8 * (escapes // (EGDB_CODES * EGDB_CODE_BLOCK) + 1)
    out["far"] = at
    at += far
    out["total"] = at
    return out

def radix_radices() -> list:
    """The radix of each of the 17 digits of a radix-format word."""
    return [egdb_radix_of(j) for j in range(EGDB_DIGITS)]

def radix_encode(digits) -> int:
    """The radix-format word of 17 digits (each below its radix)."""
    cdef uint64_t acc = 0
    cdef int j, d
    if len(digits) != EGDB_DIGITS:
        raise ValueError(f"a word holds {EGDB_DIGITS} digits")
    for j in range(EGDB_DIGITS):
        d = digits[j]
        if not 0 <= d < egdb_radix_of(j):
            raise ValueError(f"digit {j} must be 0..{egdb_radix_of(j) - 1}")
        acc += <uint64_t>d * egdb_radix_weight[j]
    return egdb_radix_encode(acc)

def radix_decode(uint64_t word) -> tuple:
    """The 17 digits of a radix-format word, read one by one as a probe reads them, and the
    escapes (digits equal to radix - 1) among them, counted as an escape's rank counts them."""
    cdef uint64_t w = word
    return ([egdb_radix_digit(word, j) for j in range(EGDB_DIGITS)],
            [egdb_radix_escapes(word, 0, j) for j in range(EGDB_DIGITS + 1)],
            egdb_radix_words_escapes(&w, 1))

cdef void unrank(const EGDB* db, int n, uint64_t r, uint64_t* lo, uint64_t* hi) noexcept nogil:
    """The cells of rank r in level n (inverse of egdb_rank_cells)."""
    cdef int k = 2 * db.houses, i, s, prev
    cdef int bars[2 * MAX_HOUSES]
    s = n + k - 2
    for i in range(k - 2, -1, -1):
        while db.binom[(i + 1) * EGDB_STRIDE + s] > r:
            s -= 1
        bars[i] = s
        r -= db.binom[(i + 1) * EGDB_STRIDE + s]
        s -= 1
    lo[0] = 0
    hi[0] = 0
    prev = -1
    for i in range(k):
        s = bars[i] if i < k - 1 else n + k - 1
        if i < 8:
            lo[0] |= (<uint64_t>(s - prev - 1)) << (8 * i)
        else:
            hi[0] |= (<uint64_t>(s - prev - 1)) << (8 * (i - 8))
        prev = s

cdef inline bint next_cells(uint64_t* lo, uint64_t* hi) noexcept nogil:
    """Step to the cells of the next rank in the same level; False after the last one.
    Colex successor: with j the first non-empty cell after cell 0, cell j gives one seed to
    cell j - 1, which also takes cell 0's seeds (cells 1..j-1 are empty)."""
    cdef uint64_t m = lo[0], o = hi[0], c0 = m & 0xFF, rest = m & ~(<uint64_t>0xFF)
    cdef int j
    if rest:
        j = egdb_ctz(rest) >> 3
        lo[0] = m - (<uint64_t>1 << (8 * j)) - c0 + ((c0 + 1) << (8 * (j - 1)))
        return True
    if o:
        j = egdb_ctz(o) >> 3
        if j == 0:
            lo[0] = (c0 + 1) << 56
            hi[0] = o - 1
        else:
            lo[0] = 0
            hi[0] = o - (<uint64_t>1 << (8 * j)) + ((c0 + 1) << (8 * (j - 1)))
        return True
    return False

# ---------------------------------------------------------------------------------------------
# Solving one board.
# ---------------------------------------------------------------------------------------------

ctypedef struct Builder:
    EGDB db                  # db.values aliases out; packed: db.nibbles etc. alias the below
    int8_t* out              # g of every board of the level being built (and, unpacked, all)
    CRules r
    int packed
    uint8_t* fixed           # packed: window, nibbles, block counts (the file's layout)
    uint8_t* nib
    int8_t* win
    uint64_t* blocks
    int8_t* esc
    uint64_t esc_count
    uint64_t esc_cap
    # the radix format (packed == 2): esc_count counts the escape codes
    uint64_t* words
    int8_t* rwin
    uint16_t* block_esc
    uint64_t* super_esc
    uint8_t* codes           # esc_cap bytes (a multiple of 8), zero past the codes (3 bits
                             # each, 21 a uint64)
    uint64_t* code_blocks
    uint64_t code_blocks_cap
    int8_t* far
    uint64_t far_count
    uint64_t far_cap

cdef inline int terminal_g(const CRules* r, uint64_t me, uint64_t opp) noexcept nogil:
    cdef Board b
    b.me = me
    b.opp = opp
    b.my_store = 0
    b.opp_store = 0
    b.flags = 0
    sweep(&b, r)
    return b.my_store - b.opp_store

cdef int solve(const Builder* bd, uint64_t me, uint64_t opp, int n) noexcept nogil:
    """g of the non-final board (me, opp) of level n; levels below n are complete."""
    cdef int h = bd.r.houses, m, n2, g, v, best = -EGDB_MAX_SEEDS - 1  # below every value
    cdef uint64_t idx
    cdef Board b
    cdef Sowing sw
    for m in range(h):
        if byte_at(me, m) == 0:
            continue
        b.me = me
        b.opp = opp
        b.my_store = 0
        b.opp_store = 0
        b.flags = 0
        play(&b, m, &bd.r, &sw)
        v = b.my_store - b.opp_store
        if not sw.over:
            n2 = seeds_in(b.me + b.opp)      # no byte carries: each house holds <= 127
            idx = bd.db.offset[n2] + egdb_rank(&bd.db, b.me, b.opp)
            if n2 == n:
                g = egdb_load(bd.out + idx)
                if g == EGDB_UNKNOWN:
                    g = solve(bd, b.me, b.opp, n)
                    egdb_store(bd.out + idx, <int8_t>g)
            else:
                g = egdb_at(&bd.db, idx, n2, egdb_context(b.me, b.opp))
            v += g
        if not sw.extra:
            v = -v
        if v > best:
            best = v
    return best

cdef void run_chunk(const Builder* bd, int n, uint64_t start, uint64_t stop,
                    uint64_t* hist) noexcept nogil:
    """Solve ranks start..stop-1 of level n (walking the cells in rank order). With ``hist``
    (packed builds: this thread's), count each board's k in its context there: every rank is
    walked once, whichever thread's recursion solved it."""
    cdef uint64_t lo, hi, me, opp, i
    cdef int8_t* out = bd.out + bd.db.offset[n]
    cdef int g
    cdef size_t width = <size_t>(n + 1)
    cdef Board b
    unrank(&bd.db, n, start, &lo, &hi)
    b.my_store = 0
    b.opp_store = 0
    b.flags = 0
    for i in range(start, stop):
        g = egdb_load(out + i)
        if g == EGDB_UNKNOWN or hist != NULL:
            board_of(lo, hi, &me, &opp)
        if g == EGDB_UNKNOWN:
            b.me = me
            b.opp = opp
            if is_over(&b, &bd.r):
                g = terminal_g(&bd.r, me, opp)
            else:
                g = solve(bd, me, opp, n)
            egdb_store(out + i, <int8_t>g)
        if hist != NULL:
            hist[<size_t>egdb_context(me, opp) * width + <size_t>((g + n) >> 1)] += 1
        next_cells(&lo, &hi)

cdef void solve_row(const Builder* bd, uint64_t me, uint64_t opp, int n,
                   uint64_t first) noexcept nogil:
    """Under `majority`: g of the non-final board (me, opp) of level n for every store of its
    row (entries first..first + width - 1). The stores only decide whether a move ends the game
    by a majority, so every store's move leads to the same houses: a child's row is ranked
    once and read at the child's mover's store."""
    cdef int h = bd.r.houses, m, n2, g, v, j, w = bd.db.width[n], s0 = bd.db.store_lo[n]
    cdef int stored = bd.db.total - n       # seeds in the two stores
    cdef int16_t best[EGDB_MAX_SEEDS + 2]
    cdef uint64_t idx, row = 0
    cdef bint ranked
    cdef Board b
    cdef Sowing sw
    for j in range(w):
        best[j] = -EGDB_MAX_SEEDS - 1       # below every value
    for m in range(h):
        if byte_at(me, m) == 0:
            continue
        ranked = False
        for j in range(w):
            b.me = me
            b.opp = opp
            b.my_store = s0 + j
            b.opp_store = stored - s0 - j
            b.flags = 0
            play(&b, m, &bd.r, &sw)
            v = b.my_store - b.opp_store     # in the frame of the player to move next
            if not sw.over:
                n2 = seeds_in(b.me + b.opp)
                if not ranked:
                    row = bd.db.offset[n2] \
                        + egdb_rank(&bd.db, b.me, b.opp) * <uint64_t>bd.db.width[n2]
                    ranked = True
                idx = row + <uint64_t>(b.my_store - bd.db.store_lo[n2])
                g = egdb_load(bd.out + idx)
                if g == EGDB_UNKNOWN:        # only in level n: lower levels are complete
                    solve_row(bd, b.me, b.opp, n, row)
                    g = egdb_load(bd.out + idx)
                v += g
            if not sw.extra:
                v = -v
            v -= 2 * (s0 + j) - stored       # the final difference less the one now
            if v > best[j]:
                best[j] = <int16_t>v
    for j in range(w):
        egdb_store(bd.out + first + j, <int8_t>best[j])

cdef void run_chunk_rows(const Builder* bd, int n, uint64_t start, uint64_t stop) noexcept nogil:
    """Under `majority`: solve the rows of boards of ranks start..stop-1 of level n."""
    cdef uint64_t lo, hi, me, opp, i, first
    cdef int w = bd.db.width[n], g, j
    cdef Board b
    unrank(&bd.db, n, start, &lo, &hi)
    for i in range(start, stop):
        first = bd.db.offset[n] + i * <uint64_t>w
        if egdb_load(bd.out + first) == EGDB_UNKNOWN:
            board_of(lo, hi, &me, &opp)
            b.me = me
            b.opp = opp
            b.my_store = bd.db.store_lo[n]   # within the row: no majority yet
            b.opp_store = bd.db.total - n - b.my_store
            b.flags = 0
            if is_over(&b, &bd.r):
                g = terminal_g(&bd.r, me, opp)
                for j in range(w):
                    egdb_store(bd.out + first + j, <int8_t>g)
            else:
                solve_row(bd, me, opp, n, first)
        next_cells(&lo, &hi)

cdef uint64_t checksum_of(const uint8_t* p, uint64_t length) noexcept nogil:
    """A 64-bit checksum of the entries (four multiply-rotate lanes over 8-byte words)."""
    cdef uint64_t a = 0x9e3779b97f4a7c15, b = 0xc2b2ae3d27d4eb4f
    cdef uint64_t c = 0x165667b19e3779f9, d = 0x27d4eb2f165667c5
    cdef uint64_t w0, w1, w2, w3, i = 0, t
    cdef uint64_t P = 0x9fb21c651e98df25
    while i + 32 <= length:
        memcpy(&w0, p + i, 8)
        memcpy(&w1, p + i + 8, 8)
        memcpy(&w2, p + i + 16, 8)
        memcpy(&w3, p + i + 24, 8)
        a = ((a ^ w0) * P)
        a = (a << 29) | (a >> 35)
        b = ((b ^ w1) * P)
        b = (b << 29) | (b >> 35)
        c = ((c ^ w2) * P)
        c = (c << 29) | (c >> 35)
        d = ((d ^ w3) * P)
        d = (d << 29) | (d >> 35)
        i += 32
    while i < length:
        a = (a ^ p[i]) * P
        a = (a << 29) | (a >> 35)
        i += 1
    t = a ^ (b * 3) ^ (c * 5) ^ (d * 7) ^ length
    t ^= t >> 33
    t *= <uint64_t>0xff51afd7ed558ccd
    t ^= t >> 33
    return t

cdef uint64_t packed_checksum(const uint8_t* fixed, uint64_t fixed_length, const uint8_t* esc,
                             uint64_t esc_length) noexcept nogil:
    """The packed format's checksum: of the fixed sections and of the escapes, combined."""
    cdef uint64_t a = checksum_of(fixed, fixed_length), b = checksum_of(esc, esc_length)
    return a ^ ((b << 17) | (b >> 47)) ^ (b * <uint64_t>0x9e3779b97f4a7c15)

# ---------------------------------------------------------------------------------------------
# Packing a level.
# ---------------------------------------------------------------------------------------------

cdef uint64_t pack_range(const Builder* bd, int n, uint64_t first, uint64_t stop, uint64_t e,
                         bint write) noexcept nogil:
    """Pack the boards first..stop-1 of level n, their escapes from escape e on (``write``), or
    only count the escapes; returns e plus the escapes among them. first is a multiple of
    BLOCK_CONST or the level's first board, so that no other range writes its nibble bytes
    or its blocks' counts (but the first, whose byte the level below is done with)."""
    cdef uint64_t lo, hi, me, opp, i
    cdef int c, g
    cdef const int8_t* win = bd.win + n * EGDB_CONTEXTS
    unrank(&bd.db, n, first - bd.db.offset[n], &lo, &hi)
    for i in range(first, stop):
        if write and (i & (BLOCK_CONST - 1)) == 0:
            bd.blocks[i >> EGDB_BLOCK_SHIFT] = e
        board_of(lo, hi, &me, &opp)
        g = bd.out[i]
        c = ((g + n) >> 1) - win[egdb_context(me, opp)]
        if c < 0 or c >= WINDOW_CONST:
            c = EGDB_ESCAPE
            if write:
                bd.esc[e] = <int8_t>g
            e += 1
        if write:
            bd.nib[i >> 1] |= <uint8_t>(c << ((i & 1) << 2))
        next_cells(&lo, &hi)
    return e

cdef int pack_level(Builder* bd, int n, int threads, uint64_t* hist,
                    int hist_threads) noexcept nogil:
    """Pack the solved level n (bytes in bd.out) into the nibbles and escapes; -1 when out of
    memory. ``hist`` holds ``hist_threads`` histograms of k by context, counted while the
    level was solved (``run_chunk``). Between the levels' parallel regions, in two parallel
    passes over chunks of CHUNK boards (CHUNK a multiple of the block): the escapes of each
    chunk, and the nibbles and escapes (each chunk's escapes start where the escapes of the
    chunks before it end)."""
    cdef uint64_t start = bd.db.offset[n], stop = bd.db.offset[n + 1], best_mass, mass, total
    cdef uint64_t* counts
    cdef int s, k, a, best, t
    cdef int8_t* grown
    cdef size_t width = <size_t>(n + 1), cells = width * EGDB_CONTEXTS, x
    cdef Py_ssize_t c, c0 = <Py_ssize_t>(start // CHUNK), chunks
    cdef uint64_t lo_i, hi_i
    chunks = <Py_ssize_t>((stop + CHUNK - 1) // CHUNK) - c0
    if chunks < 8 * threads:     # small levels: one thread (no barrier to wait at)
        threads = 1
    counts = <uint64_t*>malloc(sizeof(uint64_t) * (chunks + 1))
    if counts == NULL:
        return -1
    for t in range(1, hist_threads):
        for x in range(cells):
            hist[x] += hist[cells * t + x]
    # The window of each context: the 15 consecutive k seen most often (the first such).
    for x in range(EGDB_CONTEXTS):
        best = 0
        best_mass = 0
        if x % 128 <= <size_t>n:   # s <= n (other contexts hold no board)
            for a in range(max(1, n - WINDOW_CONST + 2)):
                mass = 0
                for k in range(a, min(a + WINDOW_CONST, n + 1)):
                    mass += hist[x * width + k]
                if mass > best_mass:
                    best_mass = mass
                    best = a
        bd.win[n * EGDB_CONTEXTS + x] = <int8_t>best
    # Pass 2: the escapes of each chunk, and where each chunk's escapes start.
    for c in prange(chunks, schedule="dynamic", num_threads=threads):
        lo_i = max(start, <uint64_t>(c0 + c) * CHUNK)
        hi_i = min(stop, <uint64_t>(c0 + c + 1) * CHUNK)
        counts[c + 1] = pack_range(bd, n, lo_i, hi_i, 0, False)
    counts[0] = bd.esc_count
    for c in range(chunks):
        counts[c + 1] += counts[c]
    total = counts[chunks]
    if total > bd.esc_cap:
        grown = <int8_t*>realloc(bd.esc, max(total, 2 * bd.esc_cap))
        if grown == NULL:
            free(counts)
            return -1
        bd.esc = grown
        bd.esc_cap = max(total, 2 * bd.esc_cap)
    # Pass 3: the nibbles, the escapes and the escapes before each block; each chunk's bytes
    # are given back once packed (chunks are whole pages but at the level's ends), so that
    # the level's nibbles take the place of its bytes instead of adding to them.
    for c in prange(chunks, schedule="dynamic", num_threads=threads):
        lo_i = max(start, <uint64_t>(c0 + c) * CHUNK)
        hi_i = min(stop, <uint64_t>(c0 + c + 1) * CHUNK)
        pack_range(bd, n, lo_i, hi_i, counts[c], True)
        lo_i = (lo_i + 4095) & ~(<uint64_t>4095)
        hi_i = hi_i & ~(<uint64_t>4095)
        if hi_i > lo_i:
            madvise(<char*>bd.out + lo_i, hi_i - lo_i, MADV_DONTNEED)
    free(counts)
    bd.esc_count = total
    bd.db.escapes = bd.esc
    bd.db.escape_count = total
    return 0

cdef inline int radix_window_index(int n, int j, int x) noexcept nogil:
    return (2 * n + (j >= EGDB_WIDE)) * EGDB_RADIX_CONTEXTS + (x >> 7) * 64 + (x & 63)

cdef void pack_range_radix(const Builder* bd, int n, uint64_t first, uint64_t stop,
                           uint64_t* e_io, uint64_t* f_io, bint write) noexcept nogil:
    """The radix format's pack_range: boards first..stop-1 of level n into their words, their
    escapes' codes from code e_io[0] on and far bytes from f_io[0] on (``write``), or only
    count them (both counts are advanced). first is a multiple of RADIX_CHUNK (a superblock)
    or the level's first board, whose word may hold the level below's last boards: they are
    kept (the word is decoded to its number, whose digits of this level are still 0)."""
    cdef uint64_t lo, hi, me, opp, i, q, b, acc = 0, e = e_io[0], f = f_io[0]
    cdef int g, k, x, j, w, width, d, code
    unrank(&bd.db, n, first - bd.db.offset[n], &lo, &hi)
    q = first // EGDB_DIGITS
    j = <int>(first - q * EGDB_DIGITS)
    if write and j:
        acc = egdb_radix_decode(bd.words[q])
    for i in range(first, stop):
        if write and j == 0 and (q & ((1 << EGDB_WORD_SHIFT) - 1)) == 0:
            b = q >> EGDB_WORD_SHIFT
            if (b & ((1 << EGDB_SUPER_SHIFT) - 1)) == 0:
                bd.super_esc[b >> EGDB_SUPER_SHIFT] = e
            bd.block_esc[b] = <uint16_t>(e - bd.super_esc[b >> EGDB_SUPER_SHIFT])
        board_of(lo, hi, &me, &opp)
        g = bd.out[i]
        k = (g + n) >> 1
        x = egdb_context(me, opp)
        width = egdb_radix_of(j) - 1
        w = bd.rwin[radix_window_index(n, j, x)]
        d = k - w
        if d < 0 or d >= width:
            if d >= width:
                code = d - width
                if code > 2:
                    code = 7
            else:
                code = 3 + (w - 1 - k)
                if code > 6:
                    code = 7
            if write:
                egdb_or_u64(<uint64_t*>bd.codes + e // EGDB_CODES,
                            (<uint64_t>code) << (3 * (e % EGDB_CODES)))
                if code == 7:
                    bd.far[f] = <int8_t>g
            if code == 7:
                f += 1
            e += 1
            d = width
        if write:
            acc += <uint64_t>d * egdb_radix_weight[j]
        j += 1
        if j == EGDB_DIGITS:
            if write:
                bd.words[q] = egdb_radix_encode(acc)
            acc = 0
            j = 0
            q += 1
        next_cells(&lo, &hi)
    if write and j:
        bd.words[q] = egdb_radix_encode(acc)
    e_io[0] = e
    f_io[0] = f

cdef int grow(void** p, uint64_t* cap, uint64_t need, size_t item) noexcept nogil:
    """Grow the zero-filled array p (cap items) to at least need items; -1 when out of memory."""
    cdef uint64_t bigger
    cdef void* q
    if need <= cap[0]:
        return 0
    bigger = max(need, 2 * cap[0])
    bigger = (bigger + 7) & ~(<uint64_t>7)
    q = realloc(p[0], bigger * item)
    if q == NULL:
        return -1
    memset(<char*>q + cap[0] * item, 0, (bigger - cap[0]) * item)
    p[0] = q
    cap[0] = bigger
    return 0

cdef int pack_level_radix(Builder* bd, int n, int threads, uint64_t* hist,
                          int hist_threads) noexcept nogil:
    """pack_level for the radix format: the windows of 13 and 12 values of each context, two
    parallel passes over superblocks (count, then write), and the far counts of the level's
    new escape codes, in order; -1 when out of memory."""
    cdef uint64_t start = bd.db.offset[n], stop = bd.db.offset[n + 1], best_mass, mass
    cdef uint64_t* counts
    cdef int k, a, best, t, cls, width, s
    cdef size_t width_n = <size_t>(n + 1), cells = width_n * EGDB_CONTEXTS, x
    cdef Py_ssize_t c, c0 = <Py_ssize_t>(start // RADIX_CHUNK), chunks
    cdef uint64_t lo_i, hi_i, e, f, r, far_before
    chunks = <Py_ssize_t>((stop + RADIX_CHUNK - 1) // RADIX_CHUNK) - c0
    if chunks < 8 * threads:
        threads = 1
    counts = <uint64_t*>malloc(sizeof(uint64_t) * 2 * (chunks + 1))
    if counts == NULL:
        return -1
    for t in range(1, hist_threads):
        for x in range(cells):
            hist[x] += hist[cells * t + x]
    for x in range(EGDB_CONTEXTS):
        s = <int>(x % 128)
        if s > n or s > 63:
            continue
        for cls in range(2):
            width = (14 if cls == 0 else 13) - 1
            best = 0
            best_mass = 0
            for a in range(max(1, n - width + 2)):
                mass = 0
                for k in range(a, min(a + width, n + 1)):
                    mass += hist[x * width_n + k]
                if mass > best_mass:
                    best_mass = mass
                    best = a
            bd.rwin[(2 * n + cls) * EGDB_RADIX_CONTEXTS + (x >> 7) * 64 + s] = <int8_t>best
    for c in prange(chunks, schedule="dynamic", num_threads=threads):
        lo_i = max(start, <uint64_t>(c0 + c) * RADIX_CHUNK)
        hi_i = min(stop, <uint64_t>(c0 + c + 1) * RADIX_CHUNK)
        e = 0
        f = 0
        pack_range_radix(bd, n, lo_i, hi_i, &e, &f, False)
        counts[2 * (c + 1)] = e
        counts[2 * (c + 1) + 1] = f
    counts[0] = bd.esc_count
    counts[1] = bd.far_count
    for c in range(chunks):
        counts[2 * (c + 1)] += counts[2 * c]
        counts[2 * (c + 1) + 1] += counts[2 * c + 1]
    e = counts[2 * chunks]
    f = counts[2 * chunks + 1]
    if (grow(<void**>&bd.codes, &bd.esc_cap, 8 * (e // EGDB_CODES + 2), 1) != 0
            or grow(<void**>&bd.code_blocks, &bd.code_blocks_cap,
                    e // (EGDB_CODES * EGDB_CODE_BLOCK) + 2, 8) != 0
            or grow(<void**>&bd.far, &bd.far_cap, f + 1, 1) != 0):
        free(counts)
        return -1
    for c in prange(chunks, schedule="dynamic", num_threads=threads):
        lo_i = max(start, <uint64_t>(c0 + c) * RADIX_CHUNK)
        hi_i = min(stop, <uint64_t>(c0 + c + 1) * RADIX_CHUNK)
        pack_range_radix(bd, n, lo_i, hi_i, &counts[2 * c], &counts[2 * c + 1], True)
        lo_i = (lo_i + 4095) & ~(<uint64_t>4095)
        hi_i = hi_i & ~(<uint64_t>4095)
        if hi_i > lo_i:
            madvise(<char*>bd.out + lo_i, hi_i - lo_i, MADV_DONTNEED)
    free(counts)
    # The far escapes before each 504 escape codes, for the codes of this level.
    far_before = bd.far_count
    for r in range(bd.esc_count, e):
        if r % (EGDB_CODES * EGDB_CODE_BLOCK) == 0:
            bd.code_blocks[r // (EGDB_CODES * EGDB_CODE_BLOCK)] = far_before
        if (((<uint64_t*>bd.codes)[r // EGDB_CODES] >> (3 * (r % EGDB_CODES))) & 7) == 7:
            far_before += 1
    bd.esc_count = e
    bd.far_count = f
    bd.db.esc_codes = bd.codes
    bd.db.code_blocks = bd.code_blocks
    bd.db.far = bd.far
    bd.db.escape_count = e
    bd.db.far_count = f
    return 0

cdef uint64_t radix_checksum(const uint8_t* fixed, uint64_t fixed_length, const uint8_t* codes,
                             uint64_t codes_length, const uint8_t* blocks,
                             uint64_t blocks_length, const uint8_t* far,
                             uint64_t far_length, uint64_t escapes) noexcept nogil:
    """The radix format's checksum: of the fixed sections, the codes, their far counts, the
    far bytes and the number of escape codes (which the file's size does not always show),
    combined."""
    cdef uint64_t a = packed_checksum(fixed, fixed_length, codes, codes_length)
    cdef uint64_t b = packed_checksum(blocks, blocks_length, far, far_length)
    cdef uint64_t c = (escapes + 1) * <uint64_t>0x9fb21c651e98df25
    c ^= c >> 29
    return a ^ ((b << 31) | (b >> 33)) ^ (b * <uint64_t>0xc2b2ae3d27d4eb4f) ^ c

# ---------------------------------------------------------------------------------------------
# Python objects.
# ---------------------------------------------------------------------------------------------

cdef int pack_side(int houses, object counts, uint64_t* w) except -1:
    """Pack one side's house counts into a word; returns their sum."""
    cdef int i, c, total = 0
    if len(counts) != houses:
        raise ValueError(f"a side must have {houses} houses")
    w[0] = 0
    for i in range(houses):
        c = counts[i]
        if c < 0 or c > EGDB_MAX_SEEDS:
            raise ValueError(f"house counts must be 0..{EGDB_MAX_SEEDS}")
        total += c
        w[0] |= (<uint64_t>c) << (8 * i)
    return total


cdef class DatabaseBuilder:
    """The whole database in anonymous memory (transparent huge pages where the kernel gives
    them), built by ``run_all``; ``write`` streams the entries to a file. With ``packed`` the
    entries are the packed format's sections (4 bits a board, see ``_egdb.pxd``), and only
    the level being solved is held in bytes."""

    cdef Builder b
    cdef void* _mem
    cdef size_t _length
    cdef void* _fixed
    cdef size_t _fixed_length
    cdef uint64_t* _binom
    cdef readonly int threads
    cdef readonly int packed
    cdef uint64_t _done
    cdef int _cancel
    cdef int _level
    cdef double _level_seconds[EGDB_MAX_SEEDS + 1]
    cdef double _pack_seconds

    def __cinit__(self, int houses, bint capture_always, bint end_mover_empty,
                  bint remaining_empty_side, int max_seeds, int threads, int packed=0,
                  int total=0):
        """``packed``: 0 one byte a board, 1 the packed format (4 bits), 2 the radix format.
        ``total`` > 0: the `majority` rule in a game of that many seeds (one byte an entry,
        a row of entries a board: see ``_egdb.pxd``)."""
        if not 1 <= houses <= MAX_HOUSES:
            raise ValueError(f"houses must be 1..{MAX_HOUSES}")
        if not 0 <= max_seeds <= EGDB_MAX_SEEDS:
            raise ValueError(f"max_seeds must be 0..{EGDB_MAX_SEEDS}")
        if not 0 <= packed <= 2:
            raise ValueError("packed must be 0 (bytes), 1 (4 bits) or 2 (radix)")
        if packed == 2 and max_seeds > EGDB_RADIX_MAX_SEEDS:
            raise ValueError(f"the radix format holds at most {EGDB_RADIX_MAX_SEEDS} seeds")
        if total and (packed or not 0 < total <= MAX_SEEDS_IN_GAME):
            raise ValueError(f"a majority database is one byte an entry, for 1..{MAX_SEEDS_IN_GAME} seeds in the game")
        self.threads = max(1, threads)
        self.packed = packed
        self._binom = make_binom(houses)
        self._mem = NULL
        self._fixed = NULL
        memset(&self.b, 0, sizeof(Builder))
        memset(self._level_seconds, 0, sizeof(self._level_seconds))
        self._done = 0
        self._cancel = 0
        self._level = 0
        self._pack_seconds = 0
        self.b.db.houses = houses
        self.b.db.max_seeds = max_seeds
        self.b.db.binom = self._binom
        self.b.db.bits = (8, 4, 3)[packed]
        self.b.db.total = total
        fill_offsets(&self.b.db)
        self._length = <size_t>self.b.db.offset[max_seeds + 1]
        if <uint64_t>self._length != entry_count(houses, max_seeds, total):
            raise MemoryError("database too large to index")
        # Packed, the bytes are address space only: each level's pages are touched when it is
        # built and given back once it is packed.
        self._mem = mmap(NULL, max(self._length, 1), PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | (MAP_NORESERVE if packed else 0), -1, 0)
        if self._mem == MAP_FAILED:
            self._mem = NULL
            raise MemoryError(f"cannot map {self._length} bytes for the database")
        madvise(self._mem, max(self._length, 1), MADV_HUGEPAGE)
        self.b.out = <int8_t*>self._mem
        self.b.db.values = self.b.out
        if packed:
            layout = (radix_layout if packed == 2 else packed_layout)(houses, max_seeds)
            self._fixed_length = layout["fixed"]
            self._fixed = mmap(NULL, self._fixed_length, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)   # zero-filled
            if self._fixed == MAP_FAILED:
                self._fixed = NULL
                raise MemoryError(f"cannot map {self._fixed_length} bytes for the database")
            self.b.packed = packed
            self.b.fixed = <uint8_t*>self._fixed
        if packed == 2:
            self.b.rwin = <int8_t*>(self.b.fixed + <size_t>layout["window"])
            self.b.words = <uint64_t*>(self.b.fixed + <size_t>layout["words"])
            self.b.block_esc = <uint16_t*>(self.b.fixed + <size_t>layout["blocks"])
            self.b.super_esc = <uint64_t*>(self.b.fixed + <size_t>layout["supers"])
            self.b.db.radix_window = self.b.rwin
            self.b.db.words = self.b.words
            self.b.db.block_esc = self.b.block_esc
            self.b.db.super_esc = self.b.super_esc
        elif packed:
            self.b.win = <int8_t*>(self.b.fixed + <size_t>layout["window"])
            self.b.nib = self.b.fixed + <size_t>layout["nibbles"]
            self.b.blocks = <uint64_t*>(self.b.fixed + <size_t>layout["blocks"])
            self.b.db.window = self.b.win
            self.b.db.nibbles = self.b.nib
            self.b.db.block_escapes = self.b.blocks
        self.b.r.houses = houses
        self.b.r.capture_always = capture_always
        self.b.r.end_mover_empty = end_mover_empty
        self.b.r.remaining_empty_side = remaining_empty_side
        self.b.r.majority = total != 0
        self.b.r.pie = 0
        self.b.r.total = total

    def __dealloc__(self):
        if self._mem != NULL:
            munmap(self._mem, max(self._length, 1))
        if self._fixed != NULL:
            munmap(self._fixed, self._fixed_length)
        free(self.b.esc)
        free(self.b.codes)
        free(self.b.code_blocks)
        free(self.b.far)
        free(self._binom)

    @property
    def entries(self) -> int:
        return self._length

    @property
    def escapes(self) -> int:
        """Boards whose g is an escape byte (packed format) or an escape code (radix)."""
        return self.b.esc_count

    @property
    def far(self) -> int:
        """The radix format's far escapes (bytes)."""
        return self.b.far_count

    @property
    def body_bytes(self) -> int:
        """Bytes ``write`` writes."""
        if self.packed == 2:
            return radix_layout(self.b.db.houses, self.b.db.max_seeds, self.b.esc_count,
                                self.b.far_count)["total"]
        if self.packed:
            return self._fixed_length + self.b.esc_count
        return self._length

    @property
    def pack_seconds(self) -> float:
        """Wall time spent packing levels (included in level_seconds)."""
        return self._pack_seconds

    def level_range(self, int n) -> tuple:
        """(first index, size) of level n."""
        return self.b.db.offset[n], self.b.db.offset[n + 1] - self.b.db.offset[n]

    def run_all(self) -> None:
        """Solve every level, releasing the GIL (call it from a worker thread and watch
        ``done``; ``cancel()`` stops it between chunks). One OpenMP parallel region per level,
        chunks of CHUNK boards handed out dynamically to the threads; packed, each level is
        then packed and its bytes given back."""
        cdef Builder* bw = &self.b
        cdef const Builder* bp = &self.b
        cdef uint64_t* done = &self._done
        cdef int* cancel = &self._cancel
        cdef Py_ssize_t chunks, c
        cdef uint64_t lo, hi, size, first, last
        cdef int n, width, threads = self.threads, failed = 0
        cdef timespec t0, t1, p0
        cdef size_t cells = 0
        cdef uint64_t* hist = NULL
        if bp.packed:   # a histogram of k by context per thread, for the widest level
            cells = <size_t>EGDB_CONTEXTS * <size_t>(bp.db.max_seeds + 1)
            hist = <uint64_t*>malloc(sizeof(uint64_t) * cells * threads)
            if hist == NULL:
                raise MemoryError()
        with nogil:
            clock_gettime(CLOCK_MONOTONIC, &t0)
            for n in range(bp.db.max_seeds + 1):
                egdb_store_int(&self._level, n)
                size = bp.db.offset[n + 1] - bp.db.offset[n]
                memset(bp.out + bp.db.offset[n], <int>EGDB_UNKNOWN, size)
                cells = <size_t>EGDB_CONTEXTS * <size_t>(n + 1)
                if hist != NULL:
                    memset(hist, 0, sizeof(uint64_t) * cells * threads)
                width = bp.db.width[n]
                if width > 1:
                    size = size // <uint64_t>width   # majority: chunks of boards, rows of entries
                chunks = <Py_ssize_t>((size + CHUNK - 1) // CHUNK) if width else 0
                for c in prange(chunks, schedule="dynamic", num_threads=threads):
                    if not egdb_load_int(cancel):
                        lo = <uint64_t>c * CHUNK
                        hi = lo + CHUNK
                        if hi > size:
                            hi = size
                        if bp.db.total:
                            run_chunk_rows(bp, n, lo, hi)
                        else:
                            run_chunk(bp, n, lo, hi,
                                      hist + cells * threadid() if hist != NULL else NULL)
                        egdb_add(done, (hi - lo) * <uint64_t>width)
                if egdb_load_int(cancel):
                    break
                if bp.packed:
                    clock_gettime(CLOCK_MONOTONIC, &p0)
                    if bp.packed == 2:
                        failed = pack_level_radix(bw, n, threads, hist, threads) != 0
                    else:
                        failed = pack_level(bw, n, threads, hist, threads) != 0
                    if failed:
                        break
                    # Give back the pages of level n (and the end of level n - 1 before it);
                    # the page that level n + 1 starts in stays.
                    first = (<uint64_t>bp.db.offset[n]) & ~(<uint64_t>4095)
                    last = (<uint64_t>bp.db.offset[n + 1]) & ~(<uint64_t>4095)
                    if n == bp.db.max_seeds:
                        last = (<uint64_t>self._length + 4095) & ~(<uint64_t>4095)
                    if last > first:
                        madvise(<char*>self._mem + first, last - first, MADV_DONTNEED)
                    clock_gettime(CLOCK_MONOTONIC, &t1)
                    self._pack_seconds += (t1.tv_sec - p0.tv_sec) + (t1.tv_nsec - p0.tv_nsec) * 1e-9
                clock_gettime(CLOCK_MONOTONIC, &t1)
                self._level_seconds[n] = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9
                t0 = t1
            if bp.packed == 2 and not failed:
                # Far counts of the 504 codes block past the last code (read by no probe).
                first = (bw.esc_count + EGDB_CODES * EGDB_CODE_BLOCK - 1) \
                    // (EGDB_CODES * EGDB_CODE_BLOCK)
                if grow(<void**>&bw.code_blocks, &bw.code_blocks_cap, first + 2, 8) != 0:
                    failed = 1
                else:
                    bw.code_blocks[first] = bw.far_count
                    if grow(<void**>&bw.codes, &bw.esc_cap, 8 * (bw.esc_count // EGDB_CODES + 2),
                            1):
                        failed = 1
                    if grow(<void**>&bw.far, &bw.far_cap, 1, 1):
                        failed = 1
            elif bp.packed and not failed:
                # The count before every block past the last board's (read by no probe).
                first = (bp.db.offset[bp.db.max_seeds + 1] + BLOCK_CONST - 1) >> EGDB_BLOCK_SHIFT
                last = (<uint64_t>self._length >> EGDB_BLOCK_SHIFT) + 1
                while first < last:
                    bw.blocks[first] = bw.esc_count
                    first += 1
        free(hist)
        if failed:
            raise MemoryError("out of memory for the packed database's escapes")

    @property
    def done(self) -> int:
        """Boards solved so far (read while run_all works)."""
        return egdb_load_u64(&self._done)

    @property
    def level(self) -> int:
        """The level run_all is solving."""
        return egdb_load_int(&self._level)

    def cancel(self) -> None:
        egdb_store_int(&self._cancel, 1)

    @property
    def cancelled(self) -> bool:
        return egdb_load_int(&self._cancel) != 0

    def level_seconds(self) -> list:
        """Wall time of each level run_all finished."""
        return [self._level_seconds[n] for n in range(self.b.db.max_seeds + 1)]

    def checksum(self) -> int:
        cdef uint64_t t
        cdef dict lay
        if self.b.packed == 2:
            lay = radix_layout(self.b.db.houses, self.b.db.max_seeds, self.b.esc_count,
                               self.b.far_count)
            return radix_checksum(self.b.fixed, self._fixed_length, self.b.codes,
                                  lay["code_blocks"] - lay["codes"],
                                  <const uint8_t*>self.b.code_blocks, lay["far"] - lay["code_blocks"],
                                  <const uint8_t*>self.b.far, self.b.far_count,
                                  self.b.esc_count)
        with nogil:
            if self.b.packed:
                t = packed_checksum(self.b.fixed, self._fixed_length,
                                    <const uint8_t*>self.b.esc, self.b.esc_count)
            else:
                t = checksum_of(<const uint8_t*>self._mem, self._length)
        return t

    def g(self, mine, theirs, int my_store=-1) -> int:
        """g of a board, read from the built database (tests); under `majority` for the
        mover's store ``my_store``."""
        cdef uint64_t me, opp
        cdef int n = pack_side(self.b.db.houses, mine, &me) \
            + pack_side(self.b.db.houses, theirs, &opp)
        if n > self.b.db.max_seeds:
            raise ValueError("too many seeds")
        check_store(&self.b.db, n, my_store)
        return egdb_probe(&self.b.db, me, opp, n, my_store)

    def write(self, f, Py_ssize_t block=1 << 26) -> None:
        """Write the entries (packed: every section after the header) to the binary file f."""
        if self.b.packed == 2:
            lay = radix_layout(self.b.db.houses, self.b.db.max_seeds, self.b.esc_count,
                               self.b.far_count)
            write_memory(f, <char*>self._fixed, self._fixed_length, block)
            write_memory(f, <char*>self.b.codes, lay["code_blocks"] - lay["codes"], block)
            write_memory(f, <char*>self.b.code_blocks, lay["far"] - lay["code_blocks"], block)
            write_memory(f, <char*>self.b.far, self.b.far_count, block)
        elif self.b.packed:
            write_memory(f, <char*>self._fixed, self._fixed_length, block)
            write_memory(f, <char*>self.b.esc, self.b.esc_count, block)
        else:
            write_memory(f, <char*>self._mem, self._length, block)


cdef int check_store(const EGDB* db, int n, int my_store) except -1:
    """Under `majority`, that the mover's store is in level n's row: neither store holds more
    than half the game's seeds."""
    if db.total and not db.store_lo[n] <= my_store < db.store_lo[n] + db.width[n]:
        raise ValueError(
            f"the mover's store must be {db.store_lo[n]}..{db.store_lo[n] + db.width[n] - 1} "
            f"with {n} seeds in houses of {db.total}: a store holding more than half of them "
            "has ended the game")
    return 0


cdef write_memory(f, char* p, size_t length, Py_ssize_t block):
    cdef size_t off = 0, k
    while off < length:
        k = min(<size_t>block, length - off)
        f.write(PyMemoryView_FromMemory(p + off, k, PyBUF_READ))
        off += k


cdef class EndgameTable:
    """A database file mapped read-only (MAP_SHARED: every process shares the page cache's
    one copy). The header must have been checked by the caller (``egdb.py``); this class checks
    what memory safety needs: the file holds ``header_size`` bytes and the entries' (8 bits:
    ``entries`` bytes; 4 bits: the sections of ``packed_layout`` with ``escapes`` escape
    bytes) and ``entries`` is the count for (houses, max_seeds)."""

    def __cinit__(self, path, int houses, int max_seeds, int header_size,
                  bint capture_always, bint end_mover_empty, bint remaining_empty_side,
                  unsigned long long checksum=0, int bits=8, unsigned long long escapes=0,
                  unsigned long long far=0, int total=0):
        cdef int fd
        cdef struct_stat st
        cdef bytes cpath = str(path).encode()
        cdef unsigned long long body
        cdef const uint8_t* base
        self._map = NULL
        self._binom = NULL
        if not 1 <= houses <= MAX_HOUSES or not 0 <= max_seeds <= EGDB_MAX_SEEDS:
            raise ValueError("houses or max_seeds out of range")
        if bits != 8 and bits != 4 and bits != 3:
            raise ValueError(f"{bits} bits a board: only 8, 4 and 3 (radix) exist")
        if bits == 3 and max_seeds > EGDB_RADIX_MAX_SEEDS:
            raise ValueError(f"the radix format holds at most {EGDB_RADIX_MAX_SEEDS} seeds")
        if total and (bits != 8 or not 0 < total <= MAX_SEEDS_IN_GAME):
            raise ValueError("a majority database is one byte an entry, for 1..255 seeds")
        self.path = path
        self.capture_always = capture_always
        self.end_mover_empty = end_mover_empty
        self.remaining_empty_side = remaining_empty_side
        self.checksum = checksum
        self.bits = bits
        self._binom = make_binom(houses)
        memset(&self.db, 0, sizeof(EGDB))
        self.db.houses = houses
        self.db.max_seeds = max_seeds
        self.db.binom = self._binom
        self.db.bits = bits
        self.db.total = total
        fill_offsets(&self.db)
        self.entries = self.db.offset[max_seeds + 1]
        if self.entries != entry_count(houses, max_seeds, total):
            raise ValueError("database too large to index")
        if bits == 4:
            layout = packed_layout(houses, max_seeds, escapes)
        elif bits == 3:
            layout = radix_layout(houses, max_seeds, escapes, far)
        else:
            layout = None
        body = self.entries if bits == 8 else layout["total"]
        fd = c_open(cpath, O_RDONLY)
        if fd < 0:
            raise OSError(f"cannot open {path}")
        try:
            if fstat(fd, &st) != 0:
                raise OSError(f"cannot stat {path}")
            if <unsigned long long>st.st_size != header_size + body:
                raise ValueError(
                    f"{path}: {st.st_size} bytes, expected {header_size + body} "
                    f"(truncated or not a {bits}-bit database of these dimensions)")
            self._length = <size_t>st.st_size
            self._map = mmap(NULL, self._length, PROT_READ, MAP_SHARED, fd, 0)
            if self._map == MAP_FAILED:
                self._map = NULL
                raise OSError(f"cannot map {path}")
            # Huge pages where the page cache holds large folios (ext4 does since Linux 6.16):
            # probes are random, and a 4 KiB page per probe is a TLB miss (a nested page walk
            # on a VM). Kalah(6,5) with the 28-seed database: 59.7 s -> 46.4 s per pass.
            madvise(self._map, self._length, MADV_HUGEPAGE)
        finally:
            c_close(fd)
        base = <const uint8_t*>self._map + header_size
        self.db.values = <const int8_t*>base
        self.db.whole = 1
        if bits == 4:
            self.db.window = <const int8_t*>(base + <size_t>layout["window"])
            self.db.nibbles = base + <size_t>layout["nibbles"]
            self.db.block_escapes = <const uint64_t*>(base + <size_t>layout["blocks"])
            self.db.escapes = <const int8_t*>(base + <size_t>layout["escapes"])
            self.db.escape_count = escapes
            self._fixed_length = layout["fixed"]
        elif bits == 3:
            self.db.radix_window = <const int8_t*>(base + <size_t>layout["window"])
            self.db.words = <const uint64_t*>(base + <size_t>layout["words"])
            self.db.block_esc = <const uint16_t*>(base + <size_t>layout["blocks"])
            self.db.super_esc = <const uint64_t*>(base + <size_t>layout["supers"])
            self.db.esc_codes = base + <size_t>layout["codes"]
            self.db.code_blocks = <const uint64_t*>(base + <size_t>layout["code_blocks"])
            self.db.far = <const int8_t*>(base + <size_t>layout["far"])
            self.db.escape_count = escapes
            self.db.far_count = far
            self._fixed_length = layout["fixed"]
            self._layout = layout

    def __dealloc__(self):
        if self._map != NULL:
            munmap(self._map, self._length)
        free(self._binom)

    @property
    def houses(self) -> int:
        return self.db.houses

    @property
    def max_seeds(self) -> int:
        return self.db.max_seeds

    def g(self, mine, theirs, int my_store=-1) -> int:
        """g for the player to move, whose houses are ``mine`` and the opponent's ``theirs``
        (each from its owner's left); under `majority` the mover's store is ``my_store``."""
        cdef uint64_t me, opp
        cdef int n = pack_side(self.db.houses, mine, &me) + pack_side(self.db.houses, theirs, &opp)
        if n > self.db.max_seeds:
            raise ValueError(f"{n} seeds in houses; the database holds at most "
                             f"{self.db.max_seeds}")
        check_store(&self.db, n, my_store)
        return egdb_probe(&self.db, me, opp, n, my_store)

    @property
    def total(self) -> int:
        """The game's seeds of a `majority` database (0 for the others)."""
        return self.db.total

    def rank(self, mine, theirs) -> int:
        """The rank of a board within its level."""
        cdef uint64_t me, opp
        pack_side(self.db.houses, mine, &me)
        pack_side(self.db.houses, theirs, &opp)
        return egdb_rank(&self.db, me, opp)

    def board_at(self, int n, uint64_t r) -> tuple:
        """The board (mine, theirs) of rank r in level n."""
        cdef uint64_t me, opp, lo, hi
        if not 0 <= n <= self.db.max_seeds or r >= self.db.offset[n + 1] - self.db.offset[n]:
            raise ValueError("no such board")
        unrank(&self.db, n, r, &lo, &hi)
        board_of(lo, hi, &me, &opp)
        return (tuple([byte_at(me, i) for i in range(self.db.houses)]),
                tuple([byte_at(opp, i) for i in range(self.db.houses)]))

    def walk(self, int n) -> list:
        """Every board of level n in rank order, by the builder's incremental walk (tests)."""
        cdef uint64_t me, opp, lo, hi
        cdef list out = []
        unrank(&self.db, n, 0, &lo, &hi)
        while True:
            board_of(lo, hi, &me, &opp)
            out.append((tuple([byte_at(me, i) for i in range(self.db.houses)]),
                        tuple([byte_at(opp, i) for i in range(self.db.houses)])))
            if not next_cells(&lo, &hi):
                return out

    def level_values(self, int n) -> bytes:
        """g of every board of level n in rank order, one signed byte each (read through the
        probe's decoding, whatever the format: tests compare formats with it)."""
        cdef uint64_t me, opp, lo, hi, r, size
        cdef bytearray out
        cdef unsigned char* p
        if not 0 <= n <= self.db.max_seeds or self.db.total:
            raise ValueError("no such level (or a majority database: rows, not boards)")
        size = self.db.offset[n + 1] - self.db.offset[n]
        out = bytearray(size)
        p = out
        with nogil:
            unrank(&self.db, n, 0, &lo, &hi)
            for r in range(size):
                board_of(lo, hi, &me, &opp)
                p[r] = <unsigned char>(<int8_t>egdb_at(&self.db, self.db.offset[n] + r, n,
                                                       egdb_context(me, opp)))
                next_cells(&lo, &hi)
        return bytes(out)

    def is_escape(self, mine, theirs) -> bool:
        """Whether the board's g is an escape byte (packed format; False for one byte)."""
        cdef uint64_t me, opp, i
        cdef int n = pack_side(self.db.houses, mine, &me) + pack_side(self.db.houses, theirs, &opp)
        if n > self.db.max_seeds:
            raise ValueError("too many seeds")
        if self.db.bits == 8:
            return False
        i = egdb_index(&self.db, me, opp, n, 0)
        if self.db.bits == 3:
            return egdb_radix_digit(self.db.words[i // EGDB_DIGITS], <int>(i % EGDB_DIGITS)) \
                == egdb_radix_of(<int>(i % EGDB_DIGITS)) - 1
        return ((self.db.nibbles[i >> 1] >> ((i & 1) << 2)) & 15) == EGDB_ESCAPE

    def probe_benchmark(self, Py_ssize_t count, uint64_t seed=1) -> tuple:
        """Probe ``count`` pseudo-random boards (a random number n <= N of seeds, each thrown
        into a random house), timing the probes only: (seconds, sum of the g read)."""
        cdef uint64_t* me = <uint64_t*>malloc(sizeof(uint64_t) * max(count, 1))
        cdef uint64_t* opp = <uint64_t*>malloc(sizeof(uint64_t) * max(count, 1))
        cdef int* ns = <int*>malloc(sizeof(int) * max(count, 1))
        cdef uint64_t x = seed * <uint64_t>0x9e3779b97f4a7c15 + 1
        cdef Py_ssize_t i
        cdef int n, k, cell, h = self.db.houses
        cdef int top = min(self.db.max_seeds, self.db.total) if self.db.total else self.db.max_seeds
        cdef long long total = 0
        cdef timespec t0, t1
        if me == NULL or opp == NULL or ns == NULL:
            free(me)
            free(opp)
            free(ns)
            raise MemoryError()
        try:
            with nogil:
                for i in range(count):
                    x ^= x << 13
                    x ^= x >> 7
                    x ^= x << 17
                    n = <int>(x % <uint64_t>(top + 1))
                    me[i] = 0
                    opp[i] = 0
                    ns[i] = n
                    for k in range(n):
                        x ^= x << 13
                        x ^= x >> 7
                        x ^= x << 17
                        cell = <int>(x % <uint64_t>(2 * h))
                        if cell < h:
                            me[i] += (<uint64_t>1) << (8 * cell)
                        else:
                            opp[i] += (<uint64_t>1) << (8 * (cell - h))
                clock_gettime(CLOCK_MONOTONIC, &t0)
                for i in range(count):
                    total += egdb_probe(&self.db, me[i], opp[i], ns[i],
                                        self.db.store_lo[ns[i]])
                clock_gettime(CLOCK_MONOTONIC, &t1)
        finally:
            free(me)
            free(opp)
            free(ns)
        return (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9, total

    def preload(self) -> None:
        """madvise(MADV_WILLNEED) on the mapping: the kernel starts reading it in."""
        madvise(self._map, self._length, MADV_WILLNEED)

    def compute_checksum(self) -> int:
        """The checksum of the mapped entries (reads the whole file)."""
        cdef uint64_t t
        cdef const uint8_t* base = <const uint8_t*>self.db.values
        if self.db.bits == 3:
            lay = self._layout
            return radix_checksum(base, self._fixed_length, base + <size_t>lay["codes"],
                                  lay["code_blocks"] - lay["codes"],
                                  base + <size_t>lay["code_blocks"],
                                  lay["far"] - lay["code_blocks"], base + <size_t>lay["far"],
                                  self.db.far_count, self.db.escape_count)
        with nogil:
            if self.db.bits == 4:
                t = packed_checksum(base, self._fixed_length, <const uint8_t*>self.db.escapes,
                                    self.db.escape_count)
            else:
                t = checksum_of(base, self.entries)
        return t

    @property
    def escapes(self) -> int:
        """Boards whose g is an escape byte (4 bits a board; 0 for 8) or code (radix)."""
        return self.db.escape_count

    @property
    def far(self) -> int:
        """The radix format's far escapes (0 for the others)."""
        return self.db.far_count

    @property
    def body_bytes(self) -> int:
        """Bytes of the mapped file after the header."""
        return self._length - (<const uint8_t*>self.db.values - <const uint8_t*>self._map)
