/*
 * Pipeline geometry (see coll_bufpool_geometry.h): arithmetic only, no
 * Open MPI, unit tested by test/unit/test_coll_geometry.c.
 */
#include "coll_bufpool_geometry.h"

#include <stdint.h>

void bufpool_segs_cut(bufpool_segs_t *segs, size_t count, size_t type_size, ptrdiff_t extent,
                      ptrdiff_t true_lb, ptrdiff_t true_extent, size_t seg_bytes)
{
    segs->count = count;
    segs->extent = extent;
    segs->gap = true_lb;
    if (0 == count) {
        segs->seg_count = 0;
        segs->nseg = 0;
        segs->seg_span = 0;
        return;
    }
    /* n elements carry n x type_size signature bytes; a type of no bytes
     * is one segment. */
    size_t per = 0 == type_size ? count : seg_bytes / type_size;
    if (per < 1) {
        per = 1;
    }
    if (per > count) {
        per = count;
    }
    /* PML counts are ints. */
    if (per > (size_t)INT32_MAX) {
        per = (size_t)INT32_MAX;
    }
    segs->seg_count = per;
    segs->nseg = (count + per - 1) / per;
    segs->seg_span = (size_t)true_extent + (per - 1) * (size_t)extent;
}

int bufpool_depth_for(int depth, size_t nseg)
{
    if (nseg < (size_t)depth) {
        depth = nseg > 0 ? (int)nseg : 1;
    }
    return depth;
}

int bufpool_direct_depth_for(size_t nunits)
{
    return nunits < BUFPOOL_MAX_DEPTH ? (int)nunits : BUFPOOL_MAX_DEPTH;
}

size_t bufpool_segment_bytes_for(size_t seg, int depth, int need_slots)
{
    if (need_slots <= depth) {
        return seg;
    }
    size_t shrunk = seg * (size_t)depth / (size_t)need_slots;
    return shrunk > 0 ? shrunk : 1;
}

size_t bufpool_blocks_len(const bufpool_blocks_t *blocks, int b)
{
    if (NULL != blocks->counts) {
        return (size_t)blocks->counts[b];
    }
    size_t n = (size_t)blocks->n;
    return blocks->total / n + ((size_t)b < blocks->total % n ? 1 : 0);
}

size_t bufpool_blocks_disp(const bufpool_blocks_t *blocks, int b)
{
    if (NULL != blocks->counts) {
        size_t disp = 0;
        for (int i = 0; i < b; i++) {
            disp += (size_t)blocks->counts[i];
        }
        return disp;
    }
    size_t n = (size_t)blocks->n, base = blocks->total / n, rem = blocks->total % n;
    return (size_t)b * base + ((size_t)b < rem ? (size_t)b : rem);
}

/* Cuts ranks lo .. hi - 1 into ceil(len / g) groups of near-equal sizes,
 * appended to bounds from bounds[k] on; returns the new k. */
static int groups_cut(int lo, int hi, int g, int *bounds, int k)
{
    const int len = hi - lo, pieces = (len + g - 1) / g;
    for (int i = 1; i <= pieces; i++) {
        bounds[++k] = lo + (int)((long)len * i / pieces);
    }
    return k;
}

int bufpool_node_groups(const long *domain, int p, int flat_max, int *bounds)
{
    bounds[0] = 0;
    if (p <= flat_max || p < 2) {
        bounds[1] = p;
        return 1;
    }
    int g = 1;
    while (g * g < p) {
        g++;
    }
    bool known = NULL != domain;
    for (int r = 0; known && r < p; r++) {
        known = domain[r] >= 0;
    }
    int k = 0;
    if (known) {
        for (int lo = 0, r = 1; r <= p; r++) {
            if (r == p || domain[r] != domain[lo]) {
                k = groups_cut(lo, r, g, bounds, k);
                lo = r;
            }
        }
        if (k <= 2 * g) {
            return k;
        }
    }
    return groups_cut(0, p, g, bounds, 0);
}
