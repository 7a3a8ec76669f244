/*
 * The entry path of every bufpool collective.  The blocking entry points
 * are generated here from the one table of coll_bufpool_entries.h (the
 * nonblocking and persistent ones in coll_bufpool_nb.c): a call's entry
 * point computes its call class and bytes once, finds its range in the size
 * map its communicator resolved at enable (coll_bufpool_rules.h) and, when
 * that range hands it back, calls the previous module at once: no rule,
 * string or argument is looked at.  Otherwise its slow path (out of line,
 * same range) describes the call, plans it (bufpool_enter: the decision
 * layer's plan function) and runs bufpool's algorithm (bufpool_run).  Also
 * here: the explanation of a call and its counters.
 */
#include "coll_bufpool_entry.h"
#include "coll_bufpool_entries.h"
#include "algorithms/coll_bufpool_node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/op/op.h"
#include "opal/util/output.h"

#define COMPONENT (&mca_coll_bufpool_component)

/* Collectives whose empty call still goes through selection and is counted
 * (as it always has); the others (reductions and scans) return at once. */
static const bool empty_call_counted[BUFPOOL_NCOLLS] = {
    [BUFPOOL_COLL_bcast] = true,  [BUFPOOL_COLL_allgather] = true, [BUFPOOL_COLL_alltoall] = true,
    [BUFPOOL_COLL_gather] = true, [BUFPOOL_COLL_scatter] = true,
};

void bufpool_explain(bufpool_coll_id_t id, int form, int alg, const char *why, size_t bytes,
                     struct ompi_communicator_t *comm)
{
    const char *name = alg < 0 ? "previous module" : bufpool_algorithm_names[id][alg];
    char forced[64], coll[48];
    if (0 == strcmp(why, "forced")) {
        snprintf(forced, sizeof(forced), "forced by coll_bufpool_%s_algorithm",
                 bufpool_coll_names[id]);
        why = forced;
    }
    /* The form's MPI name: iallreduce, allreduce_init. */
    snprintf(coll, sizeof(coll), "%s%s%s", BUFPOOL_FORM_NONBLOCKING == form ? "i" : "",
             bufpool_coll_names[id], BUFPOOL_FORM_PERSISTENT == form ? "_init" : "");
    /* Framework verbosity, as the other coll components log theirs. */
    opal_output_verbose(20, ompi_coll_base_framework.framework_output,
                        "coll:bufpool: %s of %zu bytes per rank on %s (%d ranks): %s (%s)", coll,
                        bytes, comm->c_name, ompi_comm_size(comm), name, why);
    if (COMPONENT->verbose >= 2) {
        opal_output(0, "coll_bufpool: %s of %zu bytes per rank on %s (%d ranks, rank %d): %s (%s)",
                    coll, bytes, comm->c_name, ompi_comm_size(comm), ompi_comm_rank(comm), name,
                    why);
    }
}

const char *bufpool_choice_why(bufpool_coll_id_t id, const bufpool_choice_t *choice)
{
    (void)id;
    switch (choice->source) {
        case BUFPOOL_SOURCE_ROW:
            return choice->rule->why;
        case BUFPOOL_SOURCE_MIN_SIZE:
            return "below coll_bufpool_min_size";
        case BUFPOOL_SOURCE_FORCED:
            return "forced";
        case BUFPOOL_SOURCE_GUARD:
            return choice->note;
        default:
            return "auto";
    }
}

bufpool_entry_t bufpool_enter(bufpool_coll_id_t id, int form, mca_coll_bufpool_module_t *module,
                              const bufpool_call_t *in_call, const bufpool_choice_t *choice,
                              struct ompi_communicator_t *comm, bufpool_plan_t *plan)
{
    /* The hosts the communicator spans were counted once, when the module
     * was enabled; every decision sees them. */
    bufpool_call_t call = *in_call;
    call.hosts = module->hosts;
    call.max_ppn = module->max_ppn;

