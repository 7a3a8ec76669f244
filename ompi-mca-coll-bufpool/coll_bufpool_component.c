/*
 * coll/bufpool component: the component structure, its parameters (one
 * table; checked in coll_bufpool_settings.c with clear messages), MPI_T
 * variables, open, close and the finalize report.
 */
#include "coll_bufpool.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ompi/mca/coll/base/base.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "algorithms/coll_bufpool_node.h"
#include "algorithms/coll_bufpool_pipeline.h"
#include "bufpool_params.h"
#include "coll_bufpool_nb.h"
#include "coll_bufpool_settings.h"
#include "runtime/coll_bufpool_scratch.h"

static int bufpool_register(void);
static int bufpool_open(void);
static int bufpool_close(void);

mca_coll_bufpool_component_t mca_coll_bufpool_component = {
    .super =
        {
            .collm_version =
                BUFPOOL_COMPONENT_VERSION(BUFPOOL_COLL_BASE_VERSION, "bufpool", bufpool_open,
                                          bufpool_close, bufpool_register),
            .collm_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
            .collm_init_query = mca_coll_bufpool_init_query,
            .collm_comm_query = mca_coll_bufpool_comm_query,
        },
};

#define COMPONENT (&mca_coll_bufpool_component)

/* What each algorithm is, for the help text of its parameter. */
static const char *const algorithm_help[BUFPOOL_NCOLLS] = {
    [BUFPOOL_COLL_allreduce] =
        "recursive_doubling (latency-bound, small messages; scratch = message), rsag "
        "(pipelined pairwise reduce-scatter then allgather; scratch = depth segments), ring "
        "(ring reduce-scatter in rounds then ring allgather: neighbours only, bounded "
        "requests; many processes; commutative operations), hier (across hosts: node-local "
        "reduce to each host's first rank, allreduce among those, node-local bcast, segment by "
        "segment; commutative operations; on one host auto's choice runs), node (one host, up "
        "to 4 KiB: every rank reduces every rank's slot of a shared segment, any operation), "
        "node_rsag (one host: each rank reduces a slice of the shared slots; above 4 KiB "
        "commutative operations in 64 KiB rounds), hier_node (hier with each host's phases "
        "through segments its ranks share: on hosts of one size every rank reduces its "
        "slice of each round and exchanges it with its peers on the other hosts; else "
        "reduce to the host's first rank, every rank reducing a slice, then bcast; a host "
        "where that cannot serve runs hier's own)",
    [BUFPOOL_COLL_reduce] = "chain (pipelined chain in rank order; any operation; large "
                            "messages), binary (pipelined binary tree; commutative operations; "
                            "many processes), rsg (pipelined pairwise reduce-scatter then gather "
                            "to the root; commutative operations; spreads the reduction work), "
                            "node (one host, through a shared segment: up to 4 KiB any "
                            "operation, above in rounds of segment_size per rank, every rank "
                            "reducing a slice, commutative operations)",
    [BUFPOOL_COLL_bcast] =
        "binomial (small messages), chain (pipelined chain, large "
        "messages), scatter_allgather (large messages, many processes), "
        "linear (root sends to every rank at once; 2 processes, and small messages "
        "on up to 7), node (one host, through a shared segment: up to 4 KiB in one "
        "slot, above in rounds of segment_size through a ring of pipeline_depth), "
        "node_cma (node, but above 4 KiB the ranks read the root's buffer with one "
        "copy, CMA, where coll_bufpool_node_cma found it allowed)",
    [BUFPOOL_COLL_allgather] = "ring, recursive_doubling (power-of-two sizes), direct (every "
                               "block sent to every rank at once), node (one host, through a "
                               "shared segment: blocks up to 4 KiB in one slot, above in "
                               "rounds of segment_size through a ring of pipeline_depth), "
                               "node_cma (node, but above 4 KiB every rank reads the others' "
                               "blocks with one copy, CMA, where coll_bufpool_node_cma found "
                               "it allowed)",
    [BUFPOOL_COLL_reduce_scatter] = "pairwise (pipelined; commutative operations; scratch = "
                                    "depth segments), ring (p - 1 neighbour steps per round of "
                                    "depth/2 segments; many processes; commutative operations), "
                                    "rhalving (recursive halving, log2 p steps per round; "
                                    "forced only; commutative operations), node (one host, "
                                    "inputs up to 4 KiB, through a shared segment; "
                                    "commutative operations)",
    [BUFPOOL_COLL_reduce_scatter_block] = "pairwise (pipelined; commutative operations; "
                                          "scratch = depth segments), ring (p - 1 neighbour "
                                          "steps per round of depth/2 segments; many processes; "
                                          "commutative operations), rhalving (recursive "
                                          "halving, log2 p steps per round; forced only; "
                                          "commutative operations), node (one host, inputs up "
                                          "to 4 KiB, through a shared segment; commutative "
                                          "operations)",
    [BUFPOOL_COLL_alltoall] = "pairwise (one peer per step; MPI_IN_PLACE through pooled "
                              "segments), linear (all transfers posted at once)",
    [BUFPOOL_COLL_gather] = "binomial (tree; intermediate ranks stream through pooled "
                            "segments), linear, node (one host, blocks up to 4 KiB, through a "
                            "shared segment)",
    [BUFPOOL_COLL_scatter] = "binomial (tree; intermediate ranks stream through pooled "
                             "segments), linear, node (one host, p blocks up to 4 KiB "
                             "together, through a shared segment)",
    [BUFPOOL_COLL_scan] = "chain (pipelined, any operation), recursive_doubling (small "
                          "messages, any operation; scratch = two messages, so only when that "
                          "fits pipeline_depth x segment_size), node (one host, through shared "
                          "segments, any operation: up to 4 KiB every rank reduces the slots "
                          "of the ranks up to it; above, a chain of rounds, elements within "
                          "64 KiB)",
    [BUFPOOL_COLL_exscan] = "chain (pipelined, any operation), recursive_doubling (small "
                            "messages, any operation; scratch = two messages, so only when "
                            "that fits pipeline_depth x segment_size), node (one host, through "
                            "shared segments, any operation: up to 4 KiB every rank reduces "
                            "the slots of the ranks before it; above, a chain of rounds, "
                            "elements within 64 KiB)",
    [BUFPOOL_COLL_barrier] = "node (one host: every rank posts a sequence word in a shared "
                             "segment and waits for all the others'; auto serves barrier only "
                             "where a rules row names node, else the previous module does)",
};

