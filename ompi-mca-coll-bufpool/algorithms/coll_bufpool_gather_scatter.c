/*
 * MPI_Gather and MPI_Scatter.
 *
 * linear: the root posts one receive (gather) or send (scatter) per rank
 *   at once, whole blocks with each side's own datatype.  No scratch.  On
 *   shared memory the root's copies are the whole cost and nothing beats
 *   doing them straight between the user buffers.
 *
 * binomial: a binomial tree over vranks (root 0).  The subtree of vrank v
 *   is [v, v + size), its blocks contiguous in vrank order, and its data
 *   flows as a stream of units toward (gather) or from (scatter) v's
 *   parent.  Open MPI's binomial tree mallocs the whole subtree's data on
 *   every relay (and the whole message on a root other than 0); here a
 *   relay streams it through pipeline_depth pooled slots of
 *   segment_size bytes, whatever the message size:
 *     gather   a relay assembles unit u in a slot (its own block packed
 *              from sbuf, its children's pieces received at their
 *              offsets) and sends it on; the slot takes unit u + depth
 *              once that send is done;
 *     scatter  a relay receives unit u into a slot, sends each child its
 *              piece from there and unpacks its own block; the slot takes
 *              unit u + depth once those sends are done.
 *   Units are cut on signature bytes by rules every rank derives from the
 *   block size alone, so any datatypes of matching signature work, and a
 *   relay only ever forwards packed bytes:
 *     block <= segment: whole blocks grouped segment / block at a time, at
 *              group boundaries fixed for the whole tree (and never across
 *              the vrank where ranks wrap past p - 1, so that a unit is
 *              contiguous in the root's buffer);
 *     block > segment: each block in segment-size pieces, except that the
 *              own block of a child of the root travels whole (its parent
 *              holds the user buffer, so nobody needs scratch for it).
 *   A unit contained in a child's subtree is exactly one unit of that
 *   child's stream, so relays forward without re-cutting.  Leaves and the
 *   root move data straight between user buffers and the wire when the
 *   layout allows, else through a slot.
 *
 * Requests in flight under coll_bufpool_max_requests (B > 0): a relay holds
 *   per unit in flight a receive per child with a part of it and a send
 *   (gather), or a receive and a send per such child (scatter), so it keeps
 *   at most max(1, B / (children + 1)) units in flight: within B, or one
 *   unit (children + 1 <= log2 p + 1 requests) when B is smaller than that.
 *   The root's bounced units (receive window, send ring) take at most half
 *   of B and its direct transfers (a bounded set) the rest.
 *
 * Order of blocking waits (binomial): every rank handles its units in
 * stream order.  A rank waits for (a) a child's piece of a unit the
 * child sends as soon as it has it, (b) its parent's unit, which the
 * parent forwards as soon as it has it, (c) the completion of its own
 * send of a unit depth positions back, which its parent (or child) has a
 * receive posted for once it is done with earlier units.  Every wait is
 * for a unit earlier in the global order than anything that waits on it,
 * and the root (scatter: the leaves) never waits on a send to a rank that
 * waits, so the earliest unfinished unit always progresses.  linear waits
 * only after everything is posted.
 */
#include "coll_bufpool_pack.h"
#include "coll_bufpool_run.h"

#include "ompi/mca/coll/base/coll_tags.h"

#define TREE_MAX_KIDS BUFPOOL_BMTREE_MAX_KIDS

/* ---------------------------------------------------------------------- */
/* The unit geometry. */

typedef struct tree {
    int p, root, v;
    size_t block;     /* bytes per rank                                  */
    size_t seg;       /* segment bytes (the plan's)                      */
    int depth;        /* pipeline depth (the plan's)                     */
    int max_requests; /* the plan's: the root's transfers in flight    */
    size_t group;     /* blocks per unit when block <= seg, else 0       */
    size_t nchunk;    /* pieces per block when block > seg               */
    int wrap;         /* first vrank whose rank is below the root's      */
    size_t wgroups;   /* groups before wrap                              */
} tree_t;

/* One unit of the stream of a subtree. */
typedef struct unit {
    int lo, hi;   /* vranks of the blocks it carries              */
    size_t first; /* byte offset in block lo (pieces of a block)  */
    size_t len;   /* bytes                                        */
} unit_t;

