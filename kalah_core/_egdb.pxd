# cython: language_level=3
"""The endgame database's C interface, for the search to cimport.

The database holds the *future gain* g (final store difference for the player to move, minus
the store difference now) of every board with at most ``max_seeds`` seeds in houses, one signed
byte per board. Boards are in the mover's frame exactly as in ``_board.pxd`` (``me``/``opp``
words, house 1 in the low byte). Entries are grouped by level n = seeds in houses, n = 0, 1, ...;
within a level a board's index is the colex (combinatorial number system) rank of its 2h house
counts c_0..c_{2h-1} = my houses 1..h, then the opponent's houses 1..h: with the "bar
positions" s_i = c_0 + ... + c_i + i (i = 0..2h-2),

    rank = sum over i of C(s_i, i + 1),  0 <= rank < C(n + 2h - 1, 2h - 1).

Usage from the search::

    from kalah_core._egdb cimport EGDB, EndgameTable, egdb_probe
    cdef EndgameTable t = database.table      # keep a reference while probing
    cdef const EGDB* db = &t.db
    if n <= db.max_seeds:                     # n = seeds in houses of the board
        g = egdb_probe(db, b.me, b.opp, n)    # value = g + b.my_store - b.opp_store
"""

from libc.stdint cimport int8_t, uint64_t

cdef enum:
    EGDB_MAX_SEEDS = 127     # |g| <= seeds in houses must fit a signed byte
    EGDB_UNKNOWN = -128      # the builder's mark of a board not yet solved
    EGDB_HEADER_SIZE = 64

ctypedef struct EGDB:
    const int8_t* values     # g of every board: level 0 first, then level 1, ...
    int houses               # h, houses per side (1..8)
    int max_seeds            # N: levels 0..N are present
    int stride               # row length of binom (>= max_seeds + 2 * houses - 1)
    const uint64_t* binom    # binom[k * stride + s] = C(s, k) for k = 0..2h-1, s < stride
    uint64_t offset[EGDB_MAX_SEEDS + 2]  # offset[n] = index of level n's first board;
                                         # offset[max_seeds + 1] = number of entries

cdef inline uint64_t egdb_rank(const EGDB* db, uint64_t me, uint64_t opp) noexcept nogil:
    """The rank of a board within its level (see the module docstring)."""
    cdef int h = db.houses, i
    cdef int stride = db.stride
    cdef const uint64_t* row = db.binom + stride          # k = 1
    cdef uint64_t r = 0
    # Byte i of w * 0x0101..01 is the prefix sum c_0 + ... + c_i; adding 0x0706..00 adds i.
    # No byte carries: every byte stays below N + 2h + 8 < 256.
    cdef uint64_t ps = me * <uint64_t>0x0101010101010101 + <uint64_t>0x0706050403020100
    cdef uint64_t mine = (me * <uint64_t>0x0101010101010101) >> 56
    for i in range(h):
        r += row[(ps >> (8 * i)) & 0xFF]
        row += stride
    # The opponent's cell j is cell h + j: its bar position adds my seeds and h.
    ps = (opp + mine + <uint64_t>h) * <uint64_t>0x0101010101010101 + <uint64_t>0x0706050403020100
    for i in range(h - 1):
        r += row[(ps >> (8 * i)) & 0xFF]
        row += stride
    return r

cdef inline int egdb_probe(const EGDB* db, uint64_t me, uint64_t opp, int n) noexcept nogil:
    """g of the board (me, opp) for the player to move, which holds n <= db.max_seeds seeds in
    houses (the caller checks n). Boards where the game is over hold the sweep's result."""
    return db.values[db.offset[n] + egdb_rank(db, me, opp)]

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