/* The parameter library's view of this component (messages name
 * coll_bufpool_<param>; every rank speaks once verbose is 1). */
static const bufpool_params_t coll_pp = {
    .component = &mca_coll_bufpool_component.super.collm_version,
    .prefix = "coll_bufpool",
    .verbose = &mca_coll_bufpool_component.verbose,
    .help_file = "help-coll-bufpool.txt",
};

/* A text parameter: the default is also where storage points first. */
static void register_var(const char *name, const char *help, int level, mca_base_var_scope_t scope,
                         const char *dflt, char **storage)
{
    bufpool_params_register_text(&coll_pp, name, help, dflt, (mca_base_var_info_lvl_t)level, scope,
                                 storage);
}

/* ---------------------------------------------------------------------- */
/* MPI_T performance variables. */

static int read_counter(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void)obj;
    *(unsigned long long *)value = __atomic_load_n((const uint64_t *)pvar->ctx, __ATOMIC_RELAXED);
    return OPAL_SUCCESS;
}

/* Calls served and handed back are counted per module: ctx is the
 * counter of destroyed modules for the form and collective, which tells
 * which total to read. */
static int read_module_counter(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void)obj;
    const uint64_t *ctx = pvar->ctx;
    const uint64_t *fb = &COMPONENT->retired_fallbacks[0][0];
    const bool fallbacks = ctx >= fb && ctx < fb + BUFPOOL_NFORMS * BUFPOOL_NCOLLS;
    const ptrdiff_t at = ctx - (fallbacks ? fb : &COMPONENT->retired_calls[0][0]);
    *(unsigned long long *)value = mca_coll_bufpool_count_total(
        fallbacks, (int)(at / BUFPOOL_NCOLLS), (bufpool_coll_id_t)(at % BUFPOOL_NCOLLS));
    return OPAL_SUCCESS;
}

static void register_pvar_read(const char *name, const char *help, int var_class, uint64_t *ctx,
                               mca_base_get_value_fn_t read)
{
    (void)mca_base_component_pvar_register(
        &COMPONENT->super.collm_version, name, help, OPAL_INFO_LVL_4, var_class,
        MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
        MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, read, NULL, NULL, ctx);
}

static void register_pvar(const char *name, const char *help, int var_class, uint64_t *counter)
{
    register_pvar_read(name, help, var_class, counter, read_counter);
}

/* The counters of one collective in every form: coll_bufpool_<coll>_calls
 * and _fallbacks (MPI_<coll>), i<coll>_ (MPI_I<coll>), <coll>_init_
 * (MPI_<coll>_init: persistent requests, not their starts). */
