/*
 * Scatter's binomial tree (coll_bufpool_rooted.h): the root streams each
 * subtree's units down, relays forward them.
 */
#include "coll_bufpool_rooted.h"

#include "ompi/mca/coll/base/coll_tags.h"

/* ---------------------------------------------------------------------- */
/* Scatter. */

typedef struct scatter_down {
    const tree_t *t;
    const bufpool_view_t *mine; /* my rbuf */
    int parent;
} scatter_down_t;

/* Unit u from the parent: straight into rbuf when it is only my block and
 * the layout allows, else into its slot. */
static void scatter_describe(void *arg, size_t u, bufpool_recv_unit_t *out)
{
    const scatter_down_t *d = arg;
    unit_t x;
    bufpool_piece_t piece;

    unit_of(d->t, d->t->v, u, &x);
    out->peer = d->parent;
    unit_target(unit_own(d->t, &x, d->t->v) == x.len &&
                    !bufpool_view_recv_piece(d->mine, x.first, x.len, NULL, &piece),
                &piece, x.len, out);
}

int bufpool_scatter_down(const tree_t *t, const bufpool_view_t *mine,
                         struct ompi_communicator_t *comm)
{
    const int tag = MCA_COLL_BASE_TAG_SCATTER;
    const int v = t->v;
    int kids[TREE_MAX_KIDS];
    const int nkids = tree_kids(t, v, kids);
    const size_t nunits = units_of(t, v);
    const int depth = relay_depth(t, nkids, nunits);
    const bool need_slots = nkids > 0 || !bufpool_view_all_direct(mine, t->seg);
    scatter_down_t d = {.t = t, .mine = mine, .parent = rank_of(t, bufpool_bmtree_parent(v))};
    bufpool_slots_t slots = {0};
    slot_reqs_t sends;
    bufpool_rwin_t win;
    int rc;

    rc = bufpool_slots_get(&slots, need_slots ? depth : 0, t->seg, 0);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    slot_reqs_init(&sends, depth);
    rc = bufpool_rwin_start(&win, comm, tag, &slots, (size_t)depth, nunits, scatter_describe, &d);
    if (OMPI_SUCCESS != rc) {
        bufpool_slots_put(&slots);
        return rc;
    }
    for (size_t u = 0; u < nunits; u++) {
        const int i = (int)(u % (size_t)depth);
        unit_t x;
        void *where;

        if (u > 0) {
            /* Unit u-1 has reached its children: its slot takes the unit
             * depth further on. */
            rc = slot_reqs_wait(&sends, (int)((u - 1) % (size_t)depth));
            if (OMPI_SUCCESS == rc) {
                rc = bufpool_rwin_release(&win, u - 1);
            }
            if (OMPI_SUCCESS != rc) {
                break;
            }
        }
        rc = bufpool_rwin_wait(&win, u, &where);
        if (OMPI_SUCCESS != rc) {
            break;
        }
        if (NULL == slots.mem || where != bufpool_slot(&slots, i)) {
            continue; /* landed in rbuf */
        }
        unit_of(t, v, u, &x);
        for (int k = 0; k < nkids && OMPI_SUCCESS == rc; k++) {
            size_t at, len = unit_part(t, &x, kids[k], &at);
            if (0 != len) {
                rc = bufpool_isend((char *)where + at, len, MPI_BYTE, rank_of(t, kids[k]), tag,
                                   comm, slot_reqs_next(&sends, i));
            }
        }
        size_t own = unit_own(t, &x, v);
        if (OMPI_SUCCESS == rc && 0 != own) {
            rc = bufpool_view_unpack(mine, x.first, own, where);
        }
        if (OMPI_SUCCESS != rc) {
            break;
        }
    }
    if (OMPI_SUCCESS != rc) {
        bufpool_rwin_abort(&win);
    }
    rc = slot_reqs_wait_every(&sends, depth, rc);
    bufpool_slots_put(&slots);
    return rc;
}

int bufpool_scatter_root(const tree_t *t, const bufpool_view_t *mine, const root_buf_t *sb,
                         bufpool_comm_state_t *state, struct ompi_communicator_t *comm)
{
    const int tag = MCA_COLL_BASE_TAG_SCATTER;
    int kids[TREE_MAX_KIDS];
    const int nkids = tree_kids(t, 0, kids);
    bufpool_view_t block;
    bufpool_view_sub(&block, &sb->all, 0, sb->per);
    const bool need_slots = !bufpool_view_all_direct(&block, t->seg);
    bufpool_slots_t slots = {0};
    bufpool_sring_t ring;
    bufpool_reqs_t reqs;
    int rc;

    /* Under a bound the ring of bounced units keeps at most half of it. */
    const int ring_n = (int)bufpool_window_bounded((size_t)t->depth, t->max_requests);
    rc = bufpool_slots_get(&slots, need_slots ? ring_n : 0, t->seg, 0);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    bufpool_sring_init(&ring, &slots);
    /* Each child consumes its units in order: waiting for the root's
     * oldest send is safe. */
    bufpool_reqs_init(&reqs, state, comm);
    bufpool_reqs_bound(&reqs,
                       bufpool_sends_bounded(need_slots ? (size_t)ring_n : 0, t->max_requests));
    /* Largest subtree first: it has the most levels still to go. */
    for (int k = nkids - 1; k >= 0 && OMPI_SUCCESS == rc; k--) {
        const int c = kids[k];
        const size_t n = units_of(t, c);
        for (size_t u = 0; u < n && OMPI_SUCCESS == rc; u++) {
            unit_t x;
            bufpool_view_t view;
            bufpool_piece_t piece;
            size_t off;
            void *bounce;

            unit_of(t, c, u, &x);
            root_unit_view(t, sb, &x, &view, &off);
            if (bufpool_view_direct(&view, off, x.len, &piece)) {
                rc = bufpool_reqs_send(&reqs, piece.ptr, piece.count, piece.dtype, rank_of(t, c),
                                       tag);
                continue;
            }
            rc = bufpool_sring_acquire(&ring, &bounce);
            if (OMPI_SUCCESS == rc) {
                rc = bufpool_view_pack(&view, off, x.len, bounce);
            }
            if (OMPI_SUCCESS == rc) {
                rc = bufpool_sring_send(&ring, x.len, MPI_BYTE, rank_of(t, c), tag, comm);
            }
        }
    }
    int ring_rc = bufpool_sring_drain(&ring);
    bufpool_slots_put(&slots);
    /* As in gather_root: the own block once the slots are back. */
    if (OMPI_SUCCESS == rc && NULL != mine) {
        bufpool_view_t src;
        bufpool_view_sub(&src, &sb->all, (size_t)t->root * sb->per, sb->per);
        rc = bufpool_view_copy(mine, &src, t->seg);
    }
    int wait_rc = bufpool_reqs_wait(&reqs);
    return OMPI_SUCCESS != rc ? rc : (OMPI_SUCCESS != ring_rc ? ring_rc : wait_rc);
}
