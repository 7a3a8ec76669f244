/*
 * The node-level collectives' segments (see coll_bufpool_node.c's opening
 * comment): the agreement that sets one up among the ranks of a
 * communicator (or of allreduce hier_node's host), the cap on what a
 * process maps, the start of a call (its sequence number, the set-up and
 * the cold release of the chunk segment), and the reduction of the ranks'
 * slots that the small messages and the chunk rounds share.
 */
#include "coll_bufpool_node_segment.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ompi/mca/coll/base/coll_tags.h"
#include BUFPOOL_OPAL_PMIX_H

#define NODE_MAGIC 0x627566706e6f6465ULL /* "bufpnode" */

bufpool_node_counters_t bufpool_node_counters;

typedef struct node_header {
    uint64_t magic, nonce;
    uint64_t ranks, rank_stride;
    /* Rank 0's coll_bufpool_node_flat_max: every rank cuts the groups of
     * the two-level algorithms from it, so that a value set differently on
     * some ranks cannot make them disagree. */
    uint64_t flat_max;
} node_header_t;

/* Phases of a segment's set-up (bufpool_node_home_t.phase). */
enum { NODE_NONE = 0, NODE_SETTING_UP, NODE_SETTLED };

/* ---------------------------------------------------------------------- */
/* Setting the segment up: one agreement of every rank. */

typedef struct node_offer {
    int32_t status; /* rank 0's errno, 0: created */
    int32_t ranks;
    uint64_t nonce, bytes;
    bufpool_shm_id_t id;
    char name[BUFPOOL_SHM_NAME_MAX];
} node_offer_t;

/* The verdicts of a set-up: some rank could not have the segment; every
 * rank has it; some rank could not open rank 0's link to an unnamed one,
 * so rank 0 offers a named one instead (once). */
enum { NODE_VERDICT_NO = 0, NODE_VERDICT_YES = 1, NODE_VERDICT_NAMED = 2 };

/* A rank's own refusal of a segment past coll_bufpool_node_max_bytes
 * (reported as this errno; said by node_cap_check, not again). */
#define NODE_OVER_CAP EDQUOT

/* The first time this process comes here with *said (each message says
 * itself once): true, with this host's name in host. */
bool bufpool_node_first_say(int *said, char host[64])
{
    if (0 != __atomic_exchange_n(said, 1, __ATOMIC_RELAXED)) {
        return false;
    }
    memset(host, 0, 64);
    (void)gethostname(host, 63);
    return true;
}

static void node_say_unavailable(const bufpool_params_t *params, const char *what, int err,
                                 struct ompi_communicator_t *comm)
{
    static int said;
    char host[64];
    if (NODE_OVER_CAP != err && bufpool_node_first_say(&said, host)) {
        bufpool_params_show(params, "node-shm",
                            "coll_bufpool: on host %s (pid %d), %s failed: %s; the node "
                            "algorithms of communicator %s run point-to-point (/dev/shm)",
                            host, (int)getpid(), what, strerror(err), comm->c_name);
    }
}

/* NODE_OVER_CAP, said once, when bytes more would take the segments this
 * process maps past max_bytes; else 0.  max_bytes 0 asks for no segment at
 * all: refused without a word. */
static int node_cap_check(const bufpool_params_t *params, size_t bytes, size_t max_bytes,
                          const char *what, struct ompi_communicator_t *comm)
{
    static int said;
    const size_t mapped =
        (size_t)__atomic_load_n(&bufpool_node_counters.segment_bytes, __ATOMIC_RELAXED);
    if (mapped <= max_bytes && bytes <= max_bytes - mapped) {
        return 0;
    }
    char host[64];
    if (0 != max_bytes && bufpool_node_first_say(&said, host)) {
        bufpool_params_show(params, "node-cap",
                            "coll_bufpool: on host %s (pid %d), the %s of communicator %s (%zu "
                            "bytes) would pass coll_bufpool_node_max_bytes (%zu; %zu mapped): "
                            "point-to-point instead",
                            host, (int)getpid(), what, comm->c_name, bytes, max_bytes, mapped);
    }
    return NODE_OVER_CAP;
}

