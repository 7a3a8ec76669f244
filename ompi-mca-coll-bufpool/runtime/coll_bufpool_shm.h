/*
 * Node-shared memory segments (coll_bufpool_shm.c): POSIX shared memory
 * that one rank creates and the others of its node map by name, then
 * unlinked as soon as every one of them has mapped it, so that a job that
 * is killed leaves nothing behind in /dev/shm (only the few milliseconds
 * of a communicator's set-up could).  Every rank reserves its own range of
 * the pages (posix_fallocate) before it reports the segment mapped: a
 * /dev/shm too small for them is an error there, never a SIGBUS at first
 * touch, and each range is allocated by the rank that owns it, so the
 * kernel places it on that rank's NUMA node (its default policy allocates
 * on the node of the allocating CPU), as a first touch would.  No Open
 * MPI: the agreement of the ranks on one segment is the caller's
 * (algorithms/coll_bufpool_node.c, _rounds.c).
 */
#ifndef MCA_COLL_BUFPOOL_SHM_H
#define MCA_COLL_BUFPOOL_SHM_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BUFPOOL_SHM_NAME_MAX 64

typedef struct bufpool_shm {
    void *base;   /* NULL: not mapped */
    size_t bytes; /* page multiple */
    bool counted; /* its owner counted it against the pool's capacity */
    char name[BUFPOOL_SHM_NAME_MAX];
} bufpool_shm_t;

/* The bytes of a segment one rank reserves itself: [offset, offset + bytes). */
typedef struct bufpool_shm_range {
    size_t offset, bytes;
} bufpool_shm_range_t;

/* Create a segment of at least bytes, named uniquely (pid, a counter and
 * nonce), with own reserved, and map it.  0, or an errno value (*shm
 * unchanged, nothing left behind). */
int bufpool_shm_create(bufpool_shm_t *shm, size_t bytes, unsigned long long nonce,
                       bufpool_shm_range_t own);
/* Map the segment called name, which must hold exactly bytes, with own
 * reserved.  0, or an errno value (EINVAL: its size is not bytes). */
int bufpool_shm_attach(bufpool_shm_t *shm, const char *name, size_t bytes, bufpool_shm_range_t own);
/* Remove the name (the mappings stay); safe to call more than once. */
void bufpool_shm_unlink(bufpool_shm_t *shm);
/* Unmap (the memory goes once the last rank unmaps it). */
void bufpool_shm_detach(bufpool_shm_t *shm);

#ifdef __cplusplus
}
#endif

#endif /* MCA_COLL_BUFPOOL_SHM_H */
