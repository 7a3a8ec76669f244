/*
 * coll/bufpool: blocking intra-communicator collectives with pipelined
 * segmentation whose scratch memory comes from the regpar pool, so that
 * temporary memory stays bounded by pipeline_depth x segment_size and is
 * reused (already registered) call after call.
 *
 * Whatever bufpool does not handle goes to the module that was selected
 * before it for that function; its pointers are saved and retained at
 * enable.
 */
#ifndef MCA_COLL_BUFPOOL_H
#define MCA_COLL_BUFPOOL_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stdint.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "opal/mca/mpool/mpool.h"

#include "bufpool_ompi_compat.h"
#include "mpool_regpar_ext.h"

#include "coll_bufpool_decide.h"
#include "coll_bufpool_rules.h"

BEGIN_C_DECLS

/* Per-collective settings. */
typedef struct bufpool_coll_params {
    char *enable_text;    /* as typed: on|off                           */
    char *algorithm_text; /* as typed: auto|<name>                      */
    bool enabled;
    int algorithm; /* index into the collective's algorithm names */
} bufpool_coll_params_t;

typedef struct mca_coll_bufpool_component {
    mca_coll_base_component_t super;

    /* Parameters typed as text and parsed by common/bufpool_params.c with
     * clear messages (Open MPI's integer parser turns "abc" into 0 without a
     * word). */
    char *priority_text; /* writable through MPI_T: parsed again when it changes */
    char *verbose_text;
    char *pipeline_depth_text;
    char *max_requests_text; /* coll_bufpool_max_requests */
    int verbose;
    char *segment_size_text;
    char *min_size_text;
    char *small_size_text;
    char *model_links_text;   /* coll_bufpool_model_links      */
    char *model_links_file;   /* coll_bufpool_model_links_file */
    char *rules_file;         /* coll_bufpool_rules_file       */
    char *rules_default_text; /* coll_bufpool_rules_default    */
    /* The rows every communicator's size maps are resolved from: the
     * user's file, then the default rules (coll_bufpool_rules.h). */
    bufpool_rules_t rules;
    /* coll_bufpool_test_host_map (testing only): host index per launch
     * rank, cycled; test_host_map_n 0: the host names count. */
    char *test_host_map_text;
    int *test_host_map;
    int test_host_map_n;
    /* The cost model's link table, defaults overridden by the two above. */
    struct bufpool_model_links model_links;
    /* segment_size, pipeline_depth, min_size, small_size as checked: read
     * only by bufpool_enter, which hands each call a plan built from them. */
    bufpool_tuning_t tuning;
    bufpool_coll_params_t coll[BUFPOOL_NCOLLS];

    /* The pool, looked up once (first communicator). */
    opal_mutex_t pool_lock;
    volatile bool pool_looked_up;
    mca_mpool_base_module_t *mpool;    /* NULL: plain malloc       */
    const mca_mpool_regpar_ext_t *ext; /* NULL if mpool is not ours */

    /* Counters behind the MPI_T variables.  Calls served and handed back,
     * per form (BUFPOOL_FORM_*: MPI_<coll>, MPI_I<coll>, MPI_<coll>_init),
     * are counted per module (bufpool_module_count); the component links
     * its live modules and keeps the counts of those destroyed. */
    opal_mutex_t modules_lock;
    struct mca_coll_bufpool_module *modules;
    uint64_t retired_calls[BUFPOOL_NFORMS][BUFPOOL_NCOLLS];
    uint64_t retired_fallbacks[BUFPOOL_NFORMS][BUFPOOL_NCOLLS];
    uint64_t scratch_bytes_in_use;
    uint64_t scratch_bytes_peak;
    uint64_t scratch_requests;
    uint64_t scratch_plain_allocs;
    /* Most requests one request set (bufpool_reqs_t) held at once. */
    uint64_t requests_peak;

    /* Nonblocking and persistent forms (coll_bufpool_nb.c):
     * coll_bufpool_nonblocking, coll_bufpool_persistent (on|off) and the
     * tasks' stack size, coll_bufpool_nb_stack_size. */
    char *nonblocking_text;
    char *persistent_text;
    char *nb_stack_size_text;
    /* coll_bufpool_test_nbc_tag_range (testing only): 0, or the tags after
     * which a task's tag reservation wraps. */
    char *test_nbc_tag_range_text;
    int test_nbc_tag_range;
    bool nonblocking;
    bool persistent;
    size_t nb_stack_size;
    /* Their own counters (their calls served and handed back are the
     * modules' counters of their form): MPI_Start of bufpool's persistent
     * requests, the most tasks in flight at once, the stacks ever mapped
     * for them and the times the progress callback was registered. */
    uint64_t persistent_starts;
    uint64_t nb_tasks_peak;
    uint64_t nb_stacks_mapped;
    uint64_t nb_progress_registrations;
} mca_coll_bufpool_component_t;

