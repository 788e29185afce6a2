# cython: language_level=3
"""The transposition table's memory: the address space of its cap reserved up front, the
buckets in use mapped with huge pages and touched as the table grows. Probe and store are
inline in ``_table.pxd``."""

from libc.stdint cimport uintptr_t
from libc.string cimport memset

cdef extern from "<sys/mman.h>" nogil:
    void* mmap(void* addr, size_t length, int prot, int flags, int fd, long offset)
    int munmap(void* addr, size_t length)
    int mprotect(void* addr, size_t length, int prot)
    int madvise(void* addr, size_t length, int advice)
    void* MAP_FAILED
    int PROT_NONE, PROT_READ, PROT_WRITE, MAP_PRIVATE, MAP_ANONYMOUS, MAP_NORESERVE
    int MADV_HUGEPAGE

cdef extern from *:
    """
    #include <sys/mman.h>
    #ifndef MADV_POPULATE_WRITE
    #define MADV_POPULATE_WRITE 23  /* Linux 5.14 */
    #endif
    """
    int MADV_POPULATE_WRITE

cdef enum:
    HUGE_PAGE = 2 * 1024 * 1024


cdef uint64_t buckets_within(uint64_t mb) noexcept nogil:
    """The largest power-of-two number of buckets that fits in ``mb`` MiB."""
    cdef uint64_t buckets = 1
    while buckets * 2 * TT_BUCKET * sizeof(Entry) <= mb * 1024 * 1024:
        buckets *= 2
    return buckets


cdef int commit(Table* t, size_t size) noexcept nogil:
    """Make the first ``size`` bytes of the reservation usable: 0, or -1 when the kernel
    refuses the memory. Huge pages, because table probes are random and TLB misses are costly.
    Every new page is faulted in here, once: a first touch inside a search can stall for
    milliseconds (the kernel zeroes, or compacts memory to find a huge page), past the search's
    deadline. The kernel hands out zeroed pages: populating them is enough (a memset of 256 MiB
    on top doubled the table's share of a `kalah solve`'s start-up); memset where the kernel
    cannot populate (before Linux 5.14)."""
    cdef char* start = <char*>t.entries + t.size_bytes
    cdef size_t length = size - t.size_bytes
    if mprotect(start, length, PROT_READ | PROT_WRITE) != 0:
        return -1
    madvise(start, length, MADV_HUGEPAGE)
    if madvise(start, length, MADV_POPULATE_WRITE) != 0:
        memset(start, 0, length)
    t.size_bytes = size
    return 0


cdef void set_growth(Table* t) noexcept nogil:
    """Grow after TT_GROW_LOAD new entries a slot. A proof keeps what it needs in a table far
    smaller than its nodes (entries below much work replace the others): the 15 hard positions,
    3-20 M nodes each, searched 0.25 % more nodes in 16 MiB than in 256 MiB, and 3.6 % more in
    1 MiB, each in less time (the small table stays in the caches); one new entry a slot before
    growing cost Kalah(6,3) and (5,4) under 1 % more nodes than a full-size table from the start,
    four 14 % (HISTORY.md, 2026-11-30, fourth session)."""
    t.written = 0
    t.grow_at = (t.mask + 1) * TT_BUCKET * TT_GROW_LOAD if t.size_bytes < t.cap_bytes else 0


cdef int tt_init(Table* t, int tt_mb, int start_mb=TT_START_MB) except -1:
    """A table of at most ``tt_mb`` MiB (the largest power-of-two number of buckets that fits),
    ``start_mb`` of it in use at first."""
    cdef uint64_t cap, start
    cdef void* mem
    if tt_mb < 1 or tt_mb > 65536:
        raise ValueError("tt_mb must be 1..65536")
    cap = buckets_within(tt_mb)
    start = buckets_within(start_mb if 0 < start_mb < tt_mb else tt_mb)
    t.cap_bytes = cap * TT_BUCKET * sizeof(Entry)
    # Address space only (no memory is committed to it), aligned to a huge page so that the
    # kernel can back every 2 MiB of the table with one.
    t.reserved_bytes = t.cap_bytes + HUGE_PAGE
    mem = mmap(NULL, t.reserved_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
               -1, 0)
    if mem == MAP_FAILED:
        raise MemoryError("cannot reserve the transposition table's address space")
    t.entries = <Entry*>((<uintptr_t>mem + HUGE_PAGE - 1) & ~(<uintptr_t>HUGE_PAGE - 1))
    t.size_bytes = 0
    t.reserved = mem
    with nogil:
        if commit(t, start * TT_BUCKET * sizeof(Entry)) != 0:
            munmap(mem, t.reserved_bytes)
            t.entries = NULL
    if t.entries == NULL:
        raise MemoryError("cannot allocate the transposition table")
    t.mask = start - 1
    set_growth(t)
    return 0


cdef int tt_grow(Table* t) noexcept nogil:
    """Grow the table by TT_GROWTH (at most to its cap) and move each entry to its bucket in
    the larger one: bucket i's entries go to i, i + n, i + 2n, ... (n the old buckets), all but
    i among the new ones, still empty, so no entry is lost. Only while no other thread uses the
    table. Returns 1 when it grew; when the kernel refuses the memory the table stays as it is
    and stops growing."""
    cdef uint64_t old = t.mask + 1, new = old * TT_GROWTH, i, j, k
    cdef Entry* e
    cdef Entry* dst
    cdef int a, b
    if not t.grow_at:
        return 0
    while new * TT_BUCKET * sizeof(Entry) > t.cap_bytes:
        new //= 2
    if commit(t, new * TT_BUCKET * sizeof(Entry)) != 0:
        t.grow_at = 0
        return 0
    t.mask = new - 1
    for i in range(old):
        e = t.entries + i * TT_BUCKET
        for a in range(TT_BUCKET):
            k = e[a].check ^ e[a].data.word
            if k == 0:
                continue
            j = tt_hash_of(k) & t.mask
            if j == i:
                continue
            dst = t.entries + j * TT_BUCKET
            for b in range(TT_BUCKET):
                if dst[b].check == 0 and dst[b].data.word == 0:
                    dst[b] = e[a]
                    break
            e[a].check = 0
            e[a].data.word = 0
    set_growth(t)
    return 1


cdef void tt_free(Table* t) noexcept:
    if t.entries != NULL:
        munmap(t.reserved, t.reserved_bytes)
        t.entries = NULL


cdef void tt_clear(Table* t) noexcept nogil:
    memset(t.entries, 0, t.size_bytes)
    t.written = 0
