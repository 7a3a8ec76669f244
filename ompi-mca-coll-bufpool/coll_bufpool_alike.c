/*
 * The digest of what a process's decisions follow from, published and
 * compared per communicator (coll_bufpool_alike.h).
 */
#include "coll_bufpool_alike.h"

#include <stdio.h>
#include <string.h>

#include "ompi/communicator/communicator.h"
#include "ompi/proc/proc.h"

void bufpool_alike_init(bufpool_alike_t *alike)
{
    alike->digest = BUFPOOL_DIGEST_INIT;
    alike->published = false;
}

void bufpool_alike_add_bytes(bufpool_alike_t *alike, const char *name, const void *bytes, size_t n)
{
    /* The name and the length first, so that no two settings' bytes run
     * together into the same stream. */
    alike->digest = bufpool_digest(alike->digest, name, strlen(name) + 1);
    alike->digest = bufpool_digest(alike->digest, &n, sizeof(n));
    alike->digest = bufpool_digest(alike->digest, bytes, n);
}

void bufpool_alike_add(bufpool_alike_t *alike, const char *name, const char *text)
{
    if (NULL == text) {
        bufpool_alike_add_bytes(alike, name, "", 0);
        alike->digest = bufpool_digest(alike->digest, "unset", 5);
    } else {
        bufpool_alike_add_bytes(alike, name, text, strlen(text));
    }
}

void bufpool_alike_publish(bufpool_alike_t *alike)
{
    /* 0 is the table's "published none". */
    alike->digest |= 1;
    alike->published = bufpool_peers_publish(alike->digest);
}

bufpool_alike_verdict_t bufpool_alike_comm(const bufpool_alike_t *alike, bufpool_peers_t *peers,
                                           struct ompi_communicator_t *comm, char *why,
                                           size_t whylen)
{
    const int p = ompi_comm_size(comm);
    if (1 == p) {
        return BUFPOOL_ALIKE; /* nobody to disagree with */
    }
    if (!alike->published) {
        snprintf(why, whylen, "this process could not publish its settings' digest");
        return BUFPOOL_APART;
    }
    int lost = -1;
    for (int r = 0; r < p; r++) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, r);
        if (proc == ompi_proc_local()) {
            continue;
        }
        const bufpool_peer_t facts = bufpool_peers_of(peers, proc);
        if (facts.digest_lost) {
            lost = lost < 0 ? r : lost;
        } else if (facts.digest != alike->digest) {
            /* Every rank finds this difference, or another: all keep out,
             * whatever this rank could not look up. */
            snprintf(why, whylen,
                     0 == facts.digest ? "its rank %d (job rank %u) runs without coll/bufpool, or "
                                         "could not publish its settings"
                                       : "its rank %d (job rank %u) runs coll/bufpool with other "
                                         "settings: another build, other coll_bufpool parameters "
                                         "or rules, or rules it could not load",
                     r, (unsigned)proc->super.proc_name.vpid);
            return BUFPOOL_APART;
        }
    }
    if (lost >= 0) {
        snprintf(why, whylen,
                 "the runtime ran out of memory looking up the settings of its rank %d", lost);
        return BUFPOOL_ALIKE_UNKNOWN;
    }
    return BUFPOOL_ALIKE;
}