BUFPOOL_MODULE_DECLSPEC extern mca_coll_bufpool_component_t mca_coll_bufpool_component;

/* Call classes of the size maps: a commutative operation or not (always
 * commutative for data movement), in place or not. */
#define BUFPOOL_NCLASSES                     4
#define BUFPOOL_CLASS(commutative, in_place) (((commutative) ? 2 : 0) | ((in_place) ? 1 : 0))

/* The module: our entry points plus the previous module's, per function. */
typedef struct mca_coll_bufpool_module {
    mca_coll_base_module_t super;
    /* What the entry of a call needs, resolved once at enable for this
     * communicator (its size, hosts, ranks per host) from the rules, the
     * forced algorithms and min_size: per collective and call class, the
     * byte ranges and their choices (bufpool_sizemap_find).  A call whose
     * range says "previous" goes there at once. */
    const bufpool_range_t *map[BUFPOOL_NFORMS][BUFPOOL_NCOLLS][BUFPOOL_NCLASSES];
    bufpool_range_t *map_mem;
    /* The algorithm forced per collective on this communicator
     * (coll_bufpool_<coll>_algorithm, or its info key), or auto. */
    int forced[BUFPOOL_NCOLLS];
    int ranks; /* the communicator's size */
    /* Whether calls explain their choice (coll_bufpool_verbose >= 2 or the
     * coll framework's verbosity >= 20), read once at enable. */
    bool explain;
    /* Calls served and handed back.  A communicator runs one collective at
     * a time (MPI orders them), so plain increments suffice; MPI_T sums
     * them through the component's list of modules. */
    uint64_t calls[BUFPOOL_NFORMS][BUFPOOL_NCOLLS];
    uint64_t fallbacks[BUFPOOL_NFORMS][BUFPOOL_NCOLLS];
    struct mca_coll_bufpool_module *next_module, *prev_module;
#define BUFPOOL_PREV_MEMBERS(name)                                                                 \
    mca_coll_base_module_##name##_fn_t prev_##name;                                                \
    mca_coll_base_module_t *prev_##name##_module;
    BUFPOOL_FOREACH_COLL(BUFPOOL_PREV_MEMBERS)
#undef BUFPOOL_PREV_MEMBERS
    /* The previous module's nonblocking and persistent functions
     * (coll_bufpool_nb.c). */
#define BUFPOOL_PREV_NB_MEMBERS(name)                                                              \
    mca_coll_base_module_i##name##_fn_t prev_i##name;                                              \
    mca_coll_base_module_t *prev_i##name##_module;                                                 \
    mca_coll_base_module_##name##_init_fn_t prev_##name##_init;                                    \
    mca_coll_base_module_t *prev_##name##_init_module;
    BUFPOOL_FOREACH_COLL(BUFPOOL_PREV_NB_MEMBERS)
#undef BUFPOOL_PREV_NB_MEMBERS
    /* Requests of the sends of one call.  MPI forbids two collectives at
     * once on one communicator, so the module can keep them from call to
     * call instead of allocating per call. */
    ompi_request_t **req_cache;
    size_t req_cache_cap;
    /* A second array, for a stream that keeps its own bounded set while
     * the call's main set is in use (bufpool_reqs_init_aux). */
    ompi_request_t **aux_req_cache;
    size_t aux_req_cache_cap;
    /* Hosts the communicator spans and the most of its ranks on one host
     * (bufpool_comm_hosts; 0: not known), for auto. */
    int hosts;
    int max_ppn;
    /* Where its ranks run, for allreduce hier (coll_bufpool_hier.c): built
     * at the first hier call. */
    struct bufpool_hier_topo *hier;
    /* The tag blocks of the persistent requests bufpool made on this
     * communicator, ascending (coll_bufpool_nb.c): a later reservation
     * that lands on one after the tags wrap is skipped.  Never shortened
     * (MPI_Request_free is local, so the ranks could not agree on when),
     * 4 bytes per persistent request; freed with the communicator.  MPI
     * orders a communicator's collective calls, so no lock. */
    int *persist_tags;
    size_t persist_tags_n, persist_tags_cap;
} mca_coll_bufpool_module_t;

