/*
 * The chunk segment of the node-level collectives (see coll_bufpool_node.c's
 * opening comment; its layout in coll_bufpool_node_segment.h): a second
 * segment per communicator, made by the first call above
 * BUFPOOL_NODE_MAX_BYTES, whose rounds carry the large messages of
 * coll_bufpool_node_rounds.c (the reductions, scan and exscan, allreduce
 * hier_node's host phases) and coll_bufpool_node_moves.c (bcast and
 * allgather): its cut for a call's plan, a slot claimed, a round posted and
 * read.
 */
#include "coll_bufpool_node_segment.h"
#include "runtime/coll_bufpool_scratch.h"

#include <errno.h>

const node_slots_t bufpool_node_big_slots = {node_big_word, node_big_payload, true};

/* Until nobody reads what this rank's slot of round q holds.  The reductions'
 * rounds wait for every post of the round before anyway (big_posted), so
 * they wait here only after another collective's rounds. */
void bufpool_node_big_claim(bufpool_node_t *n, uint64_t q)
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

/* The chunk segment's geometry for a plan (node_big_cut): a round's bytes
 * per rank, and the slots of its ring. */
static size_t node_chunk_bytes(const bufpool_plan_t *plan, size_t min_chunk)
{
    const size_t chunk = plan->seg_bytes > min_chunk ? plan->seg_bytes : min_chunk;
    return (chunk + 4095) / 4096 * 4096;
}

int bufpool_node_ring_depth(const bufpool_plan_t *plan)
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
    size_t chunk = node_chunk_bytes(plan, min_chunk);
    int depth = bufpool_node_ring_depth(plan);
    if (n->fit_bytes > 0 && n->fit_bytes <= chunk) {
        /* A persistent request whose every call is one round of fit_bytes
         * per rank (the same on every rank): a ring of two such rounds,
         * not the plan's depth x segment that a communicator keeps for
         * calls of any size (at 2 ranks a 64 KiB request's ring holds 128
         * KiB per rank instead of 1 MiB).  One round holds the whole
         * message either way, so the rounds are the same. */
        chunk = (n->fit_bytes + 4095) / 4096 * 4096;
        depth = 2;
    }
    const size_t need = chunk * (size_t)depth;
    if (n->big_state > 0 && need > n->big_cap) {
        bufpool_node_unshare(&n->big);
        n->big_state = 0;
    }
    if (0 == n->big_state) {
        const int my_error = n->me == n->fail_chunk_rank ? ENOSPC : 0; /* testing */
        int rc = bufpool_node_share(comm, &n->group, my_error, node_big_rank_stride(need),
                                    "chunk segment", &n->terms, NULL, &n->big);
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
    if (n->big_exchanged && NULL == n->big.registration) {
        /* This rank's chunks, whole (they never move in the segment): the
         * transport finds one registration for every slice it sends or
         * receives there, instead of one per range it meets (none without
         * the pool: the transport registers as it would). */
        const size_t words = NODE_BIG_WORDS * NODE_LINE;
        n->big.registration = bufpool_scratch_register(node_big_rank(n, n->me) + words,
                                                       node_big_rank_stride(n->big_cap) - words);
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

int bufpool_node_big_begin(bufpool_node_t *n, uint64_t s, const bufpool_plan_t *plan,
                           size_t min_chunk, struct ompi_communicator_t *comm)
{
    n->big_last = s;
    const int rc = node_big_cut(n, s, plan, min_chunk, comm);
    if (OMPI_SUCCESS != rc) {
        node_end(n, s);
    }
    return rc;
}

/* Post round q of this rank's chunk (rc: whether packing it failed, said in
 * the error word first so that its readers return the error too). */
void bufpool_node_big_post(bufpool_node_t *n, uint64_t q, int rc)
{
    if (OMPI_SUCCESS != rc) {
        __atomic_store_n(node_big_word(n, n->me, q) + NODE_WORD_FAILED, q, __ATOMIC_RELAXED);
    }
    __atomic_store_n(node_big_word(n, n->me, q) + NODE_WORD_POSTED, q, __ATOMIC_RELEASE);
}

/* Unpack rank j's chunk of round q (posted) into bytes [off, off + len) of
 * v, or return the error that rank j posted instead. */
int bufpool_node_big_read(const bufpool_node_t *n, int j, uint64_t q, const bufpool_view_t *v,
                          size_t off, size_t len)
{
    if (node_big_failed(n, j, q)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    return bufpool_view_unpack(v, off, len, node_big_payload(n, j, q));
}
