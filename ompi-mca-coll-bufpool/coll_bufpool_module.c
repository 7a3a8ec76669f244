/*
 * coll/bufpool module: selection per communicator, and the saved entry
 * points of the module selected before us, to which we hand what we do
 * not handle.
 */
#include "coll_bufpool.h"
#include "coll_bufpool_nb.h"
#include "runtime/coll_bufpool_scratch.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ompi/mca/coll/base/base.h"
#include "opal/util/output.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/util/proc.h"

#include "bufpool_params.h"

#define COMPONENT (&mca_coll_bufpool_component)

static void bufpool_module_construct(mca_coll_bufpool_module_t *module)
{
    memset(module->map, 0, sizeof(module->map));
    module->mapset = NULL;
    module->explain = false;
    memset(module->calls, 0, sizeof(module->calls));
    memset(module->fallbacks, 0, sizeof(module->fallbacks));
    module->node_row_calls = 0;
    module->next_module = module->prev_module = NULL;
    module->prev_han = 0; /* enable sets its bits */
    for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
        module->forced[id] = COMPONENT->coll[id].algorithm;
    }
#define BUFPOOL_CLEAR_PREV(name)                                                                   \
    module->prev_##name = NULL;                                                                    \
    module->prev_##name##_module = NULL;
    BUFPOOL_FOREACH_COLL(BUFPOOL_CLEAR_PREV)
#undef BUFPOOL_CLEAR_PREV
#define BUFPOOL_CLEAR_PREV_NB(name)                                                                \
    module->prev_i##name = NULL;                                                                   \
    module->prev_i##name##_module = NULL;                                                          \
    module->prev_##name##_init = NULL;                                                             \
    module->prev_##name##_init_module = NULL;
    BUFPOOL_FOREACH_COLL(BUFPOOL_CLEAR_PREV_NB)
#undef BUFPOOL_CLEAR_PREV_NB
    bufpool_comm_state_init(&module->state, bufpool_comm_host_ids);
    module->state.node_max_bytes = COMPONENT->node_max_bytes;
    module->state.node_cold_calls = COMPONENT->node_cold_calls;
    module->state.node_flat_max = COMPONENT->node_flat_max;
    if (COMPONENT->test_node_l3_n > 0) {
        const ompi_proc_t *me = ompi_proc_local();
        module->state.node_test_l3 =
            COMPONENT->test_node_l3[me->super.proc_name.vpid % (unsigned)COMPONENT->test_node_l3_n];
    }
    module->state.node_fail_rank = COMPONENT->test_node_fail;
    module->state.node_fail_chunk_rank = COMPONENT->test_node_fail_chunk;
    module->state.node_cma = COMPONENT->node_cma;
    module->state.node_proc_link = COMPONENT->node_proc_link;
    module->state.node_refuse_link_rank = COMPONENT->test_node_refuse_link;
    module->state.node_no_cma_rank = COMPONENT->test_node_no_cma;
    module->state.params = COMPONENT->params;
    module->persist_tags = (bufpool_tag_blocks_t){0};
}

static void bufpool_module_destruct(mca_coll_bufpool_module_t *module)
{
#define BUFPOOL_RELEASE_PREV(name)                                                                 \
    if (NULL != module->prev_##name##_module) {                                                    \
        OBJ_RELEASE(module->prev_##name##_module);                                                 \
    }
    BUFPOOL_FOREACH_COLL(BUFPOOL_RELEASE_PREV)
#undef BUFPOOL_RELEASE_PREV
    bufpool_nb_module_destruct(module);
    bufpool_comm_state_fini(&module->state);
    bufpool_tag_blocks_free(&module->persist_tags);
    bufpool_mapset_release(module->mapset);
    /* Its counts stay in the totals MPI_T reads. */
    OPAL_THREAD_LOCK(&COMPONENT->modules_lock);
    if (NULL != module->next_module) {
        module->next_module->prev_module = module->prev_module;
    }
    if (NULL != module->prev_module) {
        module->prev_module->next_module = module->next_module;
    } else if (COMPONENT->modules == module) {
        COMPONENT->modules = module->next_module;
    }
    for (int form = 0; form < BUFPOOL_NFORMS; form++) {
        for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
            COMPONENT->retired_calls[form][id] += module->calls[form][id];
            COMPONENT->retired_fallbacks[form][id] += module->fallbacks[form][id];
        }
    }
    OPAL_THREAD_UNLOCK(&COMPONENT->modules_lock);
}