OBJ_CLASS_DECLARATION(mca_coll_bufpool_module_t);

/* Where the ranks of comm run, the same on every rank, no communication:
 * host[r] = index of rank r's host in order of first appearance (so a
 * host's first rank is its lowest), from the launch's host names, or under
 * coll_bufpool_test_host_map (testing only) the map's entry for the
 * process's launch rank, cycled.  Returns the number of hosts and sets
 * *max_ppn to the most ranks on one host; 0 (and *max_ppn 0) when a host
 * name is missing; -1 when out of memory.  O(p x hosts). */
int bufpool_comm_host_ids(struct ompi_communicator_t *comm, int *host, int *max_ppn);

/* Report an info key coll_bufpool_<coll>_algorithm with a bad value (help
 * topic bad-info-key). */
void mca_coll_bufpool_bad_info_key(const char *comm_name, const char *key, const char *value,
                                   bufpool_coll_id_t id);

/* The priority as currently set (it may change at run time). */
int mca_coll_bufpool_priority(void);

/* Component entry points. */
int mca_coll_bufpool_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_bufpool_comm_query(struct ompi_communicator_t *comm,
                                                    int *priority);

/* Algorithm names of a collective ("auto" first, NULL-terminated). */
#define mca_coll_bufpool_algorithm_names bufpool_algorithm_names
#define mca_coll_bufpool_coll_names      bufpool_coll_names

/* ---------------------------------------------------------------------- */
/* Counting and handing back. */

/* Count one call on a counter of a module (see mca_coll_bufpool_module_t):
 * a relaxed load and store, no read-modify-write instruction. */
