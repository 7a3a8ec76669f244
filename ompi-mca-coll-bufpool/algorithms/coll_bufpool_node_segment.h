/*
 * The segments of the node-level collectives (coll_bufpool_node_segment.c),
 * and what the files of those collectives share, from the bottom up
 * (coll_bufpool_node_segment.c: setting segments up, a call's start, the
 * reduction of the ranks' slots; coll_bufpool_node_ring.c: the chunk
 * segment's ring of rounds; coll_bufpool_node_rounds.c: the large
 * reductions' rounds, scan's and exscan's chain and hier_node's host
 * phases; coll_bufpool_node_moves.c: bcast's and allgather's rounds and
 * single-copy reads; coll_bufpool_node.c: the small messages and the
 * dispatch): the segments' layout, the per-communicator state, the waits on
 * the sequence words.  Not for other files: coll_bufpool_node.h is the
 * interface.
 */
#ifndef MCA_COLL_BUFPOOL_NODE_SEGMENT_H
#define MCA_COLL_BUFPOOL_NODE_SEGMENT_H

#include "coll_bufpool_group.h"
#include "coll_bufpool_node.h"
#include "coll_bufpool_pack.h"
#include "coll_bufpool_pipeline.h"
#include "runtime/coll_bufpool_shm.h"

#include <stdbool.h>
#include <stdint.h>

#include "bufpool_params.h"

/* Two lines: no false sharing through the adjacent-line prefetcher. */
#define NODE_LINE   128
#define NODE_HEADER 4096
#define NODE_SLOTS  4
/* A slot's words (NODE_WORD_POSTED, _REDUCED, _FAILED), then its payload
 * (at 32: aligned for every predefined type). */
#define NODE_PAYLOAD_OFF 32
#define NODE_SLOT_STRIDE                                                                           \
    (((NODE_PAYLOAD_OFF + BUFPOOL_NODE_MAX_BYTES) + NODE_LINE - 1) / NODE_LINE * NODE_LINE)
#define NODE_RANK_STRIDE (((NODE_LINE + NODE_SLOTS * NODE_SLOT_STRIDE) + 4095) / 4096 * 4096)

static inline void node_count(uint64_t *counter, int64_t delta)
{
    (void)__atomic_fetch_add(counter, (uint64_t)delta, __ATOMIC_RELAXED);
}

/* How this rank sets up a segment (bufpool_node_share), from its
 * communicator's parameters. */
typedef struct bufpool_node_terms {
    size_t max_bytes;               /* coll_bufpool_node_max_bytes              */
    bool proc_link;                 /* coll_bufpool_node_proc_link (rank 0's counts) */
    int refuse_link_rank;           /* coll_bufpool_test_node_refuse_link (testing) */
    const bufpool_params_t *params; /* whose help file speaks                   */
} bufpool_node_terms_t;

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
    bufpool_node_terms_t terms; /* how its segments are set up        */
    uint64_t cold_calls;        /* coll_bufpool_node_cold_calls       */
    uint64_t big_last;          /* the last call that wanted the chunk segment */
    /* A lower bound of every rank's done word, from what this rank saw. */
    uint64_t peers_done;
    /* The chunks of large allreduces and reduces (bufpool_node_rounds): mapped by the
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
    /* Its home's fit_bytes (a persistent request's; 0: any size). */
    size_t fit_bytes;
    /* Whether the exchange between hosts sends from and receives into this
     * rank's chunks (allreduce hier_node's host: bufpool_node_host_allreduce
     * sets it): its range of the chunk segment is then registered with the
     * transport once, as the pool's slabs are (big.registration). */
    bool big_exchanged;
    /* The groups of the two-level reductions and barrier above
     * coll_bufpool_node_flat_max ranks (rank 0's value, from the header:
     * bufpool_node_groups, the same on every rank): ngroups (1: flat),
     * group k's ranks bounds[k] .. bounds[k + 1] - 1, its leader (its last
     * rank) leaders[k], this rank's group. */
    int ngroups, my_group;
    int *bounds, *leaders;
};
typedef struct bufpool_node bufpool_node_t;

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

/* Ranks whose slots a reduction reads, in its order: first .. first + n -
 * 1, or list[0 .. n - 1]. */
typedef struct node_rank_set {
    int first;
    const int *list;
    int n;
} node_rank_set_t;

