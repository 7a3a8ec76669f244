/*
 * The collective cost model: see coll_bufpool_model.h for the method.  Every
 * function is pure; the link table travels as an argument.
 */
#include "coll_bufpool_model.h"
#include "coll_bufpool_model_cost.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct bufpool_model_links links_t;
typedef struct bufpool_model_topo topo_t;

static const char *const link_names[BUFPOOL_LINK_CLASSES] = {"shm", "tcp", "ib", "efa"};
static const char *const coll_names[BUFPOOL_MODEL_COLLS] = {
    "allreduce", "reduce", "bcast",   "allgather", "reduce_scatter",
    "alltoall",  "gather", "scatter", "scan"};

const char *bufpool_model_link_name(enum bufpool_link_class c)
{
    return c < BUFPOOL_LINK_CLASSES ? link_names[c] : "?";
}

const char *bufpool_model_coll_name(enum bufpool_model_coll coll)
{
    return coll < BUFPOOL_MODEL_COLLS ? coll_names[coll] : "?";
}

static struct bufpool_link make_link(double alpha_us, double bw_gbps, double red_gbps)
{
    struct bufpool_link l = {alpha_us * 1e-6, 1.0 / (bw_gbps * 1e9), 1.0 / (red_gbps * 1e9)};
    return l;
}

void bufpool_model_links_default(links_t *links)
{
    /* shm, tcp: fitted by bench/model_vs_measured.py --fit to the medians
     * of Open MPI's default (tuned, whose algorithms its fixed rules name)
     * in the quiet side-by-side runs of 2026-11-25 on this project's
     * 2-core machine: docs/results/2026-11-25-onehost-quiet (2 ranks, vader,
     * 4 B - 16 MiB) and docs/results/2026-11-25-multihost/2x1-quiet (2
     * hosts x 1 rank of the emulated cluster, TCP over veth and a bridge,
     * 4 B - 4 MiB); 264 points, log least squares, model / measured median
     * 0.99 on them.  One reduction rate for both (the same CPU sums).
     * docs/multihost.md, "Model against measurement", has the command and
     * the validation on 2 hosts x 2 ranks. */
    links->link[BUFPOOL_LINK_SHM] = make_link(0.654, 9.21, 5.8);
    links->link[BUFPOOL_LINK_TCP] = make_link(31.3, 0.945, 5.8);
    /* ib: InfiniBand HDR, 200 Gb/s per port (InfiniBand Trade Association
     * roadmap; NVIDIA ConnectX-6 data sheet), about 24 GB/s of payload;
     * about 1.1 us MPI half round trip (osu_latency examples in the QLogic
     * OFED host software guide, IB6054601-00, appendix B, show 1.06 us). */
    links->link[BUFPOOL_LINK_IB] = make_link(1.1, 24.0, 3.0);
    /* efa: AWS Elastic Fabric Adapter, 100 Gb/s per adapter (AWS EC2 user
     * guide, "Elastic Fabric Adapter"), about 12 GB/s of payload.  No
     * published latency was found in the references available here: 15 us
     * is an assumption; override it (coll_bufpool_model_links). */
    links->link[BUFPOOL_LINK_EFA] = make_link(15.0, 12.0, 3.0);
    links->inter = BUFPOOL_LINK_TCP;
}

static int class_of(const char *name, size_t len)
{
    for (int c = 0; c < BUFPOOL_LINK_CLASSES; c++) {
        if (strlen(link_names[c]) == len && 0 == strncmp(name, link_names[c], len)) {
            return c;
        }
    }
    return -1;
}