static inline void bufpool_module_count(uint64_t *counter)
{
    __atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* A counter of form (BUFPOOL_FORM_*) summed over the live modules and the
 * destroyed ones. */
uint64_t mca_coll_bufpool_count_total(bool fallbacks, int form, bufpool_coll_id_t id);

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

/* The fast path of an entry point (every call of a collective goes through
 * it): true, counted, when the call's range hands it back and nothing is
 * to be explained, so that the entry's only other work is a tail call of
 * the previous module.  Everything else (explanations, calls bufpool
 * serves, counts beyond int on Open MPI 6) takes the entry's slow path,
 * a function with the same arguments, also a tail call. */
static inline bool bufpool_quick_hand_back(mca_coll_bufpool_module_t *module, bufpool_coll_id_t id,
                                           int cls, size_t bytes)
{
    if (BUFPOOL_ALG_PREVIOUS !=
            bufpool_range(module, BUFPOOL_FORM_BLOCKING, id, cls, bytes)->choice.alg ||
        module->explain) {
        return false;
    }
    bufpool_module_count(&module->fallbacks[BUFPOOL_FORM_BLOCKING][id]);
    return true;
}

/* A whole entry point of collective name taking a module named base: the
 * fast path (when fast, a condition on the arguments, holds) and then
 * name##_slow with the same arguments, __VA_ARGS__ without the module. */
#define BUFPOOL_ENTRY_POINT(name, fast, cls, bytes, ...)                                           \
    do {                                                                                           \
        mca_coll_bufpool_module_t *const bp_module_ = (mca_coll_bufpool_module_t *)base;           \
        if ((fast) && bufpool_quick_hand_back(bp_module_, BUFPOOL_COLL_##name, cls, bytes)) {      \
            return BUFPOOL_PREVIOUS(bp_module_, name, __VA_ARGS__);                                \
        }                                                                                          \
        return name##_slow(__VA_ARGS__, base);                                                     \
    } while (0)

/* The first lines of an entry point: find the range of a call of bytes in
 * class cls (declared as range_var) and, when it hands the call back,
 * return the previous module's function on the entry's arguments
 * (__VA_ARGS__). */
#define BUFPOOL_RANGE_OR_PREVIOUS(range_var, module, name, cls, bytes, ...)                        \
    const bufpool_range_t *range_var =                                                             \
        bufpool_range(module, BUFPOOL_FORM_BLOCKING, BUFPOOL_COLL_##name, cls, bytes);             \
    if (bufpool_hands_back(module, BUFPOOL_FORM_BLOCKING, BUFPOOL_COLL_##name, range_var, bytes,   \
                           comm)) {                                                                \
        return BUFPOOL_PREVIOUS(module, name, __VA_ARGS__);                                        \
    }

/* The end of an entry point's slow path: bufpool_serve on the call's
 * arguments (args), and the previous module's function on the entry's
 * arguments (__VA_ARGS__) when it hands the call back. */
#define BUFPOOL_SERVE_OR_PREVIOUS(module, name, args, ...)                                         \
    do {                                                                                           \
        bool bp_hand_back_;                                                                        \
        const int bp_rc_ = bufpool_serve(BUFPOOL_COLL_##name, args, comm, module, &bp_hand_back_); \
        return bp_hand_back_ ? BUFPOOL_PREVIOUS(module, name, __VA_ARGS__) : bp_rc_;               \
    } while (0)

/* The previous module's function for the call (its arguments without the
 * module), not counted: bufpool_hands_back or bufpool_enter counted it. */
#define BUFPOOL_PREVIOUS(bp_module, name, ...)                                                     \
    ((bp_module)->prev_##name(__VA_ARGS__, (bp_module)->prev_##name##_module))

/* Hand the call to the previously selected module and count it. */
#define BUFPOOL_FALLBACK(bp_module, name, ...)                                                     \
    (bufpool_module_count(&(bp_module)->fallbacks[BUFPOOL_FORM_BLOCKING][BUFPOOL_COLL_##name]),    \
     BUFPOOL_PREVIOUS(bp_module, name, __VA_ARGS__))

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

/* In an entry point, once the size map's range has not handed the call
 * back: bufpool_enter, then return at once when the call is done or goes
 * to the previous module (called with the entry's arguments, __VA_ARGS__);
 * falls through with plan filled when bufpool runs it. */
#define BUFPOOL_ENTER(module, name, call, range, plan, ...)                                        \
    do {                                                                                           \
        switch (bufpool_enter(BUFPOOL_COLL_##name, BUFPOOL_FORM_BLOCKING, module, call,            \
                              &(range)->choice, comm, plan)) {                                     \
            case BUFPOOL_ENTRY_DONE:                                                               \
                return OMPI_SUCCESS;                                                               \
            case BUFPOOL_ENTRY_PREVIOUS:                                                           \
                return BUFPOOL_PREVIOUS(module, name, __VA_ARGS__);                                \
            default:                                                                               \
                break;                                                                             \
        }                                                                                          \
    } while (0)

/* Bytes of count elements of dtype (what the size maps are keyed on): the
 * type's size read from the datatype, no call. */
static inline size_t bufpool_bytes(const struct ompi_datatype_t *dtype, bufpool_count_t count)
{
    return count > 0 ? dtype->super.size * (size_t)count : 0;
}

/* Elements of a reduce_scatter's whole input (some blocks may be empty). */
static inline size_t bufpool_counts_total(const int *counts, int size)
{
    size_t total = 0;
    for (int b = 0; b < size; b++) {
        total += (size_t)counts[b];
    }
    return total;
}

/* Bytes of one block of a gather or scatter: only the root's arguments for
 * all the blocks are significant. */
static inline size_t bufpool_rooted_bytes(bool gather, bufpool_count_t scount,
                                          const struct ompi_datatype_t *sdtype,
                                          bufpool_count_t rcount,
                                          const struct ompi_datatype_t *rdtype, int root,
                                          struct ompi_communicator_t *comm)
{
    return (ompi_comm_rank(comm) == root) == gather ? bufpool_bytes(rdtype, rcount)
                                                    : bufpool_bytes(sdtype, scount);
}

/* The call of a reduction or scan of count elements (in_place: sbuf is
 * MPI_IN_PLACE). */
bufpool_call_t bufpool_reduction_call(size_t count, struct ompi_datatype_t *dtype,
                                      struct ompi_op_t *op, bool in_place,
                                      struct ompi_communicator_t *comm);
/* The call of a data movement of one block of count x dtype per rank. */
bufpool_call_t bufpool_block_call(bufpool_count_t count, struct ompi_datatype_t *dtype,
                                  bool in_place, struct ompi_communicator_t *comm);

/* Open MPI 6 passes size_t counts: those beyond bufpool's int engines go to
 * the previous module (a no-op up to 5.0, where counts are int).  fits:
 * BUFPOOL_COUNT_FITS of a count every rank passes alike (reductions), or
 * BUFPOOL_BYTES_FIT of the signature bytes (data movement, whose counts
 * may differ between ranks). */
#define BUFPOOL_FALLBACK_UNLESS_FITS(bp_module, name, fits, ...)                                   \
    do {                                                                                           \
        if (!(fits)) {                                                                             \
            return BUFPOOL_FALLBACK(bp_module, name, __VA_ARGS__);                                 \
        }                                                                                          \
    } while (0)

/* Whether every blocking call of collective id on the module's
 * communicator goes to the previous module by its rules (one range,
 * "previous", in every class; never alltoall, never a forced "previous"):
 * unless calls are explained, the module then does not install that
 * function, so those calls cost nothing and are not counted, like a
 * disabled collective's. */
bool bufpool_module_hands_back_all(const mca_coll_bufpool_module_t *module, int form,
                                   bufpool_coll_id_t id);

/* Resolve a module's size maps for comm (at enable); OMPI_ERR_OUT_OF_RESOURCE
 * when memory is short.  Prints them at coll_bufpool_verbose >= 3. */
int bufpool_module_resolve(mca_coll_bufpool_module_t *module, struct ompi_communicator_t *comm);

/* ---------------------------------------------------------------------- */
/* Scratch memory (coll_bufpool_scratch.c). */

/* Look the pool up once; safe to call from any thread. */
void mca_coll_bufpool_pool_lookup(void);

/* At least bytes of page-aligned scratch, from the pool when it is there,
 * else malloc.  NULL only if the system is out of memory. */
void *mca_coll_bufpool_scratch_get(size_t bytes);
void mca_coll_bufpool_scratch_put(void *buf, size_t bytes);

/* ---------------------------------------------------------------------- */
/* The collectives (one file per family). */

int mca_coll_bufpool_allreduce(const void *sbuf, void *rbuf, bufpool_count_t count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_bufpool_reduce(const void *sbuf, void *rbuf, bufpool_count_t count,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_bufpool_bcast(void *buf, bufpool_count_t count, struct ompi_datatype_t *dtype,
                           int root, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module);
int mca_coll_bufpool_allgather(const void *sbuf, bufpool_count_t scount,
                               struct ompi_datatype_t *sdtype, void *rbuf, bufpool_count_t rcount,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               mca_coll_base_module_t *module);
int mca_coll_bufpool_reduce_scatter(const void *sbuf, void *rbuf, bufpool_counts_t rcounts,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module);
int mca_coll_bufpool_reduce_scatter_block(const void *sbuf, void *rbuf, bufpool_count_t rcount,
                                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                          struct ompi_communicator_t *comm,
                                          mca_coll_base_module_t *module);
int mca_coll_bufpool_alltoall(const void *sbuf, bufpool_count_t scount,
                              struct ompi_datatype_t *sdtype, void *rbuf, bufpool_count_t rcount,
                              struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                              mca_coll_base_module_t *module);
int mca_coll_bufpool_gather(const void *sbuf, bufpool_count_t scount,
                            struct ompi_datatype_t *sdtype, void *rbuf, bufpool_count_t rcount,
                            struct ompi_datatype_t *rdtype, int root,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_bufpool_scatter(const void *sbuf, bufpool_count_t scount,
                             struct ompi_datatype_t *sdtype, void *rbuf, bufpool_count_t rcount,
                             struct ompi_datatype_t *rdtype, int root,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_bufpool_scan(const void *sbuf, void *rbuf, bufpool_count_t count,
                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_bufpool_exscan(const void *sbuf, void *rbuf, bufpool_count_t count,
                            struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_H */