/* The number a sysfs file holds (a decimal), or -1. */
static long node_sysfs_number(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = -1;
    if (NULL != f) {
        if (1 != fscanf(f, "%ld", &v) || v < 0) {
            v = -1;
        }
        fclose(f);
    }
    return v;
}

/* Whether every CPU of set is in the CPU list a sysfs file holds
 * ("0-7,16-23"); false when it cannot be read. */
static bool node_sysfs_cpus_cover(const char *path, const cpu_set_t *set)
{
    FILE *f = fopen(path, "r");
    if (NULL == f) {
        return false;
    }
    cpu_set_t listed;
    CPU_ZERO(&listed);
    bool ok = true;
    long lo, hi;
    while (ok && 1 == fscanf(f, "%ld", &lo)) {
        hi = lo;
        int c = fgetc(f);
        if ('-' == c) {
            ok = 1 == fscanf(f, "%ld", &hi);
            c = fgetc(f);
        }
        ok = ok && lo >= 0 && hi >= lo && hi < CPU_SETSIZE;
        for (long cpu = lo; ok && cpu <= hi; cpu++) {
            CPU_SET((int)cpu, &listed);
        }
        if (',' != c) {
            break;
        }
    }
    fclose(f);
    CPU_AND(&listed, &listed, set);
    return ok && CPU_EQUAL(&listed, set);
}

/* The last-level cache this process is bound within, as a number alike for
 * every process bound within it (its package and the L3's id, from
 * sysfs); -1 when the process may run on CPUs of several (not bound, or
 * bound wider) or the kernel does not say.  Read once per process: the
 * binding Open MPI gave it at launch.  The first CPU of its affinity names
 * the L3 (an L3 never spans packages), and the L3's CPU list must hold
 * every other: four small reads, however many CPUs the process may use. */
static long node_cpu_domain(void)
{
    static long domain = -2;
    long seen = __atomic_load_n(&domain, __ATOMIC_RELAXED);
    if (-2 != seen) {
        return seen;
    }
    cpu_set_t set;
    seen = -1;
    int first = -1;
    if (0 == sched_getaffinity(0, sizeof(set), &set)) {
        for (int cpu = 0; cpu < CPU_SETSIZE && first < 0; cpu++) {
            first = CPU_ISSET(cpu, &set) ? cpu : -1;
        }
    }
    char path[96];
    const char *const cpu_dir = "/sys/devices/system/cpu/cpu";
    if (first >= 0) {
        snprintf(path, sizeof(path), "%s%d/cache/index3/level", cpu_dir, first);
    }
    if (first >= 0 && 3 == node_sysfs_number(path)) {
        snprintf(path, sizeof(path), "%s%d/cache/index3/id", cpu_dir, first);
        const long l3 = node_sysfs_number(path);
        snprintf(path, sizeof(path), "%s%d/topology/physical_package_id", cpu_dir, first);
        const long package = node_sysfs_number(path);
        snprintf(path, sizeof(path), "%s%d/cache/index3/shared_cpu_list", cpu_dir, first);
        if (l3 >= 0 && package >= 0 && node_sysfs_cpus_cover(path, &set)) {
            seen = package << 20 | (l3 & 0xfffff);
        }
    }
    __atomic_store_n(&domain, seen, __ATOMIC_RELAXED);
    return seen;
}

/* What a rank writes into its block's first line before it reports at the
 * set-up of a communicator's segment: for the single-copy probe its pid
 * and the address of these words in its own process, and its domain when
 * its segment has more ranks than its flat_max (else -1, which, should rank
 * 0's flat_max be lower, makes every rank cut groups without domains:
 * still the same groups everywhere; so communicators of up to 16 ranks
 * never read sysfs). */
static void node_publish(void *base, size_t block, const bufpool_node_publish_t *publish,
                         bool with_domain)
{
    uint64_t *w = node_cma_words(base, block);
    w[0] = (uint64_t)getpid();
    w[1] = (uint64_t)(uintptr_t)w;
    ((int64_t *)((char *)base + block))[NODE_DOMAIN_WORD] =
        !with_domain                 ? -1
        : publish->test_domain >= -1 ? (int64_t)publish->test_domain /* testing */
                                     : (int64_t)node_cpu_domain();
}

