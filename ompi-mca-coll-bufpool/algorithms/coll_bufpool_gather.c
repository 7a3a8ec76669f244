/*
 * Gather's binomial tree (coll_bufpool_rooted.h): relays stream their
 * subtree's units up, the root receives them into place.
 */
#include "coll_bufpool_rooted.h"

#include "ompi/mca/coll/base/coll_tags.h"

/* ---------------------------------------------------------------------- */
/* Gather. */

/* Non-root: assemble my subtree's units and send them to my parent. */
int bufpool_gather_up(const tree_t *t, const bufpool_view_t *mine, struct ompi_communicator_t *comm)
{
    const int tag = MCA_COLL_BASE_TAG_GATHER;
    const int v = t->v, parent = rank_of(t, bufpool_bmtree_parent(v));
    int kids[TREE_MAX_KIDS];
    const int nkids = tree_kids(t, v, kids);
    const size_t nunits = units_of(t, v);
    const int depth = relay_depth(t, nkids, nunits);
    const bool need_slots = nkids > 0 || !bufpool_view_all_direct(mine, t->seg);
    bufpool_slots_t slots = {0};
    slot_reqs_t recvs;                       /* children's pieces of each slot's unit */
    ompi_request_t *sent[BUFPOOL_MAX_DEPTH]; /* each slot's unit on its way up */
    bufpool_piece_t out[BUFPOOL_MAX_DEPTH];
    int rc;

    rc = bufpool_slots_get(&slots, need_slots ? depth : 0, t->seg, 0);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    slot_reqs_init(&recvs, depth);
    for (int i = 0; i < depth; i++) {
        sent[i] = MPI_REQUEST_NULL;
    }

    /* Unit u is prepared (receives posted, own part packed) depth - 1
     * iterations before it is finished (pieces waited for, sent). */
    for (size_t u = 0; u < nunits + (size_t)depth - 1 && OMPI_SUCCESS == rc; u++) {
        if (u < nunits) {
            const int i = (int)(u % (size_t)depth);
            unit_t x;
            unit_of(t, v, u, &x);
            rc = bufpool_wait(&sent[i]); /* unit u - depth left */
            if (OMPI_SUCCESS != rc) {
                break;
            }
            size_t own = unit_own(t, &x, v);
            if (own == x.len && bufpool_view_direct(mine, x.first, x.len, &out[i])) {
                /* Straight from sbuf. */
            } else {
                char *slot = bufpool_slot(&slots, i);
                for (int k = 0; k < nkids && OMPI_SUCCESS == rc; k++) {
                    size_t at, len = unit_part(t, &x, kids[k], &at);
                    if (0 != len) {
                        rc = bufpool_irecv(slot + at, len, MPI_BYTE, rank_of(t, kids[k]), tag, comm,
                                           slot_reqs_next(&recvs, i));
                    }
                }
                if (OMPI_SUCCESS == rc && 0 != own) {
                    rc = bufpool_view_pack(mine, x.first, own, slot);
                }
                out[i].ptr = slot;
                out[i].count = x.len;
                out[i].dtype = MPI_BYTE;
            }
        }
        if (OMPI_SUCCESS == rc && u + 1 >= (size_t)depth) {
            const size_t done = u + 1 - (size_t)depth;
            const int i = (int)(done % (size_t)depth);
            rc = slot_reqs_wait(&recvs, i);
            if (OMPI_SUCCESS == rc) {
                rc = bufpool_isend(out[i].ptr, out[i].count, out[i].dtype, parent, tag, comm,
                                   &sent[i]);
            }
        }
    }
    rc = slot_reqs_wait_every(&recvs, depth, rc);
    for (int i = 0; i < depth; i++) {
        int wait_rc = bufpool_wait(&sent[i]);
        rc = OMPI_SUCCESS != rc ? rc : wait_rc;
    }
    bufpool_slots_put(&slots);
    return rc;
}

/* The root's units in receive order: every unit of child 0's stream, then
 * child 1's, ...  A cursor, because the receive window asks for units in
 * increasing order (and the consumer walks them again in the same order). */
typedef struct root_units {
    const tree_t *t;
    const root_buf_t *rb;
    const int *kids;
    int nkids;
    int k;       /* child of the current unit */
    size_t u, n; /* unit of that child's stream, and how many it has */
} root_units_t;

static void root_units_init(root_units_t *c, const tree_t *t, const root_buf_t *rb, const int *kids,
                            int nkids)
{
    *c = (root_units_t){.t = t, .rb = rb, .kids = kids, .nkids = nkids, .k = 0, .u = 0};
    c->n = nkids > 0 ? units_of(t, kids[0]) : 0;
}