static void register_counters(const char *coll, int id)
{
    static const char *const prefix[BUFPOOL_NFORMS] = {"", "i", ""};
    static const char *const suffix[BUFPOOL_NFORMS] = {"", "", "_init"};
    static const char *const what[BUFPOOL_NFORMS] = {"Calls to", "Calls to",
                                                     "Persistent requests of"};
    char name[64], form_coll[48], help[512];
    for (int form = 0; form < BUFPOOL_NFORMS; form++) {
        snprintf(form_coll, sizeof(form_coll), "%s%s%s", prefix[form], coll, suffix[form]);
        snprintf(name, sizeof(name), "%s_calls", form_coll);
        snprintf(help, sizeof(help), "%s MPI_%s%s served by bufpool's own algorithms%s", what[form],
                 BUFPOOL_FORM_NONBLOCKING == form ? "I" : "",
                 BUFPOOL_FORM_NONBLOCKING == form ? coll : form_coll,
                 BUFPOOL_FORM_PERSISTENT == form ? " (their starts: coll_bufpool_persistent_starts)"
                                                 : "");
        register_pvar_read(name, help, MCA_BASE_PVAR_CLASS_COUNTER,
                           &COMPONENT->retired_calls[form][id], read_module_counter);
        snprintf(name, sizeof(name), "%s_fallbacks", form_coll);
        snprintf(help, sizeof(help),
                 "%s MPI_%s%s handed to the previously selected module (a rules row or "
                 "min_size says so, or the algorithm cannot serve the call; a disabled "
                 "collective or form is not installed and not counted)",
                 what[form], BUFPOOL_FORM_NONBLOCKING == form ? "I" : "",
                 BUFPOOL_FORM_NONBLOCKING == form ? coll : form_coll);
        register_pvar_read(name, help, MCA_BASE_PVAR_CLASS_COUNTER,
                           &COMPONENT->retired_fallbacks[form][id], read_module_counter);
    }
}

/* Every component-wide parameter, typed as text and checked by
 * bufpool_settings_check (common/bufpool_params.h says why): name, default,
 * info level, scope, where its text is kept, help.  A new parameter is one
 * row here and one line in bufpool_settings_check.  (The per-collective
 * ones, coll_bufpool_<coll>_enable and _algorithm, are made in
 * register_colls.)  The priority is writable at run time through MPI_T
 * (SCOPE_ALL_EQ): it applies to communicators created afterwards, which
 * lets one job compare bufpool with the default selection communicator by
 * communicator. */
typedef struct coll_param {
    const char *name;
    const char *dflt;
    int level;
    mca_base_var_scope_t scope;
    size_t offset; /* of its char * in mca_coll_bufpool_component_t */
    const char *help;
} coll_param_t;

