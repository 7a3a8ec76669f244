/*
 * Node-shared memory segments (coll_bufpool_shm.c): files on /dev/shm's
 * tmpfs that one rank creates and the others of its node map, each rank
 * reserving its own range of the pages.
 *
 * A segment has no name by default: its creator makes it unnamed
 * (O_TMPFILE) and the others open it through the creator's descriptor,
 * /proc/PID/fd/FD, as UCX's posix transport does; the file goes with the
 * last mapping, so a job killed at any moment, its launcher with it,
 * leaves nothing in /dev/shm.  Opening that link takes ptrace read access
 * to the creator (the same user and PID namespace, a dumpable creator, no
 * security module saying no): where a rank is refused, the caller tells
 * this process (bufpool_shm_links_refused) and its later segments are
 * named, as are all segments where the caller asks for names.  A named
 * segment is a file in /dev/shm (POSIX shared memory, opened by path as
 * shm_open does) until every rank has mapped it; in that window (a
 * communicator's set-up, as long as its slowest rank takes to arrive) the
 * creator has asked its runtime beforehand to remove the file should the
 * creator die (the caller's cleanup hook, for a batch of names at a time;
 * Open MPI's btl/sm registers its own file the same way).
 *
 * Every rank reserves its own range of the pages (posix_fallocate) before
 * it reports the segment mapped: a /dev/shm too small for them is an
 * error there, never a SIGBUS at first touch, and each range is allocated
 * by the rank that owns it, so the kernel places it on that rank's NUMA
 * node (its default policy allocates on the node of the allocating CPU),
 * as a first touch would.  A rank checks that the file it opened is the
 * creator's (device and inode) before it touches it.  No Open MPI: the
 * agreement of the ranks on one segment is the caller's
 * (algorithms/coll_bufpool_node_segment.c).
 *
 * A segment's mapping has an inaccessible page on either side of [base,
 * base + bytes), so that no other mapping touches it: the transports
 * invalidate a registration that any release touches, even at its edge,
 * and abort the job when it is in use (ob1's rcache/grdma), and a range of
 * the segment may be registered, by its owner or by the transport itself.
 */
#ifndef MCA_COLL_BUFPOOL_SHM_H
#define MCA_COLL_BUFPOOL_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where the segments live (glibc's shm_open opens the same path), and
 * the start of a named segment's path there. */
#define BUFPOOL_SHM_DIR      "/dev/shm"
#define BUFPOOL_SHM_PREFIX   BUFPOOL_SHM_DIR "/bufpool-"
#define BUFPOOL_SHM_NAME_MAX 80

/* What bufpool_shm_attach returns when it could not open an unnamed
 * segment through its creator's /proc link, or opened another file
 * there: not an errno value (those are positive). */
#define BUFPOOL_SHM_LINK_REFUSED (-1)

/* Which file a segment is: a peer checks that it opened the creator's. */
typedef struct bufpool_shm_id {
    uint64_t dev, ino;
} bufpool_shm_id_t;

typedef struct bufpool_shm {
    void *base;   /* NULL: not mapped */
    size_t bytes; /* page multiple */
    bool counted; /* its owner counted it against the pool's capacity */
    bool linked;  /* name is the creator's /proc link to fd, not a file's name */
    int fd;       /* the creator's descriptor of an unnamed segment while name is set */
    /* Its owner's registration of part of it with the transport
     * (bufpool_scratch_register), released before it is unmapped; NULL:
     * none. */
    void *registration;
    bufpool_shm_id_t id;
    /* What the other ranks open, on the creator until bufpool_shm_unlink,
     * then "": the file's path, or /proc/PID/fd/FD of an unnamed one. */
    char name[BUFPOOL_SHM_NAME_MAX];
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

/* Create a segment of at least bytes with own reserved, and map it.
 * Unnamed when linked is true and no rank has refused this process's link
 * (and the kernel has O_TMPFILE on /dev/shm); else named uniquely in
 * BUFPOOL_SHM_DIR (pid, a random token per process, drawn from the first
 * nonce, and a counter), its cleanup registered with cleanup (NULL: none)
 * before the file exists.  0, or an errno value (*shm unchanged, nothing
 * left behind). */
int bufpool_shm_create(bufpool_shm_t *shm, size_t bytes, unsigned long long nonce,
                       bufpool_shm_range_t own, bufpool_shm_cleanup_fn_t cleanup, bool linked);
/* Map the segment name (its creator's shm->name, which is file id), which
 * must hold exactly bytes, with own reserved.  0, BUFPOOL_SHM_LINK_REFUSED
 * (an unnamed segment's link could not be opened, or led elsewhere), or an
 * errno value (EINVAL: not a name bufpool_shm_create gives, another file,
 * or its size is not bytes). */
int bufpool_shm_attach(bufpool_shm_t *shm, const char *name, bufpool_shm_id_t id, size_t bytes,
                       bufpool_shm_range_t own);
/* Whether name is an unnamed segment's link, /proc/PID/fd/FD (digits
 * both). */
bool bufpool_shm_is_link(const char *name);
/* A rank could not open this process's link to a segment: its later
 * segments are named. */
void bufpool_shm_links_refused(void);
/* Remove the name, or close the link's descriptor (the mappings stay);
 * safe to call more than once. */
void bufpool_shm_unlink(bufpool_shm_t *shm);
/* Unmap (the memory goes once the last rank unmaps it). */
void bufpool_shm_detach(bufpool_shm_t *shm);

#ifdef __cplusplus
}
#endif

#endif /* MCA_COLL_BUFPOOL_SHM_H */