/* bufpool_shm_cleanup_fn_t: the runtime removes a segment's name should
 * its creator die before every rank has mapped it (a job killed while rank
 * 0 waits for a late rank at a communicator's set-up).  Its failure (a
 * singleton, a runtime without cleanup) leaves that window open, nothing
 * worse. */
static void node_register_cleanup(const char *paths)
{
    (void)BUFPOOL_REGISTER_CLEANUP(paths);
}

static uint64_t node_nonce(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40) ^
                 (uint64_t)(uintptr_t)&ts;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x | 1;
}

/* A rank could not open rank 0's link to its unnamed segment (said once,
 * at coll_bufpool_verbose 1): rank 0 names its segments from now on. */
static void node_say_named(const bufpool_params_t *params, struct ompi_communicator_t *comm)
{
    static int said;
    char host[64];
    if (NULL != params->verbose && *params->verbose >= 1 && bufpool_node_first_say(&said, host)) {
        opal_output(0,
                    "coll_bufpool: on host %s (pid %d), a rank of communicator %s could not open "
                    "this process's /proc/%d/fd link to a node segment; its segments have names "
                    "in /dev/shm from now on, while their ranks map them",
                    host, (int)getpid(), comm->c_name, (int)getpid());
    }
}

/* One agreement of every rank of comm on a segment of a header page and a
 * block of rank_stride bytes per rank: rank 0 creates it and sends its
 * name (by default the link to its descriptor of an unnamed file), every
 * rank maps it, reserves its own block (rank 0 the header too: each
 * block's pages on its owner's NUMA node) and reports, rank 0 removes the
 * name and sends the verdict.  Should a rank be refused rank 0's link,
 * the verdict asks for a second round with a named segment, which rank 0
 * keeps for its later segments.  0 and *shm mapped on every rank,
 * BUFPOOL_NODE_UNAVAILABLE when one rank could not (on all ranks alike:
 * nothing mapped), else a point-to-point error.  my_error: this rank's
 * failure known beforehand (an errno value, or 0), which it reports instead
 * of creating or mapping, as it does when the segment would take it past
 * terms->max_bytes; what names the segment in the messages.  publish, for
 * a communicator's segment (NULL: a chunk segment): rank 0 writes its
 * flat_max into the header, and each rank writes where its block lies in
 * its process and its domain before it reports (node_publish), for the
 * single-copy probe and the groups. */