static const coll_param_t coll_params[] = {
    {"priority", DEFAULT_PRIORITY, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
     offsetof(mca_coll_bufpool_component_t, priority_text),
     "Priority of coll bufpool (an integer). The default, 40, is above tuned (30) "
     "and, on Open MPI 5.0 and 6.0, above han (35), so loading the component is "
     "enough to use it; 31 to 34 leave communicators spanning several hosts to han "
     "on 5.0 and 6.0, a value below "
     "30 lets tuned win "
     "every function tuned provides, a negative value disables bufpool. Applies to "
     "communicators "
     "created after it is set (it may be changed at run time with MPI_T)"},
    {"verbose", "0", OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, verbose_text),
     "Verbosity (0 to 9): 0 errors and warnings only, 1 says where scratch memory "
     "comes from and prints the counters at finalize, 2 also explains each call's "
     "choice (algorithm, or the previous module, and why)"},
    {"segment_size", DEFAULT_SEGMENT_SIZE, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, segment_size_text),
     "Bytes per pipeline segment (suffixes K, M, G), from 4K to 64M. Scratch "
     "memory of one call is at most pipeline_depth x segment_size. Near the "
     "network's bandwidth-delay product is best: tens to hundreds of KiB. "
     "Transfers that need no scratch (2-rank allreduce and reduce_scatter, not "
     "in place) use segments of 8 x segment_size"},
    {"pipeline_depth", DEFAULT_PIPELINE_DEPTH, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, pipeline_depth_text),
     "Segments in flight per stream (1 to " BUFPOOL_STR(
         BUFPOOL_MAX_DEPTH) "): how far the "
                            "transfer of later segments runs ahead of the reduction of the current "
                            "one (streams that "
                            "receive straight into the user's buffer keep up to " BUFPOOL_STR(
                                BUFPOOL_MAX_DEPTH) " posted)"},
    {"max_requests", DEFAULT_MAX_REQUESTS, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, max_requests_text),
     "Point-to-point requests one rank keeps in flight in one collective call (2 to " BUFPOOL_STR(
         BUFPOOL_MAX_REQUESTS_LIMIT) "; 0, the default: no bound). An algorithm that "
                                     "would post more waits for its oldest request first, so that "
                                     "large communicators do not "
                                     "flood the network and the PML with p - 1 transfers at once; "
                                     "allreduce rsag, whose "
                                     "allgather half does not wait in order, is replaced by ring "
                                     "when its requests would exceed "
                                     "this bound. Suggested: 64 on communicators of hundreds of "
                                     "ranks"},
    {"min_size", DEFAULT_MIN_SIZE, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, min_size_text),
     "Messages smaller than this (bytes per process, suffixes K, M, G) go to the "
     "previously selected module, except (built against Open MPI <= 4.1.4) "
     "alltoalls in the range of tuned's Bruck algorithm, which may corrupt them "
     "(open-mpi/ompi#10488); 0 lets bufpool handle every size"},
    {"small_size", DEFAULT_SMALL_SIZE, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, small_size_text),
     "Messages up to this size (bytes, suffixes K, M, G) use latency-bound "
     "algorithms when the algorithm is auto (allreduce: recursive doubling; bcast "
     "on 8 or more processes: binomial tree); at most segment_size"},
    {"model_links", "", OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, model_links_text),
     "Link classes of the cost model that chooses auto's algorithms on "
     "communicators spanning several hosts (and on one host for alltoall, gather and "
     "scatter): entries "
     "class:latency_us,bandwidth_GBps,reduce_GBps (class shm, tcp, ib or efa; an "
     "empty field keeps the default) and inter=tcp|ib|efa (the class between hosts), "
     "separated by ';'. Applied after coll_bufpool_model_links_file. See "
     "docs/multihost.md and bench/coll_model"},
    {"model_links_file", "", OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, model_links_file),
     "File of cost-model link entries, one per line, same syntax as "
     "coll_bufpool_model_links ('#' starts a comment); empty: none"},
    {"rules_file", "", OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, rules_file),
     "A rules file (as bufpool-tune writes them; format in docs/rules.md and the "
     "installed default.rules): its rows decide before the default rules (or alone, "
     "with coll_bufpool_rules_default off). A file that cannot be read or has an "
     "error is reported with its line, and the default rules alone apply; empty, the "
     "default: none"},
    {"rules_default", "on", OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, rules_default_text),
     "Consult the default rules (measured on the project's machines, compiled in) "
     "after the rows of coll_bufpool_rules_file (on|off); off leaves only the user's "
     "rows (none without a rules file) and each collective's own default"},
    {"node_max_bytes", DEFAULT_NODE_MAX_BYTES, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, node_max_bytes_text),
     "Most bytes of node segments (the shared memory of the node algorithms, in "
     "/dev/shm) one process maps at once, over all its communicators (suffixes K, M, "
     "G). A communicator whose segment would take a rank past it runs the node "
     "algorithms' point-to-point fallbacks instead, on every rank alike, and says so "
     "once; 0: no node segment at all (and no message)"},
    {"node_cold_calls", DEFAULT_NODE_COLD_CALLS, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, node_cold_calls_text),
     "A communicator's chunk segment (allreduce node_rsag, reduce, bcast and allgather node "
     "above 4 KiB: "
     "a ring of pipeline_depth x segment_size per rank, or the rules row's) is unmapped "
     "after this many node calls of the communicator in a row without such a call, "
     "on every rank at the same call, and made again by the next one (0: kept for "
     "the communicator's life)"},
    {"node_flat_max", DEFAULT_NODE_FLAT_MAX, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, node_flat_max_text),
     "The most ranks of a communicator whose node "
     "allreduce, reduce, bcast and barrier up to 4 KiB read every rank's slot of the shared "
     "segment; above, ranks gather in groups of at most sqrt(ranks) that never span two "
     "L3 caches where the processes are bound within one: each group's last rank reduces "
     "its group, and the others read one slot per group (coll_bufpool_node_tree_calls). "
     "Rank 0's value counts on every rank; 2 to 1048576"},
    {"node_warmup_calls", DEFAULT_NODE_WARMUP_CALLS, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, node_warmup_calls_text),
     "The first this many calls of a communicator that the rules give to a node "
     "algorithm go to the previous module instead, so that a communicator making "
     "few calls never pays the set-up of its shared segment (some 60 us at 2 ranks); "
     "counted in call order, the same on every rank. A node algorithm forced by "
     "coll_bufpool_<coll>_algorithm or the info key serves from the first call; 0: no "
     "warm-up"},
    {"node_cma", "on", OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, node_cma_text),
     "Whether bcast and allgather \"node_cma\" may read blocks above 4 KiB straight "
     "from their owners' buffers with process_vm_readv (CMA; on|off): a communicator's "
     "first such call checks, with one system call per rank, that every rank may read "
     "another's memory. Where a rank says off, or some rank may not (another user, "
     "Yama's ptrace_scope, a container's seccomp filter), node_cma runs as node, on "
     "every rank alike"},
    {"node_proc_link", "on", OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, node_proc_link_text),
     "Whether the shared segments this process creates for the node algorithms are "
     "unnamed (on|off): the file on /dev/shm has no name, the other ranks open it "
     "through this process's /proc/PID/fd, and it goes with the last mapping, so a "
     "job killed at any moment leaves nothing in /dev/shm. Where a rank may not open "
     "that link (another user or PID namespace, a security module), the set-up tries "
     "again with a named segment, and this process names its later ones "
     "(coll_bufpool_node_links_refused). off: every segment has a name in /dev/shm "
     "while its ranks map it, registered with the runtime for removal should this "
     "process die; for systems that log each refused /proc access"},
    {"test_host_map", "", OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, test_host_map_text),
     "For testing only: pretend that the process of launch rank r runs on host "
     "entry (r mod entries) of this comma-separated list of host numbers (e.g. "
     "0,0,0,1 or 0,1,2), so that one machine exercises the multi-host paths "
     "(allreduce hier, auto's cost model); empty, the default: the real host names"},
    {"test_node_l3", "", OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, test_node_l3_text),
     "For testing only: the L3 cache that the process of launch rank r says it is bound "
     "within, for the node algorithms' groups (coll_bufpool_node_flat_max): entry (r mod "
     "entries) of this comma-separated list (-1: none), instead of what sysfs and its "
     "CPU affinity say; empty, the default: sysfs's"},
    {"test_nbc_tag_range", "0", OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, test_nbc_tag_range_text),
     "For testing only: the tags a nonblocking or persistent collective of bufpool "
     "reserves on its communicator wrap after this many (0, the default: Open MPI's "
     "whole range of about 2^30, which a long job may also wrap), so that a test "
     "reaches the wrap within seconds"},
    {"test_node_fail", "-1", OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, test_node_fail_text),
     "For testing only: the rank (of each communicator) that fails to create or map "
     "the node algorithms' shared segment, as when /dev/shm is full, so that a test "
     "sees every rank fall back alike; -1, the default: none"},
    {"test_node_no_cma", "-1", OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, test_node_no_cma_text),
     "For testing only: the rank of each communicator whose single-copy probe (CMA, for "
     "bcast and allgather node_cma) fails as if it were forbidden; -1 (the default): none"},
    {"test_node_refuse_link", "-1", OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, test_node_refuse_link_text),
     "For testing only: the rank of each node segment's ranks that reports it could "
     "not open rank 0's /proc/PID/fd link to an unnamed segment, so that a test sees "
     "the set-up fall back to a named one; -1 (the default): none"},
    {"test_node_fail_chunk", "-1", OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, test_node_fail_chunk_text),
     "For testing only: the rank (of each communicator) that fails to create or map "
     "the second segment of the node algorithms, the chunks of allreduce node_rsag "
     "and reduce, bcast and allgather node above 4 KiB, so that a test sees every rank fall "
     "back alike there; -1, the default: none"},
    {"nonblocking", "on", OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, nonblocking_text),
     "Let bufpool run the nonblocking collectives (MPI_Iallreduce, ...) of the "
     "collectives it runs, with the same algorithms, plans and scratch bound as the "
     "blocking ones (on|off); off leaves them to the previously selected module "
     "(libnbc) at no cost"},
    {"persistent", "on", OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, persistent_text),
     "Let bufpool run the persistent collectives (MPI_Allreduce_init, ...; "
     "MPIX_Allreduce_init on Open MPI 4.1) of the collectives it runs, scratch kept "
     "from MPI_Start to MPI_Start and returned at MPI_Request_free (on|off); off "
     "leaves them to the previously selected module (libnbc) at no cost"},
    {"nb_stack_size", DEFAULT_NB_STACK_SIZE, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
     offsetof(mca_coll_bufpool_component_t, nb_stack_size_text),
     "Bytes of the stack each nonblocking or persistent collective runs on while in "
     "flight (suffixes K, M, G), from 64K to 64M, above a 64 KiB guard region. Only "
     "bufpool's and Open MPI's own code runs there: user-defined operations run on "
     "the stack of the thread that progresses the collective, as Open MPI's own "
     "nonblocking collectives run them. Stacks are mapped once and reused; only "
     "the pages touched use memory (coll_bufpool_nb_stack_bytes_peak shows the "
     "deepest use, about 10 KiB)"},
};

