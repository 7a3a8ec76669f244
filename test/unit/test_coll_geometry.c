/*
 * The pipeline geometry of coll/bufpool (coll_bufpool_geometry.c) without
 * MPI: segments of a message for contiguous, resized and oversized
 * datatypes, depths, segment shrinking, per-rank blocks and the binomial
 * tree.  Besides fixed cases, properties over many shapes: segments cover
 * the message exactly, a contiguous type's fit the bound, every layout of
 * the same signature is cut alike (ranks may describe their elements
 * differently), blocks tile the vector, and every subtree is tiled by its
 * children's; the node algorithms' groups: fixed placements, and over
 * every size and many placements, groups that tile the ranks in order,
 * none larger than ceil(sqrt(p)), none across a change of domain where
 * the domains are used, and at most 2 ceil(sqrt(p)) of them.
 */
#include "coll_bufpool_geometry.h"

#include "unit.h"

#define K ((size_t)1 << 10)

static void test_segs_fixed(void)
{
    bufpool_segs_t s;

    /* 100000 ints in 128 KiB segments: 32768 per segment, 4 segments. */
    bufpool_segs_cut(&s, 100000, 4, 4, 0, 4, 128 * K);
    UNIT_CHECK_EQ_U64(s.seg_count, 32768);
    UNIT_CHECK_EQ_U64(s.nseg, 4);
    UNIT_CHECK_EQ_U64(s.seg_span, 128 * K);
    UNIT_CHECK_EQ_U64(bufpool_segs_count(&s, 0), 32768);
    UNIT_CHECK_EQ_U64(bufpool_segs_count(&s, 3), 100000 - 3 * 32768);
    UNIT_CHECK_EQ_U64(bufpool_segs_offset(&s, 2), 2 * 32768 * 4);

    /* Resized: 4 bytes of data every 16, starting at 8: cut on the
     * signature (16 elements of 4 bytes per 64-byte segment), as a rank
     * with plain ints cuts the same message; the span follows the layout. */
    bufpool_segs_cut(&s, 40, 4, 16, 8, 4, 64);
    UNIT_CHECK_EQ_U64(s.seg_count, 16);
    UNIT_CHECK_EQ_U64(s.seg_span, 4 + 15 * 16);
    UNIT_CHECK_EQ_U64(s.gap, 8);
    UNIT_CHECK_EQ_U64(s.nseg, 3);

    /* One element larger than a segment: one element per segment. */
    bufpool_segs_cut(&s, 5, 1000, 1000, 0, 1000, 100);
    UNIT_CHECK_EQ_U64(s.seg_count, 1);
    UNIT_CHECK_EQ_U64(s.nseg, 5);
    UNIT_CHECK_EQ_U64(s.seg_span, 1000);

    /* Nothing to cut. */
    bufpool_segs_cut(&s, 0, 4, 4, 0, 4, 128 * K);
    UNIT_CHECK_EQ_U64(s.nseg, 0);
    UNIT_CHECK_EQ_U64(s.seg_span, 0);

    /* A message smaller than a segment is one segment. */
    bufpool_segs_cut(&s, 3, 8, 8, 0, 8, 128 * K);
    UNIT_CHECK_EQ_U64(s.nseg, 1);
    UNIT_CHECK_EQ_U64(s.seg_count, 3);
    UNIT_CHECK_EQ_U64(s.seg_span, 24);
}

static void test_segs_properties(void)
{
    static const size_t segs_bytes[] = {1, 7, 64, 4096, 128 * 1024};
    static const size_t sizes[] = {1, 4, 12, 16, 100};
    for (size_t a = 0; a < sizeof(segs_bytes) / sizeof(*segs_bytes); a++) {
        for (size_t e = 0; e < sizeof(sizes) / sizeof(*sizes); e++) {
            const size_t size = sizes[e];
            for (size_t count = 1; count < 3000; count = count * 3 + 1) {
                bufpool_segs_t plain;
                /* The contiguous layout: within the bound unless one
                 * element alone exceeds it, and as many per segment as
                 * fit. */
                bufpool_segs_cut(&plain, count, size, (ptrdiff_t)size, 0, (ptrdiff_t)size,
                                 segs_bytes[a]);
                UNIT_REQUIRE(plain.nseg >= 1 && plain.seg_count >= 1);
                UNIT_CHECK(plain.seg_span <= segs_bytes[a] || 1 == plain.seg_count);
                if (plain.seg_count < count) {
                    UNIT_CHECK((plain.seg_count + 1) * size > segs_bytes[a]);
                }
                /* Other layouts of the same elements (gaps, a shifted
                 * lower bound) cut the same segments, which cover the
                 * message exactly. */
                for (ptrdiff_t extent = (ptrdiff_t)size; extent <= 4 * (ptrdiff_t)size;
                     extent += (ptrdiff_t)size) {
                    bufpool_segs_t s;
                    size_t total = 0;
                    bufpool_segs_cut(&s, count, size, extent, 8, (ptrdiff_t)size, segs_bytes[a]);
                    UNIT_CHECK_EQ_U64(s.seg_count, plain.seg_count);
                    UNIT_CHECK_EQ_U64(s.nseg, plain.nseg);
                    UNIT_CHECK_EQ_U64(s.seg_span, size + (s.seg_count - 1) * (size_t)extent);
                    for (size_t j = 0; j < s.nseg; j++) {
                        size_t n = bufpool_segs_count(&s, j);
                        UNIT_CHECK(n >= 1 && n <= s.seg_count);
                        total += n;
                    }
                    UNIT_CHECK_EQ_U64(total, count);
                }
            }
        }
    }
}

