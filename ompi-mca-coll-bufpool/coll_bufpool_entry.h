/*
 * The entry path of every bufpool collective (coll_bufpool_entry.c): the
 * range a call's size map gives it, its hand-back (counted, explained when
 * asked), its plan and the slow path of a blocking call.  The entry points
 * themselves are generated from coll_bufpool_entries.h.
 */
#ifndef MCA_COLL_BUFPOOL_ENTRY_H
#define MCA_COLL_BUFPOOL_ENTRY_H

#include "coll_bufpool.h"

BEGIN_C_DECLS

/* Say where a call of bytes in form goes (alg, or the previous module) and
 * why, at coll_bufpool_verbose >= 2 and at the coll framework's verbosity
 * >= 20. */
void bufpool_explain(bufpool_coll_id_t id, int form, int alg, const char *why, size_t bytes,
                     struct ompi_communicator_t *comm);
/* The reason a size map's choice gives for handing a call back. */
const char *bufpool_choice_why(bufpool_coll_id_t id, const bufpool_choice_t *choice);

/* The range of this communicator's size map that holds a call of bytes in
 * form (BUFPOOL_FORM_*) and class cls (BUFPOOL_CLASS). */
static inline const bufpool_range_t *bufpool_range(const mca_coll_bufpool_module_t *module,
                                                   int form, bufpool_coll_id_t id, int cls,
                                                   size_t bytes)
{
    return bufpool_sizemap_find(module->map[form][id][cls], bytes);
}

/* The whole path of a call bufpool does not serve: true (counted, and
 * explained when asked) when range hands it to the previous module; the
 * caller then calls the previous module's function. */
static inline bool bufpool_hands_back(mca_coll_bufpool_module_t *module, int form,
                                      bufpool_coll_id_t id, const bufpool_range_t *range,
                                      size_t bytes, struct ompi_communicator_t *comm)
{
    if (BUFPOOL_ALG_PREVIOUS != range->choice.alg) {
        return false;
    }
    bufpool_module_count(&module->fallbacks[form][id]);
    if (OPAL_UNLIKELY(module->explain)) {
        bufpool_explain(id, form, BUFPOOL_ALG_PREVIOUS, bufpool_choice_why(id, &range->choice),
                        bytes, comm);
    }
    return true;
}

/* The slow path of an entry point: out of line, so that the hand-back
 * path pays for none of its frame. */
#define BUFPOOL_NOINLINE __attribute__((noinline))

/* The previous module's function for the call (its arguments without the
 * module), not counted: bufpool_hands_back or bufpool_enter counted it. */
#define BUFPOOL_PREVIOUS(bp_module, name, ...)                                                     \
    ((bp_module)->prev_##name(__VA_ARGS__, (bp_module)->prev_##name##_module))

/* The head of every entry point (blocking, nonblocking, persistent): the
 * call's range in the size map of form, and for a call it hands back (no
 * explaining asked, not empty) the counter and prev_call returned at once;
 * otherwise range and bp_bytes_ go on to the entry's slow path. */
#define BUFPOOL_ENTRY_HEAD(module, form, name, cls, bytes, empty, prev_call)                       \
    const size_t bp_bytes_ = (bytes);                                                              \
    const bufpool_range_t *range =                                                                 \
        bufpool_range(module, form, BUFPOOL_COLL_##name, (cls), bp_bytes_);                        \
    if (BUFPOOL_ALG_PREVIOUS == range->choice.alg && !(module)->explain && !(empty)) {             \
        bufpool_module_count(&(module)->fallbacks[form][BUFPOOL_COLL_##name]);                     \
        return prev_call;                                                                          \
    }

/* The hand-back of a call whose own block is at risk
 * (bufpool_own_block_at_risk), prepared (bufpool_own_block_prepare): the
 * block copied by bufpool, counted in coll_bufpool_own_block_copies.  The
 * caller then hands the call back with its mended arguments. */
int bufpool_own_block_hand_back(const bufpool_own_block_t *own);

/* ---------------------------------------------------------------------- */
/* The entry path every collective takes (coll_bufpool_entry.c). */

typedef enum {
    BUFPOOL_ENTRY_RUN,      /* run plan->alg                                */
    BUFPOOL_ENTRY_PREVIOUS, /* hand the call over (BUFPOOL_PREVIOUS)        */
    BUFPOOL_ENTRY_DONE      /* nothing to move: return OMPI_SUCCESS         */
} bufpool_entry_t;

/* A call its size map did not hand back, in form (BUFPOOL_FORM_*): the
 * collective's plan function (coll_bufpool_decide.c) finishes the range's
 * choice with the call's own constraints into plan, which may still hand
 * the call over when the algorithm cannot serve it.  At
 * coll_bufpool_verbose >= 2 the outcome is printed, and at the coll
 * framework's verbosity >= 20 it is logged there.  The call is counted in
 * its form's counters, served or handed back (a served empty bcast,
 * gather, scatter, allgather or alltoall is then done). */
bufpool_entry_t bufpool_enter(bufpool_coll_id_t id, int form, mca_coll_bufpool_module_t *module,
                              const bufpool_call_t *call, const bufpool_choice_t *choice,
                              struct ompi_communicator_t *comm, bufpool_plan_t *plan);

/* The slow path of a blocking call its size map did not hand back at
 * once (range: the one the entry point found for bytes): the hand-back
 * explained when asked, the plan, and bufpool's algorithm.  *hand_back set
 * (nothing run) when the call goes to the previous module, which the caller
 * then calls; counted either way. */
int bufpool_serve(bufpool_coll_id_t id, const bufpool_args_t *a, const bufpool_range_t *range,
                  size_t bytes, struct ompi_communicator_t *comm, mca_coll_bufpool_module_t *module,
                  bool *hand_back);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_ENTRY_H */