/* The counters published as they are (each a uint64_t some layer keeps);
 * the calls served and handed back are register_counters'. */
typedef struct coll_pvar {
    const char *name;
    int var_class;
    uint64_t *counter;
    const char *help;
} coll_pvar_t;

static const coll_pvar_t coll_pvars[] = {
    {"persistent_starts", MCA_BASE_PVAR_CLASS_COUNTER,
     &mca_coll_bufpool_component.persistent_starts,
     "MPI_Start of persistent collectives that bufpool runs (a hand-back it wraps to mend a "
     "rank's own block included: coll_bufpool_own_block_copies)"},
    {"guarded_calls", MCA_BASE_PVAR_CLASS_COUNTER, &mca_coll_bufpool_component.guarded_calls,
     "Calls bufpool served, where its rules (or a node row's first calls, "
     "coll_bufpool_node_warmup_calls) would have handed them back, because the "
     "previous module computes them wrongly: tuned's Bruck alltoall of Open MPI <= 4.1.4 "
     "with differing datatypes, tuned's ring MPI_Allreduce and libnbc's MPI_Ireduce and "
     "MPI_Reduce_init of a user-defined commutative operation (docs/reliability.md)"},
    {"own_block_copies", MCA_BASE_PVAR_CLASS_COUNTER, &mca_coll_bufpool_component.own_block_copies,
     "Gather, scatter, allgather and alltoall calls handed back (persistent ones: starts) "
     "whose own block bufpool copied itself (before the call, then MPI_IN_PLACE at the root of "
     "a gather or scatter and scratch of the receive datatype in an allgather; after it in an "
     "alltoall): Open MPI's ompi_datatype_sndrcv loses data copying more than 64 KiB between "
     "different datatypes (docs/reliability.md)"},
    {"nb_tasks_peak", MCA_BASE_PVAR_CLASS_HIGHWATERMARK, &bufpool_task_counters.tasks_peak,
     "High-water mark of nonblocking and persistent collectives of bufpool in "
     "flight at once (past their first slice)"},
    {"nb_stacks_mapped", MCA_BASE_PVAR_CLASS_COUNTER, &bufpool_task_counters.stacks_mapped,
     "Stacks mapped for nonblocking and persistent collectives (they are reused: "
     "a steady state maps none)"},
    {"nb_progress_registrations", MCA_BASE_PVAR_CLASS_COUNTER,
     &bufpool_task_counters.progress_registrations,
     "Times bufpool's progress callback was registered with Open MPI (it stays "
     "while nonblocking or persistent collectives are in flight, and goes after "
     "1024 idle progress calls)"},
    {"node_calls", MCA_BASE_PVAR_CLASS_COUNTER, &bufpool_node_counters.calls,
     "Calls of the node algorithms (allreduce \"node\" and \"node_rsag\", the other "
     "collectives' \"node\") that ran over a communicator's shared segment, without "
     "point-to-point messages"},
    {"node_fallbacks", MCA_BASE_PVAR_CLASS_COUNTER, &bufpool_node_counters.fallbacks,
     "Calls of the node algorithms run point-to-point instead because their "
     "communicator could not have a shared segment, or its chunk segment "
     "(every rank alike)"},
    {"node_segments", MCA_BASE_PVAR_CLASS_SIZE, &bufpool_node_counters.segments,
     "Shared segments of the node algorithms mapped now (one per communicator that "
     "ran one, unmapped when it is freed, and its chunk segment while a large "
     "allreduce or reduce ran within coll_bufpool_node_cold_calls; one per persistent "
     "request that ran one, and its chunk segment, unmapped when the request is freed)"},
    {"node_segment_bytes", MCA_BASE_PVAR_CLASS_SIZE, &bufpool_node_counters.segment_bytes,
     "Bytes of the shared segments mapped now"},
    {"node_cold_releases", MCA_BASE_PVAR_CLASS_COUNTER, &bufpool_node_counters.cold_releases,
     "Chunk segments of large allreduces unmapped because no call of their communicator "
     "wanted them for coll_bufpool_node_cold_calls node calls"},
    {"node_single_copy_calls", MCA_BASE_PVAR_CLASS_COUNTER, &bufpool_node_counters.single_copy,
     "Calls of bcast and allgather node_cma whose large blocks the ranks read straight "
     "from the owners' buffers (CMA) instead of through the chunk segment"},
    {"node_tree_calls", MCA_BASE_PVAR_CLASS_COUNTER, &bufpool_node_counters.tree_calls,
     "Calls of allreduce, reduce, bcast and barrier node up to 4 KiB that ran in groups (two "
     "levels: above coll_bufpool_node_flat_max ranks) instead of every rank reading "
     "every rank's slot"},
    {"node_links_refused", MCA_BASE_PVAR_CLASS_COUNTER, &bufpool_node_counters.links_refused,
     "Set-ups of node segments this process created unnamed whose link (/proc/PID/fd) "
     "a rank could not open, so that they, and this process's later segments, were "
     "named in /dev/shm while their ranks mapped them (coll_bufpool_node_proc_link)"},
    {"scratch_bytes_in_use", MCA_BASE_PVAR_CLASS_SIZE, &bufpool_scratch_counters.bytes_in_use,
     "Scratch bytes bufpool's collectives hold now"},
    {"scratch_bytes_peak", MCA_BASE_PVAR_CLASS_HIGHWATERMARK, &bufpool_scratch_counters.bytes_peak,
     "High-water mark of scratch bytes held at once by bufpool's collectives"},
    {"scratch_requests", MCA_BASE_PVAR_CLASS_COUNTER, &bufpool_scratch_counters.requests,
     "Scratch buffers taken (from the pool or malloc)"},
    {"scratch_plain_allocs", MCA_BASE_PVAR_CLASS_COUNTER, &bufpool_scratch_counters.plain_allocs,
     "Scratch buffers that came from malloc because the regpar pool was absent or "
     "out of memory"},
    {"requests_peak", MCA_BASE_PVAR_CLASS_HIGHWATERMARK, &bufpool_requests_peak,
     "High-water mark of point-to-point requests one rank kept in flight in one "
     "request set of a call (the sets coll_bufpool_max_requests bounds; receive "
     "windows and send rings of pipeline_depth slots are not counted)"},
};