static void test_depths(void)
{
    UNIT_CHECK_EQ_U64(bufpool_depth_for(4, 0), 1);
    UNIT_CHECK_EQ_U64(bufpool_depth_for(4, 2), 2);
    UNIT_CHECK_EQ_U64(bufpool_depth_for(4, 10), 4);
    UNIT_CHECK_EQ_U64(bufpool_direct_depth_for(3), 3);
    UNIT_CHECK_EQ_U64(bufpool_direct_depth_for(1000), BUFPOOL_MAX_DEPTH);
    UNIT_CHECK_EQ_U64(bufpool_segment_bytes_for(128 * K, 4, 2), 128 * K);
    UNIT_CHECK_EQ_U64(bufpool_segment_bytes_for(128 * K, 1, 2), 64 * K);
    UNIT_CHECK_EQ_U64(bufpool_segment_bytes_for(128 * K, 2, 3), 128 * K * 2 / 3);
    UNIT_CHECK_EQ_U64(bufpool_segment_bytes_for(1, 1, 2), 1);
    /* need_slots shrunk segments always fit depth x seg. */
    for (int depth = 1; depth <= 8; depth++) {
        for (int need = 1; need <= 10; need++) {
            size_t seg = bufpool_segment_bytes_for(4096, depth, need);
            UNIT_CHECK(seg * (size_t)need <= 4096 * (size_t)depth || need <= depth);
        }
    }
}

static void test_blocks(void)
{
    const bufpool_blocks_t even = {.n = 3, .counts = NULL, .total = 10};
    UNIT_CHECK_EQ_U64(bufpool_blocks_len(&even, 0), 4);
    UNIT_CHECK_EQ_U64(bufpool_blocks_len(&even, 1), 3);
    UNIT_CHECK_EQ_U64(bufpool_blocks_len(&even, 2), 3);
    UNIT_CHECK_EQ_U64(bufpool_blocks_disp(&even, 1), 4);
    UNIT_CHECK_EQ_U64(bufpool_blocks_disp(&even, 2), 7);

    static const int counts[] = {2, 0, 5, 1};
    const bufpool_blocks_t given = {.n = 4, .counts = counts, .total = 8};
    UNIT_CHECK_EQ_U64(bufpool_blocks_len(&given, 1), 0);
    UNIT_CHECK_EQ_U64(bufpool_blocks_disp(&given, 2), 2);
    UNIT_CHECK_EQ_U64(bufpool_blocks_disp(&given, 3), 7);

    /* Even splits tile the vector, lengths differ by at most one. */
    for (int n = 1; n <= 9; n++) {
        for (size_t total = 0; total < 40; total++) {
            const bufpool_blocks_t b = {.n = n, .counts = NULL, .total = total};
            size_t disp = 0;
            for (int i = 0; i < n; i++) {
                UNIT_CHECK_EQ_U64(bufpool_blocks_disp(&b, i), disp);
                size_t len = bufpool_blocks_len(&b, i);
                UNIT_CHECK(len == total / (size_t)n || len == total / (size_t)n + 1);
                disp += len;
            }
            UNIT_CHECK_EQ_U64(disp, total);
        }
    }
}

static void test_bmtree(void)
{
    UNIT_CHECK_EQ_U64(bufpool_bmtree_size(0, 6), 6);
    UNIT_CHECK_EQ_U64(bufpool_bmtree_size(4, 6), 2);
    UNIT_CHECK_EQ_U64(bufpool_bmtree_size(2, 6), 2);
    UNIT_CHECK_EQ_U64(bufpool_bmtree_size(5, 6), 1);
    /* Children in increasing vrank order, tiling the subtree. */
    int kids[BUFPOOL_BMTREE_MAX_KIDS];
    UNIT_CHECK_EQ_U64(bufpool_bmtree_kids(0, 6, kids), 3);
    UNIT_CHECK_EQ_U64(kids[0], 1);
    UNIT_CHECK_EQ_U64(kids[1], 2);
    UNIT_CHECK_EQ_U64(kids[2], 4);
    UNIT_CHECK_EQ_U64(bufpool_bmtree_kids(4, 6, kids), 1);
    UNIT_CHECK_EQ_U64(kids[0], 5);
    UNIT_CHECK_EQ_U64(bufpool_bmtree_kids(5, 6, kids), 0);
    UNIT_CHECK_EQ_U64(bufpool_bmtree_kids(0, 1, kids), 0);
    UNIT_CHECK_EQ_U64(bufpool_bmtree_parent(5), 4);
    UNIT_CHECK_EQ_U64(bufpool_bmtree_parent(6), 4);
    UNIT_CHECK_EQ_U64(bufpool_bmtree_parent(3), 2);
    UNIT_CHECK_EQ_U64(bufpool_vrank_to_rank(3, 4, 6), 1);

    /* Each subtree is v itself followed by its children's subtrees, in
     * order, and every child names v as its parent. */
    for (int p = 1; p <= 33; p++) {
        for (int v = 0; v < p; v++) {
            int next = v + 1;
            for (int m = 1; m < bufpool_bmtree_mask_end(v, p) && v + m < p; m <<= 1) {
                UNIT_CHECK_EQ_U64(v + m, next);
                UNIT_CHECK_EQ_U64(bufpool_bmtree_parent(v + m), v);
                next += bufpool_bmtree_size(v + m, p);
            }
            UNIT_CHECK_EQ_U64(next, v + bufpool_bmtree_size(v, p));
        }
    }
}

