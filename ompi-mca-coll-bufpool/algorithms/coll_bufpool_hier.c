/*
 * MPI_Allreduce, hier: hierarchy-aware, for communicators that span hosts.
 *
 * Every host's lowest rank leads it.  Segment by segment (segments of the
 * plan, at most segment_size of span each):
 *   1. node-local reduce: the leader folds the segment of every other rank
 *      of its host into its own result buffer (rbuf), the contributions
 *      arriving through a receive window of scratch slots;
 *   2. leaders' allreduce: recursive doubling among the leaders
 *      (bufpool_allreduce_rd_group), one stream per host, of a batch of
 *      segments at once (depth - 1 of them): every step has the batch's
 *      transfers in flight together, so the network sees depth - 1
 *      segments at a time instead of stopping after each;
 *   3. node-local bcast: the leader sends the finished segments to the
 *      other ranks of its host, which receive them straight into rbuf.
 * The other ranks post the sends of all their segments up front (from the
 * input, no scratch) and the receives of the results straight into rbuf,
 * so the node-local transfers of later segments overlap the inter-host
 * exchange of the current one.
 *
 * Scratch: only leaders hold any, slots of one segment each: the window
 * gets one and the leaders' exchange depth - 1 (the batch), so at most
 * depth segments; at depth 1 the
 * segments are cut in halves
 * (bufpool_segment_bytes_for(2)) so that the two slots still fit one
 * segment_size.  Every rank cuts alike (the cut depends on the plan only).
 *
 * Order: each host's contributions are folded in arrival order of the
 * window (rank order), then the hosts in leader order: ranks of different
 * hosts interleave in that order, so commutative operations only (the
 * decision hands the others over).  Every rank gets its leader's bits, and
 * the leaders' recursive doubling gives every leader the same bits.
 *
 * Requests: not bounded by max_requests (a rank other than the leader posts
 * 2 x segments, a leader (ranks on its host - 1) x segments sends).
 *
 * Blocking waits: a leader waits for the segments of a batch from its
 * ranks (all posted up front) and for the leaders' exchange of the batch,
 * whose leaders wait only on their own ranks' segments of the same batch
 * (every leader cuts the same batches): no cycle.  In place a rank's input is
 * its result buffer, so it receives the results only once its sends are
 * complete; the leader never waits for its result sends before the end.
 *
 * Where the ranks run (bufpool_hier_topo_t) is worked out at the first hier
 * call by bufpool_comm_host_ids (host names of the launch or, for testing,
 * coll_bufpool_test_host_map: the same on every rank), and kept with the
 * module.
 */
#include "coll_bufpool_hier.h"
#include "coll_bufpool_node.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/base/coll_tags.h"
#include "opal/util/proc.h"

/* ---------------------------------------------------------------------- */
/* Where the ranks run. */

static bufpool_hier_topo_t *topo_build(const bufpool_comm_state_t *state,
                                       struct ompi_communicator_t *comm)
{
    const int p = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    bufpool_hier_topo_t *t = calloc(1, sizeof(*t));
    int *host = malloc((size_t)p * sizeof(*host));
    int *ranks = malloc(3 * (size_t)p * sizeof(*ranks));

    int max_ppn;
    const int nhosts = NULL != host ? state->host_ids(comm, host, &max_ppn) : -1;