int bufpool_node_share(struct ompi_communicator_t *comm, const bufpool_group_t *g, int my_error,
                       size_t rank_stride, const char *what, const bufpool_node_terms_t *terms,
                       const bufpool_node_publish_t *publish, bufpool_shm_t *shm)
{
    const int flat_max = NULL != publish ? publish->flat_max : 0;
    const int p = g->n, me = g->me;
    const size_t bytes = NODE_HEADER + (size_t)p * rank_stride;
    const bufpool_shm_range_t own = {.offset = 0 == me ? 0 : NODE_HEADER + (size_t)me * rank_stride,
                                     .bytes = 0 == me ? NODE_HEADER + rank_stride : rank_stride};
    const int tag = MCA_COLL_BASE_TAG_BCAST;
    node_offer_t offer;
    int32_t mine = 0, verdict = NODE_VERDICT_NO;
    int rc = OMPI_SUCCESS;
    char step[96];

    memset(shm, 0, sizeof(*shm));
    if (0 == my_error) {
        my_error = node_cap_check(terms->params, bytes, terms->max_bytes, what, comm);
    }
    bool linked = terms->proc_link;
    do {
        memset(&offer, 0, sizeof(offer));
        if (0 == me) {
            offer.nonce = node_nonce();
            offer.ranks = p;
            offer.bytes = bytes;
            offer.status = 0 != my_error ? my_error
                                         : bufpool_shm_create(shm, bytes, offer.nonce, own,
                                                              node_register_cleanup, linked);
            if (0 == offer.status) {
                /* The pages are zero: every sequence word starts at 0. */
                node_header_t *h = shm->base;
                h->nonce = offer.nonce;
                h->ranks = (uint64_t)p;
                h->rank_stride = rank_stride;
                h->flat_max = (uint64_t)flat_max;
                if (NULL != publish) {
                    node_publish(shm->base, NODE_HEADER, publish, p > flat_max);
                }
                __atomic_store_n(&h->magic, NODE_MAGIC, __ATOMIC_RELEASE);
                offer.id = shm->id;
                snprintf(offer.name, sizeof(offer.name), "%s", shm->name);
            } else {
                snprintf(step, sizeof(step), "creating the %s (%zu bytes)", what, bytes);
                node_say_unavailable(terms->params, step, offer.status, comm);
            }
            const bool was_linked = shm->linked;
            bool refused = false;
            verdict = 0 == offer.status;
            for (int r = 1; r < p && OMPI_SUCCESS == rc; r++) {
                rc = bufpool_send(&offer, sizeof(offer), MPI_BYTE, bufpool_group_rank(g, r), tag,
                                  comm);
            }
            for (int r = 1; r < p && OMPI_SUCCESS == rc; r++) {
                int32_t status;
                rc = bufpool_recv(&status, 1, MPI_INT32_T, bufpool_group_rank(g, r), tag, comm);
                verdict = verdict && 0 == status;
                refused = refused || BUFPOOL_SHM_LINK_REFUSED == status;
            }
            /* Everyone who will ever map it has: the name goes now. */
            bufpool_shm_unlink(shm);
            if (OMPI_SUCCESS == rc && refused && was_linked) {
                bufpool_shm_links_refused();
                node_count(&bufpool_node_counters.links_refused, 1);
                node_say_named(terms->params, comm);
                verdict = NODE_VERDICT_NAMED;
                linked = false;
            }
            for (int r = 1; r < p && OMPI_SUCCESS == rc; r++) {
                rc = bufpool_send(&verdict, 1, MPI_INT32_T, bufpool_group_rank(g, r), tag, comm);
            }
        } else {
            rc = bufpool_recv(&offer, sizeof(offer), MPI_BYTE, bufpool_group_rank(g, 0), tag, comm);
            if (OMPI_SUCCESS == rc) {
                mine = 0 != offer.status                          ? offer.status
                       : offer.ranks != p || offer.bytes != bytes ? EINVAL
                                                                  : 0;
                if (0 == mine) {
                    offer.name[sizeof(offer.name) - 1] = '\0';
                    mine = 0 != my_error ? my_error
                           : me == terms->refuse_link_rank && bufpool_shm_is_link(offer.name)
                               ? BUFPOOL_SHM_LINK_REFUSED /* testing */
                               : bufpool_shm_attach(shm, offer.name, offer.id, bytes, own);
                    shm->name[0] = '\0'; /* rank 0 unlinks it */
                    if (0 == mine) {
                        /* The same segment as rank 0's, not a namesake. */
                        const node_header_t *h = shm->base;
                        if (NODE_MAGIC != __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) ||
                            offer.nonce != h->nonce || (uint64_t)p != h->ranks) {
                            mine = EINVAL;
                        }
                    }
                    if (0 != mine && BUFPOOL_SHM_LINK_REFUSED != mine) {
                        snprintf(step, sizeof(step),
                                 "mapping rank 0's %s (%zu bytes) and reserving its part", what,
                                 bytes);
                        node_say_unavailable(terms->params, step, mine, comm);
                    }
                    if (0 == mine && NULL != publish) {
                        node_publish(shm->base, own.offset, publish, p > flat_max);
                    }
                }
                rc = bufpool_send(&mine, 1, MPI_INT32_T, bufpool_group_rank(g, 0), tag, comm);
            }
            if (OMPI_SUCCESS == rc) {
                rc = bufpool_recv(&verdict, 1, MPI_INT32_T, bufpool_group_rank(g, 0), tag, comm);
            }
        }
        if (OMPI_SUCCESS == rc && NODE_VERDICT_NAMED == verdict) {
            bufpool_shm_detach(shm); /* a named one in its place */
            memset(shm, 0, sizeof(*shm));
        }
    } while (OMPI_SUCCESS == rc && NODE_VERDICT_NAMED == verdict);
    if (OMPI_SUCCESS == rc && NODE_VERDICT_YES != verdict) {
        rc = BUFPOOL_NODE_UNAVAILABLE;
    }
    if (OMPI_SUCCESS != rc) {
        bufpool_shm_unlink(shm);
        bufpool_shm_detach(shm);
        return rc;
    }
    node_count(&bufpool_node_counters.segments, 1);
    node_count(&bufpool_node_counters.segment_bytes, (int64_t)shm->bytes);
    /* The pool keeps that much less idle memory while it is mapped. */
    shm->counted = bufpool_scratch_count_outside((int64_t)shm->bytes);
    return OMPI_SUCCESS;
}

