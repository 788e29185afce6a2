# cython: language_level=3
"""The endgame database's C interface, for the search to cimport.

The database holds the *future gain* g (final store difference for the player to move, minus
the store difference now) of every board with at most ``max_seeds`` seeds in houses, one signed
byte per board. Boards are in the mover's frame exactly as in ``_board.pxd`` (``me``/``opp``
words, house 1 in the low byte). Entries are grouped by level n = seeds in houses, n = 0, 1, ...;
within a level a board's index is the colex (combinatorial number system, stars and bars)
rank of its 2h house counts taken in the order

    c_0, c_1, ..., c_{2h-1} = my house 1, the opponent's house 1, my house 2, the opponent's
                              house 2, ..., my house h, the opponent's house h

(the two sides interleaved): with the "bar positions" s_t = c_0 + ... + c_t + t,

    rank = sum over t = 0..2h-2 of C(s_t, t + 1),  0 <= rank < C(n + 2h - 1, 2h - 1).

In colex order the last cells weigh most, so boards that agree on the houses next to the
stores (which a move changes least, and the same for both sides whoever moves) lie close
together: the builder's reads of a level's children stay in a few small regions, and the
interleaving makes that hold for the children after an extra turn and after a change of turn
alike.

Two formats (``bits``). 8: one signed byte g per board, ``values[offset[n] + rank]``.
4 (the packed format): a nibble c per board, ``nibbles``, entry i in byte i >> 1 (low half for
even i). g has the parity of n and |g| <= n, so k = (g + n) / 2, the seeds of the n in houses
that end in the mover's store, is one of 0..n. The board's *context* x is the seeds s on the
mover's side and the numbers of non-empty houses u (mover) and v (opponent), 0..8 each:
x = s + 128 (9 u + v) (``egdb_context``); ``window[n * EGDB_CONTEXTS + x]`` is the first of
the 15 values of k that the builder found most often among the boards of level n and
context x, w for short, and

    c = k - w         when 0 <= k - w <= 14,   so that g = 2 (w + c) - n,
    c = 15 (escape)   otherwise: g is the escape byte of the board, escapes[j], where
                           j = block_escapes[i >> 9] + the escapes among entries
                           (i & ~511) .. i - 1 of its block of 512 (counted in the nibbles).

Levels n <= 14 (at most 15 values) have no escapes at all.

3 (the radix format, version 4: 3.77 bits a board before escapes). Board i is digit
j = i mod 17 of the 64-bit word i / 17 (``words``): a mixed-radix number of 17 digits, radix 14
for j < 10 and 13 for j >= 10, the first digit weighing most (the product of the radices,
1.815e19, is below 2^64); the word holds ceil(D 2^64 / product) for that number D, so that digit
j is the top of (word x (product of the radices before j) mod 2^64) x radix_j / 2^64: two
multiplications (``egdb_radix_digit``). A digit d < radix - 1 codes k = w + d with w the first
value of the window of radix - 1 values of the board's level, context and radix
(``radix_window``); d = radix - 1 escapes: the escape's rank r is the escapes before its
superblock of 32 x 64 words (``super_esc``, uint64) and block of 64 words (``block_esc``,
uint16) plus those among the digits before it in the block (counted digit by digit), and the
r-th code of ``esc_codes`` (3 bits, 21 a 64-bit word, the low bits first) is k - (w + W) =
0..2 above the window of W values, 3 + (w - 1 - k) = 3..6 below it, or 7: then g is a byte of
``far``, the t-th, t the 7s before it (``code_blocks``: the 7s before each 504 codes, plus
those counted in the 24 words of codes from there).

Usage from the search::

    from kalah_core._egdb cimport EGDB, EndgameTable, egdb_probe
    cdef EndgameTable t = database.table      # keep a reference while probing
    cdef const EGDB* db = &t.db
    if n <= db.max_seeds:                     # n = seeds in houses of the board
        g = egdb_probe(db, b.me, b.opp, n, b.my_store)   # value = g + b.my_store - b.opp_store

or, to start the memory load early and read later: ``i = egdb_index(db, me, opp, n,
b.my_store)``, ``egdb_prefetch(db, i)``, then ``g = egdb_at(db, i, n, egdb_context(me, opp))``.

Under `majority` (``total`` > 0) the stores decide when the game ends, so g depends on them:
a board holds one byte for each store the mover may have while neither store holds more than
half of the ``total`` seeds (the opponent's is the rest), in a row of ``width[n]`` bytes from
the mover's store ``store_lo[n]`` (``egdb_index``); such a database is built for one total.
"""