static void tree_init(tree_t *t, int p, int root, int rank, size_t block,
                      const bufpool_plan_t *plan)
{
    t->p = p;
    t->root = root;
    t->v = (rank - root + p) % p;
    t->block = block;
    t->seg = plan->seg_bytes;
    t->depth = plan->depth;
    t->max_requests = plan->max_requests;
    if (block <= t->seg) {
        t->group = t->seg / block;
        t->nchunk = 1;
    } else {
        t->group = 0;
        t->nchunk = (block + t->seg - 1) / t->seg;
    }
    t->wrap = 0 == root ? p : p - root;
    t->wgroups = 0 == t->group ? 0 : ((size_t)t->wrap + t->group - 1) / t->group;
}

static size_t group_of(const tree_t *t, int w)
{
    if (w < t->wrap) {
        return (size_t)w / t->group;
    }
    return t->wgroups + (size_t)(w - t->wrap) / t->group;
}

/* The subtree of v sends its own block whole (see the header). */
static bool whole_own(const tree_t *t, int v)
{
    return 0 == t->group && 0 != v && 0 == bufpool_bmtree_parent(v);
}

static size_t units_of(const tree_t *t, int v)
{
    int sz = bufpool_bmtree_size(v, t->p);
    if (0 != t->group) {
        return group_of(t, v + sz - 1) - group_of(t, v) + 1;
    }
    return (size_t)sz * t->nchunk - (whole_own(t, v) ? t->nchunk - 1 : 0);
}

static void unit_of(const tree_t *t, int v, size_t u, unit_t *out)
{
    int sz = bufpool_bmtree_size(v, t->p);
    if (0 != t->group) {
        size_t gid = group_of(t, v) + u;
        size_t lo, hi;
        if (gid < t->wgroups) {
            lo = gid * t->group;
            hi = lo + t->group < (size_t)t->wrap ? lo + t->group : (size_t)t->wrap;
        } else {
            lo = (size_t)t->wrap + (gid - t->wgroups) * t->group;
            hi = lo + t->group < (size_t)t->p ? lo + t->group : (size_t)t->p;
        }
        out->lo = (int)lo > v ? (int)lo : v;
        out->hi = (int)hi < v + sz ? (int)hi : v + sz;
        out->first = 0;
        out->len = (size_t)(out->hi - out->lo) * t->block;
        return;
    }
    if (whole_own(t, v)) {
        if (0 == u) {
            out->lo = v;
            out->hi = v + 1;
            out->first = 0;
            out->len = t->block;
            return;
        }
        u += t->nchunk - 1; /* as if the own block had nchunk units */
    }
    size_t k = u % t->nchunk;
    out->lo = v + (int)(u / t->nchunk);
    out->hi = out->lo + 1;
    out->first = k * t->seg;
    out->len = t->block - out->first < t->seg ? t->block - out->first : t->seg;
}

/* The part of unit x (of v's stream) that lies in the subtree of child c:
 * offset in x's bytes and length (0: none). */
static size_t unit_part(const tree_t *t, const unit_t *x, int c, size_t *at)
{
    int csz = bufpool_bmtree_size(c, t->p);
    int lo = x->lo > c ? x->lo : c, hi = x->hi < c + csz ? x->hi : c + csz;
    if (lo >= hi) {
        return 0;
    }
    *at = (size_t)(lo - x->lo) * t->block;
    return 0 != t->group ? (size_t)(hi - lo) * t->block : x->len;
}

/* Bytes of x that are v's own block (they come first). */
static size_t unit_own(const tree_t *t, const unit_t *x, int v)
{
    return x->lo == v ? (0 != t->group ? t->block : x->len) : 0;
}

/* Children of v in increasing vrank order. */
static int tree_kids(const tree_t *t, int v, int kids[TREE_MAX_KIDS])
{
    return bufpool_bmtree_kids(v, t->p, kids);
}

/* Units a relay with nkids children keeps in flight (see the header). */
static int relay_depth(const tree_t *t, int nkids, size_t nunits)
{
    int depth = bufpool_depth_for(t->depth, nunits);
    if (t->max_requests > 0) {
        int fit = t->max_requests / (nkids + 1);
        fit = fit < 1 ? 1 : fit;
        depth = depth < fit ? depth : fit;
    }
    return depth;
}

