/*
 * Node-level collectives over one shared segment per communicator (see
 * coll_bufpool_node.h).
 *
 * Layout: a header page, then one block per rank (page-aligned): a line
 * with the rank's done word, then NODE_SLOTS slots.  A slot starts
 * with the sequence number of the call whose data it holds (and a second
 * word: that of the call whose reduced slice it holds, node_rsag), and the
 * payload (signature bytes, packed) follows in the same cache line, so that
 * a reader of a tiny message takes one line per peer.
 *
 * Every call that runs here takes the next sequence number s of its
 * communicator, in call order, the same on every rank (collectives are
 * called in the same order everywhere; a nonblocking or persistent one
 * takes its number when it starts).  A rank
 *   - posts: packs its data into its slot s % SLOTS, then stores s in the
 *     slot's word (release);
 *   - reads a peer's data once the peer's slot word reaches s (acquire);
 *   - ends the call by storing s in its done word.
 * A rank writes a slot again only when every rank's done word has reached
 * s - SLOTS, so nobody still reads what it overwrites; the lower bound of
 * the done words it has seen is kept, and a call that sees every rank's
 * post of s learns that all of them have finished s - 1, so that back-to-
 * back reductions never read the done words at all.  Calls on one rank run
 * one after another (a call waits for its own done word to reach s - 1):
 * a nonblocking call waits, yielding, behind the one started before it.
 *
 * Reductions: every rank that needs the result reduces all the ranks'
 * slots itself, in the same order (p-1 first, then p-2 op that, ... down
 * to 0 op the rest), so the result is the same bits on every rank and the
 * order is the one MPI requires of non-commutative operations.
 *
 * Errors of one rank (no scratch for a layout with gaps) still post and
 * end the call, so that the other ranks never wait for it; the call
 * returns the error.
 *
 * Above BUFPOOL_NODE_MAX_BYTES, allreduce node_rsag and reduce, bcast and
 * allgather node go in rounds through a second segment, the chunk segment
 * (node_big_*, below).
 *
 * Memory: a segment is set up only within coll_bufpool_node_max_bytes of
 * segments per process (a rank past it reports a failure in the agreement,
 * so every rank falls back alike), and the chunk segment goes when cold:
 * after coll_bufpool_node_cold_calls node calls of the communicator without
 * a chunk round, counted in sequence numbers, so every rank unmaps it at
 * the same call and the next large call agrees on a new one.  Unmapping is each rank's own: the pages live on
 * while a peer still maps them.
 */
#include "coll_bufpool_node.h"
#include "coll_bufpool_group.h"
#include "coll_bufpool_pack.h"
#include "coll_bufpool_pipeline.h"
#include "runtime/coll_bufpool_shm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ompi/mca/coll/base/coll_tags.h"

#include "bufpool_params.h"

#define NODE_MAGIC 0x627566706e6f6465ULL /* "bufpnode" */
/* Two lines: no false sharing through the adjacent-line prefetcher. */
#define NODE_LINE        128
#define NODE_HEADER      4096
#define NODE_SLOTS       4
#define NODE_PAYLOAD_OFF 16
#define NODE_SLOT_STRIDE                                                                           \
    (((NODE_PAYLOAD_OFF + BUFPOOL_NODE_MAX_BYTES) + NODE_LINE - 1) / NODE_LINE * NODE_LINE)
#define NODE_RANK_STRIDE (((NODE_LINE + NODE_SLOTS * NODE_SLOT_STRIDE) + 4095) / 4096 * 4096)

bufpool_node_counters_t bufpool_node_counters;

static void count(uint64_t *counter, int64_t delta)
{
    (void)__atomic_fetch_add(counter, (uint64_t)delta, __ATOMIC_RELAXED);
}

typedef struct node_header {
    uint64_t magic, nonce;
    uint64_t ranks, rank_stride;
} node_header_t;

struct bufpool_node {
    bufpool_shm_t shm;
    char *base;
    /* Its ranks (the whole communicator, or allreduce hier_node's host):
     * this process is member me of p (group.me, group.n). */
    bufpool_group_t group;
    int p, me;
    int fail_chunk_rank; /* coll_bufpool_test_node_fail_chunk */
    /* Single-copy reads (bcast and allgather node_cma): cma is 0 until the
     * first such call probes them, then 1 where every rank may read the
     * others' memory, -1 where not; cma_error: this rank's reason not to
     * before the probe (an errno, NODE_CMA_UNWANTED: coll_bufpool_node_cma
     * off), the first rank's that failed after it. */
    int cma;
    int cma_error;
    size_t max_bytes;               /* coll_bufpool_node_max_bytes        */
    const bufpool_params_t *params; /* whose help file speaks     */
    uint64_t cold_calls;            /* coll_bufpool_node_cold_calls       */
    uint64_t big_last;              /* the last call that wanted the chunk segment */
    /* A lower bound of every rank's done word, from what this rank saw. */
    uint64_t peers_done;
    /* The chunks of large allreduces and reduces (node_rounds): mapped by the
     * first such call, NULL before; big_state says whether it was tried;
     * big_seq numbers its rounds (the same on every rank); big_cap is the
     * payload bytes per rank it holds, big_chunk and big_depth the
     * geometry of the last call (0: none yet in this segment). */
    bufpool_shm_t big;
    int big_state;
    uint64_t big_seq;
    /* A lower bound of the last round every rank has posted, from what
     * this rank saw (posted r: done reading every round before r). */
    uint64_t big_posted;
    size_t big_cap, big_chunk;
    int big_depth;
};
typedef struct bufpool_node bufpool_node_t;

/* Phases of a segment's set-up (bufpool_node_home_t.phase). */
enum { NODE_NONE = 0, NODE_SETTING_UP, NODE_SETTLED };

static inline uint64_t *node_done(const bufpool_node_t *n, int r)
{
    return (uint64_t *)(n->base + NODE_HEADER + (size_t)r * NODE_RANK_STRIDE);
}

static inline uint64_t *node_slot_seq(const bufpool_node_t *n, int r, uint64_t s)
{
    return (uint64_t *)(n->base + NODE_HEADER + (size_t)r * NODE_RANK_STRIDE + NODE_LINE +
                        (size_t)(s % NODE_SLOTS) * NODE_SLOT_STRIDE);
}

/* Rank r's payload in the slot of call s. */
static inline char *node_payload(const bufpool_node_t *n, int r, uint64_t s)
{
    return (char *)node_slot_seq(n, r, s) + NODE_PAYLOAD_OFF;
}

/* The slots of one segment: rank r's words of call (or round) s (its
 * posted word, then its result word, node_rsag; where the slots have room,
 * a third: s when the rank could not reduce its slice) and its payload. */
typedef struct node_slots {
    uint64_t *(*word)(const bufpool_node_t *n, int r, uint64_t s);
    char *(*payload)(const bufpool_node_t *n, int r, uint64_t s);
    bool has_error_word;
} node_slots_t;

static const node_slots_t node_call_slots = {node_slot_seq, node_payload, false};

/* The chunks of large messages (allreduce node_rsag, reduce, bcast and
 * allgather node above BUFPOOL_NODE_MAX_BYTES), a segment of their own made
 * by the first such call.  Per rank, page-aligned: NODE_BIG_WORDS lines of
 * round words (round q's at q % NODE_BIG_WORDS), then big_cap bytes of
 * payload, cut by each call's geometry into big_depth slots of big_chunk
 * bytes used round after round in turn.  The words live apart from the
 * payload, so that a call cutting the payload differently never reads
 * payload bytes as a word.
 *
 * Rounds are numbered alike on every rank (big_seq), and every rank posts
 * every round, in order, in the first word of its line: posting round r
 * says that it is done reading every round before r.  So a rank may write
 * its slot of round q once every rank has posted round q - depth + 1
 * (node_big_claim): nobody reads the round that slot held any more,
 * whichever collective it was. */
#define NODE_BIG_WORDS 64
_Static_assert(NODE_BIG_WORDS >= BUFPOOL_MAX_DEPTH, "a word per slot of the deepest ring");

static size_t node_big_rank_stride(size_t cap)
{
    return NODE_BIG_WORDS * NODE_LINE + (cap + 4095) / 4096 * 4096;
}

static inline char *node_big_rank(const bufpool_node_t *n, int r)
{
    return (char *)n->big.base + NODE_HEADER + (size_t)r * node_big_rank_stride(n->big_cap);
}

