/*
 * coll/bufpool: collectives with pipelined segmentation whose scratch
 * memory comes from the regpar pool, so that temporary memory stays bounded
 * by pipeline_depth x segment_size and is reused (already registered) call
 * after call, in the blocking, nonblocking and persistent forms.
 *
 * This directory's top level is the thin MCA layer (the component, its
 * modules, the entry points); below it, each in a folder of its own and
 * never calling up (docs/design.md):
 *   algorithms/  the algorithms by family over shared primitives (pipeline,
 *                datatype views, geometry) and the dispatch (bufpool_run);
 *   runtime/     tasks on fibers, the waits, scratch memory;
 *   decide/      rules, size maps, plans and the cost model (no Open MPI).
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

#include "bufpool_ompi_compat.h"
#include BUFPOOL_OPAL_MUTEX_H

#include "algorithms/coll_bufpool_own_block.h"
#include "coll_bufpool_alike.h"
#include "coll_bufpool_peers.h"
#include "algorithms/coll_bufpool_run.h"
#include "decide/coll_bufpool_decide.h"
#include "decide/coll_bufpool_rules.h"
#include "runtime/coll_bufpool_task.h"

BEGIN_C_DECLS

/* Per-collective settings. */
typedef struct bufpool_coll_params {
    char *enable_text;    /* as typed: on|off                           */
    char *algorithm_text; /* as typed: auto|<name>                      */
    bool enabled;
    int algorithm; /* index into the collective's algorithm names */
} bufpool_coll_params_t;

struct bufpool_params;

typedef struct mca_coll_bufpool_component {
    mca_coll_base_component_t super;
    /* Its messages' handle (names, help file): common/bufpool_params.h. */
    const struct bufpool_params *params;

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
    /* coll_bufpool_test_node_l3 (testing only): the L3 cache each launch
     * rank says it is bound within (cycled; -1: none), instead of sysfs's;
     * test_node_l3_n 0: sysfs's. */
    char *test_node_l3_text;
    int *test_node_l3;
    int test_node_l3_n;
    /* The cost model's link table, defaults overridden by the two above. */
    struct bufpool_model_links model_links;
    /* segment_size, pipeline_depth, min_size, small_size as checked: read
     * only by bufpool_enter, which hands each call a plan built from them. */
    bufpool_tuning_t tuning;
    bufpool_coll_params_t coll[BUFPOOL_NCOLLS];

    /* Guards the priority's parsing (communicators may be created
     * concurrently). */
    opal_mutex_t lock;

    /* Counters behind the MPI_T variables.  Calls served and handed back,
     * per form (BUFPOOL_FORM_*: MPI_<coll>, MPI_I<coll>, MPI_<coll>_init),
     * are counted per module (bufpool_module_count); the component links
     * its live modules and keeps the counts of those destroyed. */
    opal_mutex_t modules_lock;
    struct mca_coll_bufpool_module *modules;
    /* The size maps resolved so far, shared by the communicators of one
     * shape (coll_bufpool_resolve.c, bufpool_mapset): a communicator made
     * again (MPI_Comm_dup, a split into pieces of one size) finds its maps
     * made instead of resolving the rules again. */
    opal_mutex_t mapsets_lock;
    struct bufpool_mapset *mapsets;
    /* Each process's host and settings digest, looked up once
     * (coll_bufpool_peers.h). */
    bufpool_peers_t peers;
    /* The digest of this process's settings (coll_bufpool_alike.h):
     * communicators whose members' differ keep the modules below. */
    bufpool_alike_t alike;
    uint64_t retired_calls[BUFPOOL_NFORMS][BUFPOOL_NCOLLS];
    uint64_t retired_fallbacks[BUFPOOL_NFORMS][BUFPOOL_NCOLLS];

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
    /* coll_bufpool_node_max_bytes: the most bytes of node segments one
     * process maps; coll_bufpool_node_cold_calls: node calls of a
     * communicator without a chunk round after which its chunk segment is
     * unmapped (0: never). */
    char *node_max_bytes_text;
    size_t node_max_bytes;
    char *node_cold_calls_text;
    uint64_t node_cold_calls;
    /* coll_bufpool_node_flat_max: the most ranks whose small node
     * reductions and barrier read every rank's slot; above, in groups. */
    char *node_flat_max_text;
    int node_flat_max;
    /* coll_bufpool_node_warmup_calls: the calls of a communicator that the
     * rules give to a node algorithm and that go to the previous module
     * before its segment is set up. */
    char *node_warmup_calls_text;
    uint64_t node_warmup_calls;
    /* coll_bufpool_node_cma: whether a node segment's set-up probes
     * single-copy reads (CMA) for bcast and allgather node_cma. */
    char *node_cma_text;
    bool node_cma;
    /* coll_bufpool_node_proc_link: whether this process's node segments
     * are unnamed, the other ranks opening them through /proc/PID/fd. */
    char *node_proc_link_text;
    bool node_proc_link;
    /* coll_bufpool_test_node_refuse_link (testing only): the rank of each
     * segment's ranks that refuses rank 0's link; -1: none. */
    char *test_node_refuse_link_text;
    int test_node_refuse_link;
    /* coll_bufpool_test_node_no_cma (testing only): the rank of each
     * communicator whose single-copy probe fails, or -1. */
    char *test_node_no_cma_text;
    int test_node_no_cma;
    /* coll_bufpool_test_node_fail (testing only): the rank of each
     * communicator whose shared segment fails, or -1. */
    char *test_node_fail_text;
    int test_node_fail;
    /* coll_bufpool_test_node_fail_chunk (testing only): the same for the
     * chunk segment (the node algorithms above 4 KiB). */
    char *test_node_fail_chunk_text;
    int test_node_fail_chunk;
    bool nonblocking;
    bool persistent;
    size_t nb_stack_size;
    /* MPI_Start of bufpool's persistent requests (their calls served and
     * handed back are the modules' counters of their form; the tasks'
     * counters are the runtime's, bufpool_task_counters). */
    uint64_t persistent_starts;
    /* Calls served because the previous module would compute them wrongly
     * (the guards: coll_bufpool_resolve.c, guard_map), every form. */
    uint64_t guarded_calls;
    /* Calls handed back whose own block bufpool copied first
     * (bufpool_own_block_at_risk), persistent ones at every start. */
    uint64_t own_block_copies;
} mca_coll_bufpool_component_t;

