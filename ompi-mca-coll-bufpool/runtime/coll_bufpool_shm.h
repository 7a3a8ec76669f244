/*
 * Node-shared memory segments (coll_bufpool_shm.c): files in /dev/shm
 * (POSIX shared memory, opened by path as shm_open does) that one rank
 * creates and the others of its node map by name, then unlinked as soon as
 * every one of them has mapped it, so that a job that is killed leaves
 * nothing behind in /dev/shm.  Between the creation and the unlink (a
 * communicator's set-up, as long as its slowest rank takes to arrive) the
 * creator has asked its runtime beforehand to remove the file should the
 * creator die (the caller's cleanup hook, for a batch of names at a time;
 * Open MPI's btl/sm registers its own file the same way).  Every rank
 * reserves its own range of
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

/* Where the segments live (glibc's shm_open opens the same path). */
#define BUFPOOL_SHM_DIR      "/dev/shm"
#define BUFPOOL_SHM_NAME_MAX 80

typedef struct bufpool_shm {
    void *base;                      /* NULL: not mapped */
    size_t bytes;                    /* page multiple */
    bool counted;                    /* its owner counted it against the pool's capacity */
    char name[BUFPOOL_SHM_NAME_MAX]; /* its path until unlinked, then "" */
} bufpool_shm_t;

/* The bytes of a segment one rank reserves itself: [offset, offset + bytes). */
typedef struct bufpool_shm_range {
    size_t offset, bytes;
} bufpool_shm_range_t;

/* Asks the runtime to remove the files of paths (a comma-separated list,
 * of files that need not exist yet) should this process die before it
 * does.  Best effort: a runtime that cannot is no error (the window stays
 * open, as it does for a singleton). */
typedef void (*bufpool_shm_cleanup_fn_t)(const char *paths);

/* Create a segment of at least bytes, named uniquely in BUFPOOL_SHM_DIR
 * (pid, a random token per process, drawn from the first nonce, and a
 * counter), its cleanup registered with cleanup (NULL: none) before the
 * file exists, with own reserved, and map it.  0, or an errno value (*shm
 * unchanged, nothing left behind). */
int bufpool_shm_create(bufpool_shm_t *shm, size_t bytes, unsigned long long nonce,
                       bufpool_shm_range_t own, bufpool_shm_cleanup_fn_t cleanup);
/* Map the segment at path name (its creator's shm->name), which must hold
 * exactly bytes, with own reserved.  0, or an errno value (EINVAL: its size is not bytes). */
int bufpool_shm_attach(bufpool_shm_t *shm, const char *name, size_t bytes, bufpool_shm_range_t own);
/* Remove the name (the mappings stay); safe to call more than once. */
void bufpool_shm_unlink(bufpool_shm_t *shm);
/* Unmap (the memory goes once the last rank unmaps it). */
void bufpool_shm_detach(bufpool_shm_t *shm);

#ifdef __cplusplus
}
#endif

#endif /* MCA_COLL_BUFPOOL_SHM_H */
