/*
 * Scratch memory of bufpool's algorithms (coll_bufpool_scratch.c): from the
 * regpar pool when it is loaded (already faulted in and registered, reused
 * call after call), else from malloc; a persistent task's own buffers
 * first.  Every byte is counted, so that users (and the tests) can see that
 * scratch stays bounded: the component publishes the counters as MPI_T
 * variables.  Needs Open MPI's mpool framework, nothing of the component.
 */
#ifndef MCA_COLL_BUFPOOL_SCRATCH_H
#define MCA_COLL_BUFPOOL_SCRATCH_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

BEGIN_C_DECLS

typedef struct bufpool_scratch_counters {
    uint64_t bytes_in_use; /* held now                                 */
    uint64_t bytes_peak;   /* the most held at once                    */
    uint64_t requests;     /* buffers taken (pool or malloc)           */
    uint64_t plain_allocs; /* of them from malloc (no pool, or it was
                              out of memory)                           */
} bufpool_scratch_counters_t;

extern bufpool_scratch_counters_t bufpool_scratch_counters;

/* At component open and close; verbose: coll_bufpool_verbose (1: say when
 * no pool is there, 2: also when it is). */
void bufpool_scratch_open(int verbose);
void bufpool_scratch_close(void);

/* Look the pool up once (safe from any thread); whether it is there. */
void bufpool_scratch_lookup(void);
bool bufpool_scratch_from_pool(void);

/* At least bytes of page-aligned scratch; NULL only if the system is out of
 * memory. */
void *bufpool_scratch_get(size_t bytes);
void bufpool_scratch_put(void *buf, size_t bytes);

/* Count bytes mapped (> 0) or unmapped again (< 0) outside the pool, the
 * node-shared segments, against its max_capacity; whether the pool counted
 * them (false without it: then nothing is to be given back either). */
bool bufpool_scratch_count_outside(int64_t delta);

/* Register [addr, addr + len) of a node-shared segment with the transport
 * where the pool registers its slabs, for as long as the transport sends
 * from it; a handle for bufpool_scratch_deregister, which must come before
 * the range is unmapped (NULL: nothing registered, no pool). */
void *bufpool_scratch_register(void *addr, size_t len);
void bufpool_scratch_deregister(void *handle);

/* The buffers a persistent task kept between its starts, back to the
 * pool (when its request is freed). */
struct bufpool_task;
void bufpool_scratch_drop_kept(struct bufpool_task *task);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_SCRATCH_H */