uint64_t mca_coll_bufpool_count_total(bool fallbacks, int form, bufpool_coll_id_t id)
{
    OPAL_THREAD_LOCK(&COMPONENT->modules_lock);
    uint64_t total =
        fallbacks ? COMPONENT->retired_fallbacks[form][id] : COMPONENT->retired_calls[form][id];
    for (const mca_coll_bufpool_module_t *m = COMPONENT->modules; NULL != m; m = m->next_module) {
        total += __atomic_load_n(fallbacks ? &m->fallbacks[form][id] : &m->calls[form][id],
                                 __ATOMIC_RELAXED);
    }
    OPAL_THREAD_UNLOCK(&COMPONENT->modules_lock);
    return total;
}

OBJ_CLASS_INSTANCE(mca_coll_bufpool_module_t, mca_coll_base_module_t, bufpool_module_construct,
                   bufpool_module_destruct);

int mca_coll_bufpool_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void)enable_progress_threads;
    (void)enable_mpi_threads; /* every path is thread-safe: nothing to turn off */
    return OMPI_SUCCESS;
}

/* An allocation failed while this process made its module of comm.  The
 * other ranks of comm, whose did not fail, will serve its collectives with
 * bufpool's algorithms; a rank that went without would hang theirs or
 * cross their messages, and no rank can tell the others.  So the job stops
 * here, saying why, as it would at an MPI call that ran out of memory with
 * MPI_ERRORS_ARE_FATAL.  (A communicator of one process has no one to
 * disagree with: its callers do not come here.) */
/* The communicator's name for users' messages (one merged from an
 * inter-communicator has none). */
static const char *comm_label(const struct ompi_communicator_t *comm)
{
    return '\0' != comm->c_name[0] ? comm->c_name : "(unnamed)";
}

void bufpool_abort_out_of_memory(struct ompi_communicator_t *comm, const char *what)
{
    char host[64] = "";
    (void)gethostname(host, sizeof(host) - 1);
    bufpool_params_show(COMPONENT->params, "comm-out-of-memory",
                        "coll_bufpool: out of memory on host %s (pid %d) making %s of "
                        "communicator %s; aborting the job",
                        host, (int)getpid(), what, comm_label(comm));
    ompi_mpi_abort(comm, OMPI_ERR_OUT_OF_RESOURCE);
}

int bufpool_comm_host_ids(struct ompi_communicator_t *comm, int *host, int *max_ppn)
{
    const int p = ompi_comm_size(comm), nmap = COMPONENT->test_host_map_n;
    int *number = malloc((size_t)p * sizeof(*number));
    int *local = NULL, *ranks = NULL;
    int nhosts = 0, most = 0;

    *max_ppn = 0;
    if (NULL == number) {
        return -1;
    }
    /* Each rank's host as a number of this process (the peers' facts) or of
     * the test map: the same host, the same number. */
    for (int r = 0; r < p; r++) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, r);
        number[r] = nmap > 0 ? COMPONENT->test_host_map[proc->super.proc_name.vpid % (unsigned)nmap]
                             : bufpool_peers_of(&COMPONENT->peers, proc).host;
        if (number[r] < 0) {
            goto out; /* a name not known: 0 hosts */
        }
        most = number[r] > most ? number[r] : most;
    }
    /* Renumbered in the order of first appearance by rank, which every rank
     * sees alike. */
    local = malloc(((size_t)most + 1) * sizeof(*local));
    ranks = calloc((size_t)p, sizeof(*ranks));
    if (NULL == local || NULL == ranks) {
        nhosts = -1;
        goto out;
    }
    for (int g = 0; g <= most; g++) {
        local[g] = -1;
    }
    for (int r = 0; r < p; r++) {
        if (local[number[r]] < 0) {
            local[number[r]] = nhosts++;
        }
        host[r] = local[number[r]];
        if (++ranks[host[r]] > *max_ppn) {
            *max_ppn = ranks[host[r]];
        }
    }
out:
    if (nhosts <= 0) {
        *max_ppn = 0;
    }
    free(number);
    free(local);
    free(ranks);
    return nhosts;
}

/* Hosts the communicator spans, the same number on every rank
 * (bufpool_comm_host_ids).  Where a name is missing, locality alone says
 * one host or more, and every rank agrees on that (a communicator on
 * several hosts leaves every rank a peer off its node): 2 then stands for
 * "several", and *max_ppn is 0 (not known). */
