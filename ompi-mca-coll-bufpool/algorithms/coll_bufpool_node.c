/*
 * Node-level collectives over one shared segment per communicator (see
 * coll_bufpool_node.h).
 *
 * Layout: a header page, then one block per rank (page-aligned): a line
 * with the rank's done word, then NODE_SLOTS slots.  A slot starts
 * with the sequence number of the call whose data it holds (and a second
 * word: that of the call whose reduced slice, node_rsag, or group's
 * partial it holds; a third: that of a call whose partial failed), and
 * the payload (signature bytes, packed) follows in the same cache line, so
 * that a reader of a tiny message takes one line per peer.
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
 * Above BUFPOOL_NODE_MAX_BYTES, allreduce node_rsag and reduce, bcast,
 * allgather, scan and exscan node go in rounds through a second segment,
 * the chunk segment (its ring: coll_bufpool_node_ring.c; the reductions'
 * rounds, scan's chain and allreduce hier_node's host phases:
 * coll_bufpool_node_rounds.c; bcast's and allgather's rounds and node_cma's
 * single-copy reads: coll_bufpool_node_moves.c).  Setting segments up, a
 * call's start and the reduction of the slots are
 * coll_bufpool_node_segment.c's; this file has the small messages and the
 * dispatch; coll_bufpool_node_segment.h is what they share.
 *
 * Memory: a segment is set up only within coll_bufpool_node_max_bytes of
 * segments per process (a rank past it reports a failure in the agreement,
 * so every rank falls back alike), and the chunk segment goes when cold:
 * after coll_bufpool_node_cold_calls node calls of the communicator without
 * a chunk round, counted in sequence numbers, so every rank unmaps it at
 * the same call and the next large call agrees on a new one.  Unmapping is
 * each rank's own: the pages live on while a peer still maps them.
 */
#include "coll_bufpool_node_segment.h"

#include <string.h>

static const node_slots_t node_call_slots = {node_slot_seq, node_payload, false};

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
        case BUFPOOL_COLL_scan:
            return BUFPOOL_SCAN_CHAIN;
        case BUFPOOL_COLL_exscan:
            return BUFPOOL_EXSCAN_CHAIN;
        case BUFPOOL_COLL_barrier:
            /* Not an algorithm of its own: bufpool_run runs barrier's
             * point-to-point form (coll_bufpool_barrier.c) for any. */
            return BUFPOOL_ALG_AUTO;
        case BUFPOOL_COLL_allgather:
        default:
            return BUFPOOL_ALLGATHER_DIRECT;
    }
}