    if (NULL == t || NULL == host || NULL == ranks || nhosts < 0) {
        free(t);
        free(host);
        free(ranks);
        return NULL;
    }
    if (0 == nhosts) {
        /* A host name is missing: every rank counts as a host of its own,
         * still correct (the leaders' allreduce alone), and the same on
         * every rank of a launch that publishes no names. */
        for (int r = 0; r < p; r++) {
            host[r] = r;
        }
    }
    int *local = ranks, *leaders = ranks + p, *peers = ranks + 2 * p, nlocal = 0, nleaders = 0;
    t->leaders.me = -1;
    for (int r = 0; r < p; r++) {
        if (host[r] == host[me]) {
            local[nlocal++] = r;
        }
        if (host[r] == nleaders) { /* the first rank of a new host */
            if (r == me) {
                t->leaders.me = nleaders;
            }
            leaders[nleaders++] = r;
        }
    }
    for (int i = 0; i < nlocal; i++) {
        if (local[i] == me) {
            t->local.me = i;
        }
    }
    t->local.n = nlocal;
    t->local.ranks = local;
    t->leaders.n = nleaders;
    t->leaders.ranks = leaders;
    /* Every host's rank of my index on mine, and whether every host has as
     * many ranks as mine (host[] is free once seen[] counts them). */
    int *seen = calloc((size_t)nleaders, sizeof(*seen));
    if (NULL == seen) {
        free(t);
        free(host);
        free(ranks);
        return NULL;
    }
    for (int r = 0; r < p; r++) {
        if (seen[host[r]]++ == t->local.me) {
            peers[host[r]] = r;
        }
    }
    t->uniform = true;
    for (int h = 0; h < nleaders; h++) {
        t->uniform = t->uniform && seen[h] == nlocal;
    }
    free(seen);
    t->peers.n = nleaders;
    t->peers.me = host[me];
    t->peers.ranks = peers;
    t->ranks = ranks;
    free(host);
    return t;
}

void bufpool_hier_topo_free(bufpool_hier_topo_t *topo)
{
    if (NULL != topo) {
        free(topo->ranks);
        free(topo);
    }
}

/* ---------------------------------------------------------------------- */
/* The algorithm. */

/* The leader's receive stream: unit u is segment u / (n - 1) of local
 * member 1 + u % (n - 1). */
typedef struct local_units {
    const bufpool_group_t *local;
    const bufpool_segs_t *segs;
    struct ompi_datatype_t *dtype;
} local_units_t;

static void local_unit_describe(void *ctx, size_t unit, bufpool_recv_unit_t *out)
{
    const local_units_t *c = ctx;
    const size_t others = (size_t)c->local->n - 1;
    out->peer = bufpool_group_rank(c->local, 1 + (int)(unit % others));
    out->count = bufpool_segs_count(c->segs, unit / others);
    out->dtype = c->dtype;
    out->buf = NULL;
}

/* A rank that does not lead: its segments to the leader, the results back. */
static int hier_member(const void *sbuf, void *rbuf, const bufpool_segs_t *segs,
                       struct ompi_datatype_t *dtype, const bufpool_group_t *local,
                       bufpool_reqs_t *reqs)
{
    const bool in_place = MPI_IN_PLACE == sbuf;
    const int leader = bufpool_group_rank(local, 0);
    int rc = bufpool_reqs_send_segs(reqs, in_place ? rbuf : sbuf, segs, dtype, leader,
                                    MCA_COLL_BASE_TAG_REDUCE);
    if (OMPI_SUCCESS == rc && in_place) {
        rc = bufpool_reqs_wait(reqs); /* the results land where the input is read */
    }
    if (OMPI_SUCCESS == rc) {
        rc = bufpool_reqs_recv_segs(reqs, rbuf, segs, dtype, leader, MCA_COLL_BASE_TAG_BCAST);
    }
    return bufpool_reqs_finish(reqs, rc);
}

/* The leaders' allreduce of segments j0 .. j0 + nb - 1 of rbuf, in flight
 * together, each with scratch slot first + b of slots: the same calls on
 * every leader, whichever way its host reduced (hier, hier_node). */
static int leaders_batch(char *rbuf, const bufpool_segs_t *segs, size_t j0, int nb,
                         bufpool_slots_t *slots, int first, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, const bufpool_hier_topo_t *topo,
                         struct ompi_communicator_t *comm)
{
    char *bufs[BUFPOOL_MAX_DEPTH], *tmps[BUFPOOL_MAX_DEPTH];
    size_t counts[BUFPOOL_MAX_DEPTH];
    for (int b = 0; b < nb; b++) {
        const size_t j = j0 + (size_t)b;
        bufs[b] = rbuf + bufpool_segs_offset(segs, j);
        counts[b] = bufpool_segs_count(segs, j);
        tmps[b] = bufpool_slot(slots, first + b);
    }
    const bufpool_rd_parts_t parts = {.n = nb, .buf = bufs, .tmp = tmps, .count = counts};
    return bufpool_allreduce_rd_group(&parts, dtype, op, &topo->leaders,
                                      MCA_COLL_BASE_TAG_ALLREDUCE, comm);
}

