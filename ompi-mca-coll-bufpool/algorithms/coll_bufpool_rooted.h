/*
 * The binomial trees of gather and scatter (coll_bufpool_gather.c,
 * coll_bufpool_scatter.c, run by coll_bufpool_gather_scatter.c): the
 * geometry of the units a subtree streams, and the slots that hold a unit
 * with its requests.  See coll_bufpool_gather_scatter.c's header.
 */
#ifndef MCA_COLL_BUFPOOL_ROOTED_H
#define MCA_COLL_BUFPOOL_ROOTED_H

#include "coll_bufpool_pack.h"

#include <stdbool.h>
#include <stddef.h>

BEGIN_C_DECLS

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

static inline void tree_init(tree_t *t, int p, int root, int rank, size_t block,
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

static inline size_t group_of(const tree_t *t, int w)
{
    if (w < t->wrap) {
        return (size_t)w / t->group;
    }
    return t->wgroups + (size_t)(w - t->wrap) / t->group;
}

/* The subtree of v sends its own block whole (see the header). */
static inline bool whole_own(const tree_t *t, int v)
{
    return 0 == t->group && 0 != v && 0 == bufpool_bmtree_parent(v);
}

static inline size_t units_of(const tree_t *t, int v)
{
    int sz = bufpool_bmtree_size(v, t->p);
    if (0 != t->group) {
        return group_of(t, v + sz - 1) - group_of(t, v) + 1;
    }
    return (size_t)sz * t->nchunk - (whole_own(t, v) ? t->nchunk - 1 : 0);
}

static inline void unit_of(const tree_t *t, int v, size_t u, unit_t *out)
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
static inline size_t unit_part(const tree_t *t, const unit_t *x, int c, size_t *at)
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
static inline size_t unit_own(const tree_t *t, const unit_t *x, int v)
{
    return x->lo == v ? (0 != t->group ? t->block : x->len) : 0;
}

/* Children of v in increasing vrank order. */
static inline int tree_kids(const tree_t *t, int v, int kids[TREE_MAX_KIDS])
{
    return bufpool_bmtree_kids(v, t->p, kids);
}

/* Units a relay with nkids children keeps in flight (see the header). */
static inline int relay_depth(const tree_t *t, int nkids, size_t nunits)
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
static inline void root_unit_view(const tree_t *t, const root_buf_t *rb, const unit_t *x,
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

static inline void slot_reqs_init(slot_reqs_t *s, int depth)
{
    for (int i = 0; i < depth; i++) {
        s->n[i] = 0;
    }
}

static inline ompi_request_t **slot_reqs_next(slot_reqs_t *s, int slot)
{
    return &s->req[slot][s->n[slot]++];
}

static inline int slot_reqs_wait(slot_reqs_t *s, int slot)
{
    int rc = OMPI_SUCCESS;
    if (s->n[slot] > 0) {
        rc = bufpool_wait_all((size_t)s->n[slot], s->req[slot]);
        s->n[slot] = 0;
    }
    return rc;
}

static inline int slot_reqs_wait_every(slot_reqs_t *s, int depth, int rc)
{
    for (int i = 0; i < depth; i++) {
        int wait_rc = slot_reqs_wait(s, i);
        rc = OMPI_SUCCESS != rc ? rc : wait_rc;
    }
    return rc;
}

/* Where a unit of len bytes is received: straight into piece (direct),
 * else as packed bytes into the window's slot. */
static inline void unit_target(bool direct, const bufpool_piece_t *piece, size_t len,
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
/* ---------------------------------------------------------------------- */
/* The two directions of the tree, at a relay (or leaf) and at the root. */

int bufpool_gather_up(const tree_t *t, const bufpool_view_t *mine,
                      struct ompi_communicator_t *comm);
int bufpool_gather_root(const tree_t *t, const bufpool_view_t *mine, const root_buf_t *rb,
                        bufpool_comm_state_t *state, struct ompi_communicator_t *comm);
int bufpool_scatter_down(const tree_t *t, const bufpool_view_t *mine,
                         struct ompi_communicator_t *comm);
int bufpool_scatter_root(const tree_t *t, const bufpool_view_t *mine, const root_buf_t *sb,
                         bufpool_comm_state_t *state, struct ompi_communicator_t *comm);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_ROOTED_H */
