/*
 * coll/bufpool decisions, one plan function per collective (see
 * coll_bufpool_decide.h).  What a message's size decides comes from rows of
 * data (coll_bufpool_rules.h, rules/default.rules: the measurements and
 * the size thresholds of "auto"); what stays here is each collective's own
 * default where no row matches, the cost model across hosts, and what an
 * algorithm can serve (commutativity, scratch, counts, max_requests).
 */
#include "coll_bufpool_decide.h"
#include "coll_bufpool_rules.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#define NAMES(...)                                                                                 \
    (const char *const[])                                                                          \
    {                                                                                              \
        "auto", __VA_ARGS__, NULL                                                                  \
    }

const char *const *const bufpool_algorithm_names[BUFPOOL_NCOLLS] = {
    [BUFPOOL_COLL_allreduce] =
        NAMES("recursive_doubling", "rsag", "ring", "hier", "node", "node_rsag", "hier_node"),
    [BUFPOOL_COLL_reduce] = NAMES("chain", "binary", "rsg", "node"),
    [BUFPOOL_COLL_bcast] =
        NAMES("binomial", "chain", "scatter_allgather", "linear", "node", "node_cma"),
    [BUFPOOL_COLL_allgather] = NAMES("ring", "recursive_doubling", "direct", "node", "node_cma"),
    [BUFPOOL_COLL_reduce_scatter] = NAMES("pairwise", "ring", "rhalving", "node"),
    [BUFPOOL_COLL_reduce_scatter_block] = NAMES("pairwise", "ring", "rhalving", "node"),
    [BUFPOOL_COLL_alltoall] = NAMES("pairwise", "linear"),
    [BUFPOOL_COLL_gather] = NAMES("binomial", "linear", "node"),
    [BUFPOOL_COLL_scatter] = NAMES("binomial", "linear", "node"),
    [BUFPOOL_COLL_scan] = NAMES("chain", "recursive_doubling", "node"),
    [BUFPOOL_COLL_exscan] = NAMES("chain", "recursive_doubling", "node"),
    [BUFPOOL_COLL_barrier] = NAMES("node"),
};

#define BUFPOOL_COLL_NAME(name) [BUFPOOL_COLL_##name] = #name,
const char *const bufpool_coll_names[BUFPOOL_NCOLLS] = {BUFPOOL_FOREACH_COLL(BUFPOOL_COLL_NAME)};
#undef BUFPOOL_COLL_NAME

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
 * segments cost no scratch and may be larger (unless a row sets them).  Every rank agrees: MPI's
 * MPI_IN_PLACE is all-or-none for allreduce and reduce_scatter(_block). */
static void pairwise_stream_segments(const bufpool_call_t *call, const bufpool_choice_t *choice,
                                     bufpool_plan_t *plan)
{
    if (2 == call->comm_size && !call->in_place && 0 == choice->seg_bytes) {
        plan->seg_bytes *= BUFPOOL_DIRECT_SEGMENT_FACTOR;
    }
}

/* On a communicator that spans hosts, auto takes the cost model's fastest
 * bufpool algorithm for (p, bytes, hosts, link table) (coll_bufpool_model.c,
 * docs/multihost.md) where no row matches.  The
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

/* The row (or correctness guard) that decided an auto call, if one did:
 * true and the plan's algorithm, reason and (when the row gives them)
 * segment size and depth set. */
static bool row_choice(const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    if (BUFPOOL_SOURCE_GUARD == choice->source) {
        plan->alg = choice->alg;
        plan->why = choice->note;
        return true;
    }
    if (BUFPOOL_SOURCE_ROW != choice->source) {
        return false;
    }
    plan->alg = choice->alg;
    plan->why = choice->rule->why;
    if (choice->seg_bytes > 0) {
        plan->seg_bytes = choice->seg_bytes;
    }
    if (choice->depth > 0) {
        plan->depth = choice->depth;
    }
    plan->scratch_bound = plan->seg_bytes * (size_t)plan->depth;
    return true;
}

/* The algorithm the user forced (coll_bufpool_<coll>_algorithm or the
 * communicator's info key), or BUFPOOL_ALG_AUTO. */
static int forced_of(const bufpool_choice_t *choice)
{
    return BUFPOOL_SOURCE_FORCED == choice->source ? choice->alg : BUFPOOL_ALG_AUTO;
}

static const char *const onehost_model_why = "auto: cost model, one host";

/* The algorithm auto takes for coll where no row decided: the model across
 * hosts, and on one host the model's pick for one host (the shm class of
 * the link table); used by alltoall, gather and scatter. */