/* One "class:alpha_us,bw_GBps,red_GBps" or "inter=class" entry. */
static int parse_entry(links_t *links, const char *s, size_t len, char *err, size_t errlen)
{
    char buf[128];
    if (len >= sizeof(buf)) {
        snprintf(err, errlen, "entry '%.20s...' is too long", s);
        return -1;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (0 == strncmp(buf, "inter=", 6)) {
        int c = class_of(buf + 6, strlen(buf + 6));
        if (c < 0 || BUFPOOL_LINK_SHM == c) {
            snprintf(err, errlen, "inter=%s: expected tcp, ib or efa", buf + 6);
            return -1;
        }
        links->inter = c;
        return 0;
    }
    char *colon = strchr(buf, ':');
    int c = colon ? class_of(buf, (size_t)(colon - buf)) : -1;
    if (c < 0) {
        snprintf(err, errlen, "'%s': expected shm|tcp|ib|efa:alpha_us,bandwidth_GBps,reduce_GBps",
                 buf);
        return -1;
    }
    static const char *const field[3] = {"latency (us)", "bandwidth (GB/s)",
                                         "reduction rate (GB/s)"};
    double v[3] = {links->link[c].alpha * 1e6, 1e-9 / links->link[c].beta,
                   1e-9 / links->link[c].gamma};
    char *p = colon + 1;
    for (int f = 0; f < 3 && *p != '\0'; f++) {
        char *end = p;
        if (*p != ',') {
            v[f] = strtod(p, &end);
            /* A latency may be 0; a rate must be positive and finite. */
            if (end == p || !isfinite(v[f]) || v[f] < 0 || (f > 0 && v[f] <= 0)) {
                snprintf(err, errlen, "%s: bad %s '%s'", link_names[c], field[f], p);
                return -1;
            }
        }
        if (*end == ',') {
            end++;
        } else if (*end != '\0') {
            snprintf(err, errlen, "%s: bad %s '%s'", link_names[c], field[f], p);
            return -1;
        }
        p = end;
    }
    if (*p != '\0') {
        snprintf(err, errlen, "%s: more than 3 fields at '%s'", link_names[c], p);
        return -1;
    }
    links->link[c] = make_link(v[0], v[1], v[2]);
    return 0;
}

int bufpool_model_links_parse(links_t *links, const char *text, char *err, size_t errlen)
{
    links_t work = *links; /* all or nothing */
    const char *s = text;
    while (s && *s) {
        size_t len = strcspn(s, ";\n");
        const char *next = s[len] ? s + len + 1 : s + len;
        size_t keep = strcspn(s, "#");
        if (keep < len) {
            len = keep;
            /* The comment runs to the end of the line. */
            const char *nl = strchr(s, '\n');
            next = nl ? nl + 1 : s + strlen(s);
        }
        while (len > 0 && isspace((unsigned char)*s)) {
            s++;
            len--;
        }
        while (len > 0 && isspace((unsigned char)s[len - 1])) {
            len--;
        }
        if (len > 0 && parse_entry(&work, s, len, err, errlen) != 0) {
            return -1;
        }
        s = next;
    }
    *links = work;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Building blocks */

int bufpool_mc_ppn_of(const topo_t *t)
{
    if (t->ppn > 0) {
        return t->ppn < t->p ? t->ppn : t->p;
    }
    int h = t->hosts < 1 ? 1 : (t->hosts > t->p ? t->p : t->hosts);
    return (t->p + h - 1) / h;
}

double bufpool_mc_log2ceil(int p)
{
    int k = 0;
    while ((1 << k) < p) {
        k++;
    }
    return k;
}

int bufpool_mc_pow2_floor(int p)
{
    int q = 1;
    while (q * 2 <= p) {
        q *= 2;
    }
    return q;
}

/* Every rank exchanges bytes with a rank d away, both directions at once.
 * Shifts (ring, pairwise: r with r + d) cross a host boundary from the
 * ranks within d of it; pairings by bit (recursive doubling and halving,
 * binomial trees: r with r xor d) stay inside a host while d < ppn when ppn
 * is a power of two.  Inside a host: the shm link.  Across: min(d, ppn) of a
 * host's ranks cross at once and share its link. */
double bufpool_mc_step_cost(const links_t *l, const topo_t *t, int d, double bytes, int by_bit)
{
    int ppn = bufpool_mc_ppn_of(t);
    d = d % t->p;
    if (d < 0) {
        d += t->p;
    }
    if (d > t->p - d) {
        d = t->p - d;
    }
    int local =
        t->hosts <= 1 || d == 0 || ppn >= t->p || (by_bit && d < ppn && 0 == (ppn & (ppn - 1)));
    if (local) {
        const struct bufpool_link *s = &l->link[BUFPOOL_LINK_SHM];
        return s->alpha + bytes * s->beta;
    }
    const struct bufpool_link *n = &l->link[l->inter];
    int flows = d < ppn ? d : ppn;
    return n->alpha + bytes * n->beta * flows;
}

double bufpool_mc_xstep(const links_t *l, const topo_t *t, int d, double bytes)
{
    return bufpool_mc_step_cost(l, t, d, bytes, 0);
}

double bufpool_mc_bstep(const links_t *l, const topo_t *t, int d, double bytes)
{
    return bufpool_mc_step_cost(l, t, d, bytes, 1);
}

/* The reduction rate of the slower class in use. */
double bufpool_mc_gam(const links_t *l, const topo_t *t)
{
    double g = l->link[BUFPOOL_LINK_SHM].gamma;
    if (t->hosts > 1 && l->link[l->inter].gamma > g) {
        g = l->link[l->inter].gamma;
    }
    return g;
}

double bufpool_mc_segments(const topo_t *t, double bytes)
{
    double s = t->segment ? (double)t->segment : bytes;
    return bytes <= s ? 1 : ceil(bytes / s);
}

/* Binomial tree of ceil(log2 p) rounds, each moving bytes over distance 2^k;
 * the distances of the rounds are p/2, p/4, ... 1. */
double bufpool_mc_binomial(const links_t *l, const topo_t *t, double bytes, double gamma)
{
    double sum = 0;
    for (int k = (int)bufpool_mc_log2ceil(t->p) - 1; k >= 0; k--) {
        sum += bufpool_mc_bstep(l, t, 1 << k, bytes) + bytes * gamma;
    }
    return sum;
}

/* p - 1 steps of a ring, each moving bytes to the next rank. */
double bufpool_mc_ring(const links_t *l, const topo_t *t, double bytes, double gamma)
{
    return (t->p - 1) * (bufpool_mc_xstep(l, t, 1, bytes) + bytes * gamma);
}

/* Pairwise exchange: step k talks to the rank k away, k = 1 .. p-1. */
double bufpool_mc_pairwise(const links_t *l, const topo_t *t, double bytes, double gamma)
{
    double sum = 0;
    for (int k = 1; k < t->p; k++) {
        sum += bufpool_mc_xstep(l, t, k, bytes) + bytes * gamma;
    }
    return sum;
}

/* Recursive doubling over the largest power of two, plus a fold in and out
 * for the others. */
double bufpool_mc_rdoubling(const links_t *l, const topo_t *t, double bytes, double gamma)
{
    int q = bufpool_mc_pow2_floor(t->p);
    double sum = 0;
    for (int d = 1; d < q; d *= 2) {
        sum += bufpool_mc_bstep(l, t, d, bytes) + bytes * gamma;
    }
    if (q != t->p) {
        sum += 2 * bufpool_mc_xstep(l, t, q, bytes) + bytes * gamma;
    }
    return sum;
}

/* Recursive halving: distance q/2 with half the bytes, then q/4 ... */
double bufpool_mc_rhalving(const links_t *l, const topo_t *t, double bytes, double gamma)
{
    int q = bufpool_mc_pow2_floor(t->p);
    double sum = 0, b = bytes;
    for (int d = q / 2; d >= 1; d /= 2) {
        b /= 2;
        sum += bufpool_mc_bstep(l, t, d, b) + b * gamma;
    }
    if (q != t->p) {
        sum +=
            bufpool_mc_xstep(l, t, q, bytes) + bytes * gamma + bufpool_mc_xstep(l, t, q, bytes / q);
    }
    return sum;
}

/* A pipelined chain: p - 1 hops plus one per further segment. */
double bufpool_mc_chain(const links_t *l, const topo_t *t, double bytes, double gamma)
{
    double segs = bufpool_mc_segments(t, bytes), s = bytes / segs;
    return (t->p - 1 + segs - 1) * (bufpool_mc_xstep(l, t, 1, s) + s * gamma);
}

/* ------------------------------------------------------------------------ */
/* The algorithms.  bytes is the message of one rank (allreduce, reduce,
 * bcast), one rank's contribution (allgather), the whole input vector
 * (reduce_scatter), or what a rank sends to each peer (alltoall). */

#define T(name) static double name(const links_t *l, const topo_t *t, size_t n_)
#define N       ((double)n_)
T(ar_rd)
{
    return bufpool_mc_rdoubling(l, t, N, bufpool_mc_gam(l, t));
}
T(ar_rsag)
{
    return bufpool_mc_pairwise(l, t, N / t->p, bufpool_mc_gam(l, t)) +
           bufpool_mc_ring(l, t, N / t->p, 0);
}
/* bufpool's ring: the reduce-scatter runs in rounds of two segments per
 * block (half of the default depth 4), each round p - 1 neighbour steps;
 * then a ring allgather of whole blocks. */
static double bp_ring_rs(const links_t *l, const topo_t *t, double block, double gamma)
{
    double chunk = t->segment ? 2.0 * (double)t->segment : block;
    double rounds = block <= chunk ? 1 : ceil(block / chunk);
    return rounds * bufpool_mc_ring(l, t, block / rounds, gamma);
}
T(ar_bp_ring)
{
    return bp_ring_rs(l, t, N / t->p, bufpool_mc_gam(l, t)) + bufpool_mc_ring(l, t, N / t->p, 0);
}
/* bufpool's hier, in batches of three segments (the default depth 4 less
 * the window's slot): per batch the leader folds in the other ppn - 1
 * ranks' contributions over shared memory, then the leaders run recursive
 * doubling on it (one flow per host), one after the other; the ranks copy
 * the results while the leader goes on, so only the last batch's shows. */
T(ar_hier)
{
    const int ppn = bufpool_mc_ppn_of(t), h = (t->p + ppn - 1) / ppn;
    const topo_t leaders = {h, h, t->segment};
    const struct bufpool_link *m = &l->link[BUFPOOL_LINK_SHM];
    const double batch = t->segment ? 3.0 * (double)t->segment : N;
    const double batches = N <= batch ? 1 : ceil(N / batch), c = N / batches,
                 g = bufpool_mc_gam(l, t);
    const double local = (ppn - 1) * (m->alpha + c * (m->beta + g));
    const double inter = h > 1 ? bufpool_mc_rdoubling(l, &leaders, c, g) : 0;
    return batches * (local + inter) + (ppn - 1) * (m->alpha + c * m->beta);
}
T(re_chain)
{
    return bufpool_mc_chain(l, t, N, bufpool_mc_gam(l, t));
}
T(re_binary)
{
    double segs = bufpool_mc_segments(t, N), s = N / segs;
    /* Two children per node: each step receives twice. */
    return (bufpool_mc_log2ceil(t->p + 1) - 1 + segs - 1) * 2 *
           (bufpool_mc_xstep(l, t, 1, s) + s * bufpool_mc_gam(l, t));
}
T(re_rsg)
{
    double g = bufpool_mc_gam(l, t);
    return bufpool_mc_pairwise(l, t, N / t->p, g) +
           bufpool_mc_binomial(l, t, N / 2, 0) * 2.0 / bufpool_mc_log2ceil(t->p < 2 ? 2 : t->p);
}
T(bc_binomial)
{
    return bufpool_mc_binomial(l, t, N, 0);
}
T(bc_chain)
{
    return bufpool_mc_chain(l, t, N, 0);
}
T(bc_sag)
{
    double sc = 0, b = N;
    for (int k = (int)bufpool_mc_log2ceil(t->p) - 1; k >= 0; k--) {
        b /= 2;
        sc += bufpool_mc_bstep(l, t, 1 << k, b);
    }
    return sc + bufpool_mc_ring(l, t, N / t->p, 0);
}
T(bc_linear)
{
    /* The root sends p - 1 whole messages, one after the other. */
    int ppn = bufpool_mc_ppn_of(t);
    int local = (ppn < t->p ? ppn : t->p) - 1, remote = t->p - 1 - local;
    const struct bufpool_link *s = &l->link[BUFPOOL_LINK_SHM], *n = &l->link[l->inter];
    return local * (s->alpha + N * s->beta) + remote * (n->alpha + N * n->beta);
}
T(ag_ring)
{
    return bufpool_mc_ring(l, t, N, 0);
}
T(ag_rd)
{
    double sum = 0;
    for (int d = 1; d < t->p; d *= 2) {
        sum += bufpool_mc_bstep(l, t, d, N * d);
    }
    return sum;
}
T(ag_direct)
{
    return bufpool_mc_pairwise(l, t, N, 0);
}
T(rs_pairwise)
{
    return bufpool_mc_pairwise(l, t, N / t->p, bufpool_mc_gam(l, t));
}
T(rs_ring)
{
    return bp_ring_rs(l, t, N / t->p, bufpool_mc_gam(l, t));
}
/* bufpool's: rounds of at most half the scratch bound (depth x segment,
 * taken as 4 segments here) of the whole vector, each a recursive halving. */
T(rs_bp_halving)
{
    double round = t->segment ? 2.0 * (double)t->segment : N;
    double rounds = N <= round ? 1 : ceil(N / round);
    return rounds * bufpool_mc_rhalving(l, t, N / rounds, bufpool_mc_gam(l, t));
}
T(a2a_pairwise)
{
    return bufpool_mc_pairwise(l, t, N, 0);
}
T(a2a_linear)
{
    /* All at once: one latency, the bytes of every peer through the link. */
    double bw = 0;
    for (int k = 1; k < t->p; k++) {
        bw += bufpool_mc_xstep(l, t, k, N) - bufpool_mc_xstep(l, t, k, 0);
    }
    return bufpool_mc_xstep(l, t, t->p / 2, 0) + bw;
}
/* Gather and scatter, bytes per block.  linear: the root posts every
 * transfer at once, all of them through the root's link; binomial: round k
 * moves 2^k blocks over distance 2^k (the pipelined relays stream them,
 * one segment's latency per further segment). */
T(root_linear)
{
    return a2a_linear(l, t, n_);
}
T(root_binomial)
{
    double sum = 0;
    for (int d = 1; d < t->p; d *= 2) {
        double b = N * (d < t->p - d ? d : t->p - d);
        double segs = bufpool_mc_segments(t, b);
        sum += bufpool_mc_bstep(l, t, d, b) + (segs - 1) * bufpool_mc_xstep(l, t, d, 0);
    }
    return sum;
}
/* Scan, bytes per rank: the pipelined chain, or recursive doubling (two
 * reductions per step: the prefix and the group's partial). */
T(scan_chain)
{
    return bufpool_mc_chain(l, t, N, bufpool_mc_gam(l, t));
}
T(scan_rd)
{
    double sum = 0;
    for (int d = 1; d < t->p; d *= 2) {
        sum += bufpool_mc_bstep(l, t, d, N) + 2 * N * bufpool_mc_gam(l, t);
    }
    return sum;
}
#undef N
#undef T

static const struct bufpool_model_alg algs[BUFPOOL_MODEL_COLLS][5] = {
    [BUFPOOL_MODEL_ALLREDUCE] = {{"recursive_doubling", 1, ar_rd},
                                 {"rsag", 1, ar_rsag},
                                 {"ring", 1, ar_bp_ring},
                                 {"hier", 1, ar_hier},
                                 {NULL, 0, NULL}},
    [BUFPOOL_MODEL_REDUCE] = {{"chain", 1, re_chain},
                              {"binary", 1, re_binary},
                              {"rsg", 1, re_rsg},
                              {NULL, 0, NULL}},
    [BUFPOOL_MODEL_BCAST] = {{"binomial", 1, bc_binomial},
                             {"chain", 1, bc_chain},
                             {"scatter_allgather", 1, bc_sag},
                             {"linear", 1, bc_linear},
                             {NULL, 0, NULL}},
    [BUFPOOL_MODEL_ALLGATHER] = {{"ring", 1, ag_ring},
                                 {"recursive_doubling", 1, ag_rd},
                                 {"direct", 1, ag_direct},
                                 {NULL, 0, NULL}},
    [BUFPOOL_MODEL_REDUCE_SCATTER] = {{"pairwise", 1, rs_pairwise},
                                      {"ring", 1, rs_ring},
                                      {"rhalving", 1, rs_bp_halving},
                                      {NULL, 0, NULL}},
    [BUFPOOL_MODEL_ALLTOALL] = {{"pairwise", 1, a2a_pairwise},
                                {"linear", 1, a2a_linear},
                                {NULL, 0, NULL}},
    [BUFPOOL_MODEL_GATHER] = {{"binomial", 1, root_binomial},
                              {"linear", 1, root_linear},
                              {NULL, 0, NULL}},
    [BUFPOOL_MODEL_SCATTER] = {{"binomial", 1, root_binomial},
                               {"linear", 1, root_linear},
                               {NULL, 0, NULL}},
    [BUFPOOL_MODEL_SCAN] = {{"chain", 1, scan_chain},
                            {"recursive_doubling", 1, scan_rd},
                            {NULL, 0, NULL}},
};

const struct bufpool_model_alg *bufpool_model_algs(enum bufpool_model_coll coll)
{
    return coll < BUFPOOL_MODEL_COLLS ? algs[coll] : NULL;
}

int bufpool_model_best_in(const struct bufpool_model_alg *a, enum bufpool_model_coll coll,
                          const links_t *links, const topo_t *topo, size_t bytes,
                          unsigned long skip_mask, double *time_out)
{
    int best = -1;
    double best_t = INFINITY;
    if (NULL == a || topo->p < 1) {
        return -1;
    }
    for (int i = 0; a[i].name; i++) {
        if (skip_mask >> i & 1UL) {
            continue;
        }
        /* bufpool's recursive doubling allgather exists for powers of two. */
        if (BUFPOOL_MODEL_ALLGATHER == coll && 0 == strcmp(a[i].name, "recursive_doubling") &&
            (topo->p & (topo->p - 1)) != 0) {
            continue;
        }
        /* tuned's two-process algorithms serve 2 ranks only. */
        if (0 == strcmp(a[i].name, "two_proc") && 2 != topo->p) {
            continue;
        }
        double t = a[i].time(links, topo, bytes);
        if (t < best_t) {
            best_t = t;
            best = i;
        }
    }
    if (time_out) {
        *time_out = best_t;
    }
    return best;
}

int bufpool_model_best(enum bufpool_model_coll coll, const links_t *links, const topo_t *topo,
                       size_t bytes, double *time_out)
{
    return bufpool_model_best_in(bufpool_model_algs(coll), coll, links, topo, bytes, 0, time_out);
}

/* The rings of allreduce and reduce_scatter are offered to auto from this
 * many ranks on: the model has no cost for their per-step synchronisation,
 * which on the project machine made the ring 2-8 x slower than pairwise at
 * 4 ranks (docs/collectives.md), while rsag measured 0.66 x the default on
 * 2 hosts x 2 ranks (docs/multihost.md).  They are for large communicators.
 * Not a size threshold a row could hold but a correction of the model,
 * which applies wherever it is asked (rows come first). */
#define RING_MIN_RANKS 8

int bufpool_model_auto(enum bufpool_model_coll coll, const links_t *links, const topo_t *topo,
                       size_t bytes, double *time_out)
{
    unsigned long skip = 0;
    const struct bufpool_model_alg *a = bufpool_model_algs(coll);
    const bool rings = BUFPOOL_MODEL_ALLREDUCE == coll || BUFPOOL_MODEL_REDUCE_SCATTER == coll;
    for (int i = 0; NULL != a && a[i].name; i++) {
        if (a[i].bufpool && rings && topo->p < RING_MIN_RANKS && 0 == strcmp(a[i].name, "ring")) {
            skip |= 1UL << i;
        }
        /* reduce_scatter's rhalving is forced only: no measurement where
         * the model would prefer it (docs/collectives.md). */
        if (a[i].bufpool && 0 == strcmp(a[i].name, "rhalving")) {
            skip |= 1UL << i;
        }
    }
    return bufpool_model_best_in(a, coll, links, topo, bytes, skip, time_out);
}