/* coll_bufpool_<coll>_enable and _algorithm, and the counters of every
 * collective. */
static void register_colls(void)
{
    char name[64], help[1024];
    for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
        const char *coll = mca_coll_bufpool_coll_names[id];
        bufpool_coll_params_t *p = &COMPONENT->coll[id];

        snprintf(name, sizeof(name), "%s_enable", coll);
        snprintf(help, sizeof(help),
                 "Let bufpool run MPI_%s (on|off); off hands every call to the previously "
                 "selected module",
                 coll);
        register_var(name, help, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, "on",
                     &p->enable_text);

        snprintf(name, sizeof(name), "%s_algorithm", coll);
        snprintf(help, sizeof(help),
                 "Algorithm of MPI_%s: auto (chosen by message and communicator size), %s. A "
                 "forced algorithm that cannot serve a call (for example a non-commutative "
                 "operation) hands it to the previous module",
                 coll, algorithm_help[id]);
        register_var(name, help, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, "auto",
                     &p->algorithm_text);

        register_counters(coll, id);
    }
}

static int bufpool_register(void)
{
    COMPONENT->params = &coll_pp;
    (void)bufpool_params_help_init(&coll_pp);
    for (size_t i = 0; i < sizeof(coll_params) / sizeof(coll_params[0]); i++) {
        const coll_param_t *pm = &coll_params[i];
        char **storage = (char **)((char *)COMPONENT + pm->offset);
        *storage = (char *)pm->dflt;
        register_var(pm->name, pm->help, pm->level, pm->scope, pm->dflt, storage);
    }
    register_colls();
    for (size_t i = 0; i < sizeof(coll_pvars) / sizeof(coll_pvars[0]); i++) {
        register_pvar(coll_pvars[i].name, coll_pvars[i].help, coll_pvars[i].var_class,
                      coll_pvars[i].counter);
    }
    bufpool_nb_register_pvars();
    return OMPI_SUCCESS;
}