static inline int rank_of(const tree_t *t, int w)
{
    return bufpool_vrank_to_rank(w, t->root, t->p);
}

/* The root's buffer, blocks in rank order, as views. */
typedef struct root_buf {
    bufpool_view_t all; /* every block */
    size_t per;         /* elements per block */
} root_buf_t;

/* The view of unit x in the root's buffer and x's offset in it.  Units
 * never span the wrap, so their blocks are consecutive ranks. */
static void root_unit_view(const tree_t *t, const root_buf_t *rb, const unit_t *x,
                           bufpool_view_t *view, size_t *off)
{
    bufpool_view_sub(view, &rb->all, (size_t)rank_of(t, x->lo) * rb->per,
                     (size_t)(x->hi - x->lo) * rb->per);
    *off = x->first;
}

/* ---------------------------------------------------------------------- */
/* Slots with the requests of the unit they hold. */

typedef struct slot_reqs {
    ompi_request_t *req[BUFPOOL_MAX_DEPTH][TREE_MAX_KIDS + 1];
    int n[BUFPOOL_MAX_DEPTH];
} slot_reqs_t;

static void slot_reqs_init(slot_reqs_t *s, int depth)
{
    for (int i = 0; i < depth; i++) {
        s->n[i] = 0;
    }
}

static ompi_request_t **slot_reqs_next(slot_reqs_t *s, int slot)
{
    return &s->req[slot][s->n[slot]++];
}

static int slot_reqs_wait(slot_reqs_t *s, int slot)
{
    int rc = OMPI_SUCCESS;
    if (s->n[slot] > 0) {
        rc = bufpool_wait_all((size_t)s->n[slot], s->req[slot]);
        s->n[slot] = 0;
    }
    return rc;
}