void bufpool_node_unshare(bufpool_shm_t *shm)
{
    /* Before the unmap, which a held registration would make abort. */
    bufpool_scratch_deregister(shm->registration);
    shm->registration = NULL;
    if (NULL != shm->base) {
        node_count(&bufpool_node_counters.segments, -1);
        node_count(&bufpool_node_counters.segment_bytes, -(int64_t)shm->bytes);
        if (shm->counted) {
            (void)bufpool_scratch_count_outside(-(int64_t)shm->bytes);
            shm->counted = false;
        }
    }
    bufpool_shm_unlink(shm);
    bufpool_shm_detach(shm);
}

/* The groups of the two-level algorithms (coll_bufpool_node.c), cut alike
 * on every rank from what the set-up's agreement left in the segment:
 * rank 0's flat_max and every rank's domain (bufpool_node_groups), read
 * into memory allocated with n (node_setup: none to fail here, where one
 * rank's failure would make it cut differently from the others). */
static void node_groups(bufpool_node_t *n, const bufpool_shm_t *shm, const bufpool_group_t *g)
{
    const int p = g->n;
    const node_header_t *h = shm->base;
    const uint64_t flat_max = h->flat_max;
    long *domain = (long *)(n + 1);
    n->bounds = (int *)(domain + p);
    n->leaders = n->bounds + p + 1;
    for (int r = 0; r < p; r++) {
        const int64_t *line =
            (const int64_t *)((const char *)shm->base + NODE_HEADER + (size_t)r * NODE_RANK_STRIDE);
        domain[r] = (long)line[NODE_DOMAIN_WORD];
    }
    n->ngroups = bufpool_node_groups(
        domain, p, flat_max > (uint64_t)INT_MAX ? INT_MAX : (int)flat_max, n->bounds);
    for (int k = 0; k < n->ngroups; k++) {
        n->leaders[k] = n->bounds[k + 1] - 1;
        if (g->me >= n->bounds[k] && g->me < n->bounds[k + 1]) {
            n->my_group = k;
        }
    }
}

/* At coll_bufpool_verbose 2, the communicator's rank 0 says how its ranks
 * were grouped and from what placement (an administrator's check that the
 * groups follow the L3 caches). */
static void node_say_groups(const bufpool_node_t *n, struct ompi_communicator_t *comm)
{
    if (n->ngroups < 2 || 0 != n->me || NULL == n->terms.params->verbose ||
        *n->terms.params->verbose < 2) {
        return;
    }
    const long *domain = (const long *)(n + 1);
    int unknown = 0, runs = 0;
    for (int r = 0; r < n->p; r++) {
        unknown += domain[r] < 0;
        runs += domain[r] >= 0 && (0 == r || domain[r] != domain[r - 1]);
    }
    char groups[160];
    size_t len = 0;
    for (int k = 0; k < n->ngroups && len < sizeof(groups) - 16; k++) {
        len += (size_t)snprintf(groups + len, sizeof(groups) - len, "%s%d-%d", 0 == k ? "" : " ",
                                n->bounds[k], n->bounds[k + 1] - 1);
    }
    if (len >= sizeof(groups) - 16) {
        snprintf(groups + len, sizeof(groups) - len, " ...");
    }
    opal_output(
        0,
        "coll_bufpool: communicator %s: node allreduce, reduce, bcast and barrier of its %d ranks "
        "in %d groups (rank 0's coll_bufpool_node_flat_max: %llu): ranks %s; L3 caches: "
        "%s%d run(s) of ranks bound within one, %d rank(s) not bound within one",
        comm->c_name, n->p, n->ngroups,
        (unsigned long long)((const node_header_t *)n->base)->flat_max, groups,
        unknown > 0 ? "left out, " : "", runs, unknown);
}

