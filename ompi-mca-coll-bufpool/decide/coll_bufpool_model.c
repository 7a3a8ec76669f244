/*
 * The collective cost model: see coll_bufpool_model.h for the method.  Every
 * function is pure; the link table travels as an argument.
 */
#include "coll_bufpool_model.h"

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

static int ppn_of(const topo_t *t)
{
    if (t->ppn > 0) {
        return t->ppn < t->p ? t->ppn : t->p;
    }
    int h = t->hosts < 1 ? 1 : (t->hosts > t->p ? t->p : t->hosts);
    return (t->p + h - 1) / h;
}

static double log2ceil(int p)
{
    int k = 0;
    while ((1 << k) < p) {
        k++;
    }
    return k;
}

static int pow2_floor(int p)
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
static double step_cost(const links_t *l, const topo_t *t, int d, double bytes, int by_bit)
{
    int ppn = ppn_of(t);
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

static double xstep(const links_t *l, const topo_t *t, int d, double bytes)
{
    return step_cost(l, t, d, bytes, 0);
}

static double bstep(const links_t *l, const topo_t *t, int d, double bytes)
{
    return step_cost(l, t, d, bytes, 1);
}

/* The reduction rate of the slower class in use. */
static double gam(const links_t *l, const topo_t *t)
{
    double g = l->link[BUFPOOL_LINK_SHM].gamma;
    if (t->hosts > 1 && l->link[l->inter].gamma > g) {
        g = l->link[l->inter].gamma;
    }
    return g;
}

static double segments(const topo_t *t, double bytes)
{
    double s = t->segment ? (double)t->segment : bytes;
    return bytes <= s ? 1 : ceil(bytes / s);
}

/* Binomial tree of ceil(log2 p) rounds, each moving bytes over distance 2^k;
 * the distances of the rounds are p/2, p/4, ... 1. */
static double binomial(const links_t *l, const topo_t *t, double bytes, double gamma)
{
    double sum = 0;
    for (int k = (int)log2ceil(t->p) - 1; k >= 0; k--) {
        sum += bstep(l, t, 1 << k, bytes) + bytes * gamma;
    }
    return sum;
}

/* p - 1 steps of a ring, each moving bytes to the next rank. */
static double ring(const links_t *l, const topo_t *t, double bytes, double gamma)
{
    return (t->p - 1) * (xstep(l, t, 1, bytes) + bytes * gamma);
}

/* Pairwise exchange: step k talks to the rank k away, k = 1 .. p-1. */
static double pairwise(const links_t *l, const topo_t *t, double bytes, double gamma)
{
    double sum = 0;
    for (int k = 1; k < t->p; k++) {
        sum += xstep(l, t, k, bytes) + bytes * gamma;
    }
    return sum;
}

/* Recursive doubling over the largest power of two, plus a fold in and out
 * for the others. */
static double rdoubling(const links_t *l, const topo_t *t, double bytes, double gamma)
{
    int q = pow2_floor(t->p);
    double sum = 0;
    for (int d = 1; d < q; d *= 2) {
        sum += bstep(l, t, d, bytes) + bytes * gamma;
    }
    if (q != t->p) {
        sum += 2 * xstep(l, t, q, bytes) + bytes * gamma;
    }
    return sum;
}

/* Recursive halving: distance q/2 with half the bytes, then q/4 ... */
static double rhalving(const links_t *l, const topo_t *t, double bytes, double gamma)
{
    int q = pow2_floor(t->p);
    double sum = 0, b = bytes;
    for (int d = q / 2; d >= 1; d /= 2) {
        b /= 2;
        sum += bstep(l, t, d, b) + b * gamma;
    }
    if (q != t->p) {
        sum += xstep(l, t, q, bytes) + bytes * gamma + xstep(l, t, q, bytes / q);
    }
    return sum;
}

/* A pipelined chain: p - 1 hops plus one per further segment. */
static double chain(const links_t *l, const topo_t *t, double bytes, double gamma)
{
    double segs = segments(t, bytes), s = bytes / segs;
    return (t->p - 1 + segs - 1) * (xstep(l, t, 1, s) + s * gamma);
}

/* Hierarchy-aware with every rank of a host on the network (not in
 * bufpool): the ranks of a host reduce-scatter over shared memory, each
 * exchanges its 1/ppn share with its peers on the other hosts (ppn streams
 * per host), then they allgather over shared memory. */
static double hier_allreduce(const links_t *l, const topo_t *t, double bytes)
{
    int ppn = ppn_of(t), h = (t->p + ppn - 1) / ppn;
    topo_t local = {ppn, 1, t->segment, ppn};
    double share = bytes / ppn, g = gam(l, t);
    const struct bufpool_link *n = &l->link[l->inter];
    double inter =
        h > 1 ? 2 * (h - 1) * (n->alpha + share / h * n->beta * ppn) + (h - 1) * share / h * g : 0;
    return pairwise(l, &local, share, g) + inter + ring(l, &local, share, 0);
}

/* ------------------------------------------------------------------------ */
/* The algorithms.  bytes is the message of one rank (allreduce, reduce,
 * bcast), one rank's contribution (allgather), the whole input vector
 * (reduce_scatter), or what a rank sends to each peer (alltoall). */

#define T(name) static double name(const links_t *l, const topo_t *t, size_t n_)
#define N       ((double)n_)

T(ar_rd)
{
    return rdoubling(l, t, N, gam(l, t));
}
T(ar_rsag)
{
    return pairwise(l, t, N / t->p, gam(l, t)) + ring(l, t, N / t->p, 0);
}
T(ar_ring)
{
    return ring(l, t, N / t->p, gam(l, t)) + ring(l, t, N / t->p, 0);
}
/* bufpool's ring: the reduce-scatter runs in rounds of two segments per
 * block (half of the default depth 4), each round p - 1 neighbour steps;
 * then a ring allgather of whole blocks. */
static double bp_ring_rs(const links_t *l, const topo_t *t, double block, double gamma)
{
    double chunk = t->segment ? 2.0 * (double)t->segment : block;
    double rounds = block <= chunk ? 1 : ceil(block / chunk);
    return rounds * ring(l, t, block / rounds, gamma);
}
T(ar_bp_ring)
{
    return bp_ring_rs(l, t, N / t->p, gam(l, t)) + ring(l, t, N / t->p, 0);
}
T(ar_rab)
{
    return rhalving(l, t, N, gam(l, t)) + rhalving(l, t, N, 0);
}
T(ar_nonover)
{
    return binomial(l, t, N, gam(l, t)) + binomial(l, t, N, 0);
}
T(ar_linear)
{
    return (t->p - 1) * (xstep(l, t, t->p / 2, N) + N * gam(l, t)) +
           (t->p - 1) * xstep(l, t, t->p / 2, N);
}
T(ar_hier_rsag)
{
    return hier_allreduce(l, t, N);
}
/* bufpool's hier, in batches of three segments (the default depth 4 less
 * the window's slot): per batch the leader folds in the other ppn - 1
 * ranks' contributions over shared memory, then the leaders run recursive
 * doubling on it (one flow per host), one after the other; the ranks copy
 * the results while the leader goes on, so only the last batch's shows. */
T(ar_hier)
{
    const int ppn = ppn_of(t), h = (t->p + ppn - 1) / ppn;
    const topo_t leaders = {h, h, t->segment};
    const struct bufpool_link *m = &l->link[BUFPOOL_LINK_SHM];
    const double batch = t->segment ? 3.0 * (double)t->segment : N;
    const double batches = N <= batch ? 1 : ceil(N / batch), c = N / batches, g = gam(l, t);
    const double local = (ppn - 1) * (m->alpha + c * (m->beta + g));
    const double inter = h > 1 ? rdoubling(l, &leaders, c, g) : 0;
    return batches * (local + inter) + (ppn - 1) * (m->alpha + c * m->beta);
}

T(re_chain)
{
    return chain(l, t, N, gam(l, t));
}
T(re_binary)
{
    double segs = segments(t, N), s = N / segs;
    /* Two children per node: each step receives twice. */
    return (log2ceil(t->p + 1) - 1 + segs - 1) * 2 * (xstep(l, t, 1, s) + s * gam(l, t));
}
T(re_rsg)
{
    double g = gam(l, t);
    return pairwise(l, t, N / t->p, g) +
           binomial(l, t, N / 2, 0) * 2.0 / log2ceil(t->p < 2 ? 2 : t->p);
}
T(re_binomial)
{
    return binomial(l, t, N, gam(l, t));
}
/* tuned's reduce under the fixed rules runs unsegmented (segsize 0). */
T(re_linear)
{
    /* The root receives and reduces p - 1 whole messages in turn. */
    return (t->p - 1) * (xstep(l, t, t->p / 2, N) + N * gam(l, t));
}
T(re_pipeline)
{
    return (t->p - 1) * (xstep(l, t, 1, N) + N * gam(l, t));
}
T(re_tchain)
{
    int heads = t->p - 1 < 4 ? t->p - 1 : 4;
    return (heads + ceil((t->p - 1) / 4.0) - 1) * (xstep(l, t, 1, N) + N * gam(l, t));
}
T(re_tbinary)
{
    return 2 * (log2ceil(t->p + 1) - 1) * (xstep(l, t, 1, N) + N * gam(l, t));
}
T(re_rab)
{
    /* Reduce-scatter by recursive halving, then a binomial gather of the
     * halves to the root. */
    return rhalving(l, t, N, gam(l, t)) + rhalving(l, t, N, 0);
}

T(bc_binomial)
{
    return binomial(l, t, N, 0);
}
T(bc_chain)
{
    return chain(l, t, N, 0);
}
T(bc_sag)
{
    double sc = 0, b = N;
    for (int k = (int)log2ceil(t->p) - 1; k >= 0; k--) {
        b /= 2;
        sc += bstep(l, t, 1 << k, b);
    }
    return sc + ring(l, t, N / t->p, 0);
}
T(bc_linear)
{
    /* The root sends p - 1 whole messages, one after the other. */
    int ppn = ppn_of(t);
    int local = (ppn < t->p ? ppn : t->p) - 1, remote = t->p - 1 - local;
    const struct bufpool_link *s = &l->link[BUFPOOL_LINK_SHM], *n = &l->link[l->inter];
    return local * (s->alpha + N * s->beta) + remote * (n->alpha + N * n->beta);
}
/* tuned's segmented trees run unsegmented under the fixed rules (segsize 0). */
T(bc_pipeline)
{
    return (t->p - 1) * xstep(l, t, 1, N);
}
T(bc_tchain)
{
    int heads = t->p - 1 < 4 ? t->p - 1 : 4;
    return (heads + ceil((t->p - 1) / 4.0) - 1) * xstep(l, t, 1, N);
}
T(bc_binary)
{
    return 2 * (log2ceil(t->p + 1) - 1) * xstep(l, t, 1, N);
}
T(bc_split)
{
    return 2 * (log2ceil(t->p + 1) - 1) * xstep(l, t, 1, N / 2) + xstep(l, t, 1, N / 2);
}
T(bc_knomial)
{
    double levels = ceil(log2ceil(t->p) / 2.0);
    return levels * 3 * xstep(l, t, 1, N);
}

T(ag_ring)
{
    return ring(l, t, N, 0);
}
T(ag_rd)
{
    double sum = 0;
    for (int d = 1; d < t->p; d *= 2) {
        sum += bstep(l, t, d, N * d);
    }
    return sum;
}
T(ag_direct)
{
    return pairwise(l, t, N, 0);
}
/* tuned's: Bruck (ceil(log2 p) shifts by 2^k of up to 2^k blocks), the
 * neighbour exchange (p / 2 steps of two blocks), one exchange at 2 ranks,
 * and linear (gather to rank 0, then a binomial bcast of p blocks). */
T(ag_bruck)
{
    double sum = 0;
    for (int d = 1; d < t->p; d *= 2) {
        sum += xstep(l, t, d, N * (d < t->p - d ? d : t->p - d));
    }
    return sum;
}
T(ag_neighbor)
{
    return (t->p % 2 ? ring(l, t, N, 0)
                     : xstep(l, t, 1, N) + (t->p / 2 - 1) * xstep(l, t, 1, 2 * N));
}
T(ag_two_proc)
{
    return xstep(l, t, 1, N);
}
T(ag_linear)
{
    /* The gather's transfers all pass the root's link, as linear alltoall's. */
    double gather = xstep(l, t, t->p / 2, 0);
    for (int k = 1; k < t->p; k++) {
        gather += xstep(l, t, k, N) - xstep(l, t, k, 0);
    }
    return gather + binomial(l, t, N * t->p, 0);
}

T(rs_pairwise)
{
    return pairwise(l, t, N / t->p, gam(l, t));
}
T(rs_ring)
{
    return bp_ring_rs(l, t, N / t->p, gam(l, t));
}
T(rs_halving)
{
    return rhalving(l, t, N, gam(l, t));
}
/* tuned's: the unsegmented ring, and non-overlapping (a binomial reduce of
 * the whole input to rank 0, then a linear scatter of the blocks). */
T(rs_tring)
{
    return ring(l, t, N / t->p, gam(l, t));
}
T(rs_nonover)
{
    const double block = N / t->p;
    return binomial(l, t, N, gam(l, t)) + (t->p - 1) * xstep(l, t, t->p / 2, block);
}
/* bufpool's: rounds of at most half the scratch bound (depth x segment,
 * taken as 4 segments here) of the whole vector, each a recursive halving. */
T(rs_bp_halving)
{
    double round = t->segment ? 2.0 * (double)t->segment : N;
    double rounds = N <= round ? 1 : ceil(N / round);
    return rounds * rhalving(l, t, N / rounds, gam(l, t));
}

T(a2a_pairwise)
{
    return pairwise(l, t, N, 0);
}
T(a2a_linear)
{
    /* All at once: one latency, the bytes of every peer through the link. */
    double bw = 0;
    for (int k = 1; k < t->p; k++) {
        bw += xstep(l, t, k, N) - xstep(l, t, k, 0);
    }
    return xstep(l, t, t->p / 2, 0) + bw;
}
/* tuned's: one exchange at 2 ranks; the modified Bruck (ceil(log2 p)
 * shifts of about half of the p blocks each, plus a local rotation). */
T(a2a_two_proc)
{
    return xstep(l, t, 1, N);
}
T(a2a_bruck)
{
    double sum = 0;
    for (int d = 1; d < t->p; d *= 2) {
        sum += xstep(l, t, d, N * t->p / 2);
    }
    return sum + 2 * N * t->p * l->link[BUFPOOL_LINK_SHM].beta;
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
        double segs = segments(t, b);
        sum += bstep(l, t, d, b) + (segs - 1) * xstep(l, t, d, 0);
    }
    return sum;
}