static inline uint64_t *node_big_word(const bufpool_node_t *n, int r, uint64_t q)
{
    return (uint64_t *)(node_big_rank(n, r) + (size_t)(q % NODE_BIG_WORDS) * NODE_LINE);
}

static inline char *node_big_payload(const bufpool_node_t *n, int r, uint64_t q)
{
    return node_big_rank(n, r) + NODE_BIG_WORDS * NODE_LINE +
           (size_t)(q % (uint64_t)n->big_depth) * n->big_chunk;
}

static const node_slots_t node_big_slots = {node_big_word, node_big_payload, true};

/* Until nobody reads what this rank's slot of round q holds.  The reductions'
 * rounds wait for every post of the round before anyway (big_posted), so
 * they wait here only after another collective's rounds. */
static void node_big_claim(bufpool_node_t *n, uint64_t q)
{
    const uint64_t depth = (uint64_t)n->big_depth;
    if (q < depth || n->big_posted >= q - depth + 1) {
        return;
    }
    const uint64_t need = q - depth + 1;
    uint64_t low = UINT64_MAX;
    for (int j = 0; j < n->p; j++) {
        bufpool_wait_word(node_big_word(n, j, need), need);
        uint64_t v = __atomic_load_n(node_big_word(n, j, need), __ATOMIC_ACQUIRE);
        low = v < low ? v : low;
    }
    n->big_posted = low;
}

int bufpool_node_fallback(bufpool_coll_id_t id, const bufpool_call_t *call,
                          const bufpool_plan_t *plan)
{
    switch (id) {
        case BUFPOOL_COLL_allreduce:
            /* Above BUFPOOL_NODE_MAX_BYTES only node_rsag serves, and only
             * commutative operations (the decision): rsag, or the ring
             * under max_requests, as auto's plan would bound it. */
            if (call->bytes <= BUFPOOL_NODE_MAX_BYTES) {
                return BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING;
            }
            return plan->max_requests > 0 ? BUFPOOL_ALLREDUCE_RING : BUFPOOL_ALLREDUCE_RSAG;
        case BUFPOOL_COLL_reduce:
            return call->commute ? BUFPOOL_REDUCE_BINARY : BUFPOOL_REDUCE_CHAIN;
        case BUFPOOL_COLL_bcast:
            return BUFPOOL_BCAST_BINOMIAL;
        case BUFPOOL_COLL_reduce_scatter:
            /* Commutative operations only (the decision); both variants
             * number pairwise alike. */
        case BUFPOOL_COLL_reduce_scatter_block:
            return BUFPOOL_REDUCE_SCATTER_PAIRWISE;
        case BUFPOOL_COLL_gather:
            return BUFPOOL_GATHER_LINEAR;
        case BUFPOOL_COLL_scatter:
            return BUFPOOL_SCATTER_LINEAR;
        case BUFPOOL_COLL_barrier:
            /* Not an algorithm of its own: bufpool_run runs barrier's
             * point-to-point form (coll_bufpool_barrier.c) for any. */
            return BUFPOOL_ALG_AUTO;
        case BUFPOOL_COLL_allgather:
        default:
            return BUFPOOL_ALLGATHER_DIRECT;
    }
}

/* ---------------------------------------------------------------------- */
/* Setting the segment up: one agreement of every rank. */

typedef struct node_offer {
    int32_t status; /* rank 0's errno, 0: created */
    int32_t ranks;
    uint64_t nonce, bytes;
    char name[BUFPOOL_SHM_NAME_MAX];
} node_offer_t;

/* A rank's own refusal of a segment past coll_bufpool_node_max_bytes
 * (reported as this errno; said by node_cap_check, not again). */
#define NODE_OVER_CAP EDQUOT

/* The first time this process comes here with *said (each message says
 * itself once): true, with this host's name in host. */
static bool node_first_say(int *said, char host[64])
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
    if (NODE_OVER_CAP != err && node_first_say(&said, host)) {
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
    if (0 != max_bytes && node_first_say(&said, host)) {
        bufpool_params_show(params, "node-cap",
                            "coll_bufpool: on host %s (pid %d), the %s of communicator %s (%zu "
                            "bytes) would pass coll_bufpool_node_max_bytes (%zu; %zu mapped): "
                            "point-to-point instead",
                            host, (int)getpid(), what, comm->c_name, bytes, max_bytes, mapped);
    }
    return NODE_OVER_CAP;
}

/* Single-copy reads (CMA).  When the segment is set up, every rank writes
 * its pid and the address, in its own process, of those two words into
 * its block's first line (words NODE_CMA_WORD and after: past the words
 * the calls use).  The first node_cma call that would read straight (the
 * same call on every rank) probes: every rank reads rank 0's two words
 * back out of rank 0's process with process_vm_readv, rank 0 reads rank
 * 1's, each posts what it found in the next two words, and every rank
 * reads every rank's (node_cma_agree): where the ranks may not read each
 * other's memory (another user, Yama's ptrace_scope, a container's seccomp
 * filter), some read fails, and no rank reads straight.  So a
 * communicator that never asks pays nothing but the two stores.  Where a
 * rank's coll_bufpool_node_cma is off, it does not read, and posts this
 * instead of an errno: */
#define NODE_CMA_WORD     8
#define NODE_CMA_UNWANTED (-1)

static uint64_t *node_cma_words(void *base, size_t block)
{
    return (uint64_t *)((char *)base + block) + NODE_CMA_WORD;
}

static void node_cma_publish(void *base, size_t block)
{
    uint64_t *w = node_cma_words(base, block);
    w[0] = (uint64_t)getpid();
    w[1] = (uint64_t)(uintptr_t)w;
}

/* len bytes at src in process pid to dst: 0 or an errno value. */
static int node_cma_read(uint64_t pid, void *dst, uint64_t src, size_t len)
{
#if defined(__linux__)
    char *to = dst;
    while (len > 0) {
        struct iovec local = {.iov_base = to, .iov_len = len};
        struct iovec remote = {.iov_base = (void *)(uintptr_t)src, .iov_len = len};
        const ssize_t got = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
        if (got <= 0) {
            if (got < 0 && EINTR == errno) {
                continue;
            }
            return got < 0 ? errno : EIO;
        }
        to += got;
        src += (uint64_t)got;
        len -= (size_t)got;
    }
    return 0;
#else
    (void)pid, (void)dst, (void)src, (void)len;
    return ENOSYS;
#endif
}

/* Whether this process reads the words the owner of block published out of
 * the owner's own memory, as they are in the segment: 0 or an errno. */
static int node_cma_probe(void *base, size_t block)
{
    const uint64_t *w = node_cma_words(base, block);
    uint64_t seen[2] = {0, 0};
    if (0 == w[0]) {
        return EINVAL;
    }
    const int err = node_cma_read(w[0], seen, w[1], sizeof(seen));
    return 0 != err ? err : seen[0] == w[0] && seen[1] == w[1] ? 0 : EINVAL;
}

/* Whether every rank may read the others' memory: probed and agreed at
 * the communicator's first call that asks (every rank at the same call),
 * remembered after. */
static bool node_cma_agree(bufpool_node_t *n)
{
    if (0 == n->cma) {
        int err = n->cma_error;
        if (0 == err) {
            const int peer = n->p < 2 || 0 != n->me ? 0 : 1;
            err = node_cma_probe(n->base, (size_t)((char *)node_done(n, peer) - n->base));
        }
        uint64_t *mine = node_done(n, n->me) + NODE_CMA_WORD;
        mine[3] = (uint64_t)(int64_t)err;
        __atomic_store_n(&mine[2], 0 == err ? 1 : 2, __ATOMIC_RELEASE);
        int verdict = 1;
        for (int j = 0; j < n->p; j++) {
            const uint64_t *w = node_done(n, j) + NODE_CMA_WORD;
            bufpool_wait_word(&w[2], 1);
            if (2 == __atomic_load_n(&w[2], __ATOMIC_ACQUIRE) && verdict > 0) {
                verdict = -1;
                n->cma_error = (int)(int64_t)w[3];
            }
        }
        n->cma = verdict;
    }
    return n->cma > 0;
}