from libc.stdint cimport int8_t, uint8_t, uint16_t, uint64_t

from kalah_core._board cimport houses_used, seeds_in

cdef extern from *:
    int __builtin_popcountll(unsigned long long x) noexcept nogil
    void __builtin_prefetch(const void* p) noexcept nogil

cdef extern from *:
    """
    #include <stdint.h>
    /* The radix format (version 4): 17 boards a 64-bit word, board j of the word a digit of
       radix 14 (j < 10) or 13 (j >= 10); the product of the radices is below 2^64. */
    static const uint64_t egdb_radix_prefix[17] = {
        1ULL, 14ULL, 196ULL, 2744ULL, 38416ULL, 537824ULL, 7529536ULL, 105413504ULL,
        1475789056ULL, 20661046784ULL, 289254654976ULL, 3760310514688ULL,
        48884036690944ULL, 635492476982272ULL, 8261402200769536ULL, 107398228610003968ULL,
        1396176971930051584ULL};
    static const uint64_t egdb_radix_weight[17] = {
        1296450045363619328ULL, 92603574668829952ULL, 6614541047773568ULL,
        472467217698112ULL, 33747658407008ULL, 2410547029072ULL, 172181930648ULL,
        12298709332ULL, 878479238ULL, 62748517ULL, 4826809ULL, 371293ULL, 28561ULL, 2197ULL,
        169ULL, 13ULL, 1ULL};
    #define EGDB_RADIX_TOTAL 18150300635090670592ULL
    static inline int egdb_radix_of(int j) { return j < 10 ? 14 : 13; }
    /* Digit j of the word f: f is ceil(D * 2^64 / TOTAL) for the mixed-radix number D whose
       first digit weighs most, so that the fraction f * prefix[j] / 2^64 starts with digit
       j (exact because TOTAL <= 2^64). */
    static inline int egdb_radix_digit(uint64_t f, int j) {
        uint64_t low = f * egdb_radix_prefix[j];
        return (int)(((unsigned __int128)low * (uint64_t)egdb_radix_of(j)) >> 64);
    }
    /* Digit j is radix - 1 (an escape) exactly when the fraction f * prefix[j] mod 2^64 is at
       least ceil((radix - 1) 2^64 / radix): one multiplication a digit, none depending on
       another. */
    static const uint64_t egdb_radix_top[2] = {
        17129119497016012215ULL,   /* ceil(13 * 2^64 / 14) */
        17027763760347278415ULL};  /* ceil(12 * 2^64 / 13) */
    static inline int egdb_radix_is_top(uint64_t f, int j) {
        return f * egdb_radix_prefix[j] >= egdb_radix_top[j >= 10];
    }
    /* The escapes (digit = radix - 1) among digits start..upto-1 of the word f. */
    static inline int egdb_radix_escapes(uint64_t f, int start, int upto) {
        int c = 0, j;
        for (j = start; j < upto; j++)
            c += egdb_radix_is_top(f, j);
        return c;
    }
    /* The escapes among the whole words p[0..count-1]. */
    static inline uint64_t egdb_radix_words_escapes(const uint64_t* p, uint64_t count) {
        uint64_t c = 0, i;
        int j;
        for (i = 0; i < count; i++) {
            uint64_t f = p[i];
            for (j = 0; j < 10; j++)
                c += f * egdb_radix_prefix[j] >= 17129119497016012215ULL;
            for (j = 10; j < 17; j++)
                c += f * egdb_radix_prefix[j] >= 17027763760347278415ULL;
        }
        return c;
    }
    /* The word of the mixed-radix number d (d < TOTAL) and back. */
    static inline uint64_t egdb_radix_encode(uint64_t d) {
        unsigned __int128 num = ((unsigned __int128)d << 64) + (EGDB_RADIX_TOTAL - 1);
        return (uint64_t)(num / EGDB_RADIX_TOTAL);
    }
    static inline uint64_t egdb_radix_decode(uint64_t f) {
        return (uint64_t)(((unsigned __int128)f * EGDB_RADIX_TOTAL) >> 64);
    }
    """
    const uint64_t* egdb_radix_weight
    int egdb_radix_of(int j) noexcept nogil
    int egdb_radix_digit(uint64_t f, int j) noexcept nogil
    int egdb_radix_escapes(uint64_t f, int start, int upto) noexcept nogil
    uint64_t egdb_radix_words_escapes(const uint64_t* p, uint64_t count) noexcept nogil
    uint64_t egdb_radix_encode(uint64_t d) noexcept nogil
    uint64_t egdb_radix_decode(uint64_t f) noexcept nogil


