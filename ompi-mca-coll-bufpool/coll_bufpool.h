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
#include "ompi/mca/coll/coll.h"
#include "opal/mca/mpool/mpool.h"

#include "bufpool_ompi_compat.h"
#include "mpool_regpar_ext.h"

#include "coll_bufpool_decide.h"

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
    char *model_links_text; /* coll_bufpool_model_links      */
    char *model_links_file; /* coll_bufpool_model_links_file */
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

    /* Counters behind the MPI_T variables. */
    uint64_t calls[BUFPOOL_NCOLLS];
    uint64_t fallbacks[BUFPOOL_NCOLLS];
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
    bool nonblocking;
    bool persistent;
    size_t nb_stack_size;
    /* Their counters: MPI_I<coll> served and handed back, MPI_<coll>_init
     * served (persistent requests bufpool runs) and handed back, MPI_Start
     * of bufpool's persistent requests, the most tasks in flight at once,
     * the stacks ever mapped for them and the times the progress callback
     * was registered. */
    uint64_t icalls[BUFPOOL_NCOLLS];
    uint64_t ifallbacks[BUFPOOL_NCOLLS];
    uint64_t init_calls[BUFPOOL_NCOLLS];
    uint64_t init_fallbacks[BUFPOOL_NCOLLS];
    uint64_t persistent_starts;
    uint64_t nb_tasks_peak;
    uint64_t nb_stacks_mapped;
    uint64_t nb_progress_registrations;
} mca_coll_bufpool_component_t;

BUFPOOL_MODULE_DECLSPEC extern mca_coll_bufpool_component_t mca_coll_bufpool_component;

/* The module: our entry points plus the previous module's, per function. */
typedef struct mca_coll_bufpool_module {
    mca_coll_base_module_t super;
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

/* The priority as currently set (it may change at run time). */
int mca_coll_bufpool_priority(void);

/* Component entry points. */
int mca_coll_bufpool_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_bufpool_comm_query(struct ompi_communicator_t *comm,
                                                    int *priority);

/* Algorithm names of a collective ("auto" first, NULL-terminated). */
extern const char *const *const mca_coll_bufpool_algorithm_names[BUFPOOL_NCOLLS];
extern const char *const mca_coll_bufpool_coll_names[BUFPOOL_NCOLLS];

/* ---------------------------------------------------------------------- */
/* Counting and falling back. */

static inline void bufpool_count_call(bufpool_coll_id_t id)
{
    (void)__atomic_fetch_add(&mca_coll_bufpool_component.calls[id], 1, __ATOMIC_RELAXED);
}

static inline void bufpool_count_fallback(bufpool_coll_id_t id)
{
    (void)__atomic_fetch_add(&mca_coll_bufpool_component.fallbacks[id], 1, __ATOMIC_RELAXED);
}

/* Hand the call to the previously selected module and count it. */
#define BUFPOOL_FALLBACK(bp_module, name, ...)                                                     \
    (bufpool_count_fallback(BUFPOOL_COLL_##name),                                                  \
     (bp_module)->prev_##name(__VA_ARGS__, (bp_module)->prev_##name##_module))

/* ---------------------------------------------------------------------- */
/* The entry path every collective takes (coll_bufpool_entry.c). */

typedef enum {
    BUFPOOL_ENTRY_RUN,      /* run plan->alg                                */
    BUFPOOL_ENTRY_PREVIOUS, /* hand the call over (BUFPOOL_FALLBACK)        */
    BUFPOOL_ENTRY_DONE      /* nothing to move: return OMPI_SUCCESS         */
} bufpool_entry_t;

/* The shared preamble of a call: an empty reduction or scan is done at
 * once; a message below coll_bufpool_min_size goes to the previous module;
 * otherwise the forced algorithm or the collective's decision function
 * (coll_bufpool_decide.c) fills plan, which may still hand the call over
 * when the algorithm cannot serve it.  At coll_bufpool_verbose >= 2 the
 * outcome is printed, and at the coll framework's verbosity >= 20 it is
 * logged there.  A served call is counted (even an empty bcast, gather,
 * scatter, allgather or alltoall, which then is done). */
bufpool_entry_t bufpool_enter(bufpool_coll_id_t id, const mca_coll_bufpool_module_t *module,
                              const bufpool_call_t *call, struct ompi_communicator_t *comm,
                              bufpool_plan_t *plan);
/* The same for another form of the collective: name in the explanation
 * ("iallreduce", "allreduce_init"), a served call counted in served[id]. */
bufpool_entry_t bufpool_enter_form(bufpool_coll_id_t id, const char *name, uint64_t *served,
                                   const mca_coll_bufpool_module_t *module,
                                   const bufpool_call_t *call, struct ompi_communicator_t *comm,
                                   bufpool_plan_t *plan);

/* In an entry point: bufpool_enter, then return at once when the call is
 * done or goes to the previous module (called with the entry's arguments,
 * __VA_ARGS__); falls through with plan filled when bufpool runs it. */
#define BUFPOOL_ENTER(module, name, call, plan, ...)                                               \
    do {                                                                                           \
        switch (bufpool_enter(BUFPOOL_COLL_##name, module, call, comm, plan)) {                    \
            case BUFPOOL_ENTRY_DONE:                                                               \
                return OMPI_SUCCESS;                                                               \
            case BUFPOOL_ENTRY_PREVIOUS:                                                           \
                return BUFPOOL_FALLBACK(module, name, __VA_ARGS__);                                \
            default:                                                                               \
                break;                                                                             \
        }                                                                                          \
    } while (0)

/* The call of a reduction or scan of count elements (in_place: sbuf is
 * MPI_IN_PLACE). */
bufpool_call_t bufpool_reduction_call(size_t count, struct ompi_datatype_t *dtype,
                                      struct ompi_op_t *op, bool in_place,
                                      struct ompi_communicator_t *comm);
/* The call of a data movement of one block of count x dtype per rank. */
bufpool_call_t bufpool_block_call(bufpool_count_t count, struct ompi_datatype_t *dtype,
                                  bool in_place, struct ompi_communicator_t *comm);

/* Open MPI 6 passes size_t counts: those beyond bufpool's int engines go to
 * the previous module (a no-op up to 5.0, where counts are int). */
#define BUFPOOL_FALLBACK_UNLESS_FITS(bp_module, name, count, ...)                                  \
    do {                                                                                           \
        if (!BUFPOOL_COUNT_FITS(count)) {                                                          \
            return BUFPOOL_FALLBACK(bp_module, name, __VA_ARGS__);                                 \
        }                                                                                          \
    } while (0)

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