/* The batches of the leaders' exchange: depth - 1 segments (at least 1, at
 * most all). */
static int leaders_batch_size(int depth, const bufpool_segs_t *segs)
{
    int batch = depth > 1 ? depth - 1 : 1;
    return (size_t)batch < segs->nseg ? batch : (int)segs->nseg;
}

static int hier_leader(const void *sbuf, void *rbuf, const bufpool_segs_t *segs,
                       struct ompi_datatype_t *dtype, struct ompi_op_t *op, int depth,
                       const bufpool_hier_topo_t *topo, bufpool_reqs_t *reqs,
                       struct ompi_communicator_t *comm)
{
    const bool in_place = MPI_IN_PLACE == sbuf;
    const int others = topo->local.n - 1;
    const bool inter = topo->leaders.n > 1;
    const size_t nunits = segs->nseg * (size_t)others;
    /* One slot for the node-local window (the leader copies every
     * contribution in itself, so more would not overlap anything), depth - 1
     * for the leaders' exchange of a batch of segments: depth in all (depth
     * 1: two half segments).  Every leader cuts the same batches. */
    const int wdepth = others > 0 ? 1 : 0;
    const int batch = leaders_batch_size(depth, segs);
    const int nslots = wdepth + (inter ? batch : 0);
    bufpool_slots_t slots = {0}, wslots;
    bufpool_rwin_t win;
    local_units_t units = {.local = &topo->local, .segs = segs, .dtype = dtype};
    int rc = OMPI_SUCCESS;

    if (nslots > 0) {
        rc = bufpool_slots_get(&slots, nslots, segs->seg_span, segs->gap);
        if (OMPI_SUCCESS != rc) {
            return bufpool_reqs_finish(reqs, rc);
        }
    }
    if (others > 0) {
        wslots = bufpool_slots_view(&slots, 0, wdepth);
        rc = bufpool_rwin_start(&win, comm, MCA_COLL_BASE_TAG_REDUCE, &wslots, (size_t)wdepth,
                                nunits, local_unit_describe, &units);
        if (OMPI_SUCCESS != rc) {
            goto out;
        }
    }
    for (size_t j0 = 0; j0 < segs->nseg && OMPI_SUCCESS == rc; j0 += (size_t)batch) {
        const int nb = segs->nseg - j0 < (size_t)batch ? (int)(segs->nseg - j0) : batch;
        /* 1. Fold this host's contributions into the batch's segments. */
        for (int b = 0; b < nb && OMPI_SUCCESS == rc; b++) {
            const size_t j = j0 + (size_t)b;
            const ptrdiff_t off = bufpool_segs_offset(segs, j);
            const size_t count = bufpool_segs_count(segs, j);
            if (!in_place) {
                rc = bufpool_copy((char *)rbuf + off, (const char *)sbuf + off, count, dtype);
            }
            for (int k = 0; k < others && OMPI_SUCCESS == rc; k++) {
                const size_t u = j * (size_t)others + (size_t)k;
                void *in;
                rc = bufpool_rwin_wait(&win, u, &in);
                if (OMPI_SUCCESS == rc) {
                    bufpool_reduce(op, in, (char *)rbuf + off, count, dtype);
                    rc = bufpool_rwin_release(&win, u);
                }
            }
        }
        /* 2. The leaders' allreduce of the batch, its segments in flight
         * together. */
        if (OMPI_SUCCESS == rc && inter) {
            rc = leaders_batch(rbuf, segs, j0, nb, &slots, wdepth, dtype, op, topo, comm);
        }
        /* 3. The results to this host's other ranks. */
        for (int b = 0; b < nb && OMPI_SUCCESS == rc; b++) {
            const size_t j = j0 + (size_t)b;
            for (int k = 1; k <= others && OMPI_SUCCESS == rc; k++) {
                rc = bufpool_reqs_send(
                    reqs, (char *)rbuf + bufpool_segs_offset(segs, j), bufpool_segs_count(segs, j),
                    dtype, bufpool_group_rank(&topo->local, k), MCA_COLL_BASE_TAG_BCAST);
            }
        }
    }
    if (OMPI_SUCCESS != rc && others > 0) {
        bufpool_rwin_abort(&win);
    }
out:
    rc = bufpool_reqs_finish(reqs, rc);
    if (nslots > 0) {
        bufpool_slots_put(&slots);
    }
    return rc;
}