cdef enum:
    EGDB_MAX_SEEDS = 127     # |g| <= seeds in houses must fit a signed byte
    EGDB_UNKNOWN = -128      # the builder's mark of a board not yet solved
    EGDB_HEADER_SIZE = 64
    EGDB_STRIDE = 256        # row length of the binomial table
    EGDB_ROWS = 16           # rows k = 0..15 of the binomial table
    EGDB_ESCAPE = 15         # the packed format's nibble of a board whose g is an escape byte
    EGDB_BLOCK_SHIFT = 9     # the packed format counts escapes in blocks of 512 boards
    EGDB_CONTEXTS = 10368    # contexts a level: s = 0..127, 9 x 9 counts of non-empty houses
    EGDB_DIGITS = 17         # the radix format's boards a 64-bit word
    EGDB_WIDE = 10           # ... of which the first 10 have radix 14 (window 13), then 13 (12)
    EGDB_WORD_SHIFT = 6      # ... its blocks of 64 words (1,088 boards)
    EGDB_SUPER_SHIFT = 5     # ... its superblocks of 32 blocks (34,816 boards)
    EGDB_CODES = 21          # ... its escape codes a 64-bit word (3 bits each)
    EGDB_CODE_BLOCK = 24     # ... its far counts: one a 24 words of codes (504 codes)
    EGDB_RADIX_CONTEXTS = 5184   # ... its contexts a level and radix: s = 0..63, 9 x 9
    EGDB_RADIX_MAX_SEEDS = 63    # ... k = 0..n must fit 6 bits (s < 64)

ctypedef struct EGDB:
    int bits                 # 8: values; 4: nibbles, window, block_escapes, escapes
    const int8_t* values     # g of every board: level 0 first, then level 1, ... (bits 8)
    const uint8_t* nibbles   # c of every board, two a byte (bits 4)
    const int8_t* window     # window[n * EGDB_CONTEXTS + context]: the first k coded (bits 4)
    const uint64_t* block_escapes  # escapes before each block of 512 boards (bits 4)
    const int8_t* escapes    # g of every escaped board, in index order (bits 4)
    uint64_t escape_count    # entries of escapes (a damaged count reads 0, not past the end);
                             # radix format: the escaped boards (codes in esc_codes)
    const uint64_t* words    # radix format (bits 3): 17 boards a word
    const int8_t* radix_window   # radix format: [(2 n + (digit >= 10)) * 5184 + context']
    const uint16_t* block_esc    # radix format: escapes before each block, from its superblock's
    const uint64_t* super_esc    # radix format: escapes before each superblock
    const uint8_t* esc_codes     # radix format: 3 bits an escaped board, 21 a uint64
    const uint64_t* code_blocks  # radix format: far escapes before each 504 escaped boards
    const int8_t* far            # radix format: g of the escapes whose code is 15
    uint64_t far_count
    int whole                # a whole file, not a build in progress: the escape count of
                             # every block is written (dense formats), so an escape may be
                             # ranked back from the next block's
    int houses               # h, houses per side (1..8)
    int max_seeds            # N: levels 0..N are present
    const uint64_t* binom    # binom[k * EGDB_STRIDE + s] = C(s, k) for k = 0..2h-1, s < 256,
                             # and 0 for k = 2h..15 (so that cells past 2h add nothing)
    uint64_t offset[EGDB_MAX_SEEDS + 2]  # offset[n] = index of level n's first entry;
                                         # offset[max_seeds + 1] = number of entries
    # Under `majority` (total > 0: the game's seeds; one byte an entry, bits 8): a board of
    # level n has width[n] entries, one for each store the mover may hold while neither store
    # holds more than half the total, store_lo[n] the first; entry offset[n] + rank x width[n]
    # + (my store - store_lo[n]) (``egdb_index``).
    int total
    int store_lo[EGDB_MAX_SEEDS + 2]
    int width[EGDB_MAX_SEEDS + 2]