static int bufpool_comm_hosts(struct ompi_communicator_t *comm, int *max_ppn)
{
    const int p = ompi_comm_size(comm);
    if (1 == p) {
        *max_ppn = 1;
        return 1;
    }
    int *host = malloc((size_t)p * sizeof(*host));
    int hosts = NULL != host ? bufpool_comm_host_ids(comm, host, max_ppn) : -1;
    free(host);
    if (hosts > 0) {
        return hosts;
    }
    if (hosts < 0) {
        /* The others counted the hosts; locality alone would give this
         * rank another max_ppn, and other decisions. */
        bufpool_abort_out_of_memory(comm, "its hosts");
    }
    *max_ppn = 0;
    for (int r = 0; r < p; r++) {
        if (!OPAL_PROC_ON_LOCAL_NODE(ompi_comm_peer_lookup(comm, r)->super.proc_flags)) {
            return 2;
        }
    }
    return 1;
}

/* Whether module is coll/han's: its class, by name (the same in 4.1, 5.0
 * and 6.0; no header of han's is installed to compare more). */
static bool module_is_han(const mca_coll_base_module_t *module)
{
    const opal_class_t *cls = NULL != module ? module->super.obj_class : NULL;
    return NULL != cls && NULL != cls->cls_name &&
           0 == strcmp(cls->cls_name, "mca_coll_han_module_t");
}

/* A communicator whose processes are not set up alike, said once per
 * process by the communicators' first ranks (every rank when verbose):
 * a job of many ranks says it a few times, not once per rank. */
static void say_not_alike(struct ompi_communicator_t *comm, const char *why)
{
    static int said;
    if ((0 == ompi_comm_rank(comm) || COMPONENT->verbose >= 1) &&
        0 == __atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
        char host[64] = "";
        (void)gethostname(host, sizeof(host) - 1);
        bufpool_params_show(COMPONENT->params, "not-alike",
                            "coll_bufpool: on host %s (pid %d), the processes of communicator %s "
                            "are not set up alike: %s; bufpool stays out of it",
                            host, (int)getpid(), comm_label(comm), why);
    }
}

/*
 * Save the previous layer's function and module for every collective we
 * took over.  Open MPI enables modules in ascending priority and copies a
 * module's non-NULL functions over the communicator's table after its
 * enable returns (Open MPI 6: the module installs itself, below), so
 * comm->c_coll still holds the layer below us here.
 */