/* Parameters left out of the digest that says whether every rank is set
 * up alike (coll_bufpool_alike.h): the messages' verbosity and
 * node_flat_max (the communicator's rank 0's value counts on every rank)
 * need not be the same; of the two files, what counts is the text each
 * gave (bufpool_settings_check folds it), not where it was read: a copy
 * at another path on another node is the same setting. */
static const char *const per_process_params[] = {"verbose", "node_flat_max", "rules_file",
                                                 "model_links_file"};

static bool per_process(const char *name)
{
    for (size_t i = 0; i < sizeof(per_process_params) / sizeof(*per_process_params); i++) {
        if (0 == strcmp(name, per_process_params[i])) {
            return true;
        }
    }
    return false;
}

/* What this process's decisions follow from besides the files the
 * settings read (bufpool_settings_check folds those): the build (its
 * version and the checksum of its sources), Open MPI's version and every
 * parameter's text as given.  Then published. */
static void publish_settings_digest(void)
{
    bufpool_alike_t *alike = &COMPONENT->alike;
    char text[64];
    bufpool_alike_add(alike, "ompi-bufpool", BUFPOOL_PACKAGE_VERSION);
    bufpool_alike_add(alike, "sources", bufpool_source_id);
    snprintf(text, sizeof(text), "%d.%d.%d", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
             OMPI_RELEASE_VERSION);
    bufpool_alike_add(alike, "Open MPI", text);
    for (size_t i = 0; i < sizeof(coll_params) / sizeof(coll_params[0]); i++) {
        const coll_param_t *pm = &coll_params[i];
        if (!per_process(pm->name)) {
            bufpool_alike_add(alike, pm->name, *(char **)((char *)COMPONENT + pm->offset));
        }
    }
    for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
        bufpool_alike_add(alike, bufpool_coll_names[id], COMPONENT->coll[id].enable_text);
        bufpool_alike_add(alike, bufpool_coll_names[id], COMPONENT->coll[id].algorithm_text);
    }
    bufpool_alike_publish(alike);
}