    bufpool_plan[id](&call, &COMPONENT->tuning, choice, plan);
    /* A communicator's first node calls from the rules go to the previous
     * module (coll_bufpool_node_warmup_calls): its segment is set up only
     * once it has made that many.  Not a persistent request's: it is made
     * to be started many times (and libnbc, the module before us there,
     * keeps a freed request's scratch: 512 KiB per init and free at 512
     * KiB).  The form is the same on every rank: MPI matches an init only
     * with inits.  A call the previous module may compute wrongly (a
     * guarded range) runs node's point-to-point fallback instead, as when
     * the segment cannot be had. */
    bool guarded = BUFPOOL_SOURCE_GUARD == choice->source;
    if (OPAL_UNLIKELY(bufpool_is_node_alg(id, plan->alg)) && BUFPOOL_SOURCE_ROW == choice->source &&
        BUFPOOL_FORM_PERSISTENT != form && module->node_row_calls < COMPONENT->node_warmup_calls) {
        module->node_row_calls++;
        if (choice->guarded) {
            guarded = true;
            plan->alg = bufpool_node_fallback(id, &call, plan);
            plan->why = "node: one of the communicator's first calls "
                        "(coll_bufpool_node_warmup_calls), guarded: node's point-to-point fallback";
        } else {
            plan->alg = BUFPOOL_ALG_PREVIOUS;
            plan->why = "node: one of the communicator's first calls "
                        "(coll_bufpool_node_warmup_calls)";
        }
    }
    if (OPAL_UNLIKELY(module->explain)) {
        bufpool_explain(id, form, plan->alg, plan->why, call.bytes, comm);
    }
    if (plan->alg < 0) {
        bufpool_module_count(&module->fallbacks[form][id]);
        return BUFPOOL_ENTRY_PREVIOUS;
    }
    bufpool_module_count(&module->calls[form][id]);
    if (OPAL_UNLIKELY(guarded)) {
        (void)__atomic_fetch_add(&COMPONENT->guarded_calls, 1, __ATOMIC_RELAXED);
    }
    return empty_call_counted[id] && 0 == call.bytes ? BUFPOOL_ENTRY_DONE : BUFPOOL_ENTRY_RUN;
}