/* The next unit: its place in the root's buffer; returns the child. */
static int root_units_next(root_units_t *c, unit_t *x, bufpool_view_t *view, size_t *off)
{
    while (c->u == c->n) {
        c->k++;
        c->u = 0;
        c->n = units_of(c->t, c->kids[c->k]);
    }
    const int child = c->kids[c->k];
    unit_of(c->t, child, c->u++, x);
    root_unit_view(c->t, c->rb, x, view, off);
    return child;
}

static size_t root_units_total(const tree_t *t, const int *kids, int nkids)
{
    size_t n = 0;
    for (int k = 0; k < nkids; k++) {
        n += units_of(t, kids[k]);
    }
    return n;
}

/* Receive window description: straight into the root's buffer when the
 * piece allows, else into the unit's slot. */
static void root_units_describe(void *arg, size_t unit, bufpool_recv_unit_t *out)
{
    root_units_t *c = arg;
    unit_t x;
    bufpool_view_t view;
    bufpool_piece_t piece;
    size_t off;
    (void)unit; /* asked in order */
    out->peer = rank_of(c->t, root_units_next(c, &x, &view, &off));
    unit_target(bufpool_view_direct(&view, off, x.len, &piece), &piece, x.len, out);
}

/* The root receives every unit of its children.  When every piece can go
 * straight into its buffer, all receives are posted at once (within
 * max_requests); otherwise through the pipeline's receive window of depth
 * slots, each bounced unit unpacked as it completes. */
int bufpool_gather_root(const tree_t *t, const bufpool_view_t *mine, const root_buf_t *rb,
                        bufpool_comm_state_t *state, struct ompi_communicator_t *comm)
{
    const int tag = MCA_COLL_BASE_TAG_GATHER;
    int kids[TREE_MAX_KIDS];
    const int nkids = tree_kids(t, 0, kids);
    bufpool_view_t block;
    bufpool_view_sub(&block, &rb->all, 0, rb->per);
    const bool need_slots = !bufpool_view_all_direct(&block, t->seg);
    const size_t nunits = root_units_total(t, kids, nkids);
    const int depth =
        (int)bufpool_window_bounded((size_t)bufpool_depth_for(t->depth, nunits), t->max_requests);
    bufpool_slots_t slots = {0};
    bufpool_reqs_t reqs;
    root_units_t post, seen;
    int rc;

    rc = bufpool_slots_get(&slots, need_slots ? depth : 0, t->seg, 0);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    root_units_init(&post, t, rb, kids, nkids);
    /* Each child sends its units in order, waiting only on its own
     * subtree and on sends older than the unit: waiting for the root's
     * oldest receive is safe. */
    bufpool_reqs_init(&reqs, state, comm);
    bufpool_reqs_bound(&reqs, t->max_requests);
    if (!need_slots) {
        for (size_t i = 0; i < nunits && OMPI_SUCCESS == rc; i++) {
            bufpool_recv_unit_t r;
            root_units_describe(&post, i, &r);
            rc = bufpool_reqs_recv(&reqs, r.buf, r.count, r.dtype, r.peer, tag);
        }
    } else {
        bufpool_rwin_t win;
        root_units_init(&seen, t, rb, kids, nkids);
        rc = bufpool_rwin_start(&win, comm, tag, &slots, (size_t)depth, nunits, root_units_describe,
                                &post);
        for (size_t i = 0; i < nunits && OMPI_SUCCESS == rc; i++) {
            unit_t x;
            bufpool_view_t view;
            size_t off;
            void *where;
            (void)root_units_next(&seen, &x, &view, &off);
            rc = bufpool_rwin_wait(&win, i, &where);
            if (OMPI_SUCCESS == rc && where == bufpool_slot(&slots, (int)(i % (size_t)depth))) {
                rc = bufpool_view_unpack(&view, off, x.len, where);
            }
            if (OMPI_SUCCESS == rc) {
                rc = bufpool_rwin_release(&win, i);
            }
            if (OMPI_SUCCESS != rc) {
                bufpool_rwin_abort(&win);
            }
        }
    }
    bufpool_slots_put(&slots);
    /* The own block last, while direct receives may still be landing: its
     * copy may need a segment of scratch of its own, and the slots are
     * back by now, so the call stays within depth segments. */
    if (OMPI_SUCCESS == rc && NULL != mine) {
        bufpool_view_t dst;
        bufpool_view_sub(&dst, &rb->all, (size_t)t->root * rb->per, rb->per);
        rc = bufpool_view_copy(&dst, mine, t->seg);
    }
    return bufpool_reqs_finish(&reqs, rc);
}