/* The same for the next sequence number, taken now. */
static int node_begin(bufpool_node_home_t *home, const bufpool_group_t *g,
                      bufpool_comm_state_t *state, struct ompi_communicator_t *comm,
                      bufpool_node_t **out, uint64_t *seq)
{
    *seq = ++home->seq;
    return bufpool_node_begin_at(home, g, state, comm, *seq, out);
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

/* ---------------------------------------------------------------------- */
/* Groups.  Above coll_bufpool_node_flat_max ranks (n->ngroups > 1:
 * bufpool_node_groups) allreduce, reduce, bcast (node_bcast) and barrier
 * run in two levels.  Each group's last rank, its leader, waits for its group's posts, reduces
 * them in rank order into its own slot (its own data is the last operand,
 * so a layout without gaps reduces in place) and posts the group's partial
 * in the slot's second word; the ranks that need the result wait for every
 * leader's partial and reduce them in group order.  The groups are
 * contiguous ranges of ranks, so that order is the one of every reduction
 * here (any operation), and every rank reduces the same partials in the
 * same order: the same bits everywhere.  A rank reads the slots of its
 * group (a leader) and one per group, some 2 sqrt(p) lines where the flat
 * algorithms read p, and the lines a leader writes are read by sqrt(p)
 * ranks rather than p.  A leader that could not reduce (no scratch for a
 * layout with gaps) says so in the slot's third word, and the ranks that
 * read its partial return the error. */

static const node_slots_t node_tree_slots = {node_slot_seq, node_payload, true};

/* Whether this rank leads its group (ranks *lo .. n->me then). */
static bool node_leads(const bufpool_node_t *n, int *lo)
{
    *lo = n->bounds[n->my_group];
    return n->me == n->leaders[n->my_group];
}

/* A leader's fan-in of call s: until ranks lo .. n->me - 1 of its group
 * posted. */
static void node_group_wait(const bufpool_node_t *n, uint64_t s, int lo)
{
    for (int j = lo; j < n->me; j++) {
        node_wait_post(n, j, s);
    }
}

/* A leader's post of its group's part of call s (rc: whether its partial
 * could be made), which the ranks of node_leaders_wait read. */
static void node_group_post(bufpool_node_t *n, uint64_t s, int rc)
{
    uint64_t *words = node_slot_seq(n, n->me, s);
    if (OMPI_SUCCESS != rc) {
        __atomic_store_n(words + NODE_WORD_FAILED, s, __ATOMIC_RELAXED);
    }
    __atomic_store_n(words + NODE_WORD_REDUCED, s, __ATOMIC_RELEASE);
}

/* A leader's part of call s: its group's posts reduced into its slot and
 * posted as the group's partial.  layout: count elements of dtype in this
 * rank's layout (a buffer of the call, only looked at). */
static int node_group_reduce(bufpool_node_t *n, uint64_t s, int lo, const void *layout,
                             size_t count, struct ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    int rc = OMPI_SUCCESS;
    node_group_wait(n, s, lo);
    if (lo < n->me && count > 0) {
        bufpool_view_t v;
        bufpool_view_init(&v, (void *)layout, count, dtype);
        char *own = node_payload(n, n->me, s);
        if (NULL != v.contig) {
            const ptrdiff_t shift = v.contig - (const char *)layout;
            for (int j = n->me - 1; j >= lo; j--) {
                bufpool_reduce(op, node_payload(n, j, s) - shift, own - shift, count, dtype);
            }
        } else {
            ptrdiff_t gap;
            const size_t span = bufpool_span(dtype, count, &gap);
            char *mem = bufpool_scratch_get(span);
            rc = OMPI_ERR_OUT_OF_RESOURCE;
            if (NULL != mem) {
                const node_rank_set_t group = {.first = lo, .n = n->me - lo + 1};
                rc = bufpool_node_reduce_set(n, &node_tree_slots, s, mem - gap, count, dtype, op, 0,
                                             &group);
                if (OMPI_SUCCESS == rc) {
                    bufpool_view_init(&v, mem - gap, count, dtype);
                    rc = bufpool_view_pack(&v, 0, v.bytes, own);
                }
                bufpool_scratch_put(mem, span);
            }
        }
    }
    node_group_post(n, s, rc);
    return rc;
}

/* Until every leader posted its partial of call s: every rank has posted
 * s, so every rank has ended s - 1.  An error when a leader failed. */
static int node_leaders_wait(bufpool_node_t *n, uint64_t s)
{
    int rc = OMPI_SUCCESS;
    for (int k = 0; k < n->ngroups; k++) {
        const uint64_t *words = node_slot_seq(n, n->leaders[k], s);
        bufpool_wait_word(words + NODE_WORD_REDUCED, s);
        if (s == __atomic_load_n(words + NODE_WORD_FAILED, __ATOMIC_RELAXED)) {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    if (n->peers_done < s - 1) {
        n->peers_done = s - 1;
    }
    return rc;
}

/* allreduce (every rank) and reduce (root: the root's rank) in groups. */
static int node_reduce_tree(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a, int root)
{
    const bool result = root < 0 || root == n->me;
    const void *src = result && MPI_IN_PLACE == a->sbuf ? a->rbuf : a->sbuf;
    int rc = node_post(n, s, src, a->count, a->dtype), rc2, lo;
    if (node_leads(n, &lo)) {
        rc2 = node_group_reduce(n, s, lo, src, a->count, a->dtype, a->op);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    if (result) {
        rc2 = node_leaders_wait(n, s);
        if (OMPI_SUCCESS == rc2) {
            const node_rank_set_t leaders = {.list = n->leaders, .n = n->ngroups};
            rc2 = bufpool_node_reduce_set(n, &node_tree_slots, s, a->rbuf, a->count, a->dtype,
                                          a->op, 0, &leaders);
        }
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    node_end(n, s);
    node_count(&bufpool_node_counters.tree_calls, 1);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* The collectives. */

static int node_allreduce(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a)
{
    if (n->ngroups > 1) {
        return node_reduce_tree(n, s, a, -1);
    }
    const void *src = MPI_IN_PLACE == a->sbuf ? a->rbuf : a->sbuf;
    int rc = node_post(n, s, src, a->count, a->dtype);
    node_wait_all_posts(n, s);
    int rc2 = bufpool_node_reduce_range(n, &node_call_slots, s, a->rbuf, a->count, a->dtype, a->op,
                                        0, n->p);
    node_end(n, s);
    return OMPI_SUCCESS != rc ? rc : rc2;
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
    int rc2 = bufpool_node_rsag_round(n, &node_call_slots, s, a->rbuf, a->count, a->dtype, a->op,
                                      NULL, true);
    node_end(n, s);
    return OMPI_SUCCESS != rc ? rc : rc2;
}

static int node_reduce(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a)
{
    if (n->ngroups > 1) {
        return node_reduce_tree(n, s, a, a->root);
    }
    const bool root = n->me == a->root;
    /* The root's own data too goes through its slot: in place, rbuf is
     * both its contribution and where the result builds up. */
    const void *src = root && MPI_IN_PLACE == a->sbuf ? a->rbuf : a->sbuf;
    int rc = node_post(n, s, src, a->count, a->dtype);
    if (root) {
        node_wait_all_posts(n, s);
        int rc2 = bufpool_node_reduce_range(n, &node_call_slots, s, a->rbuf, a->count, a->dtype,
                                            a->op, 0, n->p);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    node_end(n, s);
    return rc;
}

/* bcast: the root posts, every other rank copies the root's slot out.  In
 * groups the fan-out has two levels: the leader of each group but the
 * root's copies the root's packed bytes into its own slot and posts them in
 * its second word, and its group reads them there, so that the root's
 * lines are read by one rank per group (the root's own group reads them
 * straight). */
static int node_bcast(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a)
{
    const int root = a->root;
    int rc, from = root;
    if (n->ngroups > 1) {
        node_count(&bufpool_node_counters.tree_calls, 1);
    }
    if (n->me == root) {
        rc = node_post(n, s, a->rbuf, a->count, a->dtype);
        node_end(n, s);
        return rc;
    }
    bufpool_view_t v;
    bufpool_view_init(&v, a->rbuf, a->count, a->dtype);
    const int k = n->my_group;
    if (n->ngroups > 1 && (root < n->bounds[k] || root >= n->bounds[k + 1])) {
        from = n->leaders[k];
        if (n->me == from) {
            node_wait_post(n, root, s);
            node_claim(n, s);
            memcpy(node_payload(n, n->me, s), node_payload(n, root, s), v.bytes);
            node_group_post(n, s, OMPI_SUCCESS);
        } else {
            bufpool_wait_word(node_slot_seq(n, from, s) + NODE_WORD_REDUCED, s);
        }
    } else {
        node_wait_post(n, root, s);
    }
    rc = bufpool_view_unpack(&v, 0, v.bytes, node_payload(n, from, s));
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
    int rc2 = bufpool_node_reduce_range(n, &node_call_slots, s, a->rbuf, mine, a->dtype, a->op,
                                        first * a->dtype->super.size, n->p);
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

/* scan and exscan: every rank posts its input and reduces the slots of the
 * ranks before it (scan: and its own) in the one order of every reduction
 * here, so any operation; nobody waits for a rank after it, so rank 0
 * returns as soon as it posted (exscan's rank 0 has no result: MPI leaves
 * its rbuf alone), and the last rank reads every slot.  In place the input
 * is rbuf: the reduction reads the slots only. */
static int node_scan(bufpool_node_t *n, uint64_t s, bool exclusive, const bufpool_args_t *a)
{
    const void *src = MPI_IN_PLACE == a->sbuf ? a->rbuf : a->sbuf;
    int rc = node_post(n, s, src, a->count, a->dtype);
    const int ranks = exclusive ? n->me : n->me + 1;
    if (ranks > 0) {
        node_wait_first_posts(n, s, ranks);
        int rc2 = bufpool_node_reduce_range(n, &node_call_slots, s, a->rbuf, a->count, a->dtype,
                                            a->op, 0, ranks);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    node_end(n, s);
    return rc;
}

/* barrier: every rank posts (no payload) and waits for every post (in
 * groups: each leader for its group's, then every rank for every
 * leader's); the posts of call s also tell every rank that all have ended
 * s - 1, so back-to-back barriers read nothing but the slot words. */
static int node_barrier(bufpool_node_t *n, uint64_t s)
{
    node_claim(n, s);
    __atomic_store_n(node_slot_seq(n, n->me, s), s, __ATOMIC_RELEASE);
    int lo;
    if (n->ngroups < 2) {
        node_wait_all_posts(n, s);
    } else {
        if (node_leads(n, &lo)) {
            node_group_wait(n, s, lo);
            node_group_post(n, s, OMPI_SUCCESS);
        }
        (void)node_leaders_wait(n, s);
        node_count(&bufpool_node_counters.tree_calls, 1);
    }
    node_end(n, s);
    return OMPI_SUCCESS;
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
                return bufpool_node_rounds(n, s, a, plan, comm, -1);
            }
            return BUFPOOL_ALLREDUCE_NODE_RSAG == alg ? node_allreduce_rsag(n, s, a)
                                                      : node_allreduce(n, s, a);
        case BUFPOOL_COLL_reduce:
            if (a->dtype->super.size * a->count > BUFPOOL_NODE_MAX_BYTES) {
                return bufpool_node_rounds(n, s, a, plan, comm, a->root);
            }
            return node_reduce(n, s, a);
        case BUFPOOL_COLL_bcast:
            if (a->dtype->super.size * a->count > BUFPOOL_NODE_MAX_BYTES) {
                return bufpool_node_move(n, s, id, a, plan, comm);
            }
            return node_bcast(n, s, a);
        case BUFPOOL_COLL_allgather:
            if (a->rdtype->super.size * (size_t)a->rcount > BUFPOOL_NODE_MAX_BYTES) {
                return bufpool_node_move(n, s, id, a, plan, comm);
            }
            return node_allgather(n, s, a);
        case BUFPOOL_COLL_reduce_scatter:
        case BUFPOOL_COLL_reduce_scatter_block:
            return node_reduce_scatter(n, s, id, a);
        case BUFPOOL_COLL_gather:
            return node_gather(n, s, a);
        case BUFPOOL_COLL_scatter:
            return node_scatter(n, s, a);
        case BUFPOOL_COLL_scan:
        case BUFPOOL_COLL_exscan:
            if (a->dtype->super.size * a->count > BUFPOOL_NODE_MAX_BYTES) {
                return bufpool_node_scan_rounds(n, s, BUFPOOL_COLL_exscan == id, a, plan, comm);
            }
            return node_scan(n, s, BUFPOOL_COLL_exscan == id, a);
        case BUFPOOL_COLL_barrier:
            return node_barrier(n, s);
        default:
            node_end(n, s);
            return OMPI_ERR_NOT_SUPPORTED;
    }
}

int bufpool_node_run(bufpool_coll_id_t id, const bufpool_plan_t *plan, const bufpool_args_t *a,
                     struct ompi_communicator_t *comm, bufpool_comm_state_t *state,
                     bufpool_node_home_t *home)
{
    const bufpool_group_t all = {.n = ompi_comm_size(comm), .me = ompi_comm_rank(comm)};
    bufpool_node_t *n;
    uint64_t s;
    int rc = node_begin(home, &all, state, comm, &n, &s);
    if (OMPI_SUCCESS == rc) {
        rc = node_dispatch(n, s, id, plan, a, comm);
    }
    node_count(BUFPOOL_NODE_UNAVAILABLE == rc ? &bufpool_node_counters.fallbacks
                                              : &bufpool_node_counters.calls,
               1);
    return rc;
}