/* Scan, bytes per rank: the pipelined chain, or recursive doubling (two
 * reductions per step: the prefix and the group's partial). */
T(scan_chain)
{
    return chain(l, t, N, gam(l, t));
}
T(scan_rd)
{
    double sum = 0;
    for (int d = 1; d < t->p; d *= 2) {
        sum += bstep(l, t, d, N) + 2 * N * gam(l, t);
    }
    return sum;
}

#undef N
#undef T

static const struct bufpool_model_alg algs[BUFPOOL_MODEL_COLLS][14] = {
    [BUFPOOL_MODEL_ALLREDUCE] = {{"recursive_doubling", 1, ar_rd},
                                 {"rsag", 1, ar_rsag},
                                 {"ring", 1, ar_bp_ring},
                                 {"hier", 1, ar_hier},
                                 /* tuned's (the tool takes the last entry of a name) */
                                 {"ring", 0, ar_ring},
                                 {"segmented_ring", 0, ar_ring},
                                 {"rabenseifner", 0, ar_rab},
                                 {"nonoverlapping", 0, ar_nonover},
                                 {"basic_linear", 0, ar_linear},
                                 {"hier_rsag", 0, ar_hier_rsag},
                                 {NULL, 0, NULL}},
    [BUFPOOL_MODEL_REDUCE] = {{"chain", 1, re_chain},
                              {"binary", 1, re_binary},
                              {"rsg", 1, re_rsg},
                              /* tuned's */
                              {"binomial", 0, re_binomial},
                              {"linear", 0, re_linear},
                              {"pipeline", 0, re_pipeline},
                              {"tuned_chain", 0, re_tchain},
                              {"tuned_binary", 0, re_tbinary},
                              {"in-order_binary", 0, re_tbinary},
                              {"rabenseifner", 0, re_rab},
                              {NULL, 0, NULL}},
    [BUFPOOL_MODEL_BCAST] = {{"binomial", 1, bc_binomial},
                             {"chain", 1, bc_chain},
                             {"scatter_allgather", 1, bc_sag},
                             {"linear", 1, bc_linear},
                             {"pipeline", 0, bc_pipeline},
                             {"tuned_chain", 0, bc_tchain},
                             {"binary_tree", 0, bc_binary},
                             {"split_binary_tree", 0, bc_split},
                             {"knomial", 0, bc_knomial},
                             {NULL, 0, NULL}},
    [BUFPOOL_MODEL_ALLGATHER] = {{"ring", 1, ag_ring},
                                 {"recursive_doubling", 1, ag_rd},
                                 {"direct", 1, ag_direct},
                                 /* tuned's (recursive_doubling: as above) */
                                 {"bruck", 0, ag_bruck},
                                 {"neighbor", 0, ag_neighbor},
                                 {"two_proc", 0, ag_two_proc},
                                 {"linear", 0, ag_linear},
                                 {NULL, 0, NULL}},
    [BUFPOOL_MODEL_REDUCE_SCATTER] = {{"pairwise", 1, rs_pairwise},
                                      {"ring", 1, rs_ring},
                                      {"rhalving", 1, rs_bp_halving},
                                      /* tuned's (butterfly: modeled as halving) */
                                      {"recursive_halving", 0, rs_halving},
                                      {"butterfly", 0, rs_halving},
                                      {"tuned_ring", 0, rs_tring},
                                      {"nonoverlapping", 0, rs_nonover},
                                      {NULL, 0, NULL}},
    [BUFPOOL_MODEL_ALLTOALL] = {{"pairwise", 1, a2a_pairwise},
                                {"linear", 1, a2a_linear},
                                /* tuned's (linear_sync: linear, bounded) */
                                {"linear_sync", 0, a2a_linear},
                                {"two_proc", 0, a2a_two_proc},
                                {"modified_bruck", 0, a2a_bruck},
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

int bufpool_model_best(enum bufpool_model_coll coll, const links_t *links, const topo_t *topo,
                       size_t bytes, int only_bufpool, double *time_out)
{
    return bufpool_model_best_without(coll, links, topo, bytes, only_bufpool, -1, time_out);
}

/* The best row not in skip_mask (bit i: row i). */
static int best_masked(enum bufpool_model_coll coll, const links_t *links, const topo_t *topo,
                       size_t bytes, int only_bufpool, unsigned long skip_mask, double *time_out)
{
    const struct bufpool_model_alg *a = bufpool_model_algs(coll);
    int best = -1;
    double best_t = INFINITY;
    if (NULL == a || topo->p < 1) {
        return -1;
    }
    for (int i = 0; a[i].name; i++) {
        if ((only_bufpool && !a[i].bufpool) || (skip_mask >> i & 1UL)) {
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

int bufpool_model_best_without(enum bufpool_model_coll coll, const links_t *links,
                               const topo_t *topo, size_t bytes, int only_bufpool, int skip,
                               double *time_out)
{
    return best_masked(coll, links, topo, bytes, only_bufpool, skip >= 0 ? 1UL << skip : 0,
                       time_out);
}

/* The rings of allreduce and reduce_scatter are offered to auto from this
 * many ranks on: the model has no cost for their per-step synchronisation,
 * which on the project machine made the ring 2-8 x slower than pairwise at
 * 4 ranks (docs/collectives.md), while rsag measured 0.66 x the default on
 * 2 hosts x 2 ranks (docs/multihost.md).  They are for large communicators. */
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
    return best_masked(coll, links, topo, bytes, 1, skip, time_out);
}

/* ------------------------------------------------------------------------ */
/* Open MPI coll/tuned fixed decisions (ompi_coll_tuned_*_intra_dec_fixed
 * in ompi/mca/coll/tuned/coll_tuned_decision_fixed.c of Open MPI 5.0.10,
 * commutative operations; read and re-expressed as rows, not copied).
 * Open MPI 4.1.0 introduced these tables ("Adjust default tuning
 * thresholds for many collective algorithms", NEWS); the compare
 * immediates of the six functions in Debian's 4.1.4 mca_coll_tuned.so are
 * the same thresholds (checked with objdump; the 4.1.4 source was not
 * available here).  Rows are tried in order: the first with p < p_below
 * and bytes < bytes_below gives the algorithm. */

struct rule {
    int p_below;
    size_t bytes_below;
    const char *alg;
};
#define ANY SIZE_MAX
#define ALL INT_MAX

/* allreduce, commutative operation, bytes = count x type size. */
static const struct rule allreduce_rules[] = {
    {4, 8, "ring"},
    {4, 4096, "recursive_doubling"},
    {4, 8192, "ring"},
    {4, 16384, "recursive_doubling"},
    {4, 65536, "ring"},
    {4, 262144, "segmented_ring"},
    {4, ANY, "rabenseifner"},
    {8, 16, "ring"},
    {8, 8192, "recursive_doubling"},
    {8, ANY, "rabenseifner"},
    {16, 8192, "recursive_doubling"},
    {16, ANY, "rabenseifner"},
    {32, 64, "segmented_ring"},
    {32, 4096, "recursive_doubling"},
    {32, ANY, "rabenseifner"},
    {64, 128, "segmented_ring"},
    {64, ANY, "rabenseifner"},
    {128, 262144, "recursive_doubling"},
    {128, ANY, "rabenseifner"},
    {256, 131072, "nonoverlapping"},
    {256, 262144, "recursive_doubling"},
    {256, ANY, "rabenseifner"},
    {512, 4096, "nonoverlapping"},
    {512, ANY, "rabenseifner"},
    {2048, 2048, "nonoverlapping"},
    {2048, 16384, "recursive_doubling"},
    {2048, ANY, "rabenseifner"},
    {4096, 2048, "nonoverlapping"},
    {4096, 4096, "segmented_ring"},
    {4096, 16384, "recursive_doubling"},
    {4096, ANY, "rabenseifner"},
    {ALL, 2048, "nonoverlapping"},
    {ALL, 16384, "segmented_ring"},
    {ALL, 32768, "recursive_doubling"},
    {ALL, ANY, "rabenseifner"},
};

/* bcast, bytes = count x type size; chain, pipeline and the trees run
 * unsegmented (the fixed rules pass segsize 0). */
static const struct rule bcast_rules[] = {
    {4, 32, "pipeline"},
    {4, 256, "binary_tree"},
    {4, 512, "pipeline"},
    {4, 1024, "knomial"},
    {4, 32768, "linear"},
    {4, 131072, "binary_tree"},
    {4, 262144, "tuned_chain"},
    {4, 524288, "linear"},
    {4, 1048576, "binomial"},
    {4, ANY, "binary_tree"},
    {8, 64, "binary_tree"},
    {8, 128, "binomial"},
    {8, 2048, "binary_tree"},
    {8, 8192, "binomial"},
    {8, 1048576, "linear"},
    {8, ANY, "tuned_chain"},
    {16, 8, "knomial"},
    {16, 64, "binary_tree"},
    {16, 4096, "knomial"},
    {16, 16384, "binary_tree"},
    {16, 32768, "binomial"},
    {16, ANY, "linear"},
    {32, 4096, "knomial"},
    {32, 1048576, "binomial"},
    {32, ANY, "scatter_allgather"},
    {64, 2048, "binomial"},
    {64, ANY, "knomial"},
    {128, ANY, "knomial"},
    {256, 2, "binomial"},
    {256, 16384, "binary_tree"},
    {256, 32768, "linear"},
    {256, 65536, "binary_tree"},
    {256, ANY, "knomial"},
    {1024, 16384, "knomial"},
    {1024, 32768, "split_binary_tree"},
    {1024, ANY, "knomial"},
    {2048, 524288, "knomial"},
    {2048, ANY, "scatter_allgather"},
    {4096, 262144, "knomial"},
    {4096, ANY, "scatter_allgather"},
    {ALL, 8192, "knomial"},
    {ALL, 16384, "binary_tree"},
    {ALL, 262144, "knomial"},
    {ALL, ANY, "scatter_allgather"},
};

/* reduce, commutative operation, bytes = count x type size; every
 * algorithm unsegmented (the fixed rules pass segsize 0). */
static const struct rule reduce_rules[] = {
    {4, 8, "rabenseifner"},
    {4, 16, "tuned_binary"},
    {4, 32, "pipeline"},
    {4, 262144, "linear"},
    {4, 524288, "pipeline"},
    {4, 1048576, "tuned_chain"},
    {4, ANY, "pipeline"},
    {8, 4096, "tuned_binary"},
    {8, 65536, "tuned_chain"},
    {8, 262144, "binomial"},
    {8, 524288, "linear"},
    {8, 1048576, "binomial"},
    {8, ANY, "linear"},
    {16, 8192, "tuned_binary"},
    {16, ANY, "binomial"},
    {32, 4096, "tuned_binary"},
    {32, ANY, "binomial"},
    {256, ANY, "binomial"},
    {512, 8192, "binomial"},
    {512, 16384, "in-order_binary"},
    {512, ANY, "binomial"},
    {2048, ANY, "binomial"},
    {4096, 512, "binomial"},
    {4096, 1024, "in-order_binary"},
    {4096, 8192, "binomial"},
    {4096, 16384, "in-order_binary"},
    {4096, ANY, "binomial"},
    {ALL, 16, "binomial"},
    {ALL, 32, "in-order_binary"},
    {ALL, 1024, "binomial"},
    {ALL, 2048, "in-order_binary"},
    {ALL, 8192, "binomial"},
    {ALL, 16384, "in-order_binary"},
    {ALL, ANY, "binomial"},
};

/* reduce_scatter, commutative operation, bytes = the whole input. */
static const struct rule reduce_scatter_rules[] = {
    {4, 65536, "tuned_ring"},
    {4, 131072, "butterfly"},
    {4, ANY, "tuned_ring"},
    {8, 8, "nonoverlapping"},
    {8, 262144, "recursive_halving"},
    {8, ANY, "tuned_ring"},
    {32, 262144, "recursive_halving"},
    {32, ANY, "tuned_ring"},
    {64, 64, "nonoverlapping"},
    {64, 2048, "recursive_halving"},
    {64, 524288, "butterfly"},
    {64, ANY, "tuned_ring"},
    {128, 256, "nonoverlapping"},
    {128, 512, "recursive_halving"},
    {128, 2048, "butterfly"},
    {128, 4096, "recursive_halving"},
    {128, ANY, "butterfly"},
    {256, 256, "nonoverlapping"},
    {256, 512, "recursive_halving"},
    {256, ANY, "butterfly"},
    {512, 256, "nonoverlapping"},
    {512, 1024, "recursive_halving"},
    {512, ANY, "butterfly"},
    {1024, 512, "nonoverlapping"},
    {1024, 2048, "recursive_halving"},
    {1024, 8192, "butterfly"},
    {1024, 16384, "recursive_halving"},
    {1024, ANY, "butterfly"},
    {2048, 512, "nonoverlapping"},
    {2048, 4096, "recursive_halving"},
    {2048, 16384, "butterfly"},
    {2048, 32768, "recursive_halving"},
    {2048, ANY, "butterfly"},
    {4096, 512, "nonoverlapping"},
    {4096, 4096, "recursive_halving"},
    {4096, ANY, "butterfly"},
    {ALL, 1024, "nonoverlapping"},
    {ALL, 8192, "recursive_halving"},
    {ALL, ANY, "butterfly"},
};

/* allgather, bytes = one rank's block.  tuned's recursive doubling runs
 * Bruck at sizes that are not powers of two (bufpool_model_ompi_choice),
 * and its neighbour exchange a ring at odd sizes (in ag_neighbor). */
static const struct rule allgather_rules[] = {
    {3, ANY, "two_proc"},
    {32, ANY, "recursive_doubling"},
    {64, 1024, "recursive_doubling"},
    {64, 65536, "neighbor"},
    {64, ANY, "ring"},
    {128, 512, "recursive_doubling"},
    {128, 65536, "neighbor"},
    {128, ANY, "ring"},
    {256, 512, "recursive_doubling"},
    {256, 131072, "neighbor"},
    {256, 524288, "ring"},
    {256, 1048576, "neighbor"},
    {256, ANY, "ring"},
    {512, 32, "recursive_doubling"},
    {512, 128, "bruck"},
    {512, 1024, "recursive_doubling"},
    {512, 131072, "neighbor"},
    {512, 524288, "ring"},
    {512, 1048576, "neighbor"},
    {512, ANY, "ring"},
    {1024, 64, "recursive_doubling"},
    {1024, 256, "bruck"},
    {1024, 2048, "recursive_doubling"},
    {1024, ANY, "neighbor"},
    {2048, 4, "recursive_doubling"},
    {2048, 8, "bruck"},
    {2048, 16, "recursive_doubling"},
    {2048, 32, "bruck"},
    {2048, 256, "recursive_doubling"},
    {2048, 512, "bruck"},
    {2048, 4096, "recursive_doubling"},
    {2048, ANY, "neighbor"},
    {4096, 32, "bruck"},
    {4096, 128, "recursive_doubling"},
    {4096, 512, "bruck"},
    {4096, 4096, "recursive_doubling"},
    {4096, ANY, "neighbor"},
    {ALL, 2, "recursive_doubling"},
    {ALL, 8, "bruck"},
    {ALL, 16, "recursive_doubling"},
    {ALL, 512, "bruck"},
    {ALL, 4096, "recursive_doubling"},
    {ALL, ANY, "neighbor"},
};

/* alltoall, bytes = the block for one peer. */
static const struct rule alltoall_rules[] = {
    {3, 2, "pairwise"},
    {3, 4, "two_proc"},
    {3, 16, "pairwise"},
    {3, 64, "two_proc"},
    {3, 256, "pairwise"},
    {3, 4096, "two_proc"},
    {3, 32768, "pairwise"},
    {3, 262144, "linear_sync"},
    {3, 1048576, "two_proc"},
    {3, ANY, "pairwise"},
    {8, 8192, "linear_sync"},
    {8, 16384, "linear"},
    {8, 65536, "linear_sync"},
    {8, 524288, "linear"},
    {8, 1048576, "pairwise"},
    {8, ANY, "linear"},
    {16, 262144, "linear_sync"},
    {16, ANY, "linear"},
    {32, 4, "linear_sync"},
    {32, 512, "modified_bruck"},
    {32, 8192, "linear_sync"},
    {32, 32768, "linear"},
    {32, 262144, "linear_sync"},
    {32, 524288, "linear"},
    {32, ANY, "linear_sync"},
    {64, 512, "modified_bruck"},
    {64, 524288, "linear"},
    {64, ANY, "linear_sync"},
    {128, 1024, "modified_bruck"},
    {128, 2048, "linear"},
    {128, 4096, "linear_sync"},
    {128, 262144, "linear"},
    {128, ANY, "pairwise"},
    {256, 1024, "modified_bruck"},
    {256, 2048, "linear_sync"},
    {256, 262144, "linear"},
    {256, ANY, "pairwise"},
    {512, 1024, "modified_bruck"},
    {512, 8192, "linear_sync"},
    {512, 32768, "linear"},
    {512, ANY, "pairwise"},
    {1024, 512, "modified_bruck"},
    {1024, 8192, "linear_sync"},
    {1024, 16384, "linear"},
    {1024, 131072, "linear_sync"},
    {1024, 262144, "linear"},
    {1024, ANY, "pairwise"},
    {2048, 512, "modified_bruck"},
    {2048, 1024, "linear_sync"},
    {2048, 2048, "linear"},
    {2048, 16384, "linear_sync"},
    {2048, 262144, "linear"},
    {2048, ANY, "linear_sync"},
    {4096, 1024, "modified_bruck"},
    {4096, 4096, "linear_sync"},
    {4096, 8192, "linear"},
    {4096, 131072, "linear_sync"},
    {4096, ANY, "linear"},
    {ALL, 2048, "modified_bruck"},
    {ALL, 8192, "linear_sync"},
    {ALL, 16384, "linear"},
    {ALL, 32768, "linear_sync"},
    {ALL, 65536, "linear"},
    {ALL, ANY, "linear_sync"},
};

static const char *lookup(const struct rule *r, size_t n, int p, size_t bytes)
{
    for (size_t i = 0; i < n; i++) {
        if (p < r[i].p_below && bytes < r[i].bytes_below) {
            return r[i].alg;
        }
    }
    return NULL;
}

#define RULES(r) (r), sizeof(r) / sizeof(*(r))

const char *bufpool_model_ompi_choice(enum bufpool_model_coll coll, int p, size_t bytes)
{
    const char *alg;
    switch (coll) {
        case BUFPOOL_MODEL_ALLREDUCE:
            return lookup(RULES(allreduce_rules), p, bytes);
        case BUFPOOL_MODEL_BCAST:
            return lookup(RULES(bcast_rules), p, bytes);
        case BUFPOOL_MODEL_REDUCE:
            return lookup(RULES(reduce_rules), p, bytes);
        case BUFPOOL_MODEL_REDUCE_SCATTER:
            return lookup(RULES(reduce_scatter_rules), p, bytes);
        case BUFPOOL_MODEL_ALLTOALL:
            return lookup(RULES(alltoall_rules), p, bytes);
        case BUFPOOL_MODEL_ALLGATHER:
            alg = lookup(RULES(allgather_rules), p, bytes);
            /* tuned's recursive doubling hands sizes that are not powers
             * of two to Bruck. */
            return alg && 0 == strcmp(alg, "recursive_doubling") && (p & (p - 1)) ? "bruck" : alg;
        default:
            return NULL;
    }
}

#undef RULES