cdef inline uint64_t egdb_spread(uint64_t x) noexcept nogil:
    """Bytes 0..3 of x to bytes 0, 2, 4, 6."""
    x &= <uint64_t>0xFFFFFFFF
    x = (x | (x << 16)) & <uint64_t>0x0000FFFF0000FFFF
    return (x | (x << 8)) & <uint64_t>0x00FF00FF00FF00FF

cdef inline uint64_t egdb_rank_cells(const uint64_t* B, uint64_t lo, uint64_t hi) noexcept nogil:
    """The rank of the cells c_0..c_7 (bytes of lo) and c_8..c_15 (bytes of hi)."""
    # Byte t of w * 0x0101..01 is the prefix sum c_0 + ... + c_t; adding 0x0706..00 adds t.
    # No byte carries: every byte stays below N + 16 <= 143.
    cdef uint64_t w = lo * <uint64_t>0x0101010101010101
    cdef uint64_t p = w + <uint64_t>0x0706050403020100
    cdef uint64_t q = (hi + (w >> 56) + 8) * <uint64_t>0x0101010101010101 \
        + <uint64_t>0x0706050403020100
    return (
            B[1 * EGDB_STRIDE + ((p >> 0) & 0xFF)] +
            B[2 * EGDB_STRIDE + ((p >> 8) & 0xFF)] +
            B[3 * EGDB_STRIDE + ((p >> 16) & 0xFF)] +
            B[4 * EGDB_STRIDE + ((p >> 24) & 0xFF)] +
            B[5 * EGDB_STRIDE + ((p >> 32) & 0xFF)] +
            B[6 * EGDB_STRIDE + ((p >> 40) & 0xFF)] +
            B[7 * EGDB_STRIDE + ((p >> 48) & 0xFF)] +
            B[8 * EGDB_STRIDE + ((p >> 56) & 0xFF)] +
            B[9 * EGDB_STRIDE + ((q >> 0) & 0xFF)] +
            B[10 * EGDB_STRIDE + ((q >> 8) & 0xFF)] +
            B[11 * EGDB_STRIDE + ((q >> 16) & 0xFF)] +
            B[12 * EGDB_STRIDE + ((q >> 24) & 0xFF)] +
            B[13 * EGDB_STRIDE + ((q >> 32) & 0xFF)] +
            B[14 * EGDB_STRIDE + ((q >> 40) & 0xFF)] +
            B[15 * EGDB_STRIDE + ((q >> 48) & 0xFF)]
    )

cdef inline uint64_t egdb_rank(const EGDB* db, uint64_t me, uint64_t opp) noexcept nogil:
    """The rank of a board within its level (see the module docstring)."""
    cdef uint64_t lo = egdb_spread(me) | (egdb_spread(opp) << 8)
    cdef uint64_t hi = egdb_spread(me >> 32) | (egdb_spread(opp >> 32) << 8)
    return egdb_rank_cells(db.binom, lo, hi)

cdef inline int egdb_context(uint64_t me, uint64_t opp) noexcept nogil:
    """The packed format's context of a board: its window's place within its level."""
    return seeds_in(me) + 128 * (9 * houses_used(me) + houses_used(opp))

cdef inline int egdb_count_escapes(uint64_t x) noexcept nogil:
    """The nibbles of x equal to EGDB_ESCAPE (15)."""
    x = x & (x >> 1) & (x >> 2) & (x >> 3) & <uint64_t>0x1111111111111111
    return __builtin_popcountll(x)

