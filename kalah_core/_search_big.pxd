# cython: language_level=3
"""The search compiled for the big board (see ``_search_big.pyx``)."""

from libc.stdint cimport uint64_t

from kalah_core._bigboard cimport Board
from kalah_core._searchdefs cimport Search

cdef int big_search(Search* s, const Board* b, int alpha, int beta, int depth,
                    uint64_t h) noexcept nogil
cdef uint64_t big_hash(const Search* s, const Board* b) noexcept nogil