static inline int node_set_rank(const node_rank_set_t *set, int k)
{
    return NULL != set->list ? set->list[k] : set->first + k;
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

/* Also in that line, past the probe's words: the cache or memory domain
 * the rank is bound within (negative: none), which every rank writes
 * before it reports at the set-up, and from which every rank cuts the
 * same groups (bufpool_node_groups). */
#define NODE_DOMAIN_WORD 12

static inline uint64_t *node_cma_words(void *base, size_t block)
{
    return (uint64_t *)((char *)base + block) + NODE_CMA_WORD;
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

static inline void node_end(bufpool_node_t *n, uint64_t s)
{
    __atomic_store_n(node_done(n, n->me), s, __ATOMIC_RELEASE);
}

/* Until every rank has ended call s (nobody reads what this rank posted
 * in it, nor its buffers). */
static inline void node_wait_all_ended(const bufpool_node_t *n, uint64_t s)
{
    for (int j = 0; j < n->p; j++) {
        bufpool_wait_word(node_done(n, j), s);
    }
}

/* Until nobody reads this rank's slot of call s any more. */
static inline void node_claim(bufpool_node_t *n, uint64_t s)
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

static inline void node_wait_post(const bufpool_node_t *n, int r, uint64_t s)
{
    bufpool_wait_word(node_slot_seq(n, r, s), s);
}

/* Until ranks 0 .. ranks - 1 posted call s (a scan's prefix). */
static inline void node_wait_first_posts(const bufpool_node_t *n, uint64_t s, int ranks)
{
    for (int j = 0; j < ranks; j++) {
        node_wait_post(n, j, s);
    }
}

/* Every rank posted call s: every rank has ended s - 1. */
static inline void node_wait_all_posts(bufpool_node_t *n, uint64_t s)
{
    node_wait_first_posts(n, s, n->p);
    if (n->peers_done < s - 1) {
        n->peers_done = s - 1;
    }
}

/* The chunk segment (coll_bufpool_node_ring.c): the chunks of large
 * messages (allreduce node_rsag, reduce, bcast, allgather, scan and exscan
 * node above BUFPOOL_NODE_MAX_BYTES), a segment of their own made by the
 * first such call.  Per rank, page-aligned: NODE_BIG_WORDS lines of
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
 * (bufpool_node_big_claim): nobody reads the round that slot held any more,
 * whichever collective it was. */
#define NODE_BIG_WORDS 64
_Static_assert(NODE_BIG_WORDS >= BUFPOOL_MAX_DEPTH, "a word per slot of the deepest ring");

static inline size_t node_big_rank_stride(size_t cap)
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

/* Whether rank j posted round q as failed (its chunk, or the prefix of
 * scan's chain, is not right). */
static inline bool node_big_failed(const bufpool_node_t *n, int j, uint64_t q)
{
    return q == __atomic_load_n(node_big_word(n, j, q) + NODE_WORD_FAILED, __ATOMIC_RELAXED);
}

/* What the files give one another, each described where it is defined:
 * coll_bufpool_node_segment.c, under the other two, */
/* What a communicator's segment publishes at its set-up (bufpool_node_share). */
typedef struct bufpool_node_publish {
    int flat_max;     /* coll_bufpool_node_flat_max (rank 0's counts)     */
    long test_domain; /* coll_bufpool_test_node_l3; below -1: sysfs's    */
} bufpool_node_publish_t;
int bufpool_node_share(struct ompi_communicator_t *comm, const bufpool_group_t *g, int my_error,
                       size_t rank_stride, const char *what, const bufpool_node_terms_t *terms,
                       const bufpool_node_publish_t *publish, bufpool_shm_t *shm);
void bufpool_node_unshare(bufpool_shm_t *shm);
bool bufpool_node_first_say(int *said, char host[64]);
int bufpool_node_begin_at(bufpool_node_home_t *home, const bufpool_group_t *g,
                          bufpool_comm_state_t *state, struct ompi_communicator_t *comm, uint64_t s,
                          bufpool_node_t **out);
int bufpool_node_reduce_set(bufpool_node_t *n, const node_slots_t *slot, uint64_t s, void *buf,
                            size_t count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                            size_t off, const node_rank_set_t *set);
/* The same over the first ranks ranks. */
static inline int bufpool_node_reduce_range(bufpool_node_t *n, const node_slots_t *slot, uint64_t s,
                                            void *buf, size_t count, struct ompi_datatype_t *dtype,
                                            struct ompi_op_t *op, size_t off, int ranks)
{
    const node_rank_set_t set = {.first = 0, .list = NULL, .n = ranks};
    return bufpool_node_reduce_set(n, slot, s, buf, count, dtype, op, off, &set);
}
int bufpool_node_rsag_round(bufpool_node_t *n, const node_slots_t *slot, uint64_t q, char *buf,
                            size_t count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                            char *out, bool copy_out);
int bufpool_node_copy_slices(const bufpool_node_t *n, const node_slots_t *slot, uint64_t q,
                             char *buf, size_t count, struct ompi_datatype_t *dtype, int ready,
                             bool own);

/* coll_bufpool_node_ring.c, over coll_bufpool_node_segment.c, */
extern const node_slots_t bufpool_node_big_slots;
int bufpool_node_ring_depth(const bufpool_plan_t *plan);
void bufpool_node_big_claim(bufpool_node_t *n, uint64_t q);
/* The chunk segment for call s (its last use noted for the cold release),
 * cut for the plan (rounds of at least min_chunk bytes); else the call
 * ended, and BUFPOOL_NODE_UNAVAILABLE or an error. */
int bufpool_node_big_begin(bufpool_node_t *n, uint64_t s, const bufpool_plan_t *plan,
                           size_t min_chunk, struct ompi_communicator_t *comm);
void bufpool_node_big_post(bufpool_node_t *n, uint64_t q, int rc);
int bufpool_node_big_read(const bufpool_node_t *n, int j, uint64_t q, const bufpool_view_t *v,
                          size_t off, size_t len);

/* and coll_bufpool_node_rounds.c and coll_bufpool_node_moves.c, over it
 * and under coll_bufpool_node.c. */
int bufpool_node_rounds(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a,
                        const bufpool_plan_t *plan, struct ompi_communicator_t *comm, int root);
int bufpool_node_move(bufpool_node_t *n, uint64_t s, bufpool_coll_id_t id, const bufpool_args_t *a,
                      const bufpool_plan_t *plan, struct ompi_communicator_t *comm);
int bufpool_node_scan_rounds(bufpool_node_t *n, uint64_t s, bool exclusive, const bufpool_args_t *a,
                             const bufpool_plan_t *plan, struct ompi_communicator_t *comm);

#endif /* MCA_COLL_BUFPOOL_NODE_SEGMENT_H */