cdef inline int egdb_count_far(uint64_t x) noexcept nogil:
    """The 3-bit codes of x equal to 7 (the radix format's far escapes)."""
    x = x & (x >> 1) & (x >> 2) & <uint64_t>0x1249249249249249
    return __builtin_popcountll(x)

cdef inline int egdb_escape(const EGDB* db, uint64_t i) noexcept nogil:
    """g of the escaped board of index i (packed format): its byte among the escapes, found by
    counting from the nearer end of its block of 32 words (at most 16 are read): forward from
    the count before its block, or back from the count before the next block (the last block:
    all the escapes, back from the last word holding boards). A build counts forward only."""
    cdef uint64_t blk = i >> EGDB_BLOCK_SHIFT
    cdef const uint64_t* nib = <const uint64_t*>db.nibbles
    cdef const uint64_t* w = nib + (blk << 5)
    cdef const uint64_t* last = nib + (i >> 4)
    cdef const uint64_t* end = w + 32
    cdef uint64_t entries = db.offset[db.max_seeds + 1]
    cdef int part = <int>(i & 15)
    cdef uint64_t j
    if (i & ((1 << EGDB_BLOCK_SHIFT) - 1)) < (1 << (EGDB_BLOCK_SHIFT - 1)) or not db.whole:
        j = db.block_escapes[blk]
        while w < last:
            j += egdb_count_escapes(w[0])
            w += 1
        if part:
            j += egdb_count_escapes(w[0] & ((<uint64_t>1 << (4 * part)) - 1))
    else:
        if ((blk + 1) << EGDB_BLOCK_SHIFT) < entries:
            j = db.block_escapes[blk + 1]
        else:
            j = db.escape_count
            end = nib + ((entries + 15) >> 4)
        w = last + 1
        while w < end:
            j -= egdb_count_escapes(w[0])
            w += 1
        j -= egdb_count_escapes(last[0] >> (4 * part))   # its own nibble and those after it
    if j >= db.escape_count:   # only in a damaged file (verify() finds it; a count wrapped
                               # below zero lands here too)
        return 0
    return db.escapes[j]

cdef inline uint64_t egdb_radix_escape_rank(const EGDB* db, uint64_t q, int j) noexcept nogil:
    """The escapes before digit j of word q (radix format), counted from the nearer end of q's
    block: forward from its start (the block's count), or back from the next block's start (that
    block's count; the last block counts back from all the escapes, from the last word holding
    boards). At most 32 words are read, not 63. A build reads forward only: the counts of the
    blocks it is still writing are not there yet."""
    cdef uint64_t b = q >> EGDB_WORD_SHIFT
    cdef uint64_t start = b << EGDB_WORD_SHIFT
    cdef uint64_t end = start + (1 << EGDB_WORD_SHIFT)
    cdef uint64_t used, r
    if q - start < (1 << (EGDB_WORD_SHIFT - 1)) or not db.whole:
        return db.super_esc[b >> EGDB_SUPER_SHIFT] + db.block_esc[b] \
            + egdb_radix_words_escapes(db.words + start, q - start) \
            + egdb_radix_escapes(db.words[q], 0, j)
    used = (db.offset[db.max_seeds + 1] + EGDB_DIGITS - 1) // EGDB_DIGITS
    if end < used:           # the next block holds boards: its count was written
        r = db.super_esc[(b + 1) >> EGDB_SUPER_SHIFT] + db.block_esc[b + 1]
    else:
        r = db.escape_count
        end = used
    # (a damaged file may wrap r around: the caller's check against escape_count catches it)
    return r - egdb_radix_words_escapes(db.words + q + 1, end - q - 1) \
        - egdb_radix_escapes(db.words[q], j, EGDB_DIGITS)