int bufpool_serve(bufpool_coll_id_t id, const bufpool_args_t *a, const bufpool_range_t *range,
                  size_t bytes, struct ompi_communicator_t *comm, mca_coll_bufpool_module_t *module,
                  bool *hand_back)
{
    const int form = BUFPOOL_FORM_BLOCKING;
    *hand_back = bufpool_hands_back(module, form, id, range, bytes, comm);
    if (*hand_back) {
        return OMPI_SUCCESS;
    }
    bufpool_args_t own = *a;
    if (!bufpool_args_own_counts(&own, ompi_comm_size(comm))) {
        /* Past the decision to serve: an error, never a hand-back the
         * others would not follow. */
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    const bufpool_call_t call = bufpool_describe(id, &own, comm);
    bufpool_plan_t plan;
    int rc = OMPI_SUCCESS;
    switch (bufpool_enter(id, form, module, &call, &range->choice, comm, &plan)) {
        case BUFPOOL_ENTRY_PREVIOUS:
            *hand_back = true;
            break;
        case BUFPOOL_ENTRY_DONE:
            break;
        default:
            rc = bufpool_run(id, &own, &call, &plan, comm, &module->state, NULL);
            break;
    }
    free(own.owned_counts);
    return rc;
}

int bufpool_own_block_hand_back(const bufpool_own_block_t *own)
{
    (void)__atomic_fetch_add(&COMPONENT->own_block_copies, 1, __ATOMIC_RELAXED);
    return bufpool_own_block_copy(own, COMPONENT->tuning.segment_size);
}

/* ---------------------------------------------------------------------- */
/* The blocking entry points, from the table (coll_bufpool_entries.h).
 *
 * The fast path (every call of a collective goes through it): the range of
 * the call's bytes; when it hands the call back and nothing is to be
 * explained, counted and a tail call of the previous module.  Everything
 * else (explanations, calls bufpool serves, counts beyond int on Open MPI
 * 6, empty reductions) takes the slow path with the same range.  Every
 * hand-back goes through <coll>_previous: the previous module's function,
 * after a rank's own block at risk in a gather, scatter or allgather is
 * mended (an alltoall's is copied again after it): bufpool_own_block_at_risk,
 * out of line in <coll>_previous_own; inline only a compare of the two
 * datatypes, so that the fast path keeps no stack frame, and nothing for
 * the other collectives. */
#define BUFPOOL_BLOCKING_ENTRY(name, params, args, prep, cls, bytes, fits, empty, init, own,       \
                               mended)                                                             \
    static BUFPOOL_NOINLINE int name##_previous_own(BUFPOOL_EXPAND params,                         \
                                                    mca_coll_bufpool_module_t *module)             \
    {                                                                                              \
        bufpool_own_block_t bp_own_ = BUFPOOL_EXPAND own;                                          \
        if (!bufpool_own_block_at_risk(&bp_own_, comm)) {                                          \
            return BUFPOOL_PREVIOUS(module, name, BUFPOOL_EXPAND args);                            \
        }                                                                                          \
        if (bufpool_own_block_after(&bp_own_)) {                                                   \
            const int rc = BUFPOOL_PREVIOUS(module, name, BUFPOOL_EXPAND args);                    \
            return OMPI_SUCCESS != rc ? rc : bufpool_own_block_hand_back(&bp_own_);                \
        }                                                                                          \
        int rc = bufpool_own_block_prepare(&bp_own_);                                              \
        if (OMPI_SUCCESS == rc) {                                                                  \
            rc = bufpool_own_block_hand_back(&bp_own_);                                            \
        }                                                                                          \
        if (OMPI_SUCCESS == rc) {                                                                  \
            rc = BUFPOOL_PREVIOUS(module, name, BUFPOOL_EXPAND mended);                            \
        }                                                                                          \
        bufpool_own_block_release(&bp_own_);                                                       \
        return rc;                                                                                 \
    }                                                                                              \
    static inline int name##_previous(BUFPOOL_EXPAND params, mca_coll_bufpool_module_t *module)    \
    {                                                                                              \
        const bufpool_own_block_t bp_own_ = BUFPOOL_EXPAND own;                                    \
        if (OPAL_UNLIKELY(bufpool_own_block_may_be_at_risk(&bp_own_))) {                           \
            return name##_previous_own(BUFPOOL_EXPAND args, module);                               \
        }                                                                                          \
        return BUFPOOL_PREVIOUS(module, name, BUFPOOL_EXPAND args);                                \
    }                                                                                              \
    static BUFPOOL_NOINLINE int name##_slow(BUFPOOL_EXPAND params,                                 \
                                            mca_coll_bufpool_module_t *module,                     \
                                            const bufpool_range_t *range, size_t bp_bytes_)        \
    {                                                                                              \
        prep;                                                                                      \
        if (empty) {                                                                               \
            return OMPI_SUCCESS;                                                                   \
        }                                                                                          \
        if (!(fits)) {                                                                             \
            bufpool_module_count(&module->fallbacks[BUFPOOL_FORM_BLOCKING][BUFPOOL_COLL_##name]);  \
            return name##_previous(BUFPOOL_EXPAND args, module);                                   \
        }                                                                                          \
        const bufpool_args_t a = BUFPOOL_EXPAND init;                                              \
        bool hand_back;                                                                            \
        const int rc =                                                                             \
            bufpool_serve(BUFPOOL_COLL_##name, &a, range, bp_bytes_, comm, module, &hand_back);    \
        return hand_back ? name##_previous(BUFPOOL_EXPAND args, module) : rc;                      \
    }                                                                                              \
    int mca_coll_bufpool_##name(BUFPOOL_EXPAND params, mca_coll_base_module_t *base)               \
    {                                                                                              \
        mca_coll_bufpool_module_t *const module = (mca_coll_bufpool_module_t *)base;               \
        prep;                                                                                      \
        BUFPOOL_ENTRY_HEAD(module, BUFPOOL_FORM_BLOCKING, name, cls, bytes, empty,                 \
                           name##_previous(BUFPOOL_EXPAND args, module))                           \
        return name##_slow(BUFPOOL_EXPAND args, module, range, bp_bytes_);                         \
    }
BUFPOOL_ENTRY_TABLE(BUFPOOL_BLOCKING_ENTRY)
#undef BUFPOOL_BLOCKING_ENTRY

/* The table's own column, read as a flag: its first token pasted after
 * BUFPOOL_MENDS_ names one of these two (the column is an initializer of
 * the call's arguments, so only its first token is known here); a column
 * of another form does not compile. */
#define BUFPOOL_MENDS_BUFPOOL_NO_OWN_BLOCK             false
#define BUFPOOL_MENDS_BUFPOOL_OWN_BLOCK_OF(kind, root) true
#define BUFPOOL_MENDS_COLUMN(name, params, args, prep, cls, bytes, fits, empty, init, own, mended) \
    [BUFPOOL_COLL_##name] = BUFPOOL_MENDS_##own,
const bool bufpool_hand_back_mends[BUFPOOL_NCOLLS] = {BUFPOOL_ENTRY_TABLE(BUFPOOL_MENDS_COLUMN)};
#undef BUFPOOL_MENDS_COLUMN