static int isqrt_up(int p)
{
    int g = 1;
    while (g * g < p) {
        g++;
    }
    return g;
}

static void test_node_groups(void)
{
    int b[300];
    /* Up to flat_max: one group, placement or not. */
    UNIT_CHECK_EQ_U64(bufpool_node_groups(NULL, 16, 16, b), 1);
    UNIT_CHECK_EQ_U64(b[0], 0);
    UNIT_CHECK_EQ_U64(b[1], 16);
    /* 20 unbound ranks: at most ceil(sqrt(20)) = 5 per group, so 4
     * groups of 5. */
    UNIT_CHECK_EQ_U64(bufpool_node_groups(NULL, 20, 16, b), 4);
    for (int k = 0; k <= 4; k++) {
        UNIT_CHECK_EQ_U64(b[k], 5 * k);
    }
    /* 5 ranks above flat_max 2: at most 3 per group, so 2 and 3. */
    UNIT_CHECK_EQ_U64(bufpool_node_groups(NULL, 5, 2, b), 2);
    UNIT_CHECK_EQ_U64(b[1], 2);
    UNIT_CHECK_EQ_U64(b[2], 5);
    /* 32 ranks on two L3 caches of 16 (g = 6): each cut in 3, never a
     * group across the boundary at 16. */
    long dom[256];
    for (int r = 0; r < 32; r++) {
        dom[r] = r < 16 ? 7 : 9;
    }
    UNIT_CHECK_EQ_U64(bufpool_node_groups(dom, 32, 16, b), 6);
    UNIT_CHECK_EQ_U64(b[3], 16);
    UNIT_CHECK_EQ_U64(b[1], 5);
    /* Placed round robin on two sockets: runs of one rank, too many
     * groups: the domains are left out (the plain cut of 32: 6 groups). */
    for (int r = 0; r < 32; r++) {
        dom[r] = r % 2;
    }
    UNIT_CHECK_EQ_U64(bufpool_node_groups(dom, 32, 16, b), 6);
    UNIT_CHECK_EQ_U64(b[1], 5);
    /* One rank not bound within one domain: the domains are left out. */
    for (int r = 0; r < 32; r++) {
        dom[r] = r < 8 ? 1 : 2;
    }
    dom[20] = -1;
    UNIT_CHECK_EQ_U64(bufpool_node_groups(dom, 32, 16, b), 6);
    UNIT_CHECK_EQ_U64(b[1], 5);
    dom[20] = 2;
    /* With it bound: 8 + 24 ranks, cut in 2 and 4. */
    UNIT_CHECK_EQ_U64(bufpool_node_groups(dom, 32, 16, b), 6);
    UNIT_CHECK_EQ_U64(b[2], 8);

    /* Properties over every size and placements of every run length. */
    for (int p = 2; p <= 256; p++) {
        const int g = isqrt_up(p);
        for (int run = 0; run <= 17; run++) {
            for (int r = 0; r < p; r++) {
                dom[r] = 0 == run ? -1 : r / run;
            }
            const int n = bufpool_node_groups(dom, p, 2, b);
            UNIT_CHECK(n >= 1 && n <= 2 * g);
            UNIT_CHECK_EQ_U64(b[0], 0);
            UNIT_CHECK_EQ_U64(b[n], p);
            const bool used =
                p > 2 && run > 0 && (p + run - 1) / run * ((run + g - 1) / g) <= 2 * g;
            for (int k = 0; k < n; k++) {
                UNIT_CHECK(b[k + 1] > b[k]);
                UNIT_CHECK(b[k + 1] - b[k] <= g);
                if (used) {
                    UNIT_CHECK_EQ_U64(dom[b[k]], dom[b[k + 1] - 1]);
                }
            }
        }
    }
}

int main(void)
{
    test_segs_fixed();
    test_segs_properties();
    test_depths();
    test_blocks();
    test_bmtree();
    test_node_groups();
    return unit_finish("test_coll_geometry");
}