/* The communicator's segment: OMPI_SUCCESS and *out, or as bufpool_node_share. */
static int node_setup(struct ompi_communicator_t *comm, const bufpool_group_t *g,
                      const bufpool_comm_state_t *state, bufpool_node_t **out)
{
    /* The ranks' domains and the groups' bounds and leaders with it (p,
     * p + 1 and p entries at most: node_groups). */
    bufpool_node_t *n =
        calloc(1, sizeof(*n) + (size_t)g->n * sizeof(long) + (2 * (size_t)g->n + 1) * sizeof(int));
    /* Every rank takes part in the agreement, one without memory for its
     * state too: it reports the failure there. */
    bufpool_shm_t shm;
    const int my_error = NULL == n                                       ? ENOMEM
                         : ompi_comm_rank(comm) == state->node_fail_rank ? ENOSPC /* testing */
                                                                         : 0;
    const bufpool_node_publish_t publish = {.flat_max = state->node_flat_max,
                                            .test_domain = state->node_test_l3};
    const bufpool_node_terms_t terms = {.max_bytes = state->node_max_bytes,
                                        .proc_link = state->node_proc_link,
                                        .refuse_link_rank = state->node_refuse_link_rank,
                                        .params = state->params};
    int rc =
        bufpool_node_share(comm, g, my_error, NODE_RANK_STRIDE, "segment", &terms, &publish, &shm);
    if (OMPI_SUCCESS != rc) {
        free(n);
        return rc;
    }
    node_groups(n, &shm, g);
    n->shm = shm;
    n->base = n->shm.base;
    n->group = *g;
    n->p = g->n;
    n->me = g->me;
    n->fail_chunk_rank = state->node_fail_chunk_rank;
    n->terms = terms;
    n->cold_calls = state->node_cold_calls;
    n->cma_error = !state->node_cma                                  ? NODE_CMA_UNWANTED
                   : ompi_comm_rank(comm) == state->node_no_cma_rank ? EPERM /* testing */
                                                                     : 0;
    node_say_groups(n, comm);
    *out = n;
    return OMPI_SUCCESS;
}

void bufpool_node_free(struct bufpool_node *node)
{
    if (NULL != node) {
        bufpool_node_unshare(&node->big);
        bufpool_node_unshare(&node->shm);
        free(node);
    }
}

/* ---------------------------------------------------------------------- */
/* One call's steps. */

/* At call s: the chunk segment goes when no call since n->cold_calls calls
 * wanted it (every rank counts the same calls), and one refused is asked
 * for again by the next large allreduce after such a pause. */
static void node_chunks_cold(bufpool_node_t *n, uint64_t s)
{
    if (0 == n->big_state || 0 == n->cold_calls || s - n->big_last <= n->cold_calls) {
        return;
    }
    if (NULL != n->big.base) {
        bufpool_node_unshare(&n->big);
        node_count(&bufpool_node_counters.cold_releases, 1);
    }
    n->big_state = 0;
}

/* The call's sequence number and the segment, once the set-up (this call's
 * or an earlier one's) is settled and this rank's earlier calls are done;
 * BUFPOOL_NODE_UNAVAILABLE without the segment. */
