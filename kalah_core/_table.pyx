# cython: language_level=3
"""The transposition table's memory: one anonymous mapping, huge pages, touched up front.
Probe and store are inline in ``_table.pxd``."""

from libc.string cimport memset

cdef extern from "<sys/mman.h>" nogil:
    void* mmap(void* addr, size_t length, int prot, int flags, int fd, long offset)
    int munmap(void* addr, size_t length)
    int madvise(void* addr, size_t length, int advice)
    void* MAP_FAILED
    int PROT_READ, PROT_WRITE, MAP_PRIVATE, MAP_ANONYMOUS, MADV_HUGEPAGE

cdef extern from *:
    """
    #include <sys/mman.h>
    #ifndef MADV_POPULATE_WRITE
    #define MADV_POPULATE_WRITE 23  /* Linux 5.14 */
    #endif
    """
    int MADV_POPULATE_WRITE


cdef int tt_init(Table* t, int tt_mb) except -1:
    """Map the largest power-of-two number of buckets that fits in ``tt_mb`` MiB."""
    cdef uint64_t buckets = 1
    cdef void* mem = NULL
    if tt_mb < 1 or tt_mb > 65536:
        raise ValueError("tt_mb must be 1..65536")
    while buckets * 2 * TT_BUCKET * sizeof(Entry) <= <uint64_t>tt_mb * 1024 * 1024:
        buckets *= 2
    t.size_bytes = buckets * TT_BUCKET * sizeof(Entry)
    # Huge pages, because table probes are random and TLB misses are costly. Every page is
    # faulted in here, once: a first touch inside a search can stall for milliseconds (the
    # kernel zeroes, or compacts memory to find a huge page), past the search's deadline.
    # The kernel hands out zeroed pages: populating them is enough (a memset of 256 MiB on
    # top doubled the table's share of a `kalah solve`'s start-up); memset where the kernel
    # cannot populate (before Linux 5.14).
    mem = mmap(NULL, t.size_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    if mem == MAP_FAILED:
        raise MemoryError("cannot allocate the transposition table")
    madvise(mem, t.size_bytes, MADV_HUGEPAGE)
    with nogil:
        if madvise(mem, t.size_bytes, MADV_POPULATE_WRITE) != 0:
            memset(mem, 0, t.size_bytes)
    t.entries = <Entry*>mem
    t.mask = buckets - 1
    return 0


cdef void tt_free(Table* t) noexcept:
    if t.entries != NULL:
        munmap(t.entries, t.size_bytes)
        t.entries = NULL


cdef void tt_clear(Table* t) noexcept nogil:
    memset(t.entries, 0, t.size_bytes)