cdef inline int egdb_radix_escape(const EGDB* db, uint64_t q, int j, int n, int w,
                                  int width) noexcept nogil:
    """g of the escaped board, digit j of word q, whose window is w..w + width - 1 (radix
    format): its code among the escape codes (``egdb_radix_escape_rank``)."""
    cdef uint64_t r = egdb_radix_escape_rank(db, q, j)
    cdef uint64_t t
    cdef const uint64_t* p
    cdef int c
    if r >= db.escape_count:   # only in a damaged file (verify() finds it)
        return 0
    cdef const uint64_t* codes = <const uint64_t*>db.esc_codes
    cdef uint64_t qc = r // EGDB_CODES, cb
    cdef int part = <int>(r - qc * EGDB_CODES)
    c = <int>((codes[qc] >> (3 * part)) & 7)
    if c < 3:
        return 2 * (w + width + c) - n
    if c < 7:
        return 2 * (w - 1 - (c - 3)) - n
    cb = qc // EGDB_CODE_BLOCK
    t = db.code_blocks[cb]
    p = codes + cb * EGDB_CODE_BLOCK
    while p < codes + qc:
        t += egdb_count_far(p[0])
        p += 1
    if part:
        t += egdb_count_far(p[0] & ((<uint64_t>1 << (3 * part)) - 1))
    if t >= db.far_count:
        return 0
    return db.far[t]

cdef inline int egdb_radix_at(const EGDB* db, uint64_t i, int n, int x) noexcept nogil:
    """g of the board of index i, level n, context x in the radix format."""
    cdef uint64_t q = i // EGDB_DIGITS
    cdef int j = <int>(i - q * EGDB_DIGITS)
    cdef int d = egdb_radix_digit(db.words[q], j)
    cdef int width = egdb_radix_of(j) - 1
    cdef int w = db.radix_window[(2 * n + (j >= EGDB_WIDE)) * EGDB_RADIX_CONTEXTS
                                 + (x >> 7) * 64 + (x & 63)]
    if d != width:
        return 2 * (w + d) - n
    return egdb_radix_escape(db, q, j, n, w, width)

cdef inline int egdb_at(const EGDB* db, uint64_t i, int n, int x) noexcept nogil:
    """g of the board of index i (= offset[n] + rank), which holds n seeds in houses, of
    context x (``egdb_context``; the byte format reads neither n nor x)."""
    cdef int c
    if db.bits == 8:
        return db.values[i]
    if db.bits == 3:
        return egdb_radix_at(db, i, n, x)
    c = (db.nibbles[i >> 1] >> ((i & 1) << 2)) & 15
    if c != EGDB_ESCAPE:
        return 2 * (db.window[n * EGDB_CONTEXTS + x] + c) - n
    return egdb_escape(db, i)

cdef inline void egdb_prefetch(const EGDB* db, uint64_t i) noexcept nogil:
    """Start loading the entry of index i."""
    if db.bits == 8:
        __builtin_prefetch(db.values + i)
    elif db.bits == 3:
        __builtin_prefetch(db.words + i // EGDB_DIGITS)
    else:
        __builtin_prefetch(db.nibbles + (i >> 1))

cdef inline uint64_t egdb_index(const EGDB* db, uint64_t me, uint64_t opp, int n,
                                int my_store) noexcept nogil:
    """The entry of the board (me, opp) of level n; under `majority` of the mover's store
    ``my_store`` too (ignored otherwise), which the caller keeps within the level's stores: a
    position where a store holds more than half the seeds is over, never probed."""
    if db.total == 0:
        return db.offset[n] + egdb_rank(db, me, opp)
    return db.offset[n] + egdb_rank(db, me, opp) * <uint64_t>db.width[n] \
        + <uint64_t>(my_store - db.store_lo[n])

cdef inline int egdb_probe(const EGDB* db, uint64_t me, uint64_t opp, int n,
                           int my_store) noexcept nogil:
    """g of the board (me, opp) for the player to move, who holds ``my_store`` (read under
    `majority` only), with n <= db.max_seeds seeds in houses (the caller checks n). Boards
    where the game is over hold the sweep's result."""
    return egdb_at(db, egdb_index(db, me, opp, n, my_store), n, egdb_context(me, opp))

cdef class EndgameTable:
    """A database file memory-mapped read-only; ``db`` is valid while the object lives."""
    cdef EGDB db
    cdef void* _map
    cdef size_t _length
    cdef uint64_t* _binom
    cdef readonly object path
    cdef readonly int capture_always
    cdef readonly int end_mover_empty
    cdef readonly int remaining_empty_side
    cdef readonly unsigned long long entries
    cdef readonly unsigned long long checksum
    cdef readonly int bits
    cdef size_t _fixed_length
    cdef dict _layout
