/*
 * Test buffers in pages of their own, sealed read-only while a collective
 * may only read them (sealed_pages.h).
 */
#include "sealed_pages.h"

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* The sealed mappings, for sealed_pages_hold (a full table only loses
 * the message's detail). */
#define MAX_SEALED 256
static struct {
    uintptr_t begin, end;
} sealed[MAX_SEALED];
static pthread_mutex_t sealed_lock = PTHREAD_MUTEX_INITIALIZER;

static void note(void *base, size_t mapped, bool add)
{
    const uintptr_t begin = (uintptr_t)base;
    pthread_mutex_lock(&sealed_lock);
    for (int i = 0; i < MAX_SEALED; i++) {
        if (add ? 0 == sealed[i].begin : begin == sealed[i].begin) {
            sealed[i].begin = add ? begin : 0;
            sealed[i].end = add ? begin + mapped : 0;
            break;
        }
    }
    pthread_mutex_unlock(&sealed_lock);
}

void *sealed_pages_map(size_t bytes, size_t *mapped)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    *mapped = (bytes + page - 1) / page * page;
    if (0 == *mapped) {
        *mapped = page;
    }
    void *m = mmap(NULL, *mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
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
    note(base, mapped, false);
    munmap(base, mapped);
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