int bufpool_node_begin_at(bufpool_node_home_t *home, const bufpool_group_t *g,
                          bufpool_comm_state_t *state, struct ompi_communicator_t *comm, uint64_t s,
                          bufpool_node_t **out)
{
    if (NODE_NONE == home->phase) {
        home->phase = NODE_SETTING_UP;
        bufpool_node_t *n = NULL;
        int rc = node_setup(comm, g, state, &n);
        if (NULL != n) {
            n->fit_bytes = home->fit_bytes;
        }
        home->node = n;
        __atomic_store_n(&home->phase, NODE_SETTLED, __ATOMIC_RELEASE);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    } else {
        /* A nonblocking call started before it is still setting it up. */
        bufpool_wait_word(&home->phase, NODE_SETTLED);
    }
    bufpool_node_t *n = home->node;
    if (NULL == n) {
        return BUFPOOL_NODE_UNAVAILABLE;
    }
    bufpool_wait_word(node_done(n, n->me), s - 1);
    node_chunks_cold(n, s);
    *out = n;
    return OMPI_SUCCESS;
}

/* buf = slot(r0) op (slot(r1) op (... op slot(r_last))) of call s, the
 * slots of the ranks of set in its order (the first ranks of the
 * communicator, p of them or a scan's prefix, or the leaders of the
 * groups: at least 1), for count elements of dtype in buf's own layout,
 * read at byte off of every slot (their signature bytes from element first
 * on: buf is that element). */
int bufpool_node_reduce_set(bufpool_node_t *n, const node_slots_t *slot, uint64_t s, void *buf,
                            size_t count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                            size_t off, const node_rank_set_t *set)
{
    const int ranks = set->n;
    bufpool_view_t v;
    bufpool_view_init(&v, buf, count, dtype);
    if (NULL != v.contig && ranks >= 2 && count > 0) {
        /* Packed bytes are the layout itself: reduce from the slots, the
         * last two at once into buf (one pass fewer than copying the last
         * one in first). */
        const ptrdiff_t shift = v.contig - (char *)buf;
        bufpool_reduce3(op, slot->payload(n, node_set_rank(set, ranks - 2), s) + off - shift,
                        slot->payload(n, node_set_rank(set, ranks - 1), s) + off - shift, buf,
                        count, dtype);
        for (int k = ranks - 3; k >= 0; k--) {
            bufpool_reduce(op, slot->payload(n, node_set_rank(set, k), s) + off - shift, buf, count,
                           dtype);
        }
        return OMPI_SUCCESS;
    }
    int rc = bufpool_view_unpack(&v, 0, v.bytes,
                                 slot->payload(n, node_set_rank(set, ranks - 1), s) + off);
    if (OMPI_SUCCESS != rc || ranks < 2 || 0 == count) {
        return rc;
    }
    /* A layout with gaps: each slot unpacked into scratch of that layout. */
    ptrdiff_t gap;
    const size_t span = bufpool_span(dtype, count, &gap);
    char *mem = bufpool_scratch_get(span);
    if (NULL == mem) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    bufpool_view_t t;
    bufpool_view_init(&t, mem - gap, count, dtype);
    for (int k = ranks - 2; k >= 0 && OMPI_SUCCESS == rc; k--) {
        rc = bufpool_view_unpack(&t, 0, t.bytes, slot->payload(n, node_set_rank(set, k), s) + off);
        if (OMPI_SUCCESS == rc) {
            bufpool_reduce(op, mem - gap, buf, count, dtype);
        }
    }
    bufpool_scratch_put(mem, span);
    return rc;
}

size_t bufpool_node_slice(size_t count, int p, int r, size_t *first)
{
    *first = count * (size_t)r / (size_t)p;
    return count * (size_t)(r + 1) / (size_t)p - *first;
}

/* The slices of round q of every rank but this one (and this one's too
 * when own), once each owner's word ready holds q, into buf (the round's
 * count elements of dtype, in this rank's layout); a slice whose owner
 * said it failed is not copied, and the call returns an error. */