BUFPOOL_MODULE_DECLSPEC extern mca_coll_bufpool_component_t mca_coll_bufpool_component;

/* Call classes of the size maps: a commutative operation or not (always
 * commutative for data movement), in place or not (where every rank passes
 * MPI_IN_PLACE alike), and for allreduce and reduce whether the operation
 * is user-defined (BUFPOOL_CLASS_USER_OP: MPI requires the same operation
 * on every rank), which only the guards against the modules below read
 * (coll_bufpool_resolve.c, guard_map: tuned's ring allreduce and libnbc's
 * nonblocking reduce); the rules do not.  reduce's MPI_IN_PLACE is the
 * root's alone and decides nothing. */
#define BUFPOOL_NCLASSES                     8
#define BUFPOOL_CLASS(commutative, in_place) (((commutative) ? 2 : 0) | ((in_place) ? 1 : 0))
#define BUFPOOL_CLASS_USER_OP                4
/* The user-defined bit of op's class. */
#define BUFPOOL_CLASS_OF_OP(op) (ompi_op_is_intrinsic(op) ? 0 : BUFPOOL_CLASS_USER_OP)

/* The module: our entry points plus the previous module's, per function. */
typedef struct mca_coll_bufpool_module {
    mca_coll_base_module_t super;
    /* What the entry of a call needs, resolved once at enable for this
     * communicator (its size, hosts, ranks per host) from the rules, the
     * forced algorithms and min_size: per collective and call class, the
     * byte ranges and their choices (bufpool_sizemap_find).  A call whose
     * range says "previous" goes there at once. */
    const bufpool_range_t *map[BUFPOOL_NFORMS][BUFPOOL_NCOLLS][BUFPOOL_NCLASSES];
    struct bufpool_mapset *mapset; /* where they live, shared by shape */
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
    /* Calls the rules gave to a node algorithm so far, up to
     * coll_bufpool_node_warmup_calls (counted in call order: the same on
     * every rank). */
    uint64_t node_row_calls;
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
    /* Hosts the communicator spans and the most of its ranks on one host
     * (bufpool_comm_hosts; 0: not known), for auto. */
    int hosts;
    int max_ppn;
    /* The collectives (bits 1 << BUFPOOL_COLL_*) whose previous blocking
     * function is coll/han's: its allreduce and reduce reduce between
     * hosts through libnbc's MPI_Ireduce (the guards of
     * coll_bufpool_resolve.c).  Set at enable. */
    unsigned prev_han;
    /* What the algorithms keep for this communicator (request arrays,
     * allreduce hier's map of hosts). */
    bufpool_comm_state_t state;
    /* The tag blocks of the persistent requests bufpool made on this
     * communicator (runtime/coll_bufpool_task.c): later reservations skip
     * them.  4 bytes per persistent request, freed with the communicator. */
    bufpool_tag_blocks_t persist_tags;
} mca_coll_bufpool_module_t;

