/*
 * Test buffers in pages of their own, which a test makes read-only while a
 * collective may only read them (MPI's const send buffers), so that a
 * write into one, even of the same bytes or only for a while, which no
 * later comparison can see, faults where it happens.  The collcheck
 * programs and the differential fuzzer allocate their send buffers here.
 * Failures to map or protect end the job (MPI_Abort) with a message.
 */
#ifndef SEALED_PAGES_H
#define SEALED_PAGES_H

#include <stdbool.h>
#include <stddef.h>

/* At least bytes of writable memory in pages of its own, its contents
 * unspecified (a mapping unmapped before may come back: fill it before
 * use); *mapped: the mapping's length (whole pages). */
void *sealed_pages_map(size_t bytes, size_t *mapped);
/* Read-only (sealed) or writable again. */
void sealed_pages_seal(void *base, size_t mapped, bool sealed);
void sealed_pages_unmap(void *base, size_t mapped);
/* Whether addr lies in a sealed mapping: for a SIGSEGV handler's message
 * (reads the table without its lock: a crash report, best effort). */
bool sealed_pages_hold(const void *addr);

#endif
