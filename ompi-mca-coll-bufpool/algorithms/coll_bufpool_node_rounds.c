/*
 * Node-level collectives, large reductions (see coll_bufpool_node.c's
 * opening comment): rounds of the plan's chunk through the chunk segment
 * (coll_bufpool_node_ring.c) for allreduce node_rsag and reduce node above
 * BUFPOOL_NODE_MAX_BYTES, scan's and exscan's chain of rounds, and allreduce
 * hier_node's host phases but its bcast (coll_bufpool_node_moves.c, with
 * bcast's and allgather's rounds).
 */
#include "coll_bufpool_node_segment.h"

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
    const int rc = bufpool_node_big_begin(n, s, plan, BUFPOOL_NODE_CHUNK, comm);
    if (OMPI_SUCCESS != rc) {
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
 * more (bufpool_node_big_claim waits only after another collective's rounds), and
 * a rank that is done with round q packs round q + 1 while the others
 * still copy.  BUFPOOL_NODE_UNAVAILABLE (after ending the call)
 * when the chunk segment could not be had, on every rank alike. */
int bufpool_node_rounds(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a,
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
     * largest one (NULL: they post an error instead, bufpool_node_rsag_round). */
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
        bufpool_node_big_claim(n, q);
        int rc2 = bufpool_view_pack(&r.src, done * type_size, count * type_size,
                                    node_big_payload(n, n->me, q));
        rc = OMPI_SUCCESS != rc ? rc : rc2;
        bufpool_node_big_post(n, q, rc2);
        for (int j = 0; j < n->p; j++) {
            bufpool_wait_word(node_big_word(n, j, q), q);
        }
        n->big_posted = q;
        rc2 = bufpool_node_rsag_round(n, &bufpool_node_big_slots, q,
                                      result ? (char *)a->rbuf + (ptrdiff_t)done * extent : NULL,
                                      count, a->dtype, a->op,
                                      NULL != scratch ? scratch - gap : NULL, result);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    if (NULL != scratch) {
        bufpool_scratch_put(scratch, span);
    }
    node_end(n, s);
    return rc;
}

/* One round of scan's or exscan's chain on rank me > 0, once rank me - 1
 * posted its prefix of the round (prev: the reduction of the inputs of
 * ranks 0 .. me - 1, packed): this rank's result into out (scan: prev op
 * its input; exscan: prev) and, unless it is the last rank, its own prefix
 * (prev op its input) into mine.  Elements [done, done + count) of the
 * views in (the input: rbuf in place) and out; tmp: typed scratch of a
 * round for a layout with gaps (NULL: none could be had, an error;
 * exscan's last rank, which needs none, has none).  In place the input is
 * read before out is written. */
typedef struct node_scan_round {
    const bufpool_view_t *in, *out;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    ptrdiff_t extent;
    char *tmp;
    bool exclusive, last;
} node_scan_round_t;

static int node_scan_round(const node_scan_round_t *c, size_t done, size_t count, const char *prev,
                           char *mine)
{
    const size_t off = done * c->dtype->super.size, len = count * c->dtype->super.size;
    char *in = c->in->buf + (ptrdiff_t)done * c->extent;
    char *out = c->out->buf + (ptrdiff_t)done * c->extent;
    const bool in_place = in == out;
    if (c->exclusive && c->last) {
        /* Its result is the prefix; nobody reads a prefix of its own. */
        return bufpool_view_unpack(c->out, off, len, prev);
    }
    if (NULL != c->in->contig) {
        /* Packed bytes are the layout: reduce straight from and into the
         * slots. */
        const ptrdiff_t shift = c->in->contig - c->in->buf;
        if (c->exclusive) {
            /* The prefix goes out as it is (the next rank's result), so
             * it is made from a copy of the input: an operation writes an
             * element's value bytes only (a long double's 10 of 16), and
             * the rest must be the input's, not what the slot held. */
            const int rc = bufpool_view_pack(c->in, off, len, mine);
            bufpool_reduce(c->op, prev - shift, mine - shift, count, c->dtype);
            return OMPI_SUCCESS != rc ? rc : bufpool_view_unpack(c->out, off, len, prev);
        }
        if (in_place) {
            bufpool_reduce(c->op, prev - shift, out, count, c->dtype);
        } else {
            bufpool_reduce3(c->op, prev - shift, in, out, count, c->dtype);
        }
        return c->last ? OMPI_SUCCESS : bufpool_view_pack(c->out, off, len, mine);
    }
    if (NULL == c->tmp) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    bufpool_view_t t;
    bufpool_view_init(&t, c->tmp, count, c->dtype);
    int rc;
    if (c->exclusive) {
        /* tmp = prev op input, the input kept in tmp before out takes prev. */
        rc = bufpool_copy(c->tmp, in, count, c->dtype);
        rc = OMPI_SUCCESS != rc ? rc : bufpool_view_unpack(c->out, off, len, prev);
        if (OMPI_SUCCESS == rc) {
            bufpool_reduce(c->op, out, c->tmp, count, c->dtype);
            rc = bufpool_view_pack(&t, 0, len, mine);
        }
        return rc;
    }
    rc = in_place ? OMPI_SUCCESS : bufpool_copy(out, in, count, c->dtype);
    rc = OMPI_SUCCESS != rc ? rc : bufpool_view_unpack(&t, 0, len, prev);
    if (OMPI_SUCCESS == rc) {
        bufpool_reduce(c->op, c->tmp, out, count, c->dtype);
        rc = c->last ? OMPI_SUCCESS : bufpool_view_pack(c->out, off, len, mine);
    }
    return rc;
}

/* scan and exscan node above BUFPOOL_NODE_MAX_BYTES: a chain through the
 * chunk segment, round by round.  Rank 0 posts its input; rank r > 0 waits
 * for rank r - 1's prefix of the round, takes its result from it and posts
 * its own prefix for rank r + 1 (node_scan_round), in rank order, so any
 * operation.  Each rank reduces the message once and copies it once or
 * twice, and rank r works on round q while rank r - 1 is on round q + 1,
 * where the small messages' fold (node_scan) has rank r read r + 1 slots.
 * Every rank posts every round in order (the last one its word only:
 * nobody reads its slot), which is the ring's rule (bufpool_node_big_claim).  A
 * rank that cannot make its prefix posts an error with the round, and the
 * ranks after it return an error too.  BUFPOOL_NODE_UNAVAILABLE (after
 * ending the call) when the chunk segment could not be had, on every rank
 * alike. */
int bufpool_node_scan_rounds(bufpool_node_t *n, uint64_t s, bool exclusive, const bufpool_args_t *a,
                             const bufpool_plan_t *plan, struct ompi_communicator_t *comm)
{
    int rc = bufpool_node_big_begin(n, s, plan, BUFPOOL_NODE_CHUNK, comm);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    bufpool_view_t in, out;
    bufpool_view_init(&in, MPI_IN_PLACE == a->sbuf ? a->rbuf : a->sbuf, a->count, a->dtype);
    bufpool_view_init(&out, a->rbuf, a->count, a->dtype);
    const size_t type_size = a->dtype->super.size, per = n->big_chunk / type_size;
    node_scan_round_t c = {.in = &in,
                           .out = &out,
                           .dtype = a->dtype,
                           .op = a->op,
                           .exclusive = exclusive,
                           .last = n->me == n->p - 1};
    ptrdiff_t lb, gap = 0;
    ompi_datatype_get_extent(a->dtype, &lb, &c.extent);
    char *scratch = NULL;
    size_t span = 0;
    if (NULL == in.contig && n->me > 0 && !(exclusive && c.last)) {
        span = bufpool_span(a->dtype, per < a->count ? per : a->count, &gap);
        scratch = bufpool_scratch_get(span);
        c.tmp = NULL != scratch ? scratch - gap : NULL;
    }
    for (size_t done = 0; done < a->count; done += per) {
        const size_t count = a->count - done < per ? a->count - done : per;
        const uint64_t q = ++n->big_seq;
        char *mine = node_big_payload(n, n->me, q);
        int rc2;
        if (!c.last) {
            bufpool_node_big_claim(n, q);
        }
        if (0 == n->me) {
            rc2 = bufpool_view_pack(&in, done * type_size, count * type_size, mine);
            if (OMPI_SUCCESS == rc2 && !exclusive && MPI_IN_PLACE != a->sbuf) {
                rc2 = bufpool_view_unpack(&out, done * type_size, count * type_size, mine);
            }
        } else {
            const int prev = n->me - 1;
            bufpool_wait_word(node_big_word(n, prev, q), q);
            rc2 = node_big_failed(n, prev, q)
                      ? OMPI_ERR_OUT_OF_RESOURCE
                      : node_scan_round(&c, done, count, node_big_payload(n, prev, q), mine);
        }
        bufpool_node_big_post(n, q, rc2);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    if (NULL != scratch) {
        bufpool_scratch_put(scratch, span);
    }
    node_end(n, s);
    return rc;
}

/* The ring of hier_node's sliced rounds holds two batches and a slot
 * (node_exchanged_rounds says why). */
#define NODE_MAX_EXCHANGE_BATCH ((NODE_BIG_WORDS - 1) / 2)

int bufpool_node_exchange_batch(const bufpool_plan_t *plan)
{
    /* The plan's ring less one slot, as many as its other chunk rounds
     * have ahead of their posts. */
    const int batch = bufpool_node_ring_depth(plan) - 1;
    return batch < NODE_MAX_EXCHANGE_BATCH ? batch : NODE_MAX_EXCHANGE_BATCH;
}

/* A batch of hier_node's rounds (node_exchanged_rounds): its first round's
 * number, each round's elements and place in rbuf, this rank's slice of
 * each (first element, count, where it is exchanged) and whether that is
 * in the slot. */
typedef struct node_batch {
    uint64_t q0;
    int nb;
    char *round[NODE_MAX_EXCHANGE_BATCH], *slice[NODE_MAX_EXCHANGE_BATCH];
    size_t count[NODE_MAX_EXCHANGE_BATCH], first[NODE_MAX_EXCHANGE_BATCH];
    size_t mine[NODE_MAX_EXCHANGE_BATCH];
    bool in_slot[NODE_MAX_EXCHANGE_BATCH];
} node_batch_t;

/* The next batch of at most `batch` rounds from element *done: this rank
 * packs its chunk of each and says so in its chunk word, then reduces its
 * slice of each (bufpool_node_rsag_round: into rbuf and over the same range
 * of its own slot), giving the exchange in flight (x, when `busy`) a turn
 * after each round. */
static int node_batch_reduce(bufpool_node_t *n, const bufpool_args_t *a,
                             const node_reduce_rounds_t *r, int batch, size_t *done,
                             const bufpool_node_exchange_t *x, bool busy, node_batch_t *b)
{
    int rc = OMPI_SUCCESS, rc2;
    b->q0 = n->big_seq + 1;
    for (b->nb = 0; b->nb < batch && *done < a->count; b->nb++, *done += r->per) {
        const uint64_t q = ++n->big_seq;
        b->count[b->nb] = a->count - *done < r->per ? a->count - *done : r->per;
        b->round[b->nb] = (char *)a->rbuf + (ptrdiff_t)*done * r->extent;
        bufpool_node_big_claim(n, q);
        rc2 = bufpool_view_pack(&r->src, *done * r->type_size, b->count[b->nb] * r->type_size,
                                node_big_payload(n, n->me, q));
        rc = OMPI_SUCCESS != rc ? rc : rc2;
        if (OMPI_SUCCESS != rc2) {
            __atomic_store_n(node_big_word(n, n->me, q) + NODE_WORD_FAILED, q, __ATOMIC_RELAXED);
        }
        __atomic_store_n(node_big_word(n, n->me, q) + NODE_WORD_CHUNK, q, __ATOMIC_RELEASE);
        busy = busy && !x->test(x->ctx);
    }
    for (int i = 0; i < b->nb; i++) {
        const uint64_t q = b->q0 + (uint64_t)i;
        for (int j = 0; j < n->p; j++) {
            bufpool_wait_word(node_big_word(n, j, q) + NODE_WORD_CHUNK, q);
        }
        rc2 = bufpool_node_rsag_round(n, &bufpool_node_big_slots, q, b->round[i], b->count[i],
                                      a->dtype, a->op, NULL, false);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
        b->mine[i] = bufpool_node_slice(b->count[i], n->p, n->me, &b->first[i]);
        b->slice[i] = b->round[i] + (ptrdiff_t)b->first[i] * r->extent;
        bufpool_view_t v;
        bufpool_view_init(&v, b->slice[i], b->mine[i], a->dtype);
        b->in_slot[i] = NULL != v.contig;
        if (b->in_slot[i]) {
            b->slice[i] = node_big_payload(n, n->me, q) + b->first[i] * r->type_size -
                          (v.contig - b->slice[i]);
        }
        busy = busy && !x->test(x->ctx);
    }
    return rc;
}

/* Once a batch's exchange is over (rc: whether anything failed here): its
 * slices exchanged in rbuf go to the slot, each is said exchanged, every
 * rank's is copied out of its owner's slot into rbuf (this rank's own too
 * where it was exchanged in the slot), and only then are the rounds
 * posted. */
static int node_batch_finish(bufpool_node_t *n, const bufpool_args_t *a,
                             const node_reduce_rounds_t *r, const node_batch_t *b, int rc)
{
    for (int i = 0; i < b->nb; i++) {
        const uint64_t q = b->q0 + (uint64_t)i;
        if (!b->in_slot[i] && OMPI_SUCCESS == rc) {
            bufpool_view_t v;
            bufpool_view_init(&v, b->slice[i], b->mine[i], a->dtype);
            rc = bufpool_view_pack(&v, 0, v.bytes,
                                   node_big_payload(n, n->me, q) + b->first[i] * r->type_size);
        }
        if (OMPI_SUCCESS != rc) {
            __atomic_store_n(node_big_word(n, n->me, q) + NODE_WORD_FAILED, q, __ATOMIC_RELAXED);
        }
        __atomic_store_n(node_big_word(n, n->me, q) + NODE_WORD_EXCHANGED, q, __ATOMIC_RELEASE);
    }
    for (int i = 0; i < b->nb; i++) {
        const int rc2 =
            bufpool_node_copy_slices(n, &bufpool_node_big_slots, b->q0 + (uint64_t)i, b->round[i],
                                     b->count[i], a->dtype, NODE_WORD_EXCHANGED, b->in_slot[i]);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    for (int i = 0; i < b->nb; i++) {
        const uint64_t q = b->q0 + (uint64_t)i;
        __atomic_store_n(node_big_word(n, n->me, q) + NODE_WORD_POSTED, q, __ATOMIC_RELEASE);
    }
    return rc;
}

/* allreduce hier_node on hosts of one size (x: the exchange of slices with
 * the ranks of this rank's index on the other hosts): bufpool_node_rounds'
 * rounds in batches of bufpool_node_exchange_batch, so that the exchange
 * has a batch of slices in flight at once, and while one batch's exchange
 * runs this rank packs and reduces the next (node_batch_reduce, giving
 * the exchange a turn after each round, so that its transfers move and
 * its later steps start): the network and the host's shared memory work
 * at once, as HAN pipelines its phases.  A batch is exchanged straight in
 * this rank's slot where the packed bytes are the layout itself (the
 * transport sends from and receives into the shared segment, which stays
 * mapped from call to call: registered once where the transport caches
 * registrations), else in rbuf; then node_batch_finish copies every slice
 * out and only then posts the batch's rounds: posted keeps its meaning
 * (done reading every round before), so bufpool_node_big_claim serves as it is.
 * Batches of depth - 1 rounds (bufpool_node_exchange_batch), in a ring of
 * two batches and a slot (2 x batch + 1 chunks per rank, where the other
 * chunk rounds have depth): a rank writes a slot again once every rank has
 * posted the round ring - 1 before it, so packing the next batch waits
 * only for the posts of the batch before the one in flight (which every
 * rank made before starting that exchange: no cycle), never for the batch
 * in flight.  The exchange runs whatever failed here, so that the peers on
 * the other hosts never wait for it; a failure is said in the failed word,
 * and every rank of the host that copies the slice returns the error. */
static int node_exchanged_rounds(bufpool_node_t *n, uint64_t s, const bufpool_args_t *a,
                                 const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                                 const bufpool_node_exchange_t *x)
{
    const int batch = bufpool_node_exchange_batch(plan);
    bufpool_plan_t ringed = *plan;
    ringed.depth = 2 * batch + 1;
    node_reduce_rounds_t r;
    int rc = node_reduce_rounds_begin(n, s, a, &ringed, comm, true, &r);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    node_batch_t b[2];
    size_t done = 0;
    int cur = 0, rc2;
    rc = node_batch_reduce(n, a, &r, batch, &done, x, false, &b[cur]);
    if (b[cur].nb > 0) {
        /* A call of one batch has nothing to overlap its exchange with. */
        rc2 = x->start(b[cur].nb, b[cur].slice, b[cur].mine, a->dtype, done >= a->count, x->ctx);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
    }
    while (b[cur].nb > 0) {
        node_batch_t *next = &b[cur ^ 1];
        rc2 = node_batch_reduce(n, a, &r, batch, &done, x, true, next);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
        rc2 = x->wait(x->ctx);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
        rc = node_batch_finish(n, a, &r, &b[cur], rc);
        if (next->nb > 0) {
            rc2 = x->start(next->nb, next->slice, next->mine, a->dtype, false, x->ctx);
            rc = OMPI_SUCCESS != rc ? rc : rc2;
        }
        cur ^= 1;
    }
    node_end(n, s);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* allreduce hier_node's phases on this rank's host. */

uint64_t bufpool_node_host_reserve(bufpool_node_home_t *home)
{
    const uint64_t s = home->seq + 1;
    home->seq += 2;
    return s;
}

int bufpool_node_host_reduce(const bufpool_args_t *a, const bufpool_plan_t *plan,
                             const bufpool_group_t *host, uint64_t s,
                             struct ompi_communicator_t *comm, bufpool_comm_state_t *state,
                             bufpool_node_home_t *home)
{
    bufpool_node_t *n = NULL;
    int rc = bufpool_node_begin_at(home, host, state, comm, s, &n);
    if (OMPI_SUCCESS == rc) {
        /* reduce to member 0; the others' input in place is their rbuf. */
        bufpool_args_t r = *a;
        r.root = 0;
        if (0 != host->me && MPI_IN_PLACE == a->sbuf) {
            r.sbuf = a->rbuf;
        }
        rc = bufpool_node_rounds(n, s, &r, plan, comm, 0);
    }
    if (BUFPOOL_NODE_UNAVAILABLE == rc && NULL != n) {
        /* The bcast's number goes unused: ended, for the calls behind it. */
        node_end(n, s + 1);
    }
    node_count(BUFPOOL_NODE_UNAVAILABLE == rc ? &bufpool_node_counters.fallbacks
                                              : &bufpool_node_counters.calls,
               1);
    return rc;
}

int bufpool_node_host_allreduce(const bufpool_args_t *a, const bufpool_plan_t *plan,
                                const bufpool_group_t *host, uint64_t s,
                                const bufpool_node_exchange_t *x, struct ompi_communicator_t *comm,
                                bufpool_comm_state_t *state, bufpool_node_home_t *home)
{
    bufpool_node_t *n = NULL;
    int rc = bufpool_node_begin_at(home, host, state, comm, s, &n);
    if (OMPI_SUCCESS == rc) {
        n->big_exchanged = true;
        rc = node_exchanged_rounds(n, s, a, plan, comm, x);
        /* One number was enough: the second, reserved alike, ends too. */
        node_end(n, s + 1);
    }
    node_count(BUFPOOL_NODE_UNAVAILABLE == rc ? &bufpool_node_counters.fallbacks
                                              : &bufpool_node_counters.calls,
               1);
    return rc;
}
