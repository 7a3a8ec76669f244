/*
 * coll/bufpool decisions, one function per collective (see
 * coll_bufpool_decide.h).  The thresholds of "auto" and the measurements
 * behind them are here; the algorithms are in their families' files.
 *
 * Machines of the measurements: this project's, one node, 2 cores, shared
 * memory (vader), p = 2 and p = 4 (oversubscribed), and the emulated
 * cluster on it (2 hosts x 1 and x 2 ranks); for 8 and 16 processes, one
 * and several hosts, a 16-core machine (measured_rules).  "x tuned" is
 * bufpool's time over coll/tuned's in the same job.
 */
#include "coll_bufpool_decide.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

void bufpool_plan_init(bufpool_plan_t *plan, const bufpool_tuning_t *tuning, int alg)
{
    plan->alg = alg;
    plan->seg_bytes = tuning->segment_size;
    plan->depth = tuning->pipeline_depth;
    plan->scratch_bound = tuning->segment_size * (size_t)tuning->pipeline_depth;
    plan->max_requests = tuning->max_requests;
    plan->why = BUFPOOL_ALG_AUTO == alg ? "auto" : "forced";
}

static void hand_over(bufpool_plan_t *plan, const char *why)
{
    plan->alg = BUFPOOL_ALG_PREVIOUS;
    plan->why = why;
}

/* At 2 ranks out of place every unit of the pairwise reduce-scatter stream
 * (and of rsag's allgather) is received straight into the result, so
 * segments cost no scratch and may be larger.  Every rank agrees: MPI's
 * MPI_IN_PLACE is all-or-none for allreduce and reduce_scatter(_block). */
static void pairwise_stream_segments(const bufpool_call_t *call, bufpool_plan_t *plan)
{
    if (2 == call->comm_size && !call->in_place) {
        plan->seg_bytes *= BUFPOOL_DIRECT_SEGMENT_FACTOR;
    }
}

/* On a communicator that spans hosts, auto takes the cost model's fastest
 * bufpool algorithm for (p, bytes, hosts, link table) (coll_bufpool_model.c,
 * docs/multihost.md) where no measured row (measured_rules) matches.  The
 * model lists bufpool's algorithms first, in the order of the enums of
 * coll_bufpool_decide.h (test_coll_model checks it), so index + 1 is the
 * algorithm.  0 when the model does not apply (one host, no table).  The
 * candidates are bufpool_model_auto's (no ring below 8 ranks). */
static const char *const model_why = "auto: cost model, communicator on several hosts";

static int model_choice(enum bufpool_model_coll coll, const bufpool_call_t *call,
                        const bufpool_tuning_t *tuning, bufpool_plan_t *plan)
{
    if (call->hosts <= 1 || NULL == tuning->links) {
        return 0;
    }
    const struct bufpool_model_topo topo = {call->comm_size, call->hosts, tuning->segment_size,
                                            call->max_ppn};
    int best = bufpool_model_auto(coll, tuning->links, &topo, call->bytes, NULL);
    if (best < 0) {
        return 0;
    }
    plan->why = model_why;
    return best + 1;
}

/* Measured overrides: the first row that matches an auto call decides it,
 * before the model (several hosts) or a collective's own rules below.
 * Every row says why: a measurement (which machine, which placement, the
 * ratio to tuned), or a tie in the model (at 2 ranks several algorithms are
 * the same single exchange and the model cannot rank them).  Machines:
 * - "2 cores": this project's own, vader, p = 2 and 4 (oversubscribed);
 * - "16 cores": a 16-core Xeon, Open MPI 4.1.4, vader with CMA on one host
 *   and TCP over veth between the network namespaces of the emulated
 *   cluster (test/multihost/cluster.sh), p = 8 and 16, each algorithm
 *   forced in turn against tuned in the same job, 4 KiB-4 MiB
 *   (docs/results/2026-11-26-16core/).
 * A row holds only where it was measured, bar the hand-backs to the
 * previous module, whose cost only grows with p.  bench/coll_model shows
 * each call's choice and its source; docs/multihost.md, "The decision
 * layer", lists the rows. */
#define ANY_BYTES SIZE_MAX
#define ANY_RANKS INT_MAX
#define KIB       ((size_t)1 << 10)
#define MIB       ((size_t)1 << 20)

enum {
    RULE_IN_PLACE_ONLY = 1,   /* only calls with MPI_IN_PLACE */
    RULE_COMMUTATIVE_ONLY = 2 /* only commutative operations (the
                                 measurement's; the others keep the rules
                                 below) */
};

struct measured_rule {
    bufpool_coll_id_t coll;
    int hosts_min, hosts_max;    /* hosts the communicator spans, inclusive */
    int p_min, p_max;            /* communicator sizes, inclusive */
    size_t bytes_min, bytes_max; /* call->bytes, inclusive */
    unsigned flags;
    int alg; /* an algorithm, or BUFPOOL_ALG_PREVIOUS */
    const char *why;
};

#define ONE_HOST 1, 1
/* The emulated cluster measured 2 and 4 hosts (4 x 4 and 2 x 8 ranks):
 * rows for several hosts hold there; more hosts take the model. */
#define SEVERAL_HOSTS 2, 4

