/*
 * Node-level collectives, bcast and allgather above BUFPOOL_NODE_MAX_BYTES
 * (see coll_bufpool_node.c's opening comment): rounds through the chunk
 * segment (coll_bufpool_node_ring.c), node_cma's single-copy reads (CMA),
 * and allreduce hier_node's host bcast, which is such rounds.
 */
#include "coll_bufpool_node_segment.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

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
    int rc = bufpool_node_big_begin(n, s, plan, 4096, comm);
    if (OMPI_SUCCESS != rc) {
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
            bufpool_node_big_claim(n, q);
            rc2 = bufpool_view_pack(from, off, len, node_big_payload(n, n->me, q));
            rc2 = OMPI_SUCCESS != root_error ? root_error : rc2;
        }
        bufpool_node_big_post(n, q, rc2);
        rc = OMPI_SUCCESS != rc ? rc : rc2;
        if (bcast) {
            if (NULL == from) {
                bufpool_wait_word(node_big_word(n, a->root, q), q);
                rc2 = bufpool_node_big_read(n, a->root, q, &m->mine, off, len);
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
            rc2 = bufpool_node_big_read(n, j, q, &v, off, len);
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
            node_say_no_single_copy(n->terms.params, n->cma_error, comm);
        }
    }
    return node_move_rounds(n, s, id, a, &m, plan, comm, OMPI_SUCCESS);
}

/* ---------------------------------------------------------------------- */
/* allreduce hier_node's host bcast (its other phases:
 * coll_bufpool_node_rounds.c). */

int bufpool_node_host_bcast(void *buf, size_t elems, struct ompi_datatype_t *dtype,
                            const bufpool_plan_t *plan, const bufpool_group_t *host, uint64_t s,
                            int root_error, struct ompi_communicator_t *comm,
                            bufpool_comm_state_t *state, bufpool_node_home_t *home)
{
    bufpool_node_t *n = NULL;
    int rc = bufpool_node_begin_at(home, host, state, comm, s, &n);
    if (OMPI_SUCCESS == rc) {
        const bufpool_args_t b = {.rbuf = buf, .count = elems, .dtype = dtype, .root = 0};
        node_move_t m;
        node_move_views(n, true, &b, &m);
        rc = node_move_rounds(n, s, BUFPOOL_COLL_bcast, &b, &m, plan, comm, root_error);
    }
    return rc;
}