static void node_say_no_single_copy(const bufpool_params_t *params, int err,
                                    struct ompi_communicator_t *comm)
{
    static int said;
    char host[64];
    if (node_first_say(&said, host)) {
        bufpool_params_show(params, "node-single-copy",
                            "coll_bufpool: on host %s (pid %d), single-copy reads (CMA) "
                            "failed: %s; bcast and allgather node_cma of communicator %s go "
                            "through shared memory",
                            host, (int)getpid(), strerror(err), comm->c_name);
    }
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

/* One agreement of every rank of comm on a segment of a header page and a
 * block of rank_stride bytes per rank: rank 0 creates it and sends its
 * name, every rank maps it, reserves its own block (rank 0 the header too:
 * each block's pages on its owner's NUMA node) and reports, rank 0 removes
 * the name and sends the verdict.  0 and *shm mapped on every rank,
 * BUFPOOL_NODE_UNAVAILABLE when one rank could not (on all ranks alike:
 * nothing mapped), else a point-to-point error.  my_error: this rank's
 * failure known beforehand (an errno value, or 0), which it reports instead
 * of creating or mapping, as it does when the segment would take it past
 * max_bytes; what names the segment in the messages.  publish_cma: each
 * rank writes where its block lies in its process before it reports
 * (node_cma_publish), for the single-copy probe. */
static int node_share(struct ompi_communicator_t *comm, const bufpool_group_t *g, int my_error,
                      size_t rank_stride, size_t max_bytes, const char *what,
                      const bufpool_params_t *params, bool publish_cma, bufpool_shm_t *shm)
{
    const int p = g->n, me = g->me;
    const size_t bytes = NODE_HEADER + (size_t)p * rank_stride;
    const bufpool_shm_range_t own = {.offset = 0 == me ? 0 : NODE_HEADER + (size_t)me * rank_stride,
                                     .bytes = 0 == me ? NODE_HEADER + rank_stride : rank_stride};
    const int tag = MCA_COLL_BASE_TAG_BCAST;
    node_offer_t offer;
    int32_t mine = 0, verdict = 0;
    int rc = OMPI_SUCCESS;
    char step[96];

    memset(shm, 0, sizeof(*shm));
    memset(&offer, 0, sizeof(offer));
    if (0 == my_error) {
        my_error = node_cap_check(params, bytes, max_bytes, what, comm);
    }
    if (0 == me) {
        offer.nonce = node_nonce();
        offer.ranks = p;
        offer.bytes = bytes;
        offer.status = 0 != my_error ? my_error : bufpool_shm_create(shm, bytes, offer.nonce, own);
        if (0 == offer.status) {
            /* The pages are zero: every sequence word starts at 0. */
            node_header_t *h = shm->base;
            h->nonce = offer.nonce;
            h->ranks = (uint64_t)p;
            h->rank_stride = rank_stride;
            if (publish_cma) {
                node_cma_publish(shm->base, NODE_HEADER);
            }
            __atomic_store_n(&h->magic, NODE_MAGIC, __ATOMIC_RELEASE);
            snprintf(offer.name, sizeof(offer.name), "%s", shm->name);
        } else {
            snprintf(step, sizeof(step), "creating the %s (%zu bytes)", what, bytes);
            node_say_unavailable(params, step, offer.status, comm);
        }
        verdict = 0 == offer.status;
        for (int r = 1; r < p && OMPI_SUCCESS == rc; r++) {
            rc = bufpool_send(&offer, sizeof(offer), MPI_BYTE, bufpool_group_rank(g, r), tag, comm);
        }
        for (int r = 1; r < p && OMPI_SUCCESS == rc; r++) {
            int32_t status;
            rc = bufpool_recv(&status, 1, MPI_INT32_T, bufpool_group_rank(g, r), tag, comm);
            verdict = verdict && 0 == status;
        }
        /* Everyone who will ever map it has: the name goes now. */
        bufpool_shm_unlink(shm);
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
                mine = 0 != my_error ? my_error : bufpool_shm_attach(shm, offer.name, bytes, own);
                shm->name[0] = '\0'; /* rank 0 unlinks it */
                if (0 == mine) {
                    /* The same segment as rank 0's, not a namesake. */
                    const node_header_t *h = shm->base;
                    if (NODE_MAGIC != __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) ||
                        offer.nonce != h->nonce || (uint64_t)p != h->ranks) {
                        mine = EINVAL;
                    }
                }
                if (0 != mine) {
                    snprintf(step, sizeof(step),
                             "mapping rank 0's %s (%zu bytes) and reserving its part", what, bytes);
                    node_say_unavailable(params, step, mine, comm);
                }
                if (0 == mine && publish_cma) {
                    node_cma_publish(shm->base, own.offset);
                }
            }
            rc = bufpool_send(&mine, 1, MPI_INT32_T, bufpool_group_rank(g, 0), tag, comm);
        }
        if (OMPI_SUCCESS == rc) {
            rc = bufpool_recv(&verdict, 1, MPI_INT32_T, bufpool_group_rank(g, 0), tag, comm);
        }
    }
    if (OMPI_SUCCESS == rc && !verdict) {
        rc = BUFPOOL_NODE_UNAVAILABLE;
    }
    if (OMPI_SUCCESS != rc) {
        bufpool_shm_unlink(shm);
        bufpool_shm_detach(shm);
        return rc;
    }
    count(&bufpool_node_counters.segments, 1);
    count(&bufpool_node_counters.segment_bytes, (int64_t)shm->bytes);
    /* The pool keeps that much less idle memory while it is mapped. */
    shm->counted = bufpool_scratch_count_outside((int64_t)shm->bytes);
    return OMPI_SUCCESS;
}

static void node_unshare(bufpool_shm_t *shm)
{
    if (NULL != shm->base) {
        count(&bufpool_node_counters.segments, -1);
        count(&bufpool_node_counters.segment_bytes, -(int64_t)shm->bytes);
        if (shm->counted) {
            (void)bufpool_scratch_count_outside(-(int64_t)shm->bytes);
            shm->counted = false;
        }
    }
    bufpool_shm_unlink(shm);
    bufpool_shm_detach(shm);
}

/* The communicator's segment: OMPI_SUCCESS and *out, or as node_share. */
static int node_setup(struct ompi_communicator_t *comm, const bufpool_group_t *g,
                      const bufpool_comm_state_t *state, bufpool_node_t **out)
{
    bufpool_node_t *n = calloc(1, sizeof(*n));
    /* Every rank takes part in the agreement, one without memory for its
     * state too: it reports the failure there. */
    bufpool_shm_t shm;
    const int my_error = NULL == n                                       ? ENOMEM
                         : ompi_comm_rank(comm) == state->node_fail_rank ? ENOSPC /* testing */
                                                                         : 0;
    int rc = node_share(comm, g, my_error, NODE_RANK_STRIDE, state->node_max_bytes, "segment",
                        state->params, true, &shm);
    if (OMPI_SUCCESS != rc) {
        free(n);
        return rc;
    }
    n->shm = shm;
    n->base = n->shm.base;
    n->group = *g;
    n->p = g->n;
    n->me = g->me;
    n->fail_chunk_rank = state->node_fail_chunk_rank;
    n->max_bytes = state->node_max_bytes;
    n->params = state->params;
    n->cold_calls = state->node_cold_calls;
    n->cma_error = !state->node_cma                                  ? NODE_CMA_UNWANTED
                   : ompi_comm_rank(comm) == state->node_no_cma_rank ? EPERM /* testing */
                                                                     : 0;
    *out = n;
    return OMPI_SUCCESS;
}

void bufpool_node_free(struct bufpool_node *node)
{
    if (NULL != node) {
        node_unshare(&node->big);
        node_unshare(&node->shm);
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
        node_unshare(&n->big);
        count(&bufpool_node_counters.cold_releases, 1);
    }
    n->big_state = 0;
}

/* The call's sequence number and the segment, once the set-up (this call's
 * or an earlier one's) is settled and this rank's earlier calls are done;
 * BUFPOOL_NODE_UNAVAILABLE without the segment. */