static int bufpool_open(void)
{
    OBJ_CONSTRUCT(&COMPONENT->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&COMPONENT->modules_lock, opal_mutex_t);
    COMPONENT->modules = NULL;
    OBJ_CONSTRUCT(&COMPONENT->mapsets_lock, opal_mutex_t);
    COMPONENT->mapsets = NULL;
    bufpool_peers_init(&COMPONENT->peers);
    bufpool_alike_init(&COMPONENT->alike);
    memset(COMPONENT->retired_calls, 0, sizeof(COMPONENT->retired_calls));
    memset(COMPONENT->retired_fallbacks, 0, sizeof(COMPONENT->retired_fallbacks));
    bufpool_settings_check(COMPONENT);
    publish_settings_digest();
    bufpool_scratch_open(COMPONENT->verbose);
    bufpool_nb_open();
    return OMPI_SUCCESS;
}

static void print_report(void)
{
    char line[256];
    opal_output(0,
                "coll_bufpool report (pid %d): scratch from %s; peak %llu bytes in %llu "
                "requests (%llu from malloc)",
                (int)getpid(), bufpool_scratch_from_pool() ? "the regpar pool" : "malloc",
                (unsigned long long)bufpool_scratch_counters.bytes_peak,
                (unsigned long long)bufpool_scratch_counters.requests,
                (unsigned long long)bufpool_scratch_counters.plain_allocs);
    for (int form = 0; form < BUFPOOL_NFORMS; form++) {
        for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
            const uint64_t calls = mca_coll_bufpool_count_total(false, form, (bufpool_coll_id_t)id);
            const uint64_t fallbacks =
                mca_coll_bufpool_count_total(true, form, (bufpool_coll_id_t)id);
            if (0 == calls && 0 == fallbacks) {
                continue;
            }
            char name[48];
            snprintf(name, sizeof(name), "%s%s%s", BUFPOOL_FORM_NONBLOCKING == form ? "i" : "",
                     bufpool_coll_names[id], BUFPOOL_FORM_PERSISTENT == form ? "_init" : "");
            snprintf(line, sizeof(line), "  %-22s %12llu calls %12llu fallbacks", name,
                     (unsigned long long)calls, (unsigned long long)fallbacks);
            opal_output(0, "%s", line);
        }
    }
    const bufpool_node_counters_t *node = &bufpool_node_counters;
    if (0 != node->calls || 0 != node->fallbacks) {
        opal_output(0,
                    "  node algorithms: %llu calls over shared segments, %llu run "
                    "point-to-point for want of one, %llu chunk segments unmapped when cold, "
                    "%llu bcast/allgather read straight (CMA), %llu in groups (two levels), "
                    "%llu segment set-ups named again after a refused /proc link",
                    (unsigned long long)node->calls, (unsigned long long)node->fallbacks,
                    (unsigned long long)node->cold_releases, (unsigned long long)node->single_copy,
                    (unsigned long long)node->tree_calls, (unsigned long long)node->links_refused);
    }
    if (0 != COMPONENT->guarded_calls) {
        opal_output(0,
                    "  %llu calls served because the previous module computes them wrongly "
                    "(coll_bufpool_guarded_calls)",
                    (unsigned long long)COMPONENT->guarded_calls);
    }
    if (0 != COMPONENT->own_block_copies) {
        opal_output(0,
                    "  %llu gather/scatter/allgather/alltoall calls handed back with their "
                    "own block copied by bufpool (coll_bufpool_own_block_copies)",
                    (unsigned long long)COMPONENT->own_block_copies);
    }
    bufpool_nb_report();
}

static int bufpool_close(void)
{
    if (COMPONENT->verbose >= 1) {
        print_report();
    }
    bufpool_nb_close();
    bufpool_scratch_close();
    OBJ_DESTRUCT(&COMPONENT->lock);
    OBJ_DESTRUCT(&COMPONENT->modules_lock);
    bufpool_mapsets_close(COMPONENT);
    OBJ_DESTRUCT(&COMPONENT->mapsets_lock);
    bufpool_peers_fini(&COMPONENT->peers);
    bufpool_settings_free(COMPONENT);
    return OMPI_SUCCESS;
}