static int bufpool_module_enable(mca_coll_base_module_t *base, struct ompi_communicator_t *comm)
{
    mca_coll_bufpool_module_t *module = (mca_coll_bufpool_module_t *)base;
    const char *missing = NULL;

#define BUFPOOL_SAVE_PREV(name)                                                                    \
    if (NULL != module->super.coll_##name) {                                                       \
        if (NULL == comm->c_coll->coll_##name || NULL == comm->c_coll->coll_##name##_module) {     \
            missing = #name;                                                                       \
        } else {                                                                                   \
            module->prev_##name = comm->c_coll->coll_##name;                                       \
            module->prev_##name##_module = comm->c_coll->coll_##name##_module;                     \
            OBJ_RETAIN(module->prev_##name##_module);                                              \
        }                                                                                          \
    }
    BUFPOOL_FOREACH_COLL(BUFPOOL_SAVE_PREV)
#undef BUFPOOL_SAVE_PREV

    if (NULL != missing) {
        /* Without a module below us there is nothing to fall back to for the
         * cases we do not cover: stay out of this communicator (the
         * destructor releases what was retained). */
        opal_output_verbose(1, ompi_coll_base_framework.framework_output,
                            "coll:bufpool: no module below bufpool provides %s on "
                            "communicator %s; bufpool disabled there",
                            missing, comm->c_name);
        if (COMPONENT->verbose >= 1) {
            opal_output(0,
                        "coll_bufpool: no module below bufpool provides %s on communicator "
                        "%s; bufpool disabled there",
                        missing, comm->c_name);
        }
        return OMPI_ERROR;
    }
    char why[256];
    const bufpool_alike_verdict_t verdict =
        bufpool_alike_comm(&COMPONENT->alike, &COMPONENT->peers, comm, why, sizeof(why));
    if (BUFPOOL_ALIKE_UNKNOWN == verdict) {
        /* Keeping out alone could leave the others serving: stop, as for
         * a module this rank could not allocate. */
        opal_output_verbose(1, ompi_coll_base_framework.framework_output,
                            "coll:bufpool: communicator %s: %s", comm->c_name, why);
        bufpool_abort_out_of_memory(comm, "its module (looking up its members' settings)");
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (BUFPOOL_APART == verdict) {
        /* Every member finds a difference (coll_bufpool_alike.h): all keep
         * the modules below, as if bufpool were not loaded. */
        opal_output_verbose(1, ompi_coll_base_framework.framework_output,
                            "coll:bufpool: the processes of communicator %s are not set up "
                            "alike (%s); bufpool disabled there",
                            comm->c_name, why);
        say_not_alike(comm, why);
        return OMPI_ERROR;
    }
    module->hosts = bufpool_comm_hosts(comm, &module->max_ppn);
#define BUFPOOL_NOTE_HAN(name)                                                                     \
    if (module_is_han(module->prev_##name##_module)) {                                             \
        module->prev_han |= 1u << BUFPOOL_COLL_##name;                                             \
    }
    BUFPOOL_FOREACH_COLL(BUFPOOL_NOTE_HAN)
#undef BUFPOOL_NOTE_HAN
    if (OMPI_SUCCESS != bufpool_module_resolve(module, comm, COMPONENT)) {
        opal_output_verbose(1, ompi_coll_base_framework.framework_output,
                            "coll:bufpool: out of memory resolving the rules of communicator %s",
                            comm->c_name);
        if (ompi_comm_size(comm) > 1) {
            bufpool_abort_out_of_memory(comm, "the size maps");
        }
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* A collective the rules give wholly to the previous module here is
     * not installed (unless its calls are to be explained): Open MPI then
     * calls the previous module itself. */
#define BUFPOOL_UNINSTALL_WHOLE(name)                                                              \
    if (!module->explain &&                                                                        \
        bufpool_module_hands_back_all(module, BUFPOOL_FORM_BLOCKING, BUFPOOL_COLL_##name)) {       \
        module->super.coll_##name = NULL;                                                          \
    }
    BUFPOOL_FOREACH_COLL(BUFPOOL_UNINSTALL_WHOLE)
#undef BUFPOOL_UNINSTALL_WHOLE
    OPAL_THREAD_LOCK(&COMPONENT->modules_lock);
    module->next_module = COMPONENT->modules;
    if (NULL != module->next_module) {
        module->next_module->prev_module = module;
    }
    COMPONENT->modules = module;
    OPAL_THREAD_UNLOCK(&COMPONENT->modules_lock);
    bufpool_nb_module_enable(module, comm);
#if BUFPOOL_MODULE_INSTALLS_ITSELF
    /* Open MPI 6: nothing copies our functions into the communicator; we
     * put them there ourselves (the previous ones are saved above). */
#define BUFPOOL_INSTALL_SELF(name)                                                                 \
    if (NULL != module->super.coll_##name) {                                                       \
        comm->c_coll->coll_##name = module->super.coll_##name;                                     \
        comm->c_coll->coll_##name##_module = &module->super;                                       \
    }
    BUFPOOL_FOREACH_COLL(BUFPOOL_INSTALL_SELF)
#undef BUFPOOL_INSTALL_SELF
#endif
    return OMPI_SUCCESS;
}

#if BUFPOOL_MODULE_INSTALLS_ITSELF
/* Open MPI 6 disables modules in the reverse order of enable: put back the
 * functions that were there before us so the layer below finds its own. */
static int bufpool_module_disable(mca_coll_base_module_t *base, struct ompi_communicator_t *comm)
{
    mca_coll_bufpool_module_t *module = (mca_coll_bufpool_module_t *)base;

#define BUFPOOL_RESTORE_PREV(name)                                                                 \
    if (NULL != module->prev_##name##_module) {                                                    \
        comm->c_coll->coll_##name = module->prev_##name;                                           \
        comm->c_coll->coll_##name##_module = module->prev_##name##_module;                         \
    }
    BUFPOOL_FOREACH_COLL(BUFPOOL_RESTORE_PREV)
#undef BUFPOOL_RESTORE_PREV
    bufpool_nb_module_disable(module, comm);
    return OMPI_SUCCESS;
}
#endif

/* The sub-communicators coll/han builds for itself (node-local and between
 * node leaders): its newer algorithms mark them with the info key
 * ompi_comm_coll_han_topo_level, its older ones with a preference
 * "<component>,^han" naming the component han wants on that level (tuned,
 * sm, xhc, libnbc, adapt; 4.1, 5.0 and 6.0 alike).  bufpool stays out of
 * them: there it would sit just below the named component and serve
 * whatever that one lacks (every blocking collective below libnbc and
 * adapt, between the node leaders), which is not the han a call handed back
 * to han, or a bufpool placed below han, means to get; on 5.0 it made han's
 * bcast 2-4x slower (docs/benchmarks.md, "Open MPI 5: bufpool and han"). */
static bool bufpool_han_level(struct ompi_communicator_t *comm)
{
    char value[64];
    if (NULL == comm->super.s_info) {
        return false;
    }
    if (bufpool_info_get(comm->super.s_info, "ompi_comm_coll_han_topo_level", value,
                         sizeof(value))) {
        return true;
    }
    if (!bufpool_info_get(comm->super.s_info, "ompi_comm_coll_preference", value, sizeof(value))) {
        return false;
    }
    const char *comma = strchr(value, ',');
    return NULL != comma && comma > value && 0 == strcmp(comma, ",^han");
}

/* The priority of a communicator of one process: above coll/self's, which
 * otherwise answers every call there with Open MPI's local copy, the one
 * that loses an element between differing datatypes
 * (algorithms/coll_bufpool_own_block.h); every call is handed back to it
 * (the size maps of one rank, coll_bufpool_resolve.c), but the four
 * collectives that may copy a rank's own block stay installed, so that
 * bufpool mends their hand-backs as it does on larger communicators.
 * Just above coll/self, so that a component placed above it on purpose
 * (6.0's coll/accelerator, 78, which stages device buffers) stays above
 * bufpool too. */
static int single_process_priority(int my_priority)
{
    const int idx = mca_base_var_find("ompi", "coll", "self", "priority");
    const int *self_priority = NULL;
    if (idx < 0 || OPAL_SUCCESS != mca_base_var_get_value(idx, &self_priority, NULL, NULL) ||
        NULL == self_priority || *self_priority < my_priority) {
        return my_priority;
    }
    return *self_priority + 1;
}

mca_coll_base_module_t *mca_coll_bufpool_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    /* Read at every new communicator: the priority may change at run time. */
    int my_priority = mca_coll_bufpool_priority();

    /* Every disqualification is logged at the coll framework's verbosity
     * (--mca coll_base_verbose 10), as the other coll components do. */
    const char *why_not = my_priority < 0            ? "negative coll_bufpool_priority"
                          : OMPI_COMM_IS_INTER(comm) ? "an inter-communicator"
                          : bufpool_han_level(comm)  ? "one of coll/han's own sub-communicators"
                                                     : NULL;
    if (NULL != why_not) {
        opal_output_verbose(10, ompi_coll_base_framework.framework_output,
                            "coll:bufpool:comm_query (%s): not used: %s", comm->c_name, why_not);
        return NULL;
    }
    bufpool_scratch_lookup();

    mca_coll_bufpool_module_t *module = OBJ_NEW(mca_coll_bufpool_module_t);
    if (NULL == module) {
        if (ompi_comm_size(comm) > 1) {
            bufpool_abort_out_of_memory(comm, "the module");
        }
        return NULL;
    }
    module->super.coll_module_enable = bufpool_module_enable;
    BUFPOOL_CLEAR_FT_EVENT(module->super.ft_event);
#if BUFPOOL_MODULE_INSTALLS_ITSELF
    module->super.coll_module_disable = bufpool_module_disable;
#endif

    /* A disabled collective keeps the previous module's pointer in the
     * communicator: it costs nothing per call. */
#define BUFPOOL_INSTALL(name)                                                                      \
    module->super.coll_##name =                                                                    \
        COMPONENT->coll[BUFPOOL_COLL_##name].enabled ? mca_coll_bufpool_##name : NULL;
    BUFPOOL_FOREACH_COLL(BUFPOOL_INSTALL)
#undef BUFPOOL_INSTALL
    bufpool_nb_module_query(module);

    const bool single_process = 1 == ompi_comm_size(comm);
    if (single_process) {
        my_priority = single_process_priority(my_priority);
    }
    opal_output_verbose(10, ompi_coll_base_framework.framework_output,
                        "coll:bufpool:comm_query (%s): offered with priority %d%s", comm->c_name,
                        my_priority,
                        single_process ? " (a single process: every call to the module below, "
                                         "a rank's own block mended)"
                                       : "");
    *priority = my_priority;
    return &module->super;
}