static int node_begin_at(bufpool_node_home_t *home, const bufpool_group_t *g,
                         bufpool_comm_state_t *state, struct ompi_communicator_t *comm, uint64_t s,
                         bufpool_node_t **out)
{
    if (NODE_NONE == home->phase) {
        home->phase = NODE_SETTING_UP;
        bufpool_node_t *n = NULL;
        int rc = node_setup(comm, g, state, &n);
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

/* The same for the next sequence number, taken now. */
static int node_begin(bufpool_node_home_t *home, const bufpool_group_t *g,
                      bufpool_comm_state_t *state, struct ompi_communicator_t *comm,
                      bufpool_node_t **out, uint64_t *seq)
{
    *seq = ++home->seq;
    return node_begin_at(home, g, state, comm, *seq, out);
}

static void node_end(bufpool_node_t *n, uint64_t s)
{
    __atomic_store_n(node_done(n, n->me), s, __ATOMIC_RELEASE);
}

/* Until every rank has ended call s (nobody reads what this rank posted
 * in it, nor its buffers). */
static void node_wait_all_ended(const bufpool_node_t *n, uint64_t s)
{
    for (int j = 0; j < n->p; j++) {
        bufpool_wait_word(node_done(n, j), s);
    }
}

/* Until nobody reads this rank's slot of call s any more. */
static void node_claim(bufpool_node_t *n, uint64_t s)
{
    if (s <= NODE_SLOTS || n->peers_done >= s - NODE_SLOTS) {
        return;
    }
    uint64_t low = UINT64_MAX;
    for (int j = 0; j < n->p; j++) {
        bufpool_wait_word(node_done(n, j), s - NODE_SLOTS);
        uint64_t v = __atomic_load_n(node_done(n, j), __ATOMIC_ACQUIRE);
        low = v < low ? v : low;
    }
    n->peers_done = low;
}

/* Pack (buf, count, dtype) into this rank's slot of call s and post it. */
static int node_post(bufpool_node_t *n, uint64_t s, const void *buf, size_t count,
                     struct ompi_datatype_t *dtype)
{
    bufpool_view_t v;
    node_claim(n, s);
    bufpool_view_init(&v, buf, count, dtype);
    int rc = bufpool_view_pack(&v, 0, v.bytes, node_payload(n, n->me, s));
    __atomic_store_n(node_slot_seq(n, n->me, s), s, __ATOMIC_RELEASE);
    return rc;
}

static void node_wait_post(const bufpool_node_t *n, int r, uint64_t s)
{
    bufpool_wait_word(node_slot_seq(n, r, s), s);
}

/* Every rank posted call s: every rank has ended s - 1. */
static void node_wait_all_posts(bufpool_node_t *n, uint64_t s)
{
    for (int j = 0; j < n->p; j++) {
        node_wait_post(n, j, s);
    }
    if (n->peers_done < s - 1) {
        n->peers_done = s - 1;
    }
}

/* buf = slot(0) op (slot(1) op (... op slot(p-1))) of call s for count
 * elements of dtype in buf's own layout, read at byte off of every slot
 * (their signature bytes from element first on: buf is that element). */
static int node_reduce_range(bufpool_node_t *n, const node_slots_t *slot, uint64_t s, void *buf,
                             size_t count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             size_t off)
{
    bufpool_view_t v;
    bufpool_view_init(&v, buf, count, dtype);
    if (NULL != v.contig && n->p >= 2 && count > 0) {
        /* Packed bytes are the layout itself: reduce from the slots, the
         * last two at once into buf (one pass fewer than copying the last
         * one in first). */
        const ptrdiff_t shift = v.contig - (char *)buf;
        bufpool_reduce3(op, slot->payload(n, n->p - 2, s) + off - shift,
                        slot->payload(n, n->p - 1, s) + off - shift, buf, count, dtype);
        for (int j = n->p - 3; j >= 0; j--) {
            bufpool_reduce(op, slot->payload(n, j, s) + off - shift, buf, count, dtype);
        }
        return OMPI_SUCCESS;
    }
    int rc = bufpool_view_unpack(&v, 0, v.bytes, slot->payload(n, n->p - 1, s) + off);
    if (OMPI_SUCCESS != rc || n->p < 2 || 0 == count) {
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
    for (int j = n->p - 2; j >= 0 && OMPI_SUCCESS == rc; j--) {
        rc = bufpool_view_unpack(&t, 0, t.bytes, slot->payload(n, j, s) + off);
        if (OMPI_SUCCESS == rc) {
            bufpool_reduce(op, mem - gap, buf, count, dtype);
        }
    }
    bufpool_scratch_put(mem, span);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* The collectives. */

static int node_allreduce(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a)
{
    const void *src = MPI_IN_PLACE == a->sbuf ? a->rbuf : a->sbuf;
    int rc = node_post(n, s, src, a->count, a->dtype);
    node_wait_all_posts(n, s);
    int rc2 = node_reduce_range(n, &node_call_slots, s, a->rbuf, a->count, a->dtype, a->op, 0);
    node_end(n, s);
    return OMPI_SUCCESS != rc ? rc : rc2;
}

size_t bufpool_node_slice(size_t count, int p, int r, size_t *first)
{
    *first = count * (size_t)r / (size_t)p;
    return count * (size_t)(r + 1) / (size_t)p - *first;
}

/* The words of a rank's line of a round (node_slots_t.word): posted (its
 * chunk is there, and it is done reading every round before), its slice
 * reduced (node_rsag), the round failed; and hier_node's
 * (node_exchanged_rounds), whose rounds come in batches: its chunk is
 * there (posted comes once the batch is done), its slice exchanged across
 * hosts. */
enum {
    NODE_WORD_POSTED = 0,
    NODE_WORD_REDUCED,
    NODE_WORD_FAILED,
    NODE_WORD_CHUNK,
    NODE_WORD_EXCHANGED
};

/* The slices of round q of every rank but this one (and this one's too
 * when own), once each owner's word ready holds q, into buf (the round's
 * count elements of dtype, in this rank's layout); a slice whose owner
 * said it failed is not copied, and the call returns an error. */
static int node_copy_slices(const bufpool_node_t *n, const node_slots_t *slot, uint64_t q,
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
static int node_rsag_round(bufpool_node_t *n, const node_slots_t *slot, uint64_t q, char *buf,
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
        rc = node_reduce_range(n, slot, q, slice, mine, dtype, op, first * type_size);
        bufpool_view_init(&v, slice, mine, dtype);
        rc2 = bufpool_view_pack(&v, 0, v.bytes, slot->payload(n, n->me, q) + first * type_size);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    if (OMPI_SUCCESS != rc && slot->has_error_word) {
        __atomic_store_n(slot->word(n, n->me, q) + NODE_WORD_FAILED, q, __ATOMIC_RELAXED);
    }
    __atomic_store_n(slot->word(n, n->me, q) + NODE_WORD_REDUCED, q, __ATOMIC_RELEASE);
    if (copy_out) {
        rc2 = node_copy_slices(n, slot, q, buf, count, dtype, NODE_WORD_REDUCED, false);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    return rc;
}

/* allreduce node_rsag up to BUFPOOL_NODE_MAX_BYTES: one round in the
 * call's own slots.  Fewer elements than ranks: the flat algorithm. */
static int node_allreduce_rsag(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a)
{
    if (a->count < (size_t)n->p) {
        return node_allreduce(n, s, a);
    }
    const void *src = MPI_IN_PLACE == a->sbuf ? a->rbuf : a->sbuf;
    int rc = node_post(n, s, src, a->count, a->dtype);
    node_wait_all_posts(n, s);
    int rc2 =
        node_rsag_round(n, &node_call_slots, s, a->rbuf, a->count, a->dtype, a->op, NULL, true);
    node_end(n, s);
    return OMPI_SUCCESS != rc ? rc : rc2;
}

/* The chunk segment's geometry for a plan (node_big_cut): a round's bytes
 * per rank, and the slots of its ring. */
static size_t node_chunk_bytes(const bufpool_plan_t *plan, size_t min_chunk)
{
    const size_t chunk = plan->seg_bytes > min_chunk ? plan->seg_bytes : min_chunk;
    return (chunk + 4095) / 4096 * 4096;
}

static int node_ring_depth(const bufpool_plan_t *plan)
{
    return plan->depth < 2 ? 2 : plan->depth > NODE_BIG_WORDS ? NODE_BIG_WORDS : plan->depth;
}

size_t bufpool_node_round_elems(const bufpool_plan_t *plan, size_t type_size)
{
    return node_chunk_bytes(plan, BUFPOOL_NODE_CHUNK) / type_size;
}

/* The chunk segment, cut for a call of the plan's geometry: a round of
 * chunk bytes per rank (the plan's segment, at least min_chunk: the
 * reductions' BUFPOOL_NODE_CHUNK, which the decision's bound on elements
 * assumes, else a page), a ring of depth slots (at least 2).  The plan is
 * the same on every rank, and so is what follows: a segment too small for
 * it goes, and one is agreed anew; BUFPOOL_NODE_UNAVAILABLE when none can
 * be had.  Why a deeper ring: a rank that writes lines a peer read moments
 * ago pays for taking them back from the peer's cache (on a 2-core EPYC, a
 * 64 KiB pack took 8 us with 2 slots and 2.5 us with 16); slots that come
 * round later find them gone. */
static int node_big_cut(bufpool_node_t *n, uint64_t s, const bufpool_plan_t *plan, size_t min_chunk,
                        struct ompi_communicator_t *comm)
{
    const size_t chunk = node_chunk_bytes(plan, min_chunk);
    const int depth = node_ring_depth(plan);
    const size_t need = chunk * (size_t)depth;
    if (n->big_state > 0 && need > n->big_cap) {
        node_unshare(&n->big);
        n->big_state = 0;
    }
    if (0 == n->big_state) {
        const int my_error = n->me == n->fail_chunk_rank ? ENOSPC : 0; /* testing */
        int rc = node_share(comm, &n->group, my_error, node_big_rank_stride(need), n->max_bytes,
                            "chunk segment", n->params, false, &n->big);
        if (OMPI_SUCCESS != rc && BUFPOOL_NODE_UNAVAILABLE != rc) {
            return rc; /* a point-to-point error: tried again next time */
        }
        n->big_state = OMPI_SUCCESS == rc ? 1 : -1;
        n->big_cap = need;
        n->big_chunk = 0;
        /* Nobody reads a round of a segment before it was made. */
        n->big_posted = n->big_seq;
    }
    if (n->big_state < 0) {
        return BUFPOOL_NODE_UNAVAILABLE;
    }
    if (chunk != n->big_chunk || depth != n->big_depth) {
        if (0 != n->big_chunk) {
            /* The slots of earlier calls move: every rank must be done
             * reading them (the words stay where they are). */
            node_wait_all_ended(n, s - 1);
            n->big_posted = n->big_seq;
        }
        n->big_chunk = chunk;
        n->big_depth = depth;
    }
    return OMPI_SUCCESS;
}

/* Post round q of this rank's chunk (rc: whether packing it failed, said in
 * the error word first so that its readers return the error too). */
static void node_big_post(bufpool_node_t *n, uint64_t q, int rc)
{
    if (OMPI_SUCCESS != rc) {
        __atomic_store_n(node_big_word(n, n->me, q) + NODE_WORD_FAILED, q, __ATOMIC_RELAXED);
    }
    __atomic_store_n(node_big_word(n, n->me, q) + NODE_WORD_POSTED, q, __ATOMIC_RELEASE);
}

/* Unpack rank j's chunk of round q (posted) into bytes [off, off + len) of
 * v, or return the error that rank j posted instead. */
static int node_big_read(const bufpool_node_t *n, int j, uint64_t q, const bufpool_view_t *v,
                         size_t off, size_t len)
{
    if (q == __atomic_load_n(node_big_word(n, j, q) + NODE_WORD_FAILED, __ATOMIC_RELAXED)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    return bufpool_view_unpack(v, off, len, node_big_payload(n, j, q));
}

/* What the reductions' chunk rounds take of a call: its input (packed
 * round by round), the element's bytes, the whole elements of a round (at
 * least p of them: the decision sees to it, and the element's size is the
 * same on every rank) and the extent. */
typedef struct node_reduce_rounds {
    bufpool_view_t src;
    size_t type_size, per;
    ptrdiff_t extent;
} node_reduce_rounds_t;

/* The chunk segment cut for the call s (its last use noted for the cold
 * release), and r; else the call ended and BUFPOOL_NODE_UNAVAILABLE or an
 * error.  result: whether this rank takes the result (into rbuf, which in
 * place is its input too). */
static int node_reduce_rounds_begin(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a,
                                    const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                                    bool result, node_reduce_rounds_t *r)
{
    n->big_last = s;
    const int rc = node_big_cut(n, s, plan, BUFPOOL_NODE_CHUNK, comm);
    if (OMPI_SUCCESS != rc) {
        node_end(n, s);
        return rc;
    }
    bufpool_view_init(&r->src, result && MPI_IN_PLACE == a->sbuf ? a->rbuf : a->sbuf, a->count,
                      a->dtype);
    r->type_size = a->dtype->super.size;
    r->per = n->big_chunk / r->type_size;
    ptrdiff_t lb;
    ompi_datatype_get_extent(a->dtype, &lb, &r->extent);
    return OMPI_SUCCESS;
}

/* allreduce node_rsag and reduce node above BUFPOOL_NODE_MAX_BYTES: rounds
 * of big_chunk bytes per rank through the communicator's chunk segment,
 * big_depth slots per rank in turn; every rank reduces its slice of each
 * round, and every rank (allreduce: root < 0) or the root alone (reduce)
 * copies the slices out.  A rank posts round q only once it has finished
 * round q - 1, so the post of round q by every rank (which every rank waits
 * for) says that nobody reads the slots of round q - 1 any more, the root's
 * copy-out included: the slots of round q + 1 are free without a word
 * more (node_big_claim waits only after another collective's rounds), and
 * a rank that is done with round q packs round q + 1 while the others
 * still copy.  BUFPOOL_NODE_UNAVAILABLE (after ending the call)
 * when the chunk segment could not be had, on every rank alike. */
static int node_rounds(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a,
                       const bufpool_plan_t *plan, struct ompi_communicator_t *comm, int root)
{
    /* Whether this rank takes the result (into rbuf, its input in place). */
    const bool result = root < 0 || n->me == root;
    node_reduce_rounds_t r;
    int rc = node_reduce_rounds_begin(n, s, a, plan, comm, result, &r);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    const size_t type_size = r.type_size, per = r.per;
    const ptrdiff_t extent = r.extent;
    /* reduce's other ranks have no rbuf for their slice: scratch of the
     * largest one (NULL: they post an error instead, node_rsag_round). */
    char *scratch = NULL;
    ptrdiff_t gap = 0;
    size_t span = 0;
    if (!result) {
        span = bufpool_span(a->dtype, (per + (size_t)n->p - 1) / (size_t)n->p, &gap);
        scratch = bufpool_scratch_get(span);
    }
    for (size_t done = 0; done < a->count; done += per) {
        const size_t count = a->count - done < per ? a->count - done : per;
        const uint64_t q = ++n->big_seq;
        node_big_claim(n, q);
        int rc2 = bufpool_view_pack(&r.src, done * type_size, count * type_size,
                                    node_big_payload(n, n->me, q));
        rc = OMPI_SUCCESS != rc ? rc : rc2;
        node_big_post(n, q, rc2);
        for (int j = 0; j < n->p; j++) {
            bufpool_wait_word(node_big_word(n, j, q), q);
        }
        n->big_posted = q;
        rc2 = node_rsag_round(n, &node_big_slots, q,
                              result ? (char *)a->rbuf + (ptrdiff_t)done * extent : NULL, count,
                              a->dtype, a->op, NULL != scratch ? scratch - gap : NULL, result);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    if (NULL != scratch) {
        bufpool_scratch_put(scratch, span);
    }
    node_end(n, s);
    return rc;
}

int bufpool_node_exchange_batch(const bufpool_plan_t *plan)
{
    /* The ring less one slot (node_exchanged_rounds says why). */
    const int batch = node_ring_depth(plan) - 1;
    return batch < BUFPOOL_MAX_DEPTH ? batch : BUFPOOL_MAX_DEPTH;
}

/* allreduce hier_node on hosts of one size (x: the exchange of slices with
 * the ranks of this rank's index on the other hosts): node_rounds' rounds
 * in batches of bufpool_node_exchange_batch, so that the exchange has a
 * batch of slices in flight at once.  For each round of a batch this rank
 * packs its chunk and says so in its chunk word; then reduces its slice of
 * each (node_rsag_round, which leaves it in rbuf and over the same range of
 * its own slot); exchanges the batch's slices, straight in its slot where
 * the packed bytes are the layout itself (the transport sends from and
 * receives into the shared segment, which stays mapped from call to call:
 * registered once where the transport caches registrations) and else in
 * rbuf; says each exchanged; copies every exchanged slice out of its
 * owner's slot into rbuf (its own too where it was exchanged in the slot);
 * and only then posts the batch's rounds: posted keeps its meaning (done
 * reading every round before), so node_big_claim serves as it is, and a
 * batch of at most depth - 1 rounds never waits for its own posts.  The
 * exchange runs whatever failed here, so that the peers on the other hosts
 * never wait for it; a failure is said in the failed word, and every rank
 * of the host that copies the slice returns the error. */
static int node_exchanged_rounds(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a,
                                 const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                                 const bufpool_node_exchange_t *x)
{
    node_reduce_rounds_t r;
    int rc = node_reduce_rounds_begin(n, s, a, plan, comm, true, &r);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    const int batch = bufpool_node_exchange_batch(plan);
    const size_t type_size = r.type_size, per = r.per;
    const ptrdiff_t extent = r.extent;
    for (size_t done = 0; done < a->count;) {
        const uint64_t q0 = n->big_seq + 1;
        char *round[BUFPOOL_MAX_DEPTH], *slice[BUFPOOL_MAX_DEPTH];
        size_t count[BUFPOOL_MAX_DEPTH], first[BUFPOOL_MAX_DEPTH], mine[BUFPOOL_MAX_DEPTH];
        bool in_slot[BUFPOOL_MAX_DEPTH];
        int nb = 0, rc2;
        for (; nb < batch && done < a->count; nb++, done += per) {
            const uint64_t q = ++n->big_seq;
            count[nb] = a->count - done < per ? a->count - done : per;
            round[nb] = (char *)a->rbuf + (ptrdiff_t)done * extent;
            node_big_claim(n, q);
            rc2 = bufpool_view_pack(&r.src, done * type_size, count[nb] * type_size,
                                    node_big_payload(n, n->me, q));
            rc = OMPI_SUCCESS != rc ? rc : rc2;
            if (OMPI_SUCCESS != rc2) {
                __atomic_store_n(node_big_word(n, n->me, q) + NODE_WORD_FAILED, q,
                                 __ATOMIC_RELAXED);
            }
            __atomic_store_n(node_big_word(n, n->me, q) + NODE_WORD_CHUNK, q, __ATOMIC_RELEASE);
        }
        for (int b = 0; b < nb; b++) {
            const uint64_t q = q0 + (uint64_t)b;
            for (int j = 0; j < n->p; j++) {
                bufpool_wait_word(node_big_word(n, j, q) + NODE_WORD_CHUNK, q);
            }
            rc2 = node_rsag_round(n, &node_big_slots, q, round[b], count[b], a->dtype, a->op, NULL,
                                  false);
            rc = OMPI_SUCCESS != rc ? rc : rc2;
            mine[b] = bufpool_node_slice(count[b], n->p, n->me, &first[b]);
            slice[b] = round[b] + (ptrdiff_t)first[b] * extent;
            bufpool_view_t v;
            bufpool_view_init(&v, slice[b], mine[b], a->dtype);
            in_slot[b] = NULL != v.contig;
            if (in_slot[b]) {
                slice[b] =
                    node_big_payload(n, n->me, q) + first[b] * type_size - (v.contig - slice[b]);
            }
        }
        rc2 = x->exchange(nb, slice, mine, a->dtype, x->ctx);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
        for (int b = 0; b < nb; b++) {
            const uint64_t q = q0 + (uint64_t)b;
            if (!in_slot[b] && OMPI_SUCCESS == rc) {
                bufpool_view_t v;
                bufpool_view_init(&v, slice[b], mine[b], a->dtype);
                rc = bufpool_view_pack(&v, 0, v.bytes,
                                       node_big_payload(n, n->me, q) + first[b] * type_size);
            }
            if (OMPI_SUCCESS != rc) {
                __atomic_store_n(node_big_word(n, n->me, q) + NODE_WORD_FAILED, q,
                                 __ATOMIC_RELAXED);
            }
            __atomic_store_n(node_big_word(n, n->me, q) + NODE_WORD_EXCHANGED, q, __ATOMIC_RELEASE);
        }
        for (int b = 0; b < nb; b++) {
            rc2 = node_copy_slices(n, &node_big_slots, q0 + (uint64_t)b, round[b], count[b],
                                   a->dtype, NODE_WORD_EXCHANGED, in_slot[b]);
            rc = OMPI_SUCCESS != rc ? rc : rc2;
        }
        for (int b = 0; b < nb; b++) {
            const uint64_t q = q0 + (uint64_t)b;
            __atomic_store_n(node_big_word(n, n->me, q) + NODE_WORD_POSTED, q, __ATOMIC_RELEASE);
        }
    }
    node_end(n, s);
    return rc;
}

/* What bcast and allgather move: this rank's message (bcast: rbuf) or its
 * block (allgather: sbuf, or its block of rbuf in place), and where rank
 * j's block goes (allgather: block 0's view moved j blocks). */
typedef struct node_move {
    bufpool_view_t mine, block0;
    size_t blocks;
} node_move_t;

static void node_move_views(const bufpool_node_t *n, bool bcast, const bufpool_args_t *a,
                            node_move_t *m)
{
    if (bcast) {
        bufpool_view_init(&m->mine, a->rbuf, a->count, a->dtype);
        return;
    }
    bufpool_view_init(&m->block0, a->rbuf, (size_t)a->rcount, a->rdtype);
    m->blocks = (size_t)a->rcount;
    if (MPI_IN_PLACE == a->sbuf) {
        bufpool_view_sub(&m->mine, &m->block0, (size_t)n->me * m->blocks, m->blocks);
    } else {
        bufpool_view_init(&m->mine, a->sbuf, (size_t)a->scount, a->sdtype);
    }
}

static void node_move_block(const node_move_t *m, int j, bufpool_view_t *v)
{
    *v = m->block0;
    bufpool_view_move(v, (ptrdiff_t)j * (ptrdiff_t)m->blocks * m->block0.extent);
}

/* What a rank posts in its call slot where single-copy reads may serve:
 * whether the others may read its block straight, and where it is in its
 * process. */
typedef struct node_offer_block {
    uint64_t straight, addr;
} node_offer_block_t;

/* Not an Open MPI error code: the call goes on in rounds. */
#define NODE_ROUNDS 2

/* v's bytes from addr in rank j's process: into v itself where it is
 * contiguous, else a bounce buffer at a time. */
static int node_cma_copy(const bufpool_node_t *n, int j, uint64_t addr, const bufpool_view_t *v)
{
    const uint64_t pid = node_done(n, j)[NODE_CMA_WORD];
    if (NULL != v->contig) {
        return 0 == node_cma_read(pid, v->contig, addr, v->bytes) ? OMPI_SUCCESS : OMPI_ERROR;
    }
    const size_t bounce = v->bytes < BUFPOOL_NODE_CHUNK ? v->bytes : BUFPOOL_NODE_CHUNK;
    char *mem = bufpool_scratch_get(bounce);
    if (NULL == mem) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    int rc = OMPI_SUCCESS;
    for (size_t off = 0; off < v->bytes && OMPI_SUCCESS == rc; off += bounce) {
        const size_t len = v->bytes - off < bounce ? v->bytes - off : bounce;
        rc = 0 == node_cma_read(pid, mem, addr + off, len) ? bufpool_view_unpack(v, off, len, mem)
                                                           : OMPI_ERROR;
    }
    bufpool_scratch_put(mem, bounce);
    return rc;
}

/* bcast and allgather node_cma above BUFPOOL_NODE_MAX_BYTES where every
 * rank may read the others' memory (node_cma_agree): single-copy reads of the
 * blocks straight from their owners' buffers, where the owner offers it
 * (its block contiguous in its buffer).  The owner posts the offer in its
 * call slot: a bcast's ranks follow the root's, an allgather's read
 * straight only when every rank offered (every rank reads every offer
 * alike), so the ranks choose alike whatever their layouts.  An owner
 * returns once every rank has ended the call: nobody reads its block any
 * more.  NODE_ROUNDS when the rounds serve instead (the call not ended). */
static int node_single_copy(bufpool_node_t *n, uint64_t s, bool bcast, const bufpool_args_t *a,
                            const node_move_t *m)
{
    const bool owner = !bcast || n->me == a->root;
    if (owner) {
        const node_offer_block_t offer = {.straight = NULL != m->mine.contig,
                                          .addr = (uint64_t)(uintptr_t)m->mine.contig};
        node_claim(n, s);
        memcpy(node_payload(n, n->me, s), &offer, sizeof(offer));
        __atomic_store_n(node_slot_seq(n, n->me, s), s, __ATOMIC_RELEASE);
        if (bcast && !offer.straight) {
            return NODE_ROUNDS;
        }
    }
    int rc = OMPI_SUCCESS;
    if (bcast) {
        if (!owner) {
            node_wait_post(n, a->root, s);
            node_offer_block_t offer;
            memcpy(&offer, node_payload(n, a->root, s), sizeof(offer));
            if (!offer.straight) {
                return NODE_ROUNDS;
            }
            rc = node_cma_copy(n, a->root, offer.addr, &m->mine);
        }
    } else {
        node_wait_all_posts(n, s);
        for (int j = 0; j < n->p; j++) {
            if (!((const node_offer_block_t *)node_payload(n, j, s))->straight) {
                return NODE_ROUNDS;
            }
        }
        for (int k = 1; k < n->p; k++) {
            const int j = (n->me + k) % n->p;
            bufpool_view_t v;
            node_move_block(m, j, &v);
            const int rc2 =
                node_cma_copy(n, j, ((const node_offer_block_t *)node_payload(n, j, s))->addr, &v);
            rc = OMPI_SUCCESS != rc ? rc : rc2;
        }
        if (MPI_IN_PLACE != a->sbuf) {
            bufpool_view_t v;
            node_move_block(m, n->me, &v);
            const int rc2 = bufpool_view_copy(&v, &m->mine, BUFPOOL_NODE_CHUNK);
            rc = OMPI_SUCCESS != rc ? rc : rc2;
        }
    }
    node_end(n, s);
    if (owner) {
        node_wait_all_ended(n, s);
    }
    count(&bufpool_node_counters.single_copy, 1);
    return rc;
}

/* bcast and allgather node above BUFPOOL_NODE_MAX_BYTES: the message (each
 * rank's block) in rounds of big_chunk bytes, big_depth slots in turn.  A
 * round of bcast: the root packs its chunk and posts; the others post (done
 * with the round before), wait for the root's post and copy the chunk out,
 * while the root packs the next ones.  A round of allgather: every rank
 * packs its block's chunk and posts, waits for every post and copies the
 * others' chunks out.  Cut at any byte: no operation reads the elements.
 * A bcast root's root_error (its data is not right) goes with every round
 * in the error word: the others return it too.  BUFPOOL_NODE_UNAVAILABLE
 * (after ending the call) when the chunk segment could not be had, on
 * every rank alike. */
static int node_move_rounds(bufpool_node_t *n, uint64_t s, bufpool_coll_id_t id,
                            const bufpool_args_t *a, const node_move_t *m,
                            const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                            int root_error)
{
    n->big_last = s;
    int rc = node_big_cut(n, s, plan, 4096, comm);
    if (OMPI_SUCCESS != rc) {
        node_end(n, s);
        return rc;
    }
    const bool bcast = BUFPOOL_COLL_bcast == id;
    /* What this rank posts (NULL: nothing, a bcast's other ranks). */
    const bufpool_view_t *from = !bcast || n->me == a->root ? &m->mine : NULL;
    const size_t bytes = m->mine.bytes;
    for (size_t off = 0; off < bytes; off += n->big_chunk) {
        const size_t len = bytes - off < n->big_chunk ? bytes - off : n->big_chunk;
        const uint64_t q = ++n->big_seq;
        int rc2 = OMPI_SUCCESS;
        if (NULL != from) {
            node_big_claim(n, q);
            rc2 = bufpool_view_pack(from, off, len, node_big_payload(n, n->me, q));
            rc2 = OMPI_SUCCESS != root_error ? root_error : rc2;
        }
        node_big_post(n, q, rc2);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
        if (bcast) {
            if (NULL == from) {
                bufpool_wait_word(node_big_word(n, a->root, q), q);
                rc2 = node_big_read(n, a->root, q, &m->mine, off, len);
                rc = OMPI_SUCCESS != rc ? rc : rc2;
            }
            continue;
        }
        for (int j = 0; j < n->p; j++) {
            bufpool_wait_word(node_big_word(n, j, q), q);
        }
        n->big_posted = q;
        for (int k = 0; k < n->p; k++) {
            const int j = (n->me + k) % n->p;
            if (j == n->me && MPI_IN_PLACE == a->sbuf) {
                continue;
            }
            bufpool_view_t v;
            node_move_block(m, j, &v);
            rc2 = node_big_read(n, j, q, &v, off, len);
            rc = OMPI_SUCCESS != rc ? rc : rc2;
        }
    }
    node_end(n, s);
    return rc;
}

static int node_reduce(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a)
{
    const bool root = n->me == a->root;
    /* The root's own data too goes through its slot: in place, rbuf is
     * both its contribution and where the result builds up. */
    const void *src = root && MPI_IN_PLACE == a->sbuf ? a->rbuf : a->sbuf;
    int rc = node_post(n, s, src, a->count, a->dtype);
    if (root) {
        node_wait_all_posts(n, s);
        int rc2 = node_reduce_range(n, &node_call_slots, s, a->rbuf, a->count, a->dtype, a->op, 0);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    node_end(n, s);
    return rc;
}

static int node_bcast(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a)
{
    int rc;
    if (n->me == a->root) {
        rc = node_post(n, s, a->rbuf, a->count, a->dtype);
    } else {
        bufpool_view_t v;
        bufpool_view_init(&v, a->rbuf, a->count, a->dtype);
        node_wait_post(n, a->root, s);
        rc = bufpool_view_unpack(&v, 0, v.bytes, node_payload(n, a->root, s));
    }
    node_end(n, s);
    return rc;
}

static int node_allgather(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a)
{
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(a->rdtype, &lb, &extent);
    const ptrdiff_t stride = extent * (ptrdiff_t)a->rcount;
    const char *own = (const char *)a->rbuf + (ptrdiff_t)n->me * stride;
    int rc = MPI_IN_PLACE == a->sbuf ? node_post(n, s, own, (size_t)a->rcount, a->rdtype)
                                     : node_post(n, s, a->sbuf, (size_t)a->scount, a->sdtype);
    node_wait_all_posts(n, s);
    for (int j = 0; j < n->p; j++) {
        if (j == n->me && MPI_IN_PLACE == a->sbuf) {
            continue;
        }
        bufpool_view_t v;
        bufpool_view_init(&v, (char *)a->rbuf + (ptrdiff_t)j * stride, (size_t)a->rcount,
                          a->rdtype);
        int rc2 = bufpool_view_unpack(&v, 0, v.bytes, node_payload(n, j, s));
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    node_end(n, s);
    return rc;
}

/* reduce_scatter(_block): every rank posts its whole input (within one
 * slot: the decision), waits for every post and reduces its own block of
 * all of them (block b starts at element displ[b] alike everywhere: the
 * counts are the same on every rank), in the one order of every reduction
 * here.  In place the input is rbuf, and the result goes to its start:
 * the reduction reads the slots only. */
static int node_reduce_scatter(bufpool_node_t *n, uint64_t s, bufpool_coll_id_t id,
                               const bufpool_args_t *a)
{
    size_t first = 0, mine, total;
    if (BUFPOOL_COLL_reduce_scatter_block == id) {
        mine = a->count;
        first = a->count * (size_t)n->me;
        total = a->count * (size_t)n->p;
    } else {
        for (int b = 0; b < n->me; b++) {
            first += (size_t)a->rcounts[b];
        }
        mine = (size_t)a->rcounts[n->me];
        total = bufpool_counts_total(a->rcounts, n->p);
    }
    const void *src = MPI_IN_PLACE == a->sbuf ? a->rbuf : a->sbuf;
    int rc = node_post(n, s, src, total, a->dtype);
    node_wait_all_posts(n, s);
    int rc2 = node_reduce_range(n, &node_call_slots, s, a->rbuf, mine, a->dtype, a->op,
                                first * a->dtype->super.size);
    node_end(n, s);
    return OMPI_SUCCESS != rc ? rc : rc2;
}

/* gather: every rank but an in-place root posts its block, the root
 * unpacks each (its own too, through its slot: one copy of at most 4 KiB,
 * and no second path for a send layout that differs from the receive's);
 * the others are done once they posted. */
static int node_gather(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a)
{
    const bool root = n->me == a->root, in_place = root && MPI_IN_PLACE == a->sbuf;
    int rc = in_place ? OMPI_SUCCESS : node_post(n, s, a->sbuf, (size_t)a->scount, a->sdtype);
    if (root) {
        ptrdiff_t lb, extent;
        ompi_datatype_get_extent(a->rdtype, &lb, &extent);
        const ptrdiff_t stride = extent * (ptrdiff_t)a->rcount;
        for (int j = 0; j < n->p; j++) {
            if (j == n->me && in_place) {
                continue;
            }
            bufpool_view_t v;
            bufpool_view_init(&v, (char *)a->rbuf + (ptrdiff_t)j * stride, (size_t)a->rcount,
                              a->rdtype);
            node_wait_post(n, j, s);
            int rc2 = bufpool_view_unpack(&v, 0, v.bytes, node_payload(n, j, s));
            rc = OMPI_SUCCESS != rc ? rc : rc2;
        }
    }
    node_end(n, s);
    return rc;
}

/* scatter: the root posts all p blocks in one slot (within it: the
 * decision) and every rank unpacks its own (the root too unless in place). */
static int node_scatter(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a)
{
    const bool root = n->me == a->root;
    int rc = OMPI_SUCCESS;
    if (root) {
        rc = node_post(n, s, a->sbuf, (size_t)a->scount * (size_t)n->p, a->sdtype);
    }
    if (!root || MPI_IN_PLACE != a->rbuf) {
        bufpool_view_t v;
        bufpool_view_init(&v, a->rbuf, (size_t)a->rcount, a->rdtype);
        node_wait_post(n, a->root, s);
        int rc2 = bufpool_view_unpack(&v, 0, v.bytes,
                                      node_payload(n, a->root, s) + (size_t)n->me * v.bytes);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    node_end(n, s);
    return rc;
}

/* barrier: every rank posts (no payload) and waits for every post; the
 * posts of call s also tell every rank that all have ended s - 1, so back-
 * to-back barriers read nothing but the slot words. */
static int node_barrier(bufpool_node_t *n, uint64_t s)
{
    node_claim(n, s);
    __atomic_store_n(node_slot_seq(n, n->me, s), s, __ATOMIC_RELEASE);
    node_wait_all_posts(n, s);
    node_end(n, s);
    return OMPI_SUCCESS;
}

/* bcast and allgather above BUFPOOL_NODE_MAX_BYTES: node_cma's
 * single-copy reads where they serve, else rounds. */
static int node_move(bufpool_node_t *n, uint64_t s, bufpool_coll_id_t id, const bufpool_args_t *a,
                     const bufpool_plan_t *plan, struct ompi_communicator_t *comm)
{
    /* The views, made once: single copy's, and the rounds' where it falls
     * back to them. */
    node_move_t m;
    node_move_views(n, BUFPOOL_COLL_bcast == id, a, &m);
    if (bufpool_is_node_cma_alg(id, plan->alg)) {
        if (node_cma_agree(n)) {
            const int rc = node_single_copy(n, s, BUFPOOL_COLL_bcast == id, a, &m);
            if (NODE_ROUNDS != rc) {
                return rc;
            }
        } else if (0 == n->me && NODE_CMA_UNWANTED != n->cma_error) {
            node_say_no_single_copy(n->params, n->cma_error, comm);
        }
    }
    return node_move_rounds(n, s, id, a, &m, plan, comm, OMPI_SUCCESS);
}

static int node_dispatch(bufpool_node_t *n, uint64_t s, bufpool_coll_id_t id,
                         const bufpool_plan_t *plan, const bufpool_args_t *a,
                         struct ompi_communicator_t *comm)
{
    const int alg = plan->alg;
    switch (id) {
        case BUFPOOL_COLL_allreduce:
            if (BUFPOOL_ALLREDUCE_NODE != alg &&
                a->dtype->super.size * a->count > BUFPOOL_NODE_MAX_BYTES) {
                return node_rounds(n, s, a, plan, comm, -1);
            }
            return BUFPOOL_ALLREDUCE_NODE_RSAG == alg ? node_allreduce_rsag(n, s, a)
                                                      : node_allreduce(n, s, a);
        case BUFPOOL_COLL_reduce:
            if (a->dtype->super.size * a->count > BUFPOOL_NODE_MAX_BYTES) {
                return node_rounds(n, s, a, plan, comm, a->root);
            }
            return node_reduce(n, s, a);
        case BUFPOOL_COLL_bcast:
            if (a->dtype->super.size * a->count > BUFPOOL_NODE_MAX_BYTES) {
                return node_move(n, s, id, a, plan, comm);
            }
            return node_bcast(n, s, a);
        case BUFPOOL_COLL_allgather:
            if (a->rdtype->super.size * (size_t)a->rcount > BUFPOOL_NODE_MAX_BYTES) {
                return node_move(n, s, id, a, plan, comm);
            }
            return node_allgather(n, s, a);
        case BUFPOOL_COLL_reduce_scatter:
        case BUFPOOL_COLL_reduce_scatter_block:
            return node_reduce_scatter(n, s, id, a);
        case BUFPOOL_COLL_gather:
            return node_gather(n, s, a);
        case BUFPOOL_COLL_scatter:
            return node_scatter(n, s, a);
        case BUFPOOL_COLL_barrier:
            return node_barrier(n, s);
        default:
            node_end(n, s);
            return OMPI_ERR_NOT_SUPPORTED;
    }
}

int bufpool_node_run(bufpool_coll_id_t id, const bufpool_plan_t *plan, const bufpool_args_t *a,
                     struct ompi_communicator_t *comm, bufpool_comm_state_t *state)
{
    const bufpool_group_t all = {.n = ompi_comm_size(comm), .me = ompi_comm_rank(comm)};
    bufpool_node_t *n;
    uint64_t s;
    int rc = node_begin(&state->node, &all, state, comm, &n, &s);
    if (OMPI_SUCCESS == rc) {
        rc = node_dispatch(n, s, id, plan, a, comm);
    }
    count(BUFPOOL_NODE_UNAVAILABLE == rc ? &bufpool_node_counters.fallbacks
                                         : &bufpool_node_counters.calls,
          1);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* allreduce hier_node's phases on this rank's host. */

uint64_t bufpool_node_host_reserve(bufpool_comm_state_t *state)
{
    const uint64_t s = state->host_node.seq + 1;
    state->host_node.seq += 2;
    return s;
}

int bufpool_node_host_reduce(const bufpool_args_t *a, const bufpool_plan_t *plan,
                             const bufpool_group_t *host, uint64_t s,
                             struct ompi_communicator_t *comm, bufpool_comm_state_t *state)
{
    bufpool_node_t *n = NULL;
    int rc = node_begin_at(&state->host_node, host, state, comm, s, &n);
    if (OMPI_SUCCESS == rc) {
        /* reduce to member 0; the others' input in place is their rbuf. */
        bufpool_args_t r = *a;
        r.root = 0;
        if (0 != host->me && MPI_IN_PLACE == a->sbuf) {
            r.sbuf = a->rbuf;
        }
        rc = node_rounds(n, s, &r, plan, comm, 0);
    }
    if (BUFPOOL_NODE_UNAVAILABLE == rc && NULL != n) {
        /* The bcast's number goes unused: ended, for the calls behind it. */
        node_end(n, s + 1);
    }
    count(BUFPOOL_NODE_UNAVAILABLE == rc ? &bufpool_node_counters.fallbacks
                                         : &bufpool_node_counters.calls,
          1);
    return rc;
}

int bufpool_node_host_allreduce(const bufpool_args_t *a, const bufpool_plan_t *plan,
                                const bufpool_group_t *host, uint64_t s,
                                const bufpool_node_exchange_t *x, struct ompi_communicator_t *comm,
                                bufpool_comm_state_t *state)
{
    bufpool_node_t *n = NULL;
    int rc = node_begin_at(&state->host_node, host, state, comm, s, &n);
    if (OMPI_SUCCESS == rc) {
        rc = node_exchanged_rounds(n, s, a, plan, comm, x);
        /* One number was enough: the second, reserved alike, ends too. */
        node_end(n, s + 1);
    }
    count(BUFPOOL_NODE_UNAVAILABLE == rc ? &bufpool_node_counters.fallbacks
                                         : &bufpool_node_counters.calls,
          1);
    return rc;
}

int bufpool_node_host_bcast(void *buf, size_t elems, struct ompi_datatype_t *dtype,
                            const bufpool_plan_t *plan, const bufpool_group_t *host, uint64_t s,
                            int root_error, struct ompi_communicator_t *comm,
                            bufpool_comm_state_t *state)
{
    bufpool_node_t *n = NULL;
    int rc = node_begin_at(&state->host_node, host, state, comm, s, &n);
    if (OMPI_SUCCESS == rc) {
        const bufpool_args_t b = {.rbuf = buf, .count = elems, .dtype = dtype, .root = 0};
        node_move_t m;
        node_move_views(n, true, &b, &m);
        rc = node_move_rounds(n, s, BUFPOOL_COLL_bcast, &b, &m, plan, comm, root_error);
    }
    return rc;
}
