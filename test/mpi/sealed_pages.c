/*
 * Test buffers in pages of their own, sealed read-only while a collective
 * may only read them (sealed_pages.h).
 *
 * Unmapped buffers are kept for reuse, a few and small ones only: a case
 * of the collcheck programs maps and unmaps two or three buffers, and on a
 * virtual machine each munmap of a process whose Open MPI threads ran on
 * other CPUs costs a TLB shootdown by IPI, and each fresh page a fault and
 * its zeroing (perf, 2026-12-02: a third of a 3-rank collcheck job's CPU
 * time in munmap, page faults and memset).  Nothing is lost by the reuse:
 * mmap hands a freed range back at once anyway, so a late write into a
 * freed buffer never faulted, and every buffer is filled before use.
 */
#include "sealed_pages.h"

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The sealed mappings, for sealed_pages_hold (a full table only loses
 * the message's detail). */
#define MAX_SEALED 256
static struct {
    uintptr_t begin, end;
} sealed[MAX_SEALED];
static pthread_mutex_t sealed_lock = PTHREAD_MUTEX_INITIALIZER;
/* Once a sealed mapping found the table full, a mapping the table does not
 * hold may still be read-only. */
static bool sealed_overflow;

/* Writable mappings kept for reuse (under sealed_lock), oldest first. */
#define KEPT_MAX       16
#define KEPT_MAX_BYTES ((size_t)64 << 20)
static struct {
    void *base;
    size_t mapped;
} kept[KEPT_MAX];
static int nkept;
static size_t kept_bytes;

/* Takes entry i out of the list. */
static void remove_kept(int i)
{
    kept_bytes -= kept[i].mapped;
    nkept--;
    memmove(&kept[i], &kept[i + 1], (size_t)(nkept - i) * sizeof(kept[0]));
}

/* The smallest kept mapping of at least bytes and at most twice that (a
 * larger one would hold memory a small buffer does not need), taken out
 * of the list; NULL if none. */
static void *take_kept(size_t bytes, size_t *mapped)
{
    int best = -1;
    for (int i = 0; i < nkept; i++) {
        if (kept[i].mapped >= bytes && kept[i].mapped / 2 <= bytes &&
            (best < 0 || kept[i].mapped < kept[best].mapped)) {
            best = i;
        }
    }
    if (best < 0) {
        return NULL;
    }
    void *base = kept[best].base;
    *mapped = kept[best].mapped;
    remove_kept(best);
    return base;
}

/* Adds a sealed mapping to the table (whether it found room) or removes
 * one (whether the mapping may have been read-only: the table held it, or
 * it was once full). */
static bool note(void *base, size_t mapped, bool add)
{
    const uintptr_t begin = (uintptr_t)base;
    bool found = false;
    pthread_mutex_lock(&sealed_lock);
    for (int i = 0; i < MAX_SEALED && !found; i++) {
        if (add ? 0 == sealed[i].begin : begin == sealed[i].begin) {
            sealed[i].begin = add ? begin : 0;
            sealed[i].end = add ? begin + mapped : 0;
            found = true;
        }
    }
    if (add && !found) {
        sealed_overflow = true;
    }
    const bool result = found || (!add && sealed_overflow);
    pthread_mutex_unlock(&sealed_lock);
    return result;
}

void *sealed_pages_map(size_t bytes, size_t *mapped)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    *mapped = (bytes + page - 1) / page * page;
    if (0 == *mapped) {
        *mapped = page;
    }
    pthread_mutex_lock(&sealed_lock);
    void *m = take_kept(*mapped, mapped);
    pthread_mutex_unlock(&sealed_lock);
    if (NULL != m) {
        return m;
    }
    m = mmap(NULL, *mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (MAP_FAILED == m) {
        perror("test buffer: mmap");
        MPI_Abort(MPI_COMM_WORLD, 5);
    }
    return m;
}

void sealed_pages_seal(void *base, size_t mapped, bool on)
{
    if (0 != mprotect(base, mapped, on ? PROT_READ : PROT_READ | PROT_WRITE)) {
        perror("test buffer: mprotect");
        MPI_Abort(MPI_COMM_WORLD, 5);
    }
    note(base, mapped, on);
}

void sealed_pages_unmap(void *base, size_t mapped)
{
    const bool may_be_sealed = note(base, mapped, false);
    /* Large ones (the 64 MiB scratch-bound check's) are not kept. */
    if (mapped > KEPT_MAX_BYTES / 4 ||
        (may_be_sealed && 0 != mprotect(base, mapped, PROT_READ | PROT_WRITE))) {
        munmap(base, mapped);
        return;
    }
    pthread_mutex_lock(&sealed_lock);
    /* The oldest go first, unmapped outside the list. */
    void *drop[KEPT_MAX];
    size_t drop_len[KEPT_MAX];
    int ndrop = 0;
    while (nkept > 0 && (KEPT_MAX == nkept || kept_bytes + mapped > KEPT_MAX_BYTES)) {
        drop[ndrop] = kept[0].base;
        drop_len[ndrop++] = kept[0].mapped;
        remove_kept(0);
    }
    kept[nkept].base = base;
    kept[nkept++].mapped = mapped;
    kept_bytes += mapped;
    pthread_mutex_unlock(&sealed_lock);
    for (int i = 0; i < ndrop; i++) {
        munmap(drop[i], drop_len[i]);
    }
}

bool sealed_pages_hold(const void *addr)
{
    const uintptr_t at = (uintptr_t)addr;
    for (int i = 0; i < MAX_SEALED; i++) {
        if (sealed[i].begin <= at && at < sealed[i].end) {
            return true;
        }
    }
    return false;
}
