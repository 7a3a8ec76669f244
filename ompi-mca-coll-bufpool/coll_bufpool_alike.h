/*
 * Whether the processes of a communicator run coll/bufpool set up alike.
 *
 * Every rank of a communicator must take the same decision for every call
 * (docs/collectives.md), and those decisions follow from the build, the
 * parameters and the rules files, which each process reads on its own.  A
 * rules file missing on one node, a parameter set in one node's
 * environment only, another version of the component, bufpool missing
 * from one node's component path, or an allocation that failed while one
 * process loaded its rules would leave ranks deciding differently: a hang
 * or crossed messages.  So each process publishes a digest of what its
 * decisions follow from with its connection data at MPI_Init (the modex),
 * and a communicator whose members' digests are not all the same, or that
 * has a member without one, keeps the modules below bufpool on every
 * member alike: each member compares every other's digest with its own,
 * so all find them equal or all find a difference.  Each process's digest
 * is looked up once per job, with its host (coll_bufpool_peers.h).
 */
#ifndef MCA_COLL_BUFPOOL_ALIKE_H
#define MCA_COLL_BUFPOOL_ALIKE_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coll_bufpool_peers.h"

struct ompi_communicator_t;

/* FNV-1a, 64 bits: a digest of configuration text, not a defence against
 * anyone (a collision needs two settings crafted to collide). */
#define BUFPOOL_DIGEST_INIT UINT64_C(0xcbf29ce484222325)

static inline uint64_t bufpool_digest(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    }
    return h;
}

typedef struct bufpool_alike {
    /* What this process's decisions follow from, folded in by
     * bufpool_alike_add as the settings are read; published by
     * bufpool_alike_publish (then never 0: 0 stands for "none"). */
    uint64_t digest;
    bool published;
} bufpool_alike_t;

void bufpool_alike_init(bufpool_alike_t *alike);

/* Fold a setting into the digest: its name and its text (NULL: unset). */
void bufpool_alike_add(bufpool_alike_t *alike, const char *name, const char *text);
/* Fold bytes that decisions read (a rules file's text) under name. */
void bufpool_alike_add_bytes(bufpool_alike_t *alike, const char *name, const void *bytes, size_t n);

/* Publish the digest in the modex (at component open, before Open MPI's
 * commit and fence).  Where that fails, every communicator of more than
 * one process keeps the modules below (the others find no digest of this
 * process either). */
void bufpool_alike_publish(bufpool_alike_t *alike);

/* Whether every member of comm published this process's digest (their
 * digests from peers).  If not, false with the first member that differs
 * and how in why. */
bool bufpool_alike_comm(const bufpool_alike_t *alike, bufpool_peers_t *peers,
                        struct ompi_communicator_t *comm, char *why, size_t whylen);

#endif /* MCA_COLL_BUFPOOL_ALIKE_H */