static int layer_choice(enum bufpool_model_coll coll, const bufpool_call_t *call,
                        const bufpool_tuning_t *tuning, const bufpool_choice_t *choice,
                        bufpool_plan_t *plan)
{
    if (row_choice(choice, plan)) {
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

/* A choice's own reason when it hands the call over. */
static bool handed_over_by_choice(const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    if (BUFPOOL_ALG_PREVIOUS != choice->alg) {
        return false;
    }
    plan->alg = BUFPOOL_ALG_PREVIOUS;
    plan->why = BUFPOOL_SOURCE_ROW == choice->source        ? choice->rule->why
                : BUFPOOL_SOURCE_MIN_SIZE == choice->source ? "below coll_bufpool_min_size"
                                                            : "forced: previous";
    return true;
}

int bufpool_forced_for(bufpool_coll_id_t id, int forced, int hosts, const bufpool_tuning_t *tuning,
                       const char **note)
{
    const char *why = NULL;
    /* hier on one host has no hierarchy to use, and under max_requests it
     * would exceed the bound (it posts every segment at once): auto's
     * choice serves, which never takes hier under a bound. */
    if (BUFPOOL_COLL_allreduce == id &&
        (BUFPOOL_ALLREDUCE_HIER == forced || BUFPOOL_ALLREDUCE_HIER_NODE == forced)) {
        why = hosts <= 1                 ? "hier on a communicator on one host: auto's choice"
              : tuning->max_requests > 0 ? "hier does not honour max_requests: auto's choice"
                                         : NULL;
    }
    /* The node algorithms need every rank on one host. */
    if (hosts > 1 && bufpool_is_node_alg(id, forced)) {
        why = "node on a communicator across hosts: auto's choice";
    }
    if (NULL != note) {
        *note = why;
    }
    return NULL != why ? BUFPOOL_ALG_AUTO : forced;
}

/* Each collective's node algorithm (0: none; allreduce has node_rsag too). */
static const int node_alg_of[BUFPOOL_NCOLLS] = {
    [BUFPOOL_COLL_allreduce] = BUFPOOL_ALLREDUCE_NODE,
    [BUFPOOL_COLL_reduce] = BUFPOOL_REDUCE_NODE,
    [BUFPOOL_COLL_bcast] = BUFPOOL_BCAST_NODE,
    [BUFPOOL_COLL_allgather] = BUFPOOL_ALLGATHER_NODE,
    [BUFPOOL_COLL_reduce_scatter] = BUFPOOL_REDUCE_SCATTER_NODE,
    [BUFPOOL_COLL_reduce_scatter_block] = BUFPOOL_REDUCE_SCATTER_BLOCK_NODE,
    [BUFPOOL_COLL_gather] = BUFPOOL_GATHER_NODE,
    [BUFPOOL_COLL_scatter] = BUFPOOL_SCATTER_NODE,
    [BUFPOOL_COLL_scan] = BUFPOOL_SCAN_NODE,
    [BUFPOOL_COLL_exscan] = BUFPOOL_EXSCAN_NODE,
    [BUFPOOL_COLL_barrier] = BUFPOOL_BARRIER_NODE,
};

bool bufpool_is_node_cma_alg(int id, int alg)
{
    return (BUFPOOL_COLL_bcast == id && BUFPOOL_BCAST_NODE_CMA == alg) ||
           (BUFPOOL_COLL_allgather == id && BUFPOOL_ALLGATHER_NODE_CMA == alg);
}

bool bufpool_is_node_alg(int id, int alg)
{
    return id >= 0 && id < BUFPOOL_NCOLLS && alg > 0 &&
           (node_alg_of[id] == alg ||
            (BUFPOOL_COLL_allreduce == id && BUFPOOL_ALLREDUCE_NODE_RSAG == alg) ||
            bufpool_is_node_cma_alg(id, alg));
}

/* The node algorithms that go on above BUFPOOL_NODE_MAX_BYTES, in rounds
 * through the chunk segment: allreduce node_rsag and reduce node, whose
 * rounds cut whole elements (node_chunked, and scan and exscan node's
 * chain, node_chained), and bcast and allgather node, cut at any byte. */
static bool node_chunked(int id, int alg)
{
    return (BUFPOOL_COLL_allreduce == id && BUFPOOL_ALLREDUCE_NODE_RSAG == alg) ||
           (BUFPOOL_COLL_reduce == id && BUFPOOL_REDUCE_NODE == alg);
}

/* scan and exscan node, which go on above BUFPOOL_NODE_MAX_BYTES as a
 * chain through the chunk segment: rounds of whole elements, any
 * operation. */
static bool node_chained(int id, int alg)
{
    return (BUFPOOL_COLL_scan == id && BUFPOOL_SCAN_NODE == alg) ||
           (BUFPOOL_COLL_exscan == id && BUFPOOL_EXSCAN_NODE == alg);
}

static bool node_moves_rounds(int id, int alg)
{
    return (BUFPOOL_COLL_bcast == id && BUFPOOL_BCAST_NODE == alg) ||
           (BUFPOOL_COLL_allgather == id && BUFPOOL_ALLGATHER_NODE == alg) ||
           bufpool_is_node_cma_alg(id, alg);
}

size_t bufpool_node_alg_max_bytes(int id, int alg, int p)
{
    if (node_chunked(id, alg) || node_chained(id, alg) || node_moves_rounds(id, alg)) {
        return SIZE_MAX;
    }
    /* scatter's bytes are one block; the root posts all p of them. */
    return BUFPOOL_COLL_scatter == id && p > 1 ? BUFPOOL_NODE_MAX_BYTES / (size_t)p
                                               : BUFPOOL_NODE_MAX_BYTES;
}

/* A node algorithm serves one host and what fits one shared slot
 * (bufpool_node_alg_max_bytes); elsewhere the collective's own default
 * decides, as if auto, and the plan says why.  Every rank agrees: hosts,
 * size and bytes are the call's. */
static const bufpool_choice_t *node_fit(bufpool_coll_id_t id, const bufpool_call_t *call,
                                        const bufpool_choice_t *choice, bufpool_choice_t *instead)
{
    if (!bufpool_is_node_alg(id, choice->alg)) {
        return choice;
    }
    const bool rsag = BUFPOOL_COLL_allreduce == id && BUFPOOL_ALLREDUCE_NODE_RSAG == choice->alg;
    const char *why = NULL;
    if (call->hosts > 1) {
        why = "node on a communicator across hosts: auto's choice";
    } else if (node_chunked(id, choice->alg)) {
        if (call->bytes > BUFPOOL_NODE_MAX_BYTES &&
            (!call->commute || call->count < (size_t)call->comm_size ||
             call->bytes / call->count > BUFPOOL_NODE_CHUNK / (size_t)call->comm_size)) {
            why = rsag ? "node_rsag above 4 KiB needs a commutative operation, at least p elements "
                         "and elements within 64 KiB / p: auto's choice"
                       : "node above 4 KiB needs a commutative operation, at least p elements and "
                         "elements within 64 KiB / p: auto's choice";
        }
    } else if (node_chained(id, choice->alg)) {
        if (call->bytes > BUFPOOL_NODE_MAX_BYTES &&
            call->bytes / call->count > BUFPOOL_NODE_CHUNK) {
            why = "node scan and exscan above 4 KiB need elements within 64 KiB: auto's choice";
        }
    } else if (call->bytes > bufpool_node_alg_max_bytes(id, choice->alg, call->comm_size)) {
        why = BUFPOOL_COLL_scatter == id
                  ? "node scatter serves p blocks of up to 4 KiB together: auto's choice"
                  : "node serves messages up to 4 KiB (bcast and allgather: any): auto's choice";
    }
    if (NULL == why) {
        return choice;
    }
    *instead = *choice;
    instead->alg = BUFPOOL_ALG_AUTO;
    instead->source = BUFPOOL_SOURCE_DEFAULT;
    instead->rule = NULL;
    instead->seg_bytes = 0;
    instead->depth = 0;
    instead->note = why;
    return instead;
}

/* A plan function of a collective with a node algorithm: body's plan for
 * the choice, or auto's where node does not fit the call (node_fit), with
 * the reason that it did not. */
static void plan_with_node(bufpool_coll_id_t id,
                           void (*body)(const bufpool_call_t *, const bufpool_tuning_t *,
                                        const bufpool_choice_t *, bufpool_plan_t *),
                           const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                           const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    bufpool_choice_t instead;
    const bufpool_choice_t *fit = node_fit(id, call, choice, &instead);
    body(call, tuning, fit, plan);
    if (plan->alg >= 0 && NULL != fit->note) {
        plan->why = fit->note; /* a forced node that did not apply */
    }
}

/* ---------------------------------------------------------------------- */
/* allreduce.  Across hosts auto takes the model's pick, hier included, at
 * every size: on a quiet machine (2 hosts x 2 ranks, TCP; docs/multihost.md,
 * "Hierarchy-aware allreduce") forced hier measured 0.56-1.12 x the default
 * from 8 KiB to 4 MiB, rsag 1.08-1.75 x.  (A cap at 512 KiB, set from runs
 * on a machine at load 15-30, measured worse on the quiet one: 1.52-1.72 x
 * from 1 MiB.)  Not under max_requests, which hier does not honour.  On one
 * host, where no row decides: recursive doubling up to small_size (and
 * wherever rsag cannot serve), rsag above. */

void bufpool_plan_allreduce(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                            const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    bufpool_choice_t instead;
    choice = node_fit(BUFPOOL_COLL_allreduce, call, choice, &instead);
    const int forced = forced_of(choice);
    bufpool_plan_init(plan, tuning, forced);
    if (handed_over_by_choice(choice, plan)) {
        return;
    }
    /* A row's algorithm is kept, within what it serves (below). */
    const bool from_row = row_choice(choice, plan);
    const bool decide_here = BUFPOOL_ALG_AUTO == forced && !from_row;
    const int modeled = decide_here ? model_choice(BUFPOOL_MODEL_ALLREDUCE, call, tuning, plan) : 0;
    if (modeled) {
        /* Within what each algorithm can serve: recursive doubling holds the
         * whole message in scratch, rsag needs a commutative operation. */
        plan->alg = modeled;
        if (BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING == modeled && call->bytes > plan->scratch_bound &&
            call->commute && call->count >= (size_t)call->comm_size) {
            plan->alg = BUFPOOL_ALLREDUCE_RSAG;
        } else if (BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING != modeled &&
                   (!call->commute || call->count < (size_t)call->comm_size)) {
            plan->alg = BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING;
        }
    } else if (decide_here) {
        plan->alg = (call->bytes <= tuning->small_size || call->count < (size_t)call->comm_size ||
                     !call->commute)
                        ? BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING
                        : BUFPOOL_ALLREDUCE_RSAG;
    }
    /* hier posts every segment at once: under max_requests, whether the
     * model or a row chose it (a forced hier never gets here), rsag, bounded
     * below. */
    if ((BUFPOOL_ALLREDUCE_HIER == plan->alg || BUFPOOL_ALLREDUCE_HIER_NODE == plan->alg) &&
        plan->max_requests > 0) {
        plan->alg = BUFPOOL_ALLREDUCE_RSAG;
        plan->why = from_row ? "a row's hier does not honour max_requests: rsag"
                             : "auto: cost model's hier does not honour max_requests: rsag";
    }
    /* A guard may not hand its call back (the module below computes it
     * wrongly): past recursive doubling's scratch, rsag serves it, bounded
     * (its calls are commutative). */
    if (BUFPOOL_SOURCE_GUARD == choice->source &&
        BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING == plan->alg && call->bytes > plan->scratch_bound &&
        call->commute) {
        plan->alg = BUFPOOL_ALLREDUCE_RSAG;
    }
    /* recursive_doubling needs a whole message of scratch: only within the
     * bound (in signature bytes, which every rank agrees on; a layout with
     * gaps takes its span).  rsag and ring reorder the reduction:
     * commutative operations only. */
    if (BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING == plan->alg && call->bytes > plan->scratch_bound) {
        hand_over(plan, "recursive_doubling needs the message within depth x segment_size");
    } else if (BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING != plan->alg &&
               BUFPOOL_ALLREDUCE_NODE != plan->alg && BUFPOOL_ALLREDUCE_NODE_RSAG != plan->alg &&
               !call->commute) {
        hand_over(plan, "rsag, ring and hier need a commutative operation");
    } else if (BUFPOOL_ALLREDUCE_RSAG == plan->alg) {
        pairwise_stream_segments(call, choice, plan);
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
    if (plan->alg >= 0 && NULL != choice->note) {
        plan->why = choice->note; /* a forced hier that did not apply */
    }
}

size_t bufpool_rsag_requests(const bufpool_call_t *call, size_t seg_bytes)
{
    const size_t p = (size_t)call->comm_size;
    if (p < 2 || 0 == call->count || 0 == call->bytes) {
        return 0;
    }
    /* Elements per segment as bufpool_segs_cut counts them (signature
     * bytes, at least one element), segments of the longest block. */
    size_t elem = call->bytes / call->count;
    size_t per = seg_bytes / (elem ? elem : 1);
    per = per ? per : 1;
    size_t block = (call->count + p - 1) / p;
    return 2 * (p - 1) * ((block + per - 1) / per);
}

/* ---------------------------------------------------------------------- */
/* reduce (see coll_bufpool_reduce.c's header for the algorithms).  The
 * rows decide every size (rules/default.rules); without them the binary
 * tree serves commutative operations and the chain, which keeps rank
 * order, the others. */

static void plan_reduce_body(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                             const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    const int forced = forced_of(choice);
    bufpool_plan_init(plan, tuning, forced);
    if (handed_over_by_choice(choice, plan)) {
        return;
    }
    /* Not the model across hosts: on 2 hosts x 1 and x 2 ranks its picks
     * were 1.03 and 1.55 x tuned (medians from 4 KiB) against 0.98 and 1.22
     * with the rows, which hand small reduces back (docs/multihost.md). */
    if (BUFPOOL_ALG_AUTO == forced && !row_choice(choice, plan)) {
        plan->alg = call->commute ? BUFPOOL_REDUCE_BINARY : BUFPOOL_REDUCE_CHAIN;
    }
    /* Only the chain and node keep rank order. */
    if (BUFPOOL_REDUCE_CHAIN != plan->alg && BUFPOOL_REDUCE_NODE != plan->alg && !call->commute) {
        hand_over(plan, "only chain and node serve a non-commutative operation");
    }
}

void bufpool_plan_reduce(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                         const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    plan_with_node(BUFPOOL_COLL_reduce, plan_reduce_body, call, tuning, choice, plan);
}

/* ---------------------------------------------------------------------- */
/* bcast.  The rows decide by size (rules/default.rules: the chain from
 * 1 MiB on one host, scatter_allgather and the chain from 16 ranks, tuned's
 * own below); across hosts the model decides where no row does.  What
 * stays here is what coll_bufpool_small_size means for bcast and the
 * default of the rest:
 * - on 8 or more ranks, messages up to small_size are latency-bound:
 *   binomial takes log2(p) steps instead of p - 1 sends from the root;
 * - otherwise linear: the root posts a send to every rank at once; each
 *   receiver copies for itself, and no relay has to be scheduled before
 *   the data moves on (at p = 4 binomial is 15-40% slower than linear from
 *   16 KiB to 256 KiB; up to BUFPOOL_INLINE_SEND_MAX bytes, where the
 *   root's sends return at once, linear takes 0.15 x tuned's time). */
#define BCAST_BINOMIAL_MIN_RANKS 8

static void plan_bcast_body(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                            const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    const int forced = forced_of(choice);
    bufpool_plan_init(plan, tuning, forced);
    if (handed_over_by_choice(choice, plan) || BUFPOOL_ALG_AUTO != forced ||
        row_choice(choice, plan)) {
        return;
    }
    const int modeled = model_choice(BUFPOOL_MODEL_BCAST, call, tuning, plan);
    if (modeled) {
        plan->alg = modeled;
    } else if (call->comm_size >= BCAST_BINOMIAL_MIN_RANKS && call->bytes <= tuning->small_size) {
        plan->alg = BUFPOOL_BCAST_BINOMIAL;
    } else {
        plan->alg = BUFPOOL_BCAST_LINEAR;
    }
}

void bufpool_plan_bcast(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                        const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    plan_with_node(BUFPOOL_COLL_bcast, plan_bcast_body, call, tuning, choice, plan);
}

/* ---------------------------------------------------------------------- */
/* allgather.  The rows decide first (rules/default.rules), the model
 * across hosts.  Otherwise recursive doubling on a power-of-two size, and
 * on the others, up to ALLGATHER_DIRECT_MAX_BYTES per block, posting
 * everything at once (direct), which beats the ring's p - 1 dependent
 * steps.  The one size threshold left in code: it applies to sizes that
 * are not powers of two, which a row's ranks= range cannot say. */
#define ALLGATHER_DIRECT_MAX_BYTES ((size_t)64 << 10)

static void plan_allgather_body(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                                const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    const int p = call->comm_size;
    const bool pof2 = 0 == (p & (p - 1));
    const int forced = forced_of(choice);
    bufpool_plan_init(plan, tuning, forced);
    if (handed_over_by_choice(choice, plan)) {
        return;
    }
    if (BUFPOOL_ALG_AUTO == forced && row_choice(choice, plan)) {
        /* a row's algorithm, within what it serves (below) */
    } else if (BUFPOOL_ALG_AUTO == forced) {
        const int modeled = model_choice(BUFPOOL_MODEL_ALLGATHER, call, tuning, plan);
        if (modeled) {
            plan->alg = modeled; /* the model offers recursive doubling at 2^k only */
        } else if (pof2) {
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

void bufpool_plan_allgather(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                            const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    plan_with_node(BUFPOOL_COLL_allgather, plan_allgather_body, call, tuning, choice, plan);
}

/* ---------------------------------------------------------------------- */
/* reduce_scatter(_block): the pairwise stream or the ring (commutative
 * operations); the rows leave small inputs (bytes of the whole input) to
 * the previous module (see coll_bufpool_reduce_scatter.c's header), auto
 * takes pairwise on one host and the model's choice across hosts.  Both
 * variants number the ring 2 (BUFPOOL_REDUCE_SCATTER_RING). */

static void plan_pairwise(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                          const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    const int forced = forced_of(choice);
    bufpool_plan_init(plan, tuning, forced);
    if (!call->commute) {
        hand_over(plan, "bufpool's reduce_scatter algorithms need a commutative operation");
        return;
    }
    if (handed_over_by_choice(choice, plan)) {
        return;
    }
    if (BUFPOOL_ALG_AUTO == forced && !row_choice(choice, plan)) {
        /* Across hosts the model chooses between pairwise and the ring
         * (which talks to neighbours only: one flow per host link). */
        const int modeled = model_choice(BUFPOOL_MODEL_REDUCE_SCATTER, call, tuning, plan);
        plan->alg = modeled ? modeled : BUFPOOL_REDUCE_SCATTER_PAIRWISE;
    }
    if (BUFPOOL_REDUCE_SCATTER_PAIRWISE == plan->alg) {
        pairwise_stream_segments(call, choice, plan);
    }
}

void bufpool_plan_reduce_scatter(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                                 const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    plan_with_node(BUFPOOL_COLL_reduce_scatter, plan_pairwise, call, tuning, choice, plan);
}

void bufpool_plan_reduce_scatter_block(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                                       const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    plan_with_node(BUFPOOL_COLL_reduce_scatter_block, plan_pairwise, call, tuning, choice, plan);
}

/* ---------------------------------------------------------------------- */
/* alltoall.  Auto: layer_choice (rows, then the model).  On one host the
 * model's pick, linear (every transfer posted at once), is also the
 * measured one: at p = 4, pairwise is 1.08-1.34 x tuned from 16 KiB to 16
 * MiB while linear matches it at every size, and the linear in-place form
 * takes 0.50-0.65 x tuned's time. */

void bufpool_plan_alltoall(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                           const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    const int p = call->comm_size;
    const size_t bytes = call->bytes;
    const int forced = forced_of(choice);
    bufpool_plan_init(plan, tuning, forced);
    /* In place, linear keeps a copy of the p - 1 outgoing blocks. */
    const bool copy_fits = bytes <= plan->scratch_bound / (size_t)(p - 1);
    if (handed_over_by_choice(choice, plan)) {
        return;
    }
    if (BUFPOOL_ALG_AUTO == forced) {
        const int chosen = layer_choice(BUFPOOL_MODEL_ALLTOALL, call, tuning, choice, plan);
        plan->alg = call->in_place && !copy_fits ? BUFPOOL_ALLTOALL_PAIRWISE : chosen;
        return;
    }
    if (call->in_place && BUFPOOL_ALLTOALL_LINEAR == plan->alg && !copy_fits) {
        hand_over(plan, "linear in place needs the p-1 blocks within depth x segment_size");
    }
}

/* ---------------------------------------------------------------------- */
/* gather and scatter.  Auto: layer_choice (rows, then the model; both
 * algorithms serve every call).  On one host the model's pick, linear, is
 * also the measured one at 3 and 4 ranks: linear is 0.55-1.04 x tuned at
 * every size and root (measured at p = 2 and 4): the root's copies are the
 * whole cost of a large gather or scatter and linear does them straight
 * between user buffers, while a relay adds a copy and, when
 * oversubscribed, a scheduling delay per hop. */
static void plan_rooted(enum bufpool_model_coll coll, const bufpool_call_t *call,
                        const bufpool_tuning_t *tuning, const bufpool_choice_t *choice,
                        bufpool_plan_t *plan)
{
    const int forced = forced_of(choice);
    bufpool_plan_init(plan, tuning, forced);
    if (handed_over_by_choice(choice, plan)) {
        return;
    }
    if (BUFPOOL_ALG_AUTO == forced) {
        plan->alg = layer_choice(coll, call, tuning, choice, plan);
    }
}

static void plan_gather_body(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                             const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    plan_rooted(BUFPOOL_MODEL_GATHER, call, tuning, choice, plan);
}

static void plan_scatter_body(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                              const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    plan_rooted(BUFPOOL_MODEL_SCATTER, call, tuning, choice, plan);
}

void bufpool_plan_gather(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                         const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    plan_with_node(BUFPOOL_COLL_gather, plan_gather_body, call, tuning, choice, plan);
}

void bufpool_plan_scatter(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                          const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    plan_with_node(BUFPOOL_COLL_scatter, plan_scatter_body, call, tuning, choice, plan);
}

/* ---------------------------------------------------------------------- */
/* scan and exscan: where no row decides, the chain (see
 * coll_bufpool_scan.c's header); recursive doubling, which holds two whole
 * messages of scratch, where a row or the model across hosts picks it, or
 * when forced, and only within the bound; node (one host; above 4 KiB
 * a chain of rounds through the chunk segment) where a row or the user
 * names it (plan_with_node). */

static void plan_scan_family(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                             const bufpool_choice_t *choice, int chain, int rd,
                             bufpool_plan_t *plan)
{
    const int forced = forced_of(choice);
    bufpool_plan_init(plan, tuning, forced);
    if (handed_over_by_choice(choice, plan)) {
        return;
    }
    /* A row's recursive doubling is kept, within its scratch (below). */
    if (BUFPOOL_ALG_AUTO == forced && !row_choice(choice, plan)) {
        /* Across hosts the model's choice between the chain and recursive
         * doubling (the latter within its scratch); on one host the chain:
         * recursive doubling's partner waits cost a context switch each on
         * oversubscribed cores, which the model does not see. */
        const int modeled = model_choice(BUFPOOL_MODEL_SCAN, call, tuning, plan);
        plan->alg = modeled == rd && 2 * call->bytes <= plan->scratch_bound ? rd : chain;
        return;
    }
    if (rd == plan->alg && 2 * call->bytes > plan->scratch_bound) {
        hand_over(plan, "recursive_doubling needs two messages within depth x segment_size");
    }
}

static void plan_scan_body(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                           const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    plan_scan_family(call, tuning, choice, BUFPOOL_SCAN_CHAIN, BUFPOOL_SCAN_RECURSIVE_DOUBLING,
                     plan);
}

static void plan_exscan_body(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                             const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    plan_scan_family(call, tuning, choice, BUFPOOL_EXSCAN_CHAIN, BUFPOOL_EXSCAN_RECURSIVE_DOUBLING,
                     plan);
}

void bufpool_plan_scan(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                       const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    plan_with_node(BUFPOOL_COLL_scan, plan_scan_body, call, tuning, choice, plan);
}

void bufpool_plan_exscan(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                         const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    plan_with_node(BUFPOOL_COLL_exscan, plan_exscan_body, call, tuning, choice, plan);
}

/* ---------------------------------------------------------------------- */
/* barrier: bufpool has one, over the node segment (a barrier has nothing
 * to pool: only the shared segment makes it faster); it serves where a
 * row or the user names it, on one host, and hands every other call back
 * (the module then does not install MPI_Barrier at all: see
 * bufpool_module_hands_back_all). */

static void plan_barrier_body(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                              const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    (void)call;
    const int forced = forced_of(choice);
    bufpool_plan_init(plan, tuning, forced);
    if (handed_over_by_choice(choice, plan)) {
        return;
    }
    if (BUFPOOL_ALG_AUTO == forced && !row_choice(choice, plan)) {
        hand_over(plan, "barrier: bufpool's runs on one host where a rule or the user names node");
    }
}

void bufpool_plan_barrier(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                          const bufpool_choice_t *choice, bufpool_plan_t *plan)
{
    plan_with_node(BUFPOOL_COLL_barrier, plan_barrier_body, call, tuning, choice, plan);
}

/* ---------------------------------------------------------------------- */
/* Correctness guards of the size maps (coll_bufpool_decide.h). */

size_t bufpool_bruck_alltoall_max_bytes(int p)
{
    /* ompi_coll_tuned_alltoall_intra_dec_fixed (4.1.0 to 5.0.x): algorithm
     * 3 below these block sizes (from 4 bytes at 16-31 ranks; serving the
     * smaller ones too costs nothing). */
    static const struct {
        int ranks_below;
        size_t bytes_below;
    } bruck[] = {{16, 0}, {64, 512}, {512, 1024}, {2048, 512}, {4096, 1024}, {INT_MAX, 2048}};
    for (size_t i = 0; i < sizeof(bruck) / sizeof(*bruck); i++) {
        if (p < bruck[i].ranks_below) {
            return bruck[i].bytes_below > 0 ? bruck[i].bytes_below - 1 : 0;
        }
    }
    return 2047;
}

size_t bufpool_ring_allreduce_spans(int p, bufpool_bytes_span_t *spans)
{
    /* ompi_coll_tuned_allreduce_intra_dec_fixed, commutative operations
     * (the same table in 4.1, 5.0.10 and 6.0.x): algorithm 4 (ring) or 5
     * (segmented ring) in these bands of total_dsize, by communicator
     * size.  (Both fall back to recursive doubling below p elements;
     * serving those too costs nothing.) */
    static const struct {
        int ranks_below;
        size_t n;
        bufpool_bytes_span_t spans[BUFPOOL_RING_ALLREDUCE_SPANS_MAX];
    } ring[] = {
        {4, 3, {{0, 7}, {4096, 8191}, {16384, 262143}}},
        {8, 1, {{0, 15}}},
        {16, 0, {{0, 0}}},
        {32, 1, {{0, 63}}},
        {64, 1, {{0, 127}}},
        {2048, 0, {{0, 0}}},
        {4096, 1, {{2048, 4095}}},
        {INT_MAX, 1, {{2048, 16383}}},
    };
    for (size_t i = 0; i < sizeof(ring) / sizeof(*ring); i++) {
        if (p < ring[i].ranks_below) {
            memcpy(spans, ring[i].spans, ring[i].n * sizeof(*spans));
            return ring[i].n;
        }
    }
    return 0;
}

/* Split map's range i so that it ends at bytes_max (the rest a range of
 * its own after it, with the same choice). */
static void range_split(bufpool_range_t *map, size_t *n, size_t i, size_t bytes_max)
{
    memmove(&map[i + 1], &map[i], (*n - i) * sizeof(*map));
    (*n)++;
    map[i].bytes_max = bytes_max;
}

/* One walk of a size map for both edits below: every range from bytes_min
 * to bytes_max that the edit touches is split at either bound it crosses
 * (the parts outside stay as they were) and edited. */
typedef struct sizemap_edit {
    bool (*touches)(const bufpool_choice_t *choice);
    void (*apply)(bufpool_choice_t *choice, const bufpool_choice_t *with);
    const bufpool_choice_t *with;
} sizemap_edit_t;

static size_t sizemap_edit(bufpool_range_t *map, size_t n, size_t bytes_min, size_t bytes_max,
                           const sizemap_edit_t *edit)
{
    size_t lo = 0;
    for (size_t i = 0; i < n && lo <= bytes_max; i++) {
        if (map[i].bytes_max >= bytes_min && edit->touches(&map[i].choice)) {
            if (lo < bytes_min) {
                /* [lo, bytes_min - 1] stays; the range after it is edited. */
                range_split(map, &n, i, bytes_min - 1);
                lo = bytes_min;
                i++;
            }
            if (map[i].bytes_max > bytes_max) {
                /* [lo, bytes_max] is edited; the rest stays. */
                range_split(map, &n, i, bytes_max);
            }
            edit->apply(&map[i].choice, edit->with);
        }
        lo = map[i].bytes_max + 1;
        if (SIZE_MAX == map[i].bytes_max) {
            break;
        }
    }
    return n;
}

static bool touches_every_choice(const bufpool_choice_t *choice)
{
    (void)choice;
    return true;
}

static void mark_guarded(bufpool_choice_t *choice, const bufpool_choice_t *with)
{
    (void)with;
    choice->guarded = true;
}

/* A "previous" from a rules row or min_size; not one the user forced. */
static bool touches_handed_back(const bufpool_choice_t *choice)
{
    return BUFPOOL_ALG_PREVIOUS == choice->alg && BUFPOOL_SOURCE_FORCED != choice->source;
}

static void replace_choice(bufpool_choice_t *choice, const bufpool_choice_t *with)
{
    *choice = *with;
}

size_t bufpool_sizemap_guard(bufpool_range_t *map, size_t n, size_t bytes_min, size_t bytes_max)
{
    const sizemap_edit_t guard = {.touches = touches_every_choice, .apply = mark_guarded};
    return sizemap_edit(map, n, bytes_min, bytes_max, &guard);
}

size_t bufpool_sizemap_serve_range(bufpool_range_t *map, size_t n, size_t bytes_min,
                                   size_t bytes_max, const bufpool_choice_t *serve)
{
    const sizemap_edit_t serving = {
        .touches = touches_handed_back, .apply = replace_choice, .with = serve};
    return sizemap_edit(map, n, bytes_min, bytes_max, &serving);
}

size_t bufpool_sizemap_serve_upto(bufpool_range_t *map, size_t n, size_t bytes_max,
                                  const bufpool_choice_t *serve)
{
    return bufpool_sizemap_serve_range(map, n, 0, bytes_max, serve);
}

/* ---------------------------------------------------------------------- */
/* The whole decision of one call, rows read in place (tests, coll_model). */

static bufpool_choice_t choice_for_call(bufpool_coll_id_t id, const bufpool_call_t *call,
                                        const bufpool_tuning_t *tuning, int forced)
{
    const bufpool_shape_t shape = {.ranks = call->comm_size,
                                   .hosts = call->hosts,
                                   .ppn = call->max_ppn,
                                   .commutative = call->commute,
                                   .in_place = call->in_place,
                                   .form = BUFPOOL_FORM_BLOCKING};
    const char *note;
    forced = bufpool_forced_for(id, forced, call->hosts, tuning, &note);
    return bufpool_rules_choose(tuning->rules, id, &shape, call->bytes, forced, note);
}

#define BUFPOOL_DECIDE_DEF(name)                                                                   \
    void bufpool_decide_##name(const bufpool_call_t *call, const bufpool_tuning_t *tuning,         \
                               int forced, bufpool_plan_t *plan)                                   \
    {                                                                                              \
        const bufpool_choice_t choice =                                                            \
            choice_for_call(BUFPOOL_COLL_##name, call, tuning, forced);                            \
        bufpool_plan_##name(call, tuning, &choice, plan);                                          \
    }
BUFPOOL_FOREACH_COLL(BUFPOOL_DECIDE_DEF)
#undef BUFPOOL_DECIDE_DEF

#define BUFPOOL_PLAN_ENTRY(name) [BUFPOOL_COLL_##name] = bufpool_plan_##name,
const bufpool_plan_fn bufpool_plan[BUFPOOL_NCOLLS] = {BUFPOOL_FOREACH_COLL(BUFPOOL_PLAN_ENTRY)};
#undef BUFPOOL_PLAN_ENTRY

#define BUFPOOL_DECIDE_ENTRY(name) [BUFPOOL_COLL_##name] = bufpool_decide_##name,
const bufpool_decide_fn bufpool_decide[BUFPOOL_NCOLLS] = {
    BUFPOOL_FOREACH_COLL(BUFPOOL_DECIDE_ENTRY)};
#undef BUFPOOL_DECIDE_ENTRY