int bufpool_node_copy_slices(const bufpool_node_t *n, const node_slots_t *slot, uint64_t q,
                             char *buf, size_t count, struct ompi_datatype_t *dtype, int ready,
                             bool own)
{
    const size_t type_size = dtype->super.size;
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    int rc = OMPI_SUCCESS;
    for (int k = own ? 0 : 1; k < n->p; k++) {
        const int j = (n->me + k) % n->p;
        size_t first;
        const size_t theirs = bufpool_node_slice(count, n->p, j, &first);
        bufpool_wait_word(slot->word(n, j, q) + ready, q);
        if (slot->has_error_word &&
            q == __atomic_load_n(slot->word(n, j, q) + NODE_WORD_FAILED, __ATOMIC_RELAXED)) {
            rc = OMPI_SUCCESS != rc ? rc : OMPI_ERR_OUT_OF_RESOURCE;
            continue;
        }
        bufpool_view_t v;
        bufpool_view_init(&v, buf + (ptrdiff_t)first * extent, theirs, dtype);
        const int rc2 =
            bufpool_view_unpack(&v, 0, v.bytes, slot->payload(n, j, q) + first * type_size);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    return rc;
}

/* Whether a rank posted an error with its chunk of round q (slots with
 * an error word; the word holds q only when that round failed). */
static bool node_round_failed(const bufpool_node_t *n, const node_slots_t *slot, uint64_t q)
{
    for (int j = 0; slot->has_error_word && j < n->p; j++) {
        if (q == __atomic_load_n(slot->word(n, j, q) + NODE_WORD_FAILED, __ATOMIC_RELAXED)) {
            return true;
        }
    }
    return false;
}

/* The second half of node_rsag, once every rank has posted count elements
 * of dtype in its slot of round q: this rank reduces its slice of every slot
 * (elements cut alike on every rank: the count and the signature are the
 * same everywhere) into out (the slice's first element, typed) or, when out
 * is NULL, into buf (the count elements of the result, in this rank's
 * layout), writes the result over its own slice of its own slot (no other
 * rank reads that range of it before the result is posted), posts it in the
 * slot's second word, and, when copy_out, copies the others' slices out
 * into buf: each rank reads 2 n bytes of the slots instead of p n.  (Leaving
 * the rank's own slice of its input out of the slot saves a copy of n / p;
 * at 2 ranks on the 2-core machine it measured no faster, 2026-11-27: not
 * done.)  Neither out nor buf (no scratch), or a rank that posted an error
 * with its chunk: this rank does not reduce; it still posts, and where the
 * slots have an error word it says so there, so that the ranks that copy
 * its slice return the error too instead of a wrong result. */
int bufpool_node_rsag_round(bufpool_node_t *n, const node_slots_t *slot, uint64_t q, char *buf,
                            size_t count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                            char *out, bool copy_out)
{
    const size_t type_size = dtype->super.size;
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    size_t first;
    const size_t mine = bufpool_node_slice(count, n->p, n->me, &first);
    char *slice = NULL != out ? out : NULL != buf ? buf + (ptrdiff_t)first * extent : NULL;
    int rc = OMPI_ERR_OUT_OF_RESOURCE, rc2;
    bufpool_view_t v;
    if (NULL != slice && node_round_failed(n, slot, q)) {
        /* A rank could not pack its chunk: no slice of this round is
         * right, so this rank says so for its own slice too. */
        slice = NULL;
    }
    if (NULL != slice) {
        rc = bufpool_node_reduce_range(n, slot, q, slice, mine, dtype, op, first * type_size, n->p);
        bufpool_view_init(&v, slice, mine, dtype);
        rc2 = bufpool_view_pack(&v, 0, v.bytes, slot->payload(n, n->me, q) + first * type_size);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    if (OMPI_SUCCESS != rc && slot->has_error_word) {
        __atomic_store_n(slot->word(n, n->me, q) + NODE_WORD_FAILED, q, __ATOMIC_RELAXED);
    }
    __atomic_store_n(slot->word(n, n->me, q) + NODE_WORD_REDUCED, q, __ATOMIC_RELEASE);
    if (copy_out) {
        rc2 = bufpool_node_copy_slices(n, slot, q, buf, count, dtype, NODE_WORD_REDUCED, false);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    return rc;
}
