# cython: language_level=3
"""The search (``_search_body.pxi``) compiled for the big board of ``_bigboard.pxd``: positions
of more than 8 houses or 255 seeds. ``Searcher`` (``_search.pyx``) calls it at the root."""

from libc.stdint cimport uint64_t, int64_t
from libc.stdlib cimport abs

from kalah_core._egdb cimport EGDB, egdb_probe, egdb_index, egdb_rank, egdb_at, egdb_prefetch, egdb_context
from kalah_core._board cimport CRules, Sowing, SWAP, FLAG_PIE, FLAG_NORTH
from kalah_core._bigboard cimport (
    Board, MAX_HOUSES, MAX_SEEDS, ORDER_EXTRA_TURN, play, is_over, seeds_in, houses_used,
    byte_at, swap_legal, words8, houses_hash, board_mix,
)
from kalah_core._table cimport (
    Table, Probe, TT_PROVEN as PROVEN, TT_NO_MOVE as NO_MOVE, TT_STORE_MUL, fmix, tt_probe,
    __builtin_prefetch, tt_store, tt_prefetch, tt_grow,
)
from kalah_core._searchdefs cimport *

include "_search_body.pxi"


cdef int big_search(Search* s, const Board* b, int alpha, int beta, int depth,
                    uint64_t h) noexcept nogil:
    return search(s, b, alpha, beta, depth, h)


cdef uint64_t big_hash(const Search* s, const Board* b) noexcept nogil:
    return hash_of(s, b)