/* The communicator's map of hosts.  Built once, without a lock: a blocking
 * call and nonblocking ones (coll_bufpool_nb.c), on different threads, may
 * get here at once; each builds the same map from the same data and the
 * first published one stays.  NULL: out of memory. */
static bufpool_hier_topo_t *hier_topo(bufpool_comm_state_t *state, struct ompi_communicator_t *comm)
{
    bufpool_hier_topo_t *topo = __atomic_load_n(&state->hier, __ATOMIC_ACQUIRE);
    if (NULL == topo) {
        bufpool_hier_topo_t *built = topo_build(state, comm);
        if (NULL == built) {
            return NULL;
        }
        if (__atomic_compare_exchange_n(&state->hier, &topo, built, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            topo = built;
        } else {
            bufpool_hier_topo_free(built);
        }
    }
    return topo;
}

/* Segments of hier's leaders' exchange: the same cut on every rank. */
static void hier_segs(bufpool_segs_t *segs, size_t count, struct ompi_datatype_t *dtype,
                      const bufpool_plan_t *plan)
{
    bufpool_segs_init(segs, count, dtype,
                      bufpool_segment_bytes_for(plan->seg_bytes, plan->depth, 2));
}

/* hier's own host phases (point to point). */
static int hier_p2p(const void *sbuf, void *rbuf, size_t count, struct ompi_datatype_t *dtype,
                    struct ompi_op_t *op, const bufpool_plan_t *plan,
                    const bufpool_hier_topo_t *topo, struct ompi_communicator_t *comm,
                    bufpool_comm_state_t *state)
{
    bufpool_segs_t segs;
    bufpool_reqs_t reqs;

    hier_segs(&segs, count, dtype, plan);
    bufpool_reqs_init(&reqs, state, comm);
    if (0 != topo->local.me) {
        return hier_member(sbuf, rbuf, &segs, dtype, &topo->local, &reqs);
    }
    return hier_leader(sbuf, rbuf, &segs, dtype, op, plan->depth, topo, &reqs, comm);
}

/* ---------------------------------------------------------------------- */
/* hier_node: the host's phases through a segment of its ranks. */

/* A leader's part between the host's phases: the leaders' allreduce of the
 * host's result in rbuf, batch after batch as hier's leaders do it. */
static int hier_node_leaders(void *rbuf, size_t count, struct ompi_datatype_t *dtype,
                             struct ompi_op_t *op, const bufpool_plan_t *plan,
                             const bufpool_hier_topo_t *topo, struct ompi_communicator_t *comm)
{
    bufpool_segs_t segs;
    hier_segs(&segs, count, dtype, plan);
    if (topo->leaders.n < 2 || 0 == segs.nseg) {
        return OMPI_SUCCESS;
    }
    const int batch = leaders_batch_size(plan->depth, &segs);
    bufpool_slots_t slots = {0};
    /* (Without scratch, as hier's leader: the error, no exchange.) */
    int rc = bufpool_slots_get(&slots, batch, segs.seg_span, segs.gap);
    for (size_t j0 = 0; j0 < segs.nseg && OMPI_SUCCESS == rc; j0 += (size_t)batch) {
        const int nb = segs.nseg - j0 < (size_t)batch ? (int)(segs.nseg - j0) : batch;
        rc = leaders_batch(rbuf, &segs, j0, nb, &slots, 0, dtype, op, topo, comm);
    }
    bufpool_slots_put(&slots);
    return rc;
}

/* On hosts of one size every rank of a host leads a slice of each round:
 * the exchange of its slices with its peers (the ranks of its index on the
 * other hosts), recursive doubling in member (host) order of a batch of
 * rounds' slices in flight together, one stream per rank, so every rank of
 * a host sends at once and each moves 1 / ppn of the message; every peer
 * gets the same bits.  One batch at a time, run alongside the host's work
 * on the next (bufpool_rd_t). */
typedef struct slice_exchange {
    const bufpool_group_t *peers;
    struct ompi_op_t *op;
    bufpool_slots_t tmp; /* a batch of the largest slice; none: out of memory */
    bool have_tmp;
    struct ompi_communicator_t *comm;
    /* The batch in flight: its nonempty slices, their scratch and counts. */
    char *bufs[BUFPOOL_MAX_DEPTH], *tmps[BUFPOOL_MAX_DEPTH];
    size_t counts[BUFPOOL_MAX_DEPTH];
    bool running;
    int rc;
    bufpool_rd_t rd;
} slice_exchange_t;

static int slice_exchange_start(int n, char *const *slices, const size_t *counts,
                                struct ompi_datatype_t *dtype, bool alone, void *ctx)
{
    slice_exchange_t *x = ctx;
    int parts = 0;
    x->running = false;
    x->rc = OMPI_SUCCESS;
    /* Empty slices move nothing (the same on every peer: the counts are). */
    for (int i = 0; i < n; i++) {
        if (counts[i] > 0) {
            x->bufs[parts] = slices[i];
            x->counts[parts] = counts[i];
            parts++;
        }
    }
    if (0 == parts || x->peers->n < 2) {
        return OMPI_SUCCESS;
    }
    if (!x->have_tmp) {
        /* (As hier's leader without scratch: the error, no exchange.) */
        x->rc = OMPI_ERR_OUT_OF_RESOURCE;
        return x->rc;
    }
    for (int i = 0; i < parts; i++) {
        x->tmps[i] = bufpool_slot(&x->tmp, i);
    }
    const bufpool_rd_parts_t rd = {.n = parts, .buf = x->bufs, .tmp = x->tmps, .count = x->counts};
    if (alone) {
        /* Blocking, as recursive doubling runs by itself: a single slice
         * may go out inline. */
        x->rc = bufpool_allreduce_rd_group(&rd, dtype, x->op, x->peers, MCA_COLL_BASE_TAG_ALLREDUCE,
                                           x->comm);
        return x->rc;
    }
    x->running = true;
    return bufpool_rd_start(&x->rd, &rd, dtype, x->op, x->peers, MCA_COLL_BASE_TAG_ALLREDUCE,
                            x->comm);
}

static bool slice_exchange_test(void *ctx)
{
    slice_exchange_t *x = ctx;
    return !x->running || bufpool_rd_test(&x->rd);
}

static int slice_exchange_wait(void *ctx)
{
    slice_exchange_t *x = ctx;
    if (x->running) {
        x->running = false;
        x->rc = bufpool_rd_wait(&x->rd);
    }
    return x->rc;
}

/* The whole exchange of a batch at once (a host without its segments). */
static int slice_exchange(const bufpool_node_exchange_t *x, int n, char *const *slices,
                          const size_t *counts, struct ompi_datatype_t *dtype)
{
    const int rc = x->start(n, slices, counts, dtype, true, x->ctx);
    const int rc2 = x->wait(x->ctx);
    return OMPI_SUCCESS != rc ? rc : rc2;
}

/* A host without its segments, on hosts of one size: the same rounds,
 * batches and slices, so the same exchanges, with the host's own phases
 * point to point: recursive doubling of the batch's rounds among the
 * host's ranks (each rank then holds the host's reduction of them), the
 * exchange of this rank's slices, the final slices sent to every rank of
 * the host. */
static int sliced_p2p(const bufpool_args_t *a, const bufpool_plan_t *plan,
                      const bufpool_hier_topo_t *topo, const bufpool_node_exchange_t *x,
                      struct ompi_communicator_t *comm, bufpool_comm_state_t *state)
{
    const bufpool_group_t *host = &topo->local;
    struct ompi_datatype_t *dtype = a->dtype;
    const size_t per = bufpool_node_round_elems(plan, dtype->super.size);
    const int batch = bufpool_node_exchange_batch(plan);
    ptrdiff_t lb, extent, gap;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    const size_t span = bufpool_span(dtype, per < a->count ? per : a->count, &gap);
    bufpool_slots_t slots = {0};
    const int got = bufpool_slots_get(&slots, batch, span, gap);
    int rc = got;
    for (size_t done = 0; done < a->count;) {
        char *round[BUFPOOL_MAX_DEPTH], *tmp[BUFPOOL_MAX_DEPTH], *slice[BUFPOOL_MAX_DEPTH];
        size_t count[BUFPOOL_MAX_DEPTH], first[BUFPOOL_MAX_DEPTH], mine[BUFPOOL_MAX_DEPTH];
        int nb = 0, rc2 = OMPI_SUCCESS;
        for (; nb < batch && done < a->count; nb++, done += per) {
            count[nb] = a->count - done < per ? a->count - done : per;
            round[nb] = (char *)a->rbuf + (ptrdiff_t)done * extent;
            if (MPI_IN_PLACE != a->sbuf && OMPI_SUCCESS == rc2) {
                rc2 = bufpool_copy(round[nb], (const char *)a->sbuf + (ptrdiff_t)done * extent,
                                   count[nb], dtype);
            }
            mine[nb] = bufpool_node_slice(count[nb], host->n, host->me, &first[nb]);
            slice[nb] = round[nb] + (ptrdiff_t)first[nb] * extent;
        }
        if (OMPI_SUCCESS == got && OMPI_SUCCESS == rc2) {
            for (int b = 0; b < nb; b++) {
                tmp[b] = bufpool_slot(&slots, b);
            }
            const bufpool_rd_parts_t rd = {.n = nb, .buf = round, .tmp = tmp, .count = count};
            rc2 = bufpool_allreduce_rd_group(&rd, dtype, a->op, host, MCA_COLL_BASE_TAG_ALLREDUCE,
                                             comm);
        }
        rc = OMPI_SUCCESS != rc ? rc : rc2;
        rc2 = slice_exchange(x, nb, slice, mine, dtype);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
        /* Sent whatever failed before: the host's ranks never wait for them
         * (this rank returns the error). */
        bufpool_reqs_t reqs;
        bufpool_reqs_init(&reqs, state, comm);
        rc2 = OMPI_SUCCESS;
        for (int b = 0; b < nb; b++) {
            for (int k = 1; k < host->n && OMPI_SUCCESS == rc2; k++) {
                const int to = (host->me + k) % host->n, from = (host->me - k + host->n) % host->n;
                size_t theirs_first;
                const size_t theirs = bufpool_node_slice(count[b], host->n, from, &theirs_first);
                rc2 = bufpool_reqs_send(&reqs, slice[b], mine[b], dtype,
                                        bufpool_group_rank(host, to), MCA_COLL_BASE_TAG_ALLGATHER);
                if (OMPI_SUCCESS == rc2) {
                    rc2 = bufpool_reqs_recv(&reqs, round[b] + (ptrdiff_t)theirs_first * extent,
                                            theirs, dtype, bufpool_group_rank(host, from),
                                            MCA_COLL_BASE_TAG_ALLGATHER);
                }
            }
        }
        rc2 = bufpool_reqs_finish(&reqs, rc2);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    if (OMPI_SUCCESS == got) {
        bufpool_slots_put(&slots);
    }
    return rc;
}

/* hier_node on hosts of one size: node_rsag's rounds on every host with
 * each batch of slices exchanged across hosts (bufpool_node_host_allreduce),
 * or, on a host without its segments, sliced_p2p: the same exchanges either
 * way. */
static int hier_node_sliced(const bufpool_args_t *a, const bufpool_plan_t *plan,
                            const bufpool_hier_topo_t *topo, struct ompi_communicator_t *comm,
                            bufpool_comm_state_t *state, bufpool_node_home_t *home)
{
    const bufpool_group_t *host = &topo->local;
    const size_t per = bufpool_node_round_elems(plan, a->dtype->super.size);
    size_t first;
    /* The largest slice: of a whole round, the last member's. */
    const size_t most =
        bufpool_node_slice(per < a->count ? per : a->count, host->n, host->n - 1, &first);
    ptrdiff_t gap = 0;
    const size_t span = bufpool_span(a->dtype, most, &gap);
    slice_exchange_t ctx = {.peers = &topo->peers, .op = a->op, .comm = comm};
    ctx.have_tmp =
        OMPI_SUCCESS == bufpool_slots_get(&ctx.tmp, bufpool_node_exchange_batch(plan), span, gap);
    const bufpool_node_exchange_t x = {.start = slice_exchange_start,
                                       .test = slice_exchange_test,
                                       .wait = slice_exchange_wait,
                                       .ctx = &ctx};
    const uint64_t s = bufpool_node_host_reserve(home);
    int rc = bufpool_node_host_allreduce(a, plan, host, s, &x, comm, state, home);
    if (BUFPOOL_NODE_UNAVAILABLE == rc) {
        rc = sliced_p2p(a, plan, topo, &x, comm, state);
    }
    if (ctx.have_tmp) {
        bufpool_slots_put(&ctx.tmp);
    }
    return rc;
}

static int hier_node(const void *sbuf, void *rbuf, size_t count, struct ompi_datatype_t *dtype,
                     struct ompi_op_t *op, const bufpool_plan_t *plan,
                     const bufpool_hier_topo_t *topo, struct ompi_communicator_t *comm,
                     bufpool_comm_state_t *state, bufpool_node_home_t *home)
{
    const bufpool_group_t *host = &topo->local;
    /* Where the host's rounds cannot serve, hier's own host phases do (the
     * same on every rank of the host: its size and the call's count and
     * type; the leaders' exchange is the same either way). */
    if (host->n < 2 || count < (size_t)host->n ||
        dtype->super.size > BUFPOOL_NODE_CHUNK / (size_t)host->n) {
        return hier_p2p(sbuf, rbuf, count, dtype, op, plan, topo, comm, state);
    }
    const bufpool_args_t a = {.sbuf = sbuf, .rbuf = rbuf, .count = count, .dtype = dtype, .op = op};
    if (topo->uniform) {
        return hier_node_sliced(&a, plan, topo, comm, state, home);
    }
    const uint64_t s = bufpool_node_host_reserve(home);
    int rc = bufpool_node_host_reduce(&a, plan, host, s, comm, state, home);
    if (BUFPOOL_NODE_UNAVAILABLE == rc) {
        return hier_p2p(sbuf, rbuf, count, dtype, op, plan, topo, comm, state);
    }
    if (0 == host->me) {
        int rc2 = hier_node_leaders(rbuf, count, dtype, op, plan, topo, comm);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    int rc2 = bufpool_node_host_bcast(rbuf, count, dtype, plan, host, s + 1,
                                      0 == host->me ? rc : OMPI_SUCCESS, comm, state, home);
    return OMPI_SUCCESS != rc ? rc : rc2;
}

int bufpool_allreduce_hier(const void *sbuf, void *rbuf, size_t count,
                           struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                           bufpool_comm_state_t *state, bufpool_node_home_t *host_home)
{
    const bufpool_hier_topo_t *topo = hier_topo(state, comm);
    if (NULL == topo) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    return BUFPOOL_ALLREDUCE_HIER_NODE == plan->alg
               ? hier_node(sbuf, rbuf, count, dtype, op, plan, topo, comm, state, host_home)
               : hier_p2p(sbuf, rbuf, count, dtype, op, plan, topo, comm, state);
}
