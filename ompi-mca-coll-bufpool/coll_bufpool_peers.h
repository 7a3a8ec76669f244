/*
 * What this process knows of each process of the job, learned once: the
 * host it runs on and the digest of its coll/bufpool settings
 * (coll_bufpool_alike.h).  Both come from the runtime's store of what each
 * process published at MPI_Init (the modex).
 *
 * Every module enable asks for the facts of each member of its
 * communicator.  From Open MPI 5.0 each question of the store is a PMIx
 * lookup that allocates, and PMIx keeps part of each: asked anew for every
 * communicator, the heap grew by some 130 bytes per communicator made and
 * freed at 2 ranks (test/reliability/reslimits.sh, "comms").  Neither fact
 * can change during the job, so each process's facts are looked up at the
 * first question, all at once, and kept in one record; host names get
 * numbers, the same name the same number in this process.
 */
#ifndef MCA_COLL_BUFPOOL_PEERS_H
#define MCA_COLL_BUFPOOL_PEERS_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bufpool_ompi_compat.h"
#include "opal/class/opal_hash_table.h"
#include BUFPOOL_OPAL_MUTEX_H

struct ompi_proc_t;

typedef struct bufpool_peer {
    int host;        /* the number of its host from 0; -1: its name is not known */
    uint64_t digest; /* its settings' digest; 0: it published none */
    /* Whether the lookup of its digest ran out of memory: whether it
     * published one is not known (digest 0). */
    bool digest_lost;
} bufpool_peer_t;

typedef struct bufpool_peers {
    opal_mutex_t lock;
    opal_hash_table_t of_proc; /* process name -> its index in records + 1 */
    opal_hash_table_t of_name; /* host name -> host number + 1 */
    int n;                     /* host numbers given so far */
    bufpool_peer_t *records;   /* the facts remembered, in the order learned */
    size_t nrecords, capacity;
    bool ready; /* the tables could be made */
} bufpool_peers_t;

void bufpool_peers_init(bufpool_peers_t *peers);
void bufpool_peers_fini(bufpool_peers_t *peers);

/* Publish this process's settings digest (never 0) with its connection
 * data: at component open, before Open MPI's commit and fence.  False
 * where the runtime would not take it. */
bool bufpool_peers_publish(uint64_t digest);

/* proc's facts: remembered, or looked up now (outside the lock: from Open
 * MPI 5.0 a lookup asks PMIx, which may wait for the peer's server).  The
 * process itself has host 0 or another number and digest 0 (it knows its
 * own); a process on this node, this process's host without a lookup.
 * Where the tables could not be made, host -1 (the digest is looked up
 * all the same: the ranks must agree on it).  Facts with a digest lost are
 * not remembered. */
bufpool_peer_t bufpool_peers_of(bufpool_peers_t *peers, struct ompi_proc_t *proc);

#endif /* MCA_COLL_BUFPOOL_PEERS_H */