OBJ_CLASS_DECLARATION(mca_coll_bufpool_module_t);

/* Where the ranks of comm run, the same on every rank, no communication:
 * host[r] = index of rank r's host in order of first appearance (so a
 * host's first rank is its lowest), from the launch's host names, or under
 * coll_bufpool_test_host_map (testing only) the map's entry for the
 * process's launch rank, cycled.  Returns the number of hosts and sets
 * *max_ppn to the most ranks on one host; 0 (and *max_ppn 0) when a host
 * name is missing; -1 when out of memory.  O(p): each process's host name
 * is looked up once per job (coll_bufpool_peers.h). */
int bufpool_comm_host_ids(struct ompi_communicator_t *comm, int *host, int *max_ppn);
/* Stop the job: an allocation for comm's module failed on this rank only
 * (coll_bufpool_module.c says why). */
void bufpool_abort_out_of_memory(struct ompi_communicator_t *comm, const char *what);

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

/* Whether a collective's hand-back may mend a rank's own block (the entry
 * table's own column: gather, scatter, allgather, alltoall;
 * coll_bufpool_entry.c). */
extern const bool bufpool_hand_back_mends[BUFPOOL_NCOLLS];

/* Whether every blocking call of collective id on the module's
 * communicator goes to the previous module by its rules (one range,
 * "previous", in every class; never a collective whose hand-back may mend
 * a rank's own block, bufpool_hand_back_mends, never a forced
 * "previous"):
 * unless calls are explained, the module then does not install that
 * function, so those calls cost nothing and are not counted, like a
 * disabled collective's. */
bool bufpool_module_hands_back_all(const mca_coll_bufpool_module_t *module, int form,
                                   bufpool_coll_id_t id);

/* Resolve a module's size maps for comm (at enable) from the component's
 * rules and settings, or take those of an earlier communicator of the same
 * shape; OMPI_ERR_OUT_OF_RESOURCE when memory is short.  Prints them at
 * coll_bufpool_verbose >= 3. */
int bufpool_module_resolve(mca_coll_bufpool_module_t *module, struct ompi_communicator_t *comm,
                           struct mca_coll_bufpool_component *component);
/* A module's hold on its maps, when it goes (NULL: none). */
void bufpool_mapset_release(struct bufpool_mapset *set);
/* At component close: the maps no communicator holds. */
void bufpool_mapsets_close(struct mca_coll_bufpool_component *component);

/* ---------------------------------------------------------------------- */
/* The entry points (coll_bufpool_entry.c and, for the nonblocking and
 * persistent forms, coll_bufpool_nb.c), generated from one table
 * (coll_bufpool_entries.h): mca_coll_bufpool_<coll>, mca_coll_bufpool_i<coll>
 * and mca_coll_bufpool_<coll>_init of every collective, declared with the
 * framework's own function types so that a definition that does not match
 * them does not compile. */
#define BUFPOOL_ENTRY_DECL(name)                                                                   \
    extern __typeof__(*(mca_coll_base_module_##name##_fn_t)0) mca_coll_bufpool_##name;             \
    extern __typeof__(*(mca_coll_base_module_i##name##_fn_t)0) mca_coll_bufpool_i##name;           \
    extern __typeof__(*(mca_coll_base_module_##name##_init_fn_t)0) mca_coll_bufpool_##name##_init;
BUFPOOL_FOREACH_COLL(BUFPOOL_ENTRY_DECL)
#undef BUFPOOL_ENTRY_DECL

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_H */
