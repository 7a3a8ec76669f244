/*
 * Node-level collectives, large messages (see coll_bufpool_node.c's
 * opening comment): rounds of the plan's chunk through a second segment,
 * the chunk segment, for allreduce node_rsag, reduce, bcast, allgather,
 * scan and exscan node above BUFPOOL_NODE_MAX_BYTES; bcast and allgather node_cma's
 * single-copy reads (CMA); allreduce hier_node's host phases.
 */
#include "coll_bufpool_node_segment.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* The chunks of large messages (allreduce node_rsag, reduce, bcast,
 * allgather, scan and exscan node above BUFPOOL_NODE_MAX_BYTES), a segment of their own made
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
    if (bufpool_node_first_say(&said, host)) {
        bufpool_params_show(params, "node-single-copy",
                            "coll_bufpool: on host %s (pid %d), single-copy reads (CMA) "
                            "failed: %s; bcast and allgather node_cma of communicator %s go "
                            "through shared memory",
                            host, (int)getpid(), strerror(err), comm->c_name);
    }
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
        bufpool_node_unshare(&n->big);
        n->big_state = 0;
    }
    if (0 == n->big_state) {
        const int my_error = n->me == n->fail_chunk_rank ? ENOSPC : 0; /* testing */
        int rc = bufpool_node_share(comm, &n->group, my_error, node_big_rank_stride(need),
                                    n->max_bytes, "chunk segment", n->params, false, &n->big);
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
        node_big_claim(n, q);
        int rc2 = bufpool_view_pack(&r.src, done * type_size, count * type_size,
                                    node_big_payload(n, n->me, q));
        rc = OMPI_SUCCESS != rc ? rc : rc2;
        node_big_post(n, q, rc2);
        for (int j = 0; j < n->p; j++) {
            bufpool_wait_word(node_big_word(n, j, q), q);
        }
        n->big_posted = q;
        rc2 = bufpool_node_rsag_round(
            n, &node_big_slots, q, result ? (char *)a->rbuf + (ptrdiff_t)done * extent : NULL,
            count, a->dtype, a->op, NULL != scratch ? scratch - gap : NULL, result);
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
 * round for a layout with gaps (NULL: none could be had, an error).  In
 * place the input is read before out is written. */
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
    if (NULL != c->in->contig) {
        /* Packed bytes are the layout: reduce straight from and into the
         * slots. */
        const ptrdiff_t shift = c->in->contig - c->in->buf;
        if (c->exclusive) {
            /* The prefix goes out as it is (the next rank's result), so
             * it is made from a copy of the input: an operation writes an
             * element's value bytes only (a long double's 10 of 16), and
             * the rest must be the input's, not what the slot held. */
            int rc = OMPI_SUCCESS;
            if (!c->last) {
                rc = bufpool_view_pack(c->in, off, len, mine);
                bufpool_reduce(c->op, prev - shift, mine - shift, count, c->dtype);
            }
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
        if (c->last) {
            return bufpool_view_unpack(c->out, off, len, prev);
        }
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
 * nobody reads its slot), which is the ring's rule (node_big_claim).  A
 * rank that cannot make its prefix posts an error with the round, and the
 * ranks after it return an error too.  BUFPOOL_NODE_UNAVAILABLE (after
 * ending the call) when the chunk segment could not be had, on every rank
 * alike. */
int bufpool_node_scan_rounds(bufpool_node_t *n, uint64_t s, bool exclusive, const bufpool_args_t *a,
                             const bufpool_plan_t *plan, struct ompi_communicator_t *comm)
{
    n->big_last = s;
    int rc = node_big_cut(n, s, plan, BUFPOOL_NODE_CHUNK, comm);
    if (OMPI_SUCCESS != rc) {
        node_end(n, s);
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
    if (NULL == in.contig && n->me > 0) {
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
            node_big_claim(n, q);
        }
        if (0 == n->me) {
            rc2 = bufpool_view_pack(&in, done * type_size, count * type_size, mine);
            if (OMPI_SUCCESS == rc2 && !exclusive && MPI_IN_PLACE != a->sbuf) {
                rc2 = bufpool_view_unpack(&out, done * type_size, count * type_size, mine);
            }
        } else {
            const int prev = n->me - 1;
            bufpool_wait_word(node_big_word(n, prev, q), q);
            rc2 =
                q == __atomic_load_n(node_big_word(n, prev, q) + NODE_WORD_FAILED, __ATOMIC_RELAXED)
                    ? OMPI_ERR_OUT_OF_RESOURCE
                    : node_scan_round(&c, done, count, node_big_payload(n, prev, q), mine);
        }
        node_big_post(n, q, rc2);
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
    const int batch = node_ring_depth(plan) - 1;
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
        node_big_claim(n, q);
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
        rc2 = bufpool_node_rsag_round(n, &node_big_slots, q, b->round[i], b->count[i], a->dtype,
                                      a->op, NULL, false);
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
            bufpool_node_copy_slices(n, &node_big_slots, b->q0 + (uint64_t)i, b->round[i],
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
 * (done reading every round before), so node_big_claim serves as it is.
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

/* What bcast and allgather move: this rank's message (bcast: rbuf) or its
 * block (allgather: sbuf, or its block of rbuf in place), and where rank
 * j's block goes (allgather: block 0's view moved j blocks). */
typedef struct bufpool_node_move {
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
    node_count(&bufpool_node_counters.single_copy, 1);
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

/* bcast and allgather above BUFPOOL_NODE_MAX_BYTES: node_cma's
 * single-copy reads where they serve, else rounds. */
int bufpool_node_move(bufpool_node_t *n, uint64_t s, bufpool_coll_id_t id, const bufpool_args_t *a,
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
    int rc = bufpool_node_begin_at(&state->host_node, host, state, comm, s, &n);
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
                                bufpool_comm_state_t *state)
{
    bufpool_node_t *n = NULL;
    int rc = bufpool_node_begin_at(&state->host_node, host, state, comm, s, &n);
    if (OMPI_SUCCESS == rc) {
        rc = node_exchanged_rounds(n, s, a, plan, comm, x);
        /* One number was enough: the second, reserved alike, ends too. */
        node_end(n, s + 1);
    }
    node_count(BUFPOOL_NODE_UNAVAILABLE == rc ? &bufpool_node_counters.fallbacks
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
    int rc = bufpool_node_begin_at(&state->host_node, host, state, comm, s, &n);
    if (OMPI_SUCCESS == rc) {
        const bufpool_args_t b = {.rbuf = buf, .count = elems, .dtype = dtype, .root = 0};
        node_move_t m;
        node_move_views(n, true, &b, &m);
        rc = node_move_rounds(n, s, BUFPOOL_COLL_bcast, &b, &m, plan, comm, root_error);
    }
    return rc;
}