static int slot_reqs_wait_every(slot_reqs_t *s, int depth, int rc)
{
    for (int i = 0; i < depth; i++) {
        int wait_rc = slot_reqs_wait(s, i);
        rc = OMPI_SUCCESS != rc ? rc : wait_rc;
    }
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Gather. */

/* Non-root: assemble my subtree's units and send them to my parent. */
static int gather_up(const tree_t *t, const bufpool_view_t *mine, struct ompi_communicator_t *comm)
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

/* Where a unit of len bytes is received: straight into piece (direct),
 * else as packed bytes into the window's slot. */
static void unit_target(bool direct, const bufpool_piece_t *piece, size_t len,
                        bufpool_recv_unit_t *out)
{
    if (direct) {
        out->buf = piece->ptr;
        out->count = piece->count;
        out->dtype = piece->dtype;
    } else {
        out->buf = NULL;
        out->count = len;
        out->dtype = MPI_BYTE;
    }
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
static int gather_root(const tree_t *t, const bufpool_view_t *mine, const root_buf_t *rb,
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

static int scatter_down(const tree_t *t, const bufpool_view_t *mine,
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

static int scatter_root(const tree_t *t, const bufpool_view_t *mine, const root_buf_t *sb,
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

/* ---------------------------------------------------------------------- */
/* Linear. */

/* The root's side: userbuf holds every rank's block (count x dtype);
 * mine (mine_count x mine_dtype) is the root's own other buffer, NULL in
 * place. */
static int linear_root(const void *userbuf, int count, struct ompi_datatype_t *dtype,
                       const void *mine, int mine_count, struct ompi_datatype_t *mine_dtype,
                       bool gather, int tag, int root, const bufpool_plan_t *plan,
                       bufpool_comm_state_t *state, struct ompi_communicator_t *comm)
{
    const int p = ompi_comm_size(comm);
    ptrdiff_t lb, extent;
    bufpool_reqs_t reqs;
    int rc = OMPI_SUCCESS;

    size_t type_size;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_type_size(dtype, &type_size);
    const ptrdiff_t stride = extent * (ptrdiff_t)count;
    const size_t bytes = type_size * (size_t)count;
    const size_t seg_bytes = plan->seg_bytes;
    /* The other ranks wait only for the root: waiting for its oldest
     * transfer is safe. */
    bufpool_reqs_init(&reqs, state, comm);
    bufpool_reqs_bound(&reqs, plan->max_requests);
    for (int k = 1; k < p && OMPI_SUCCESS == rc; k++) {
        int peer = (root + k) % p;
        char *at = (char *)userbuf + peer * stride;
        rc = gather
                 ? bufpool_reqs_recv(&reqs, at, (size_t)count, dtype, peer, tag)
                 : bufpool_reqs_send_small_now(&reqs, at, (size_t)count, dtype, bytes, peer, tag);
    }
    if (OMPI_SUCCESS == rc && NULL != mine) {
        char *own = (char *)userbuf + root * stride;
        rc = gather ? bufpool_local_copy(own, (size_t)count, dtype, mine, (size_t)mine_count,
                                         mine_dtype, seg_bytes)
                    : bufpool_local_copy((void *)mine, (size_t)mine_count, mine_dtype, own,
                                         (size_t)count, dtype, seg_bytes);
    }
    return bufpool_reqs_finish(&reqs, rc);
}

/* ---------------------------------------------------------------------- */

/* Gather and scatter mirror each other: the root's buffer of every block
 * ("all": gather's receive, scatter's send arguments) and each rank's own
 * block ("mine": the other side). */
typedef struct rooted_args {
    const void *all;
    int all_count;
    struct ompi_datatype_t *all_dtype;
    void *mine; /* MPI_IN_PLACE at the root: none */
    int mine_count;
    struct ompi_datatype_t *mine_dtype;
} rooted_args_t;

static rooted_args_t rooted_args(bool gather, const bufpool_args_t *a)
{
    return gather ? (rooted_args_t){a->rbuf,         a->rcount, a->rdtype,
                                    (void *)a->sbuf, a->scount, a->sdtype}
                  : (rooted_args_t){a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype};
}

bufpool_call_t bufpool_rooted_call(bool gather, const bufpool_args_t *a,
                                   struct ompi_communicator_t *comm)
{
    const rooted_args_t r = rooted_args(gather, a);
    /* Only the root's arguments for all are significant. */
    const bool is_root = ompi_comm_rank(comm) == a->root;
    return bufpool_block_call(is_root ? r.all_count : r.mine_count,
                              is_root ? r.all_dtype : r.mine_dtype, false, comm);
}

int bufpool_run_rooted(bool gather, const bufpool_args_t *args, const bufpool_call_t *call,
                       const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                       bufpool_comm_state_t *state)
{
    const rooted_args_t r = rooted_args(gather, args), *a = &r;
    const size_t bytes = call->bytes;
    const int root = args->root;
    const int tag = gather ? MCA_COLL_BASE_TAG_GATHER : MCA_COLL_BASE_TAG_SCATTER;
    const int rank = ompi_comm_rank(comm), p = ompi_comm_size(comm);
    const bool is_root = rank == root;
    const bool have_mine = !(is_root && MPI_IN_PLACE == a->mine);

    if ((gather ? BUFPOOL_GATHER_LINEAR : BUFPOOL_SCATTER_LINEAR) == plan->alg) {
        if (is_root) {
            return linear_root(a->all, a->all_count, a->all_dtype, have_mine ? a->mine : NULL,
                               a->mine_count, a->mine_dtype, gather, tag, root, plan, state, comm);
        }
        return gather ? bufpool_send(a->mine, a->mine_count, a->mine_dtype, root, tag, comm)
                      : bufpool_recv(a->mine, a->mine_count, a->mine_dtype, root, tag, comm);
    }
    bufpool_view_t mine;
    if (have_mine) {
        bufpool_view_init(&mine, a->mine, (size_t)a->mine_count, a->mine_dtype);
    }
    tree_t t;
    tree_init(&t, p, root, rank, bytes, plan);
    if (!is_root) {
        return gather ? gather_up(&t, &mine, comm) : scatter_down(&t, &mine, comm);
    }
    root_buf_t rb = {.per = (size_t)a->all_count};
    bufpool_view_init(&rb.all, a->all, (size_t)a->all_count * (size_t)p, a->all_dtype);
    return gather ? gather_root(&t, have_mine ? &mine : NULL, &rb, state, comm)
                  : scatter_root(&t, have_mine ? &mine : NULL, &rb, state, comm);
}