static const struct measured_rule measured_rules[] = {
    /* allreduce, one host, 16 cores: at p = 16 rsag measured 0.92-1.45 x
     * tuned and recursive doubling 1.39-1.84 x from 4 KiB to 128 KiB; at
     * p = 8 rsag 0.74-0.95 x against recursive doubling's 0.89-1.23 x up to
     * small_size's 16 KiB. */
    {BUFPOOL_COLL_allreduce, ONE_HOST, 16, ANY_RANKS, 4 * KIB, 128 * KIB, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, p = 16): every algorithm slower than the previous module"},
    {BUFPOOL_COLL_allreduce, ONE_HOST, 8, 15, 4 * KIB, 16 * KIB, RULE_COMMUTATIVE_ONLY,
     BUFPOOL_ALLREDUCE_RSAG, "auto, measured (16 cores, p = 8): rsag before recursive doubling"},
    /* allreduce across hosts, 16 cores, 4 x 4 and 2 x 8 ranks: from 64 KiB
     * to 1 MiB every bufpool algorithm took 1.08-2.6 x tuned's time (hier
     * 1.26-2.46, rsag 1.29-2.67, ring 1.08-3.3); below, hier wins
     * (0.47-0.96 x) and the model picks it. */
    {BUFPOOL_COLL_allreduce, SEVERAL_HOSTS, 16, ANY_RANKS, 64 * KIB, ANY_BYTES, 0,
     BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, 4 x 4 and 2 x 8): every algorithm slower than the previous module"},

    /* reduce, 16 cores: one host, p = 8 and 16, binary 0.99-1.24 x, rsg
     * and chain 1.5-4.2 x up to 32 KiB, rsg 0.27-0.52 x at 256-512 KiB
     * (binary 0.45-0.56); across hosts (4 x 4, 2 x 8) binary 1.35-1.61 x
     * up to 64 KiB, 0.93-1.04 x at 128 KiB (1.20-1.28 in auto's runs) and
     * 0.66-0.83 x from 256 KiB to 1 MiB, where rsg was 0.68-1.12 x. */
    {BUFPOOL_COLL_reduce, ONE_HOST, 8, ANY_RANKS, 4 * KIB, 64 * KIB - 1, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, p = 8 and 16): the previous module's is faster"},
    {BUFPOOL_COLL_reduce, ONE_HOST, 8, ANY_RANKS, 256 * KIB, 512 * KIB - 1, RULE_COMMUTATIVE_ONLY,
     BUFPOOL_REDUCE_RSG, "auto, measured (16 cores, p = 8 and 16): rsg"},
    {BUFPOOL_COLL_reduce, SEVERAL_HOSTS, 16, ANY_RANKS, 4 * KIB, 256 * KIB - 1, 0,
     BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, 4 x 4 and 2 x 8): the previous module's is faster"},
    {BUFPOOL_COLL_reduce, SEVERAL_HOSTS, 16, ANY_RANKS, 256 * KIB, 1 * MIB, RULE_COMMUTATIVE_ONLY,
     BUFPOOL_REDUCE_BINARY, "auto, measured (16 cores, 4 x 4 and 2 x 8): binary"},

    /* bcast, one host, 16 cores: at p = 8 binomial 0.77-0.95 x tuned from
     * 32 KiB to 512 KiB (linear 0.97-1.00), but auto's binomial and linear
     * 1.02-1.26 x from 1 B to 2 KiB; at p = 16 bufpool's binomial, tuned's
     * own algorithm there, 0.99-1.07 x forced and 1.06-1.32 x in auto's run
     * from 1 B to 256 KiB (linear 1.61-1.78 from 16 KiB): nothing to add;
     * scatter_allgather 0.78-1.10 x at 512 KiB-2 MiB (binomial 1.76 and
     * linear 3.4 from 1 MiB), chain 0.90 x at 4 MiB (scatter_allgather
     * 1.20). */
    {BUFPOOL_COLL_bcast, ONE_HOST, 8, 15, 0, 2 * KIB, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, p = 8): the previous module's is faster"},
    {BUFPOOL_COLL_bcast, ONE_HOST, 8, 15, 16 * KIB + 1, 512 * KIB, 0, BUFPOOL_BCAST_BINOMIAL,
     "auto, measured (16 cores, p = 8): binomial"},
    {BUFPOOL_COLL_bcast, ONE_HOST, 16, ANY_RANKS, 0, 256 * KIB, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, p = 16): the previous module's binomial is as fast"},
    {BUFPOOL_COLL_bcast, ONE_HOST, 16, ANY_RANKS, 256 * KIB + 1, 4 * MIB - 1, 0,
     BUFPOOL_BCAST_SCATTER_ALLGATHER, "auto, measured (16 cores, p = 16): scatter_allgather"},
    {BUFPOOL_COLL_bcast, ONE_HOST, 16, ANY_RANKS, 4 * MIB, ANY_BYTES, 0, BUFPOOL_BCAST_CHAIN,
     "auto, measured (16 cores, p = 16): chain"},
    /* bcast across hosts, 16 cores: binomial, the best of the four, took
     * 1.06-1.25 x tuned up to 32 KiB on 4 x 4 and 2 x 8, 0.88-0.95 x from
     * 64 KiB to 1 MiB on 4 x 4 and 1.04-1.10 x on 2 x 8. */
    {BUFPOOL_COLL_bcast, SEVERAL_HOSTS, 16, ANY_RANKS, 4 * KIB, 32 * KIB, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, 4 x 4 and 2 x 8): the previous module's is faster"},
    {BUFPOOL_COLL_bcast, 4, 4, 16, ANY_RANKS, 32 * KIB + 1, 1 * MIB, 0, BUFPOOL_BCAST_BINOMIAL,
     "auto, measured (16 cores, 4 x 4): binomial"},
    {BUFPOOL_COLL_bcast, 2, 3, 16, ANY_RANKS, 32 * KIB + 1, 1 * MIB, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, 2 x 8): the previous module's is faster"},

    /* allgather, one host, 16 cores: direct (every block posted at once)
     * 0.51-0.82 x tuned from 8 KiB at p = 8 and 0.48-0.72 x from 32 KiB at
     * p = 16, recursive doubling 0.75-1.07 x; measured up to p = 16 only
     * (direct keeps 2 (p - 1) requests in flight). */
    {BUFPOOL_COLL_allgather, ONE_HOST, 8, 15, 8 * KIB, ANY_BYTES, 0, BUFPOOL_ALLGATHER_DIRECT,
     "auto, measured (16 cores, p = 8): direct"},
    {BUFPOOL_COLL_allgather, ONE_HOST, 16, 16, 32 * KIB, ANY_BYTES, 0, BUFPOOL_ALLGATHER_DIRECT,
     "auto, measured (16 cores, p = 16): direct"},

    /* reduce_scatter(_block): one host, 16 cores, pairwise 1.26-1.40 x
     * tuned at 4 KiB (p = 8, 16) and 1.27 x at 8 KiB (p = 16); across hosts
     * (4 x 4, 2 x 8, reduce_scatter) pairwise 1.8-2.7 x and the ring
     * 1.9-4.9 x up to 64 KiB; at 128-256 KiB pairwise 0.77-0.84 x, the
     * ring (the model's pick) 0.90-1.24 x (1.64-1.88 x at 128 KiB on 2 x 8
     * in auto's runs); from 512 KiB both 0.80-1.01 x. */
    {BUFPOOL_COLL_reduce_scatter_block, ONE_HOST, 8, ANY_RANKS, 0, 8 * KIB, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, p = 8 and 16): small input"},
    {BUFPOOL_COLL_reduce_scatter, SEVERAL_HOSTS, 16, ANY_RANKS, 0, 128 * KIB - 1, 0,
     BUFPOOL_ALG_PREVIOUS, "auto, measured (16 cores, 4 x 4 and 2 x 8): small input"},
    {BUFPOOL_COLL_reduce_scatter_block, SEVERAL_HOSTS, 16, ANY_RANKS, 0, 128 * KIB - 1, 0,
     BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, 4 x 4 and 2 x 8, reduce_scatter's algorithms): small input"},
    {BUFPOOL_COLL_reduce_scatter, SEVERAL_HOSTS, 16, ANY_RANKS, 128 * KIB, 256 * KIB,
     RULE_COMMUTATIVE_ONLY, BUFPOOL_REDUCE_SCATTER_PAIRWISE,
     "auto, measured (16 cores, 4 x 4 and 2 x 8): pairwise"},
    {BUFPOOL_COLL_reduce_scatter_block, SEVERAL_HOSTS, 16, ANY_RANKS, 128 * KIB, 256 * KIB,
     RULE_COMMUTATIVE_ONLY, BUFPOOL_REDUCE_SCATTER_BLOCK_PAIRWISE,
     "auto, measured (16 cores, 4 x 4 and 2 x 8, reduce_scatter's algorithms): pairwise"},

    /* alltoall: the whole exchange takes 1-2 us; taking and returning a
     * pooled buffer costs 50-70 ns of it (2 cores: 1.03-1.06 x tuned at 1 B
     * - 1 KiB in place, 1.00-1.01 x with malloc; 0.90 x at 4 KiB).  (At
     * p = 16 linear, the model's pick, measured 0.98-1.12 x tuned at every
     * size on 16 cores, pairwise 1.39-1.80 x.) */
    {BUFPOOL_COLL_alltoall, ONE_HOST, 2, 2, 0, 1024, RULE_IN_PLACE_ONLY, BUFPOOL_ALG_PREVIOUS,
     "auto: small in-place exchange at 2 ranks"},
    {BUFPOOL_COLL_alltoall, ONE_HOST, 2, 2, 0, ANY_BYTES, 0, BUFPOOL_ALLTOALL_LINEAR,
     "auto, one host: 2 ranks, the model ties (one exchange); linear measured"},

    /* gather: tuned's linear_sync needs no scratch either, and its
     * synchronised transfers measured 1.1-1.3 x faster than our linear
     * from 128 KiB up on 2 and 3 ranks (2 cores), and than both of ours
     * from 256 KiB to 2 MiB at p = 8 (binomial 1.12-1.77 x, linear 1.29-1.31)
     * and from 128 KiB to 1 MiB at p = 16 (1.09-2.51 x) on 16 cores, where
     * the binomial tree measured 0.85-0.98 x from 4 to 64 KiB at p = 16
     * (linear 1.29-2.09). */
    {BUFPOOL_COLL_gather, ONE_HOST, 2, 3, 64 * KIB, ANY_BYTES, 0, BUFPOOL_ALG_PREVIOUS,
     "large gather on fewer than 4 processes: the previous module's is faster"},
    {BUFPOOL_COLL_gather, ONE_HOST, 8, 15, 128 * KIB + 1, 2 * MIB, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, p = 8): the previous module's is faster"},
    {BUFPOOL_COLL_gather, ONE_HOST, 16, ANY_RANKS, 64 * KIB + 1, 1 * MIB, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, p = 16): the previous module's is faster"},
    {BUFPOOL_COLL_gather, ONE_HOST, 16, ANY_RANKS, 2 * KIB + 1, 64 * KIB, 0,
     BUFPOOL_GATHER_BINOMIAL, "auto, measured (16 cores, p = 16): binomial"},
    /* Across 2-4 hosts at p = 16 (16 cores, auto's runs): the model's
     * gather took 1.27-1.61 x tuned up to 2 KiB on 2 x 8 (1.03-1.26 from
     * 8 B on 4 x 4), 1.15-1.80 x from 64 KiB to 1 MiB on 2 x 8 and
     * 1.01-1.81 x at 64-128 KiB on 4 x 4 (0.65-0.91 x above). */
    {BUFPOOL_COLL_gather, SEVERAL_HOSTS, 16, ANY_RANKS, 0, 2 * KIB, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, 4 x 4 and 2 x 8): the previous module's is faster"},
    {BUFPOOL_COLL_gather, 2, 3, 16, ANY_RANKS, 64 * KIB, 1 * MIB, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, 2 x 8): the previous module's is faster"},
    {BUFPOOL_COLL_gather, 4, 4, 16, ANY_RANKS, 64 * KIB, 128 * KIB, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, 4 x 4): the previous module's is faster"},
    /* scatter across 2-4 hosts at p = 16: 1.12-1.88 x tuned up to 2 KiB
     * (auto's runs), and 1.31-1.37 x at 4 KiB on 4 x 4; alltoall there
     * 1.32-1.87 x from 4 B to 256 B. */
    {BUFPOOL_COLL_scatter, SEVERAL_HOSTS, 16, ANY_RANKS, 0, 2 * KIB, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, 4 x 4 and 2 x 8): the previous module's is faster"},
    {BUFPOOL_COLL_scatter, 4, 4, 16, ANY_RANKS, 2 * KIB + 1, 4 * KIB, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, 4 x 4): the previous module's is faster"},
    {BUFPOOL_COLL_alltoall, SEVERAL_HOSTS, 16, ANY_RANKS, 0, 256, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, 4 x 4 and 2 x 8): the previous module's is faster"},
    /* 2 ranks: the model ties below a segment; linear measured 0.55-1.04 x
     * tuned at every size and root (2 cores, 2 and 4 ranks). */
    {BUFPOOL_COLL_gather, ONE_HOST, 2, 2, 0, ANY_BYTES, 0, BUFPOOL_GATHER_LINEAR,
     "auto, one host: 2 ranks, the model ties; linear measured"},
    {BUFPOOL_COLL_scatter, ONE_HOST, 2, 2, 0, ANY_BYTES, 0, BUFPOOL_SCATTER_LINEAR,
     "auto, one host: 2 ranks, the model ties; linear measured"},
    /* Many ranks, small blocks, one host (16 cores, p = 8 and 16, auto's
     * runs): the binomial gather 1.06-1.35 x tuned up to 1 KiB, the
     * binomial scatter 1.05-1.24 x up to 256 B and 0.74-1.01 x from 512 B
     * to 2 KiB (a tree spares the root p - 1 messages' overhead, which the
     * model does not count). */
    {BUFPOOL_COLL_gather, ONE_HOST, 8, ANY_RANKS, 0, 2 * KIB, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, p = 8 and 16): the previous module's is faster"},
    {BUFPOOL_COLL_scatter, ONE_HOST, 8, ANY_RANKS, 0, 256, 0, BUFPOOL_ALG_PREVIOUS,
     "auto, measured (16 cores, p = 8 and 16): the previous module's is faster"},
    {BUFPOOL_COLL_scatter, ONE_HOST, 8, ANY_RANKS, 257, 2 * KIB, 0, BUFPOOL_SCATTER_BINOMIAL,
     "auto, measured (16 cores, p = 8 and 16): binomial"},

    /* scan, exscan, one host, 16 cores, p = 16: recursive doubling (two
     * messages of scratch) 0.77-0.99 x tuned from 4 KiB to 128 KiB, the
     * chain 1.00-1.29 x there (and 0.24-0.95 x from 256 KiB, as auto has
     * it). */
    {BUFPOOL_COLL_scan, ONE_HOST, 16, ANY_RANKS, 4 * KIB, 128 * KIB, 0,
     BUFPOOL_SCAN_RECURSIVE_DOUBLING, "auto, measured (16 cores, p = 16): recursive doubling"},
    {BUFPOOL_COLL_exscan, ONE_HOST, 16, ANY_RANKS, 4 * KIB, 128 * KIB, 0,
     BUFPOOL_EXSCAN_RECURSIVE_DOUBLING, "auto, measured (16 cores, p = 16): recursive doubling"},
};

/* The measured row for an auto call, if one matches: true and the plan's
 * algorithm and reason set. */
static bool measured_choice(bufpool_coll_id_t coll, const bufpool_call_t *call,
                            bufpool_plan_t *plan)
{
    const int hosts = call->hosts > 1 ? call->hosts : 1;
    for (size_t i = 0; i < sizeof(measured_rules) / sizeof(*measured_rules); i++) {
        const struct measured_rule *r = &measured_rules[i];
        if (r->coll == coll && hosts >= r->hosts_min && hosts <= r->hosts_max &&
            call->comm_size >= r->p_min && call->comm_size <= r->p_max &&
            call->bytes >= r->bytes_min && call->bytes <= r->bytes_max &&
            (!(r->flags & RULE_IN_PLACE_ONLY) || call->in_place) &&
            (!(r->flags & RULE_COMMUTATIVE_ONLY) || call->commute)) {
            plan->alg = r->alg;
            plan->why = r->why;
            return true;
        }
    }
    return false;
}

static const char *const onehost_model_why = "auto: cost model, one host";

/* The algorithm auto takes for coll where no measured row matches: the
 * model across hosts, and on one host the model's pick for one host (the
 * shm class of the link table); used by alltoall, gather and scatter. */
static int layer_choice(bufpool_coll_id_t id, enum bufpool_model_coll coll,
                        const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                        bufpool_plan_t *plan)
{
    if (measured_choice(id, call, plan)) {
        return plan->alg;
    }
    if (call->hosts > 1 && NULL != tuning->links) {
        return model_choice(coll, call, tuning, plan);
    }
    struct bufpool_model_links defaults;
    const struct bufpool_model_links *links = tuning->links;
    if (NULL == links) {
        bufpool_model_links_default(&defaults);
        links = &defaults;
    }
    const struct bufpool_model_topo topo = {call->comm_size, 1, tuning->segment_size,
                                            call->comm_size};
    plan->why = onehost_model_why;
    return bufpool_model_auto(coll, links, &topo, call->bytes, NULL) + 1;
}

/* ---------------------------------------------------------------------- */
/* allreduce.  Auto leaves 4K to 8K messages on 2 and 3 processes to the
 * previous module: a whole 4K message is just past shared memory's eager
 * limit, so recursive doubling pays a rendezvous (1.45 x tuned), tuned's
 * ring sends eager halves, and rsag's fixed costs still show (1.08 x).
 * The scratch at stake is a few KiB. */
#define ALLREDUCE_PREV_MIN ((size_t)4 << 10)
#define ALLREDUCE_PREV_MAX ((size_t)8 << 10)
/* Across hosts auto takes the model's pick, hier included, at every size:
 * on a quiet machine (2 hosts x 2 ranks, TCP; docs/multihost.md,
 * "Hierarchy-aware allreduce") forced hier measured 0.56-1.12 x the default
 * from 8 KiB to 4 MiB, rsag 1.08-1.75 x.  (A cap at 512 KiB, set from runs
 * on a machine at load 15-30, measured worse on the quiet one: 1.52-1.72 x
 * from 1 MiB.)  Not under max_requests, which hier does not honour. */

void bufpool_decide_allreduce(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                              int forced, bufpool_plan_t *plan)
{
    /* hier on one host has no hierarchy to use, and under max_requests it
     * would exceed the bound (it posts every segment at once): auto's
     * choice serves, which never takes hier under a bound. */
    const bool hier_one_host = BUFPOOL_ALLREDUCE_HIER == forced && call->hosts <= 1;
    const bool hier_bounded = BUFPOOL_ALLREDUCE_HIER == forced && tuning->max_requests > 0;
    if (hier_one_host || hier_bounded) {
        forced = BUFPOOL_ALG_AUTO;
    }
    bufpool_plan_init(plan, tuning, forced);
    /* A measured row's algorithm is kept, within what it serves (below). */
    const bool measured =
        BUFPOOL_ALG_AUTO == forced && measured_choice(BUFPOOL_COLL_allreduce, call, plan);
    if (BUFPOOL_ALG_PREVIOUS == plan->alg) {
        return; /* a measured row hands it over */
    }
    const bool decide_here = BUFPOOL_ALG_AUTO == forced && !measured;
    const int modeled = decide_here ? model_choice(BUFPOOL_MODEL_ALLREDUCE, call, tuning, plan) : 0;
    if (modeled) {
        /* Within what each algorithm can serve: recursive doubling holds the
         * whole message in scratch, rsag needs a commutative operation. */
        plan->alg = modeled;
        if (BUFPOOL_ALLREDUCE_HIER == plan->alg && plan->max_requests > 0) {
            plan->alg = BUFPOOL_ALLREDUCE_RSAG; /* hier does not honour max_requests */
            plan->why = "auto: cost model's hier does not honour max_requests: rsag";
        }
        if (BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING == modeled && call->span > plan->scratch_bound &&
            call->commute && call->count >= (size_t)call->comm_size) {
            plan->alg = BUFPOOL_ALLREDUCE_RSAG;
        } else if (BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING != modeled &&
                   (!call->commute || call->count < (size_t)call->comm_size)) {
            plan->alg = BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING;
        }
    } else if (decide_here) {
        if (call->comm_size < 4 && call->bytes >= ALLREDUCE_PREV_MIN &&
            call->bytes < ALLREDUCE_PREV_MAX) {
            hand_over(plan, "auto: 4K-8K on fewer than 4 processes");
            return;
        }
        plan->alg = (call->span <= tuning->small_size || call->count < (size_t)call->comm_size ||
                     !call->commute)
                        ? BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING
                        : BUFPOOL_ALLREDUCE_RSAG;
    }
    /* recursive_doubling needs a whole message of scratch: only within the
     * bound.  rsag and ring reorder the reduction: commutative operations
     * only. */
    if (BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING == plan->alg && call->span > plan->scratch_bound) {
        hand_over(plan, "recursive_doubling needs the message within depth x segment_size");
    } else if (BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING != plan->alg && !call->commute) {
        hand_over(plan, "rsag, ring and hier need a commutative operation");
    } else if (BUFPOOL_ALLREDUCE_RSAG == plan->alg) {
        pairwise_stream_segments(call, plan);
        /* rsag's allgather half posts every result receive up front and
         * sends each finished segment to every rank: 2 (p-1) requests per
         * segment of a block that do not wait in step order.  Beyond the
         * bound, the ring (neighbours only, bounded) serves the call. */
        if (plan->max_requests > 0 &&
            bufpool_rsag_requests(call, plan->seg_bytes) >= (size_t)plan->max_requests) {
            plan->alg = BUFPOOL_ALLREDUCE_RING;
            plan->seg_bytes = tuning->segment_size;
            plan->why = "rsag would keep more than max_requests requests in flight: ring";
        }
    }
    if (plan->alg >= 0 && 0 == strcmp(plan->why, "auto")) {
        if (hier_one_host) {
            plan->why = "hier on a communicator on one host: auto's choice";
        } else if (hier_bounded) {
            plan->why = "hier does not honour max_requests: auto's choice";
        }
    }
}

size_t bufpool_rsag_requests(const bufpool_call_t *call, size_t seg_bytes)
{
    const size_t p = (size_t)call->comm_size;
    if (p < 2 || 0 == call->count || 0 == call->span) {
        return 0;
    }
    /* Elements per segment as bufpool_segs_cut counts them (at least one),
     * segments of the longest block. */
    size_t elem = (call->span + call->count - 1) / call->count;
    size_t per = seg_bytes / (elem ? elem : 1);
    per = per ? per : 1;
    size_t block = (call->count + p - 1) / p;
    return 2 * (p - 1) * ((block + per - 1) / per);
}

/* ---------------------------------------------------------------------- */
/* reduce (see coll_bufpool_reduce.c's header for the measurements). */
#define REDUCE_MIN_RANKS            3
#define REDUCE_MIN_BYTES            ((size_t)4 << 10)
#define REDUCE_BINARY_MAX_BYTES     ((size_t)256 << 10)
#define REDUCE_RSG_MIN_BYTES        ((size_t)512 << 10)
#define REDUCE_NONCOMMUTE_MIN_BYTES ((size_t)1 << 20)

static int reduce_auto(size_t bytes, int size, bool commute)
{
    if (size < REDUCE_MIN_RANKS) {
        return BUFPOOL_ALG_PREVIOUS;
    }
    if (!commute) {
        return bytes >= REDUCE_NONCOMMUTE_MIN_BYTES ? BUFPOOL_REDUCE_CHAIN : BUFPOOL_ALG_PREVIOUS;
    }
    if (bytes < REDUCE_MIN_BYTES) {
        return BUFPOOL_ALG_PREVIOUS;
    }
    if (bytes < REDUCE_BINARY_MAX_BYTES) {
        return BUFPOOL_REDUCE_BINARY;
    }
    return bytes >= REDUCE_RSG_MIN_BYTES ? BUFPOOL_REDUCE_RSG : BUFPOOL_ALG_PREVIOUS;
}

void bufpool_decide_reduce(const bufpool_call_t *call, const bufpool_tuning_t *tuning, int forced,
                           bufpool_plan_t *plan)
{
    bufpool_plan_init(plan, tuning, forced);
    /* Not the model across hosts: on 2 hosts x 1 and x 2 ranks its picks
     * were 1.03 and 1.55 x tuned (medians from 4 KiB) against 0.98 and 1.22
     * with these rules, which hand small reduces back (docs/multihost.md). */
    if (BUFPOOL_ALG_AUTO == forced && !measured_choice(BUFPOOL_COLL_reduce, call, plan)) {
        plan->alg = reduce_auto(call->bytes, call->comm_size, call->commute);
        if (plan->alg < 0) {
            hand_over(plan, "auto: the previous module's is faster");
        }
    }
    if (BUFPOOL_ALG_PREVIOUS == plan->alg) {
        return;
    }
    /* Only the chain keeps rank order. */
    if (BUFPOOL_REDUCE_CHAIN != plan->alg && !call->commute) {
        hand_over(plan, "only chain serves a non-commutative operation");
    }
}

/* ---------------------------------------------------------------------- */
/* bcast.  Auto, measured at p = 2 and 4:
 * - linear: the root posts a send to every rank at once; each receiver
 *   copies for itself, and no relay has to be scheduled before the data
 *   moves on (at p = 4 binomial is 15-40% slower than linear from 16 KiB
 *   to 256 KiB; up to BUFPOOL_INLINE_SEND_MAX bytes, where the root's sends
 *   return at once, linear takes 0.15 x tuned's time);
 * - except between BUFPOOL_INLINE_SEND_MAX and BCAST_EAGER_MAX bytes:
 *   there an eager send completes only once its receiver has taken the
 *   fragment, so the root of linear waits for all p - 1 receivers to be
 *   scheduled (1.09-1.19 x tuned at 512 B - 2 KiB) and binomial, which
 *   waits for log2(p) of them, does better (1.01-1.07 x, within the noise);
 * - from BCAST_LINEAR_MAX_BYTES on the pipelined chain wins: a segment is
 *   read from cache by the next rank right after it lands (0.75-0.82 x
 *   tuned's unsegmented chain from 4 MiB on at p = 4);
 * - from BCAST_BINOMIAL_MIN_RANKS on, latency-bound messages (up to
 *   small_size) take log2(p) steps instead of p - 1 sends from the root
 *   (not measured);
 * - from BCAST_SAG_MIN_RANKS on, scatter_allgather moves 2 (p-1)/p of the
 *   message per rank instead of the chain's p - 1 hops (not measured). */
#define BCAST_LINEAR_MAX_BYTES   ((size_t)1 << 20)
#define BCAST_EAGER_MAX          4096 /* btl_vader_eager_limit */
#define BCAST_BINOMIAL_MIN_RANKS 8
#define BCAST_SAG_MIN_RANKS      16

void bufpool_decide_bcast(const bufpool_call_t *call, const bufpool_tuning_t *tuning, int forced,
                          bufpool_plan_t *plan)
{
    const int p = call->comm_size;
    const size_t bytes = call->bytes;
    bufpool_plan_init(plan, tuning, forced);
    if (BUFPOOL_ALG_AUTO != forced || measured_choice(BUFPOOL_COLL_bcast, call, plan)) {
        return;
    }
    const int modeled = model_choice(BUFPOOL_MODEL_BCAST, call, tuning, plan);
    if (modeled) {
        plan->alg = modeled;
        return;
    }
    if ((p >= BCAST_BINOMIAL_MIN_RANKS && bytes <= tuning->small_size) ||
        (p > 2 && bytes > BUFPOOL_INLINE_SEND_MAX && bytes <= BCAST_EAGER_MAX)) {
        plan->alg = BUFPOOL_BCAST_BINOMIAL;
    } else if (2 == p || bytes < BCAST_LINEAR_MAX_BYTES) {
        plan->alg = BUFPOOL_BCAST_LINEAR;
    } else if (p < BCAST_SAG_MIN_RANKS) {
        plan->alg = BUFPOOL_BCAST_CHAIN;
    } else {
        plan->alg = BUFPOOL_BCAST_SCATTER_ALLGATHER;
    }
}

/* ---------------------------------------------------------------------- */
/* allgather.  Up to ALLGATHER_DIRECT_MAX_BYTES per block, posting
 * everything at once (direct) beats the ring's p - 1 dependent steps on
 * sizes that are not powers of two. */
#define ALLGATHER_DIRECT_MAX_BYTES ((size_t)64 << 10)

void bufpool_decide_allgather(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                              int forced, bufpool_plan_t *plan)
{
    const int p = call->comm_size;
    const bool pof2 = 0 == (p & (p - 1));
    bufpool_plan_init(plan, tuning, forced);
    if (BUFPOOL_ALG_AUTO == forced && measured_choice(BUFPOOL_COLL_allgather, call, plan)) {
        return; /* direct, which serves every size */
    }
    const int modeled =
        BUFPOOL_ALG_AUTO == forced ? model_choice(BUFPOOL_MODEL_ALLGATHER, call, tuning, plan) : 0;
    if (modeled) {
        plan->alg = modeled; /* the model offers recursive doubling at 2^k only */
    } else if (BUFPOOL_ALG_AUTO == forced) {
        if (pof2) {
            plan->alg = BUFPOOL_ALLGATHER_RECURSIVE_DOUBLING;
        } else if (call->bytes <= ALLGATHER_DIRECT_MAX_BYTES) {
            plan->alg = BUFPOOL_ALLGATHER_DIRECT;
        } else {
            plan->alg = BUFPOOL_ALLGATHER_RING;
        }
    }
    if (BUFPOOL_ALLGATHER_RECURSIVE_DOUBLING == plan->alg && !pof2) {
        hand_over(plan, "recursive_doubling needs a power-of-two size");
    }
}

/* ---------------------------------------------------------------------- */
/* reduce_scatter(_block): the pairwise stream or the ring (commutative
 * operations); auto leaves small inputs (bytes of the whole input) to the
 * previous module (see coll_bufpool_reduce_scatter.c's header), takes
 * pairwise on one host (measured) and the model's choice across hosts.
 * Both variants number the ring 2 (BUFPOOL_REDUCE_SCATTER_RING). */
#define RS_TWO_RANKS_MIN_BYTES  ((size_t)4 << 10)
#define RS_MIN_BYTES            ((size_t)32 << 10)
#define RSB_TWO_RANKS_MIN_BYTES ((size_t)4 << 10)
#define RSB_MIN_BYTES           ((size_t)1 << 10)

static void decide_pairwise(bufpool_coll_id_t id, const bufpool_call_t *call,
                            const bufpool_tuning_t *tuning, int forced, size_t two_ranks_min,
                            size_t min, bufpool_plan_t *plan)
{
    bufpool_plan_init(plan, tuning, forced);
    if (!call->commute) {
        hand_over(plan, "pairwise and ring need a commutative operation");
        return;
    }
    if (BUFPOOL_ALG_AUTO == forced && measured_choice(id, call, plan)) {
        if (BUFPOOL_ALG_PREVIOUS == plan->alg) {
            return;
        }
    } else if (BUFPOOL_ALG_AUTO == forced) {
        if (call->bytes < (2 == call->comm_size ? two_ranks_min : min)) {
            hand_over(plan, "auto: small input, the previous module's is faster");
            return;
        }
        /* Across hosts the model chooses between pairwise and the ring
         * (which talks to neighbours only: one flow per host link). */
        const int modeled = model_choice(BUFPOOL_MODEL_REDUCE_SCATTER, call, tuning, plan);
        plan->alg = modeled ? modeled : BUFPOOL_REDUCE_SCATTER_PAIRWISE;
    }
    if (BUFPOOL_REDUCE_SCATTER_PAIRWISE == plan->alg) {
        pairwise_stream_segments(call, plan);
    }
}

void bufpool_decide_reduce_scatter(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                                   int forced, bufpool_plan_t *plan)
{
    decide_pairwise(BUFPOOL_COLL_reduce_scatter, call, tuning, forced, RS_TWO_RANKS_MIN_BYTES,
                    RS_MIN_BYTES, plan);
}

void bufpool_decide_reduce_scatter_block(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                                         int forced, bufpool_plan_t *plan)
{
    decide_pairwise(BUFPOOL_COLL_reduce_scatter_block, call, tuning, forced,
                    RSB_TWO_RANKS_MIN_BYTES, RSB_MIN_BYTES, plan);
}

/* ---------------------------------------------------------------------- */
/* alltoall.  Auto: layer_choice (measured_rules, then the model).  On one host the model's pick, linear (every transfer posted at
 * once), is also the measured one: at p = 4, pairwise is 1.08-1.34 x tuned
 * from 16 KiB to 16 MiB while linear matches it at every size, and the
 * linear in-place form takes 0.50-0.65 x tuned's time. */

void bufpool_decide_alltoall(const bufpool_call_t *call, const bufpool_tuning_t *tuning, int forced,
                             bufpool_plan_t *plan)
{
    const int p = call->comm_size;
    const size_t bytes = call->bytes;
    bufpool_plan_init(plan, tuning, forced);
    /* In place, linear keeps a copy of the p - 1 outgoing blocks. */
    const bool copy_fits = bytes <= plan->scratch_bound / (size_t)(p - 1);
    if (BUFPOOL_ALG_AUTO == forced) {
        int chosen =
            layer_choice(BUFPOOL_COLL_alltoall, BUFPOOL_MODEL_ALLTOALL, call, tuning, plan);
        if (BUFPOOL_ALG_PREVIOUS == chosen && call->previous_unsafe) {
            /* Correct before fast: never hand back what it may corrupt. */
            chosen = BUFPOOL_ALLTOALL_LINEAR;
            plan->why = "auto: send and receive types differ, which the previous module's "
                        "Bruck alltoall may corrupt (open-mpi/ompi#10488): linear";
        }
        if (BUFPOOL_ALG_PREVIOUS == chosen) {
            hand_over(plan, plan->why);
            return;
        }
        plan->alg = call->in_place && !copy_fits ? BUFPOOL_ALLTOALL_PAIRWISE : chosen;
        return;
    }
    if (call->in_place && BUFPOOL_ALLTOALL_LINEAR == plan->alg && !copy_fits) {
        hand_over(plan, "linear in place needs the p-1 blocks within depth x segment_size");
    }
}

/* ---------------------------------------------------------------------- */
/* gather and scatter.  Auto: layer_choice (measured_rules, then the model;
 * both algorithms serve every call).  On one host the model's
 * pick, linear, is also the measured one at 3 and 4 ranks: linear is
 * 0.55-1.04 x tuned at every size and root (measured at p = 2 and 4): the
 * root's copies are the whole cost of a large gather or scatter and linear
 * does them straight between user buffers, while a relay adds a copy and,
 * when oversubscribed, a scheduling delay per hop. */
static void decide_rooted(bufpool_coll_id_t id, enum bufpool_model_coll coll,
                          const bufpool_call_t *call, const bufpool_tuning_t *tuning, int forced,
                          bufpool_plan_t *plan)
{
    bufpool_plan_init(plan, tuning, forced);
    if (BUFPOOL_ALG_AUTO == forced) {
        plan->alg = layer_choice(id, coll, call, tuning, plan);
        if (BUFPOOL_ALG_PREVIOUS == plan->alg) {
            hand_over(plan, plan->why);
        }
    }
}

void bufpool_decide_gather(const bufpool_call_t *call, const bufpool_tuning_t *tuning, int forced,
                           bufpool_plan_t *plan)
{
    decide_rooted(BUFPOOL_COLL_gather, BUFPOOL_MODEL_GATHER, call, tuning, forced, plan);
}

void bufpool_decide_scatter(const bufpool_call_t *call, const bufpool_tuning_t *tuning, int forced,
                            bufpool_plan_t *plan)
{
    decide_rooted(BUFPOOL_COLL_scatter, BUFPOOL_MODEL_SCATTER, call, tuning, forced, plan);
}

/* ---------------------------------------------------------------------- */
/* scan and exscan: auto runs the chain from a size on (see
 * coll_bufpool_scan.c's header), and recursive doubling, which holds two
 * whole messages of scratch, only when forced and within the bound. */
#define SCAN_TWO_RANKS_MIN_BYTES ((size_t)4 << 10)
#define SCAN_MIN_BYTES           ((size_t)16 << 10)
#define EXSCAN_MIN_RANKS         3
#define EXSCAN_MIN_BYTES         ((size_t)128 << 10)

static void decide_scan(bufpool_coll_id_t id, const bufpool_call_t *call,
                        const bufpool_tuning_t *tuning, int forced, bool serves_auto, int chain,
                        int rd, bufpool_plan_t *plan)
{
    bufpool_plan_init(plan, tuning, forced);
    /* A measured row's recursive doubling is kept, within its scratch
     * (below). */
    if (BUFPOOL_ALG_AUTO == forced && !measured_choice(id, call, plan)) {
        if (!serves_auto) {
            hand_over(plan, "auto: the previous module's is faster");
            return;
        }
        /* Across hosts the model's choice between the chain and recursive
         * doubling (the latter within its scratch); on one host the chain:
         * recursive doubling's partner waits cost a context switch each on
         * oversubscribed cores, which the model does not see. */
        const int modeled = model_choice(BUFPOOL_MODEL_SCAN, call, tuning, plan);
        plan->alg = modeled == rd && 2 * call->span <= plan->scratch_bound ? rd : chain;
        return;
    }
    if (rd == plan->alg && 2 * call->span > plan->scratch_bound) {
        hand_over(plan, "recursive_doubling needs two messages within depth x segment_size");
    }
}

void bufpool_decide_scan(const bufpool_call_t *call, const bufpool_tuning_t *tuning, int forced,
                         bufpool_plan_t *plan)
{
    const bool serves =
        call->bytes >= (2 == call->comm_size ? SCAN_TWO_RANKS_MIN_BYTES : SCAN_MIN_BYTES);
    decide_scan(BUFPOOL_COLL_scan, call, tuning, forced, serves, BUFPOOL_SCAN_CHAIN,
                BUFPOOL_SCAN_RECURSIVE_DOUBLING, plan);
}

void bufpool_decide_exscan(const bufpool_call_t *call, const bufpool_tuning_t *tuning, int forced,
                           bufpool_plan_t *plan)
{
    const bool serves = call->comm_size >= EXSCAN_MIN_RANKS && call->bytes >= EXSCAN_MIN_BYTES;
    decide_scan(BUFPOOL_COLL_exscan, call, tuning, forced, serves, BUFPOOL_EXSCAN_CHAIN,
                BUFPOOL_EXSCAN_RECURSIVE_DOUBLING, plan);
}

/* ---------------------------------------------------------------------- */

#define BUFPOOL_DECIDE_ENTRY(name) [BUFPOOL_COLL_##name] = bufpool_decide_##name,
const bufpool_decide_fn bufpool_decide[BUFPOOL_NCOLLS] = {
    BUFPOOL_FOREACH_COLL(BUFPOOL_DECIDE_ENTRY)};
#undef BUFPOOL_DECIDE_ENTRY
