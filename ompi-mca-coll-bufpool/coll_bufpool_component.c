/*
 * coll/bufpool component: parameters (checked with clear messages), MPI_T
 * variables and the component structure.
 */
#include "coll_bufpool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ompi/mca/coll/base/base.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "algorithms/coll_bufpool_pipeline.h"
#include "bufpool_params.h"
#include "coll_bufpool_nb.h"
#include "regpar_size.h"
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

/* Per series (compat/bufpool_ompi_compat.h): above tuned (30) so that
 * loading the component is enough to use it, below han (35) from 5.0. */
#define DEFAULT_PRIORITY BUFPOOL_COLL_DEFAULT_PRIORITY
/* A segment near the bandwidth-delay product of a 100-200 Gb/s network
 * (a few us x 25 GB/s) and large enough that per-message costs stay small
 * on shared memory. */
#define DEFAULT_SEGMENT_SIZE   "128K"
#define DEFAULT_PIPELINE_DEPTH "4"
#define DEFAULT_MIN_SIZE       "0"
#define DEFAULT_SMALL_SIZE     "16K"
#define DEFAULT_MAX_REQUESTS   BUFPOOL_STR(BUFPOOL_MAX_REQUESTS_DEFAULT)
/* A task's stack: the deepest use measured over the collcheck families in
 * the nonblocking form at 3 processes, auto and forced algorithms (hier
 * on pretended hosts included), was 24 KiB (coll_bufpool_nb_stack_bytes_peak,
 * to a page), so 256K leaves a tenfold margin for user operations and
 * other transports' PML calls, which also run on it. */
#define DEFAULT_NB_STACK_SIZE "256K"
#define BUFPOOL_STR(x)        BUFPOOL_STR_(x)
#define BUFPOOL_STR_(x)       #x

/* What each algorithm is, for the help text of its parameter. */
static const char *const algorithm_help[BUFPOOL_NCOLLS] = {
    [BUFPOOL_COLL_allreduce] =
        "recursive_doubling (latency-bound, small messages; scratch = message), rsag "
        "(pipelined pairwise reduce-scatter then allgather; scratch = depth segments), ring "
        "(ring reduce-scatter in rounds then ring allgather: neighbours only, bounded "
        "requests; many processes; commutative operations), hier (across hosts: node-local "
        "reduce to each host's first rank, allreduce among those, node-local bcast, segment by "
        "segment; commutative operations; on one host auto's choice runs)",
    [BUFPOOL_COLL_reduce] = "chain (pipelined chain in rank order; any operation; large "
                            "messages), binary (pipelined binary tree; commutative operations; "
                            "many processes), rsg (pipelined pairwise reduce-scatter then gather "
                            "to the root; commutative operations; spreads the reduction work)",
    [BUFPOOL_COLL_bcast] =
        "binomial (small messages), chain (pipelined chain, large "
        "messages), scatter_allgather (large messages, many processes), "
        "linear (root sends to every rank at once; 2 processes, and small messages "
        "on up to 7)",
    [BUFPOOL_COLL_allgather] = "ring, recursive_doubling (power-of-two sizes), direct (every "
                               "block sent to every rank at once)",
    [BUFPOOL_COLL_reduce_scatter] = "pairwise (pipelined; commutative operations; scratch = "
                                    "depth segments), ring (p - 1 neighbour steps per round of "
                                    "depth/2 segments; many processes; commutative operations), "
                                    "rhalving (recursive halving, log2 p steps per round; "
                                    "forced only; commutative operations)",
    [BUFPOOL_COLL_reduce_scatter_block] = "pairwise (pipelined; commutative operations; "
                                          "scratch = depth segments), ring (p - 1 neighbour "
                                          "steps per round of depth/2 segments; many processes; "
                                          "commutative operations), rhalving (recursive "
                                          "halving, log2 p steps per round; forced only; "
                                          "commutative operations)",
    [BUFPOOL_COLL_alltoall] = "pairwise (one peer per step; MPI_IN_PLACE through pooled "
                              "segments), linear (all transfers posted at once)",
    [BUFPOOL_COLL_gather] = "binomial (tree; intermediate ranks stream through pooled "
                            "segments), linear",
    [BUFPOOL_COLL_scatter] = "binomial (tree; intermediate ranks stream through pooled "
                             "segments), linear",
    [BUFPOOL_COLL_scan] = "chain (pipelined, any operation), recursive_doubling (small "
                          "messages, any operation; scratch = two messages, so only when that "
                          "fits pipeline_depth x segment_size)",
    [BUFPOOL_COLL_exscan] = "chain (pipelined, any operation), recursive_doubling (small "
                            "messages, any operation; scratch = two messages, so only when "
                            "that fits pipeline_depth x segment_size)",
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

static int bufpool_register(void)
{
    COMPONENT->params = &coll_pp;
    (void)bufpool_params_help_init(&coll_pp);
    char name[64], help[512];

    COMPONENT->priority_text = DEFAULT_PRIORITY;
    /* Writable at run time through MPI_T: it applies to communicators
     * created afterwards, which lets one job compare bufpool with the
     * default selection communicator by communicator. */
    register_var("priority",
                 "Priority of coll bufpool (an integer). The default, 40, is above tuned (30) "
                 "and, on Open MPI 5.0 and 6.0, above han (35), so loading the component is "
                 "enough to use it; 31 to 34 leave communicators spanning several hosts to han "
                 "on 5.0 and 6.0, a value below "
                 "30 lets tuned win "
                 "every function tuned provides, a negative value disables bufpool. Applies to "
                 "communicators "
                 "created after it is set (it may be changed at run time with MPI_T)",
                 OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ, DEFAULT_PRIORITY,
                 &COMPONENT->priority_text);
    register_var("verbose",
                 "Verbosity (0 to 9): 0 errors and warnings only, 1 says where scratch memory "
                 "comes from and prints the counters at finalize, 2 also explains each call's "
                 "choice (algorithm, or the previous module, and why)",
                 OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, "0", &COMPONENT->verbose_text);
    register_var("segment_size",
                 "Bytes per pipeline segment (suffixes K, M, G), from 4K to 64M. Scratch "
                 "memory of one call is at most pipeline_depth x segment_size. Near the "
                 "network's bandwidth-delay product is best: tens to hundreds of KiB. "
                 "Transfers that need no scratch (2-rank allreduce and reduce_scatter, not "
                 "in place) use segments of 8 x segment_size",
                 OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, DEFAULT_SEGMENT_SIZE,
                 &COMPONENT->segment_size_text);
    COMPONENT->pipeline_depth_text = DEFAULT_PIPELINE_DEPTH;
    snprintf(help, sizeof(help),
             "Segments in flight per stream (1 to %d): how far the transfer of later segments "
             "runs ahead of the reduction of the current one (streams that receive straight "
             "into the user's buffer keep up to %d posted)",
             BUFPOOL_MAX_DEPTH, BUFPOOL_MAX_DEPTH);
    register_var("pipeline_depth", help, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
                 DEFAULT_PIPELINE_DEPTH, &COMPONENT->pipeline_depth_text);
    COMPONENT->max_requests_text = DEFAULT_MAX_REQUESTS;
    snprintf(help, sizeof(help),
             "Point-to-point requests one rank keeps in flight in one collective call (2 to "
             "%d; 0, the default: no bound). An algorithm that would post more waits for its "
             "oldest request first, so that large communicators do not flood the network and "
             "the PML with p - 1 transfers at once; allreduce rsag, whose allgather half does "
             "not wait in order, is replaced by ring when its requests would exceed this "
             "bound. Suggested: 64 on communicators of hundreds of ranks",
             BUFPOOL_MAX_REQUESTS_LIMIT);
    register_var("max_requests", help, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
                 DEFAULT_MAX_REQUESTS, &COMPONENT->max_requests_text);
    register_var("min_size",
                 "Messages smaller than this (bytes per process, suffixes K, M, G) go to the "
                 "previously selected module, except (built against Open MPI <= 4.1.4) "
                 "alltoalls in the range of tuned's Bruck algorithm, which may corrupt them "
                 "(open-mpi/ompi#10488); 0 lets bufpool handle every size",
                 OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, DEFAULT_MIN_SIZE,
                 &COMPONENT->min_size_text);
    register_var("small_size",
                 "Messages up to this size (bytes, suffixes K, M, G) use latency-bound "
                 "algorithms when the algorithm is auto (allreduce: recursive doubling; bcast "
                 "on 8 or more processes: binomial tree); at most segment_size",
                 OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY, DEFAULT_SMALL_SIZE,
                 &COMPONENT->small_size_text);
    register_var("model_links",
                 "Link classes of the cost model that chooses auto's algorithms on "
                 "communicators spanning several hosts (and on one host for alltoall, gather and "
                 "scatter): entries "
                 "class:latency_us,bandwidth_GBps,reduce_GBps (class shm, tcp, ib or efa; an "
                 "empty field keeps the default) and inter=tcp|ib|efa (the class between hosts), "
                 "separated by ';'. Applied after coll_bufpool_model_links_file. See "
                 "docs/multihost.md and bench/coll_model",
                 OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY, "", &COMPONENT->model_links_text);
    register_var("model_links_file",
                 "File of cost-model link entries, one per line, same syntax as "
                 "coll_bufpool_model_links ('#' starts a comment); empty: none",
                 OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY, "", &COMPONENT->model_links_file);
    register_var("rules_file",
                 "A rules file (as bufpool-tune writes them; format in docs/rules.md and the "
                 "installed default.rules): its rows decide before the default rules (or alone, "
                 "with coll_bufpool_rules_default off). A file that cannot be read or has an "
                 "error is reported with its line, and the default rules alone apply; empty, the "
                 "default: none",
                 OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, "", &COMPONENT->rules_file);
    register_var("rules_default",
                 "Consult the default rules (measured on the project's machines, compiled in) "
                 "after the rows of coll_bufpool_rules_file (on|off); off leaves only the user's "
                 "rows (none without a rules file) and each collective's own default",
                 OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, "on",
                 &COMPONENT->rules_default_text);
    register_var("test_host_map",
                 "For testing only: pretend that the process of launch rank r runs on host "
                 "entry (r mod entries) of this comma-separated list of host numbers (e.g. "
                 "0,0,0,1 or 0,1,2), so that one machine exercises the multi-host paths "
                 "(allreduce hier, auto's cost model); empty, the default: the real host names",
                 OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, "", &COMPONENT->test_host_map_text);

    register_var("test_nbc_tag_range",
                 "For testing only: the tags a nonblocking or persistent collective of bufpool "
                 "reserves on its communicator wrap after this many (0, the default: Open MPI's "
                 "whole range of about 2^30, which a long job may also wrap), so that a test "
                 "reaches the wrap within seconds",
                 OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY, "0",
                 &COMPONENT->test_nbc_tag_range_text);
    register_var("nonblocking",
                 "Let bufpool run the nonblocking collectives (MPI_Iallreduce, ...) of the "
                 "collectives it runs, with the same algorithms, plans and scratch bound as the "
                 "blocking ones (on|off); off leaves them to the previously selected module "
                 "(libnbc) at no cost",
                 OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, "on", &COMPONENT->nonblocking_text);
    register_var("persistent",
                 "Let bufpool run the persistent collectives (MPI_Allreduce_init, ...; "
                 "MPIX_Allreduce_init on Open MPI 4.1) of the collectives it runs, scratch kept "
                 "from MPI_Start to MPI_Start and returned at MPI_Request_free (on|off); off "
                 "leaves them to the previously selected module (libnbc) at no cost",
                 OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, "on", &COMPONENT->persistent_text);
    register_var("nb_stack_size",
                 "Bytes of the stack each nonblocking or persistent collective runs on while in "
                 "flight (suffixes K, M, G), from 64K to 64M, above a 64 KiB guard region. Only "
                 "bufpool's and Open MPI's own code runs there: user-defined operations run on "
                 "the stack of the thread that progresses the collective, as Open MPI's own "
                 "nonblocking collectives run them. Stacks are mapped once and reused; only "
                 "the pages touched use memory (coll_bufpool_nb_stack_bytes_peak shows the "
                 "deepest use, about 10 KiB)",
                 OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY, DEFAULT_NB_STACK_SIZE,
                 &COMPONENT->nb_stack_size_text);

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
    register_pvar("persistent_starts", "MPI_Start of persistent collectives that bufpool runs",
                  MCA_BASE_PVAR_CLASS_COUNTER, &COMPONENT->persistent_starts);
    register_pvar("nb_tasks_peak",
                  "High-water mark of nonblocking and persistent collectives of bufpool in "
                  "flight at once (past their first slice)",
                  MCA_BASE_PVAR_CLASS_HIGHWATERMARK, &bufpool_task_counters.tasks_peak);
    register_pvar("nb_stacks_mapped",
                  "Stacks mapped for nonblocking and persistent collectives (they are reused: "
                  "a steady state maps none)",
                  MCA_BASE_PVAR_CLASS_COUNTER, &bufpool_task_counters.stacks_mapped);
    register_pvar("nb_progress_registrations",
                  "Times bufpool's progress callback was registered with Open MPI (it stays "
                  "while nonblocking or persistent collectives are in flight, and goes after "
                  "1024 idle progress calls)",
                  MCA_BASE_PVAR_CLASS_COUNTER, &bufpool_task_counters.progress_registrations);
    bufpool_nb_register_pvars();
    register_pvar("scratch_bytes_in_use", "Scratch bytes bufpool's collectives hold now",
                  MCA_BASE_PVAR_CLASS_SIZE, &bufpool_scratch_counters.bytes_in_use);
    register_pvar("scratch_bytes_peak",
                  "High-water mark of scratch bytes held at once by bufpool's collectives",
                  MCA_BASE_PVAR_CLASS_HIGHWATERMARK, &bufpool_scratch_counters.bytes_peak);
    register_pvar("scratch_requests", "Scratch buffers taken (from the pool or malloc)",
                  MCA_BASE_PVAR_CLASS_COUNTER, &bufpool_scratch_counters.requests);
    register_pvar("scratch_plain_allocs",
                  "Scratch buffers that came from malloc because the regpar pool was absent or "
                  "out of memory",
                  MCA_BASE_PVAR_CLASS_COUNTER, &bufpool_scratch_counters.plain_allocs);
    register_pvar("requests_peak",
                  "High-water mark of point-to-point requests one rank kept in flight in one "
                  "request set of a call (the sets coll_bufpool_max_requests bounds; receive "
                  "windows and send rings of pipeline_depth slots are not counted)",
                  MCA_BASE_PVAR_CLASS_HIGHWATERMARK, &bufpool_requests_peak);
    return OMPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Checking the values, with one message per bad value. */

/* The priority text parsed last and its value (see below); freed at close. */
static char *priority_parsed_text;
static int priority_parsed_value;

int mca_coll_bufpool_priority(void)
{
    /* MPI_T may change the text at run time (the only SETTABLE parameter):
     * it is parsed again only when it differs from the text parsed last,
     * so a bad text is reported once. */
    char why[128];
    long value;
    /* An empty value reaches us as NULL: compare it as "". */
    const char *text = NULL == COMPONENT->priority_text ? "" : COMPONENT->priority_text;

    OPAL_THREAD_LOCK(&COMPONENT->lock); /* communicators may be created concurrently */
    if (NULL == priority_parsed_text || 0 != strcmp(priority_parsed_text, text)) {
        free(priority_parsed_text);
        priority_parsed_text = strdup(text);
        if (0 == regpar_parse_int(text, -1000000, 1000000, &value, why, sizeof(why))) {
            priority_parsed_value = (int)value;
        } else {
            bufpool_params_bad(&coll_pp, "priority", text, why,
                               "an integer such as 40 (negative disables)", DEFAULT_PRIORITY);
            priority_parsed_value = atoi(DEFAULT_PRIORITY);
        }
    }
    int priority = priority_parsed_value;
    OPAL_THREAD_UNLOCK(&COMPONENT->lock);
    return priority;
}

/* The cost model's table: defaults, then the file, then the text.  A bad
 * file or entry is reported and the table stays as it was before it (every
 * rank reads the same parameters, so every rank keeps the same table). */
static void check_model_links(void)
{
    char err[160];
    bufpool_model_links_default(&COMPONENT->model_links);
    const char *path = COMPONENT->model_links_file;
    if (NULL != path && '\0' != path[0]) {
        char text[8192];
        FILE *f = fopen(path, "r");
        size_t n = 0;
        if (NULL == f) {
            bufpool_params_bad(&coll_pp, "model_links_file", path, strerror(errno),
                               "a readable file", "the default link table");
        } else {
            n = fread(text, 1, sizeof(text) - 1, f);
            int too_long = !feof(f);
            fclose(f);
            text[n] = '\0';
            if (too_long) {
                bufpool_params_bad(&coll_pp, "model_links_file", path, "longer than 8 KiB",
                                   "a short file", "the default link table");
            } else if (0 !=
                       bufpool_model_links_parse(&COMPONENT->model_links, text, err, sizeof(err))) {
                bufpool_params_bad(&coll_pp, "model_links_file", path, err,
                                   "lines class:latency_us,bandwidth_GBps,reduce_GBps",
                                   "the default link table");
            }
        }
    }
    if (NULL != COMPONENT->model_links_text &&
        0 != bufpool_model_links_parse(&COMPONENT->model_links, COMPONENT->model_links_text, err,
                                       sizeof(err))) {
        bufpool_params_bad(&coll_pp, "model_links", COMPONENT->model_links_text, err,
                           "class:latency_us,bandwidth_GBps,reduce_GBps;... or inter=tcp|ib|efa",
                           "the table without this parameter");
    }
    COMPONENT->tuning.links = &COMPONENT->model_links;
}

/* The whole of a rules file, NUL-terminated, or NULL with the reason in
 * why.  Bounded: a rules file is a few KiB. */
static char *read_rules_file(const char *path, size_t *len, char *why, size_t whylen)
{
    FILE *f = fopen(path, "r");
    if (NULL == f) {
        snprintf(why, whylen, "%s", strerror(errno));
        return NULL;
    }
    char *text = malloc(BUFPOOL_RULES_MAX_TEXT + 1);
    size_t n = NULL != text ? fread(text, 1, BUFPOOL_RULES_MAX_TEXT + 1, f) : 0;
    const int read_error = ferror(f);
    fclose(f);
    if (NULL == text || read_error || n > BUFPOOL_RULES_MAX_TEXT) {
        snprintf(why, whylen, "%s",
                 NULL == text ? "out of memory"
                 : read_error ? "a read error"
                              : "longer than 1 MiB");
        free(text);
        return NULL;
    }
    text[n] = '\0';
    *len = n;
    return text;
}

/* The rows of every communicator: coll_bufpool_rules_file's, then the
 * default rules (unless coll_bufpool_rules_default is off).  A file that
 * cannot be read or has an error is reported once, naming the line, and
 * left out whole: the job runs on the default rules. */
static void load_rules(void)
{
    char err[256];
    bufpool_rules_t defaults;
    bufpool_rules_init(&COMPONENT->rules);
    bufpool_rules_init(&defaults);
    const bool with_defaults =
        bufpool_params_bool(&coll_pp, "rules_default", COMPONENT->rules_default_text, true);
    const char *path = COMPONENT->rules_file;
    bool file_failed = false;
    if (NULL != path && '\0' != path[0]) {
        size_t len = 0;
        char *text = read_rules_file(path, &len, err, sizeof(err));
        if (NULL == text) {
            bufpool_params_bad(&coll_pp, "rules_file", path, err, "a readable rules file",
                               "the default rules");
            file_failed = true;
        } else if (0 != bufpool_rules_parse(&COMPONENT->rules, text, len, path, err, sizeof(err))) {
            bufpool_params_bad(&coll_pp, "rules_file", path, err, "a rules file (docs/rules.md)",
                               "the default rules");
            file_failed = true;
        }
        free(text);
    }
    if (file_failed) {
        /* Left out whole, as the message said: the default rules. */
        bufpool_rules_free(&COMPONENT->rules);
        bufpool_rules_init(&COMPONENT->rules);
    }
    /* rules_default off leaves the file's rows alone (none without a file:
     * each collective's own default decides every size). */
    if (with_defaults || file_failed) {
        /* The default text is part of the build: a failure here is a bug
         * that the unit tests catch; it leaves each collective's default. */
        if (0 != bufpool_rules_parse(&defaults, bufpool_default_rules_text,
                                     bufpool_default_rules_len, BUFPOOL_DEFAULT_RULES_NAME, err,
                                     sizeof(err)) ||
            0 != bufpool_rules_append(&COMPONENT->rules, &defaults)) {
            opal_output(0, "coll_bufpool: the default rules did not load (%s)", err);
        }
    }
    bufpool_rules_free(&defaults);
    COMPONENT->tuning.rules = &COMPONENT->rules;
}

/* coll_bufpool_test_host_map: "h0,h1,..." host numbers from 0 to 65535. */
#define TEST_HOST_MAX 65535
static void check_test_host_map(void)
{
    const char *text = COMPONENT->test_host_map_text;
    COMPONENT->test_host_map = NULL;
    COMPONENT->test_host_map_n = 0;
    if (NULL == text || '\0' == text[0]) {
        return;
    }
    size_t n = 1;
    for (const char *c = text; *c; c++) {
        n += ',' == *c;
    }
    int *map = malloc(n * sizeof(*map));
    const char *s = text;
    for (size_t i = 0; NULL != map && i < n; i++) {
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || 0 != errno || v < 0 || v > TEST_HOST_MAX || (',' != *end && '\0' != *end)) {
            bufpool_params_bad(&coll_pp, "test_host_map", text, "not a list of host numbers",
                               "comma-separated integers from 0 to 65535, e.g. 0,0,0,1",
                               "the real host names");
            free(map);
            return;
        }
        map[i] = (int)v;
        s = end + 1;
    }
    COMPONENT->test_host_map = map;
    COMPONENT->test_host_map_n = NULL != map ? (int)n : 0;
}

static void check_params(void)
{
    bufpool_tuning_t *t = &COMPONENT->tuning;

    COMPONENT->verbose =
        (int)bufpool_params_int(&coll_pp, "verbose", COMPONENT->verbose_text, 0, 9, "0");
    t->pipeline_depth =
        (int)bufpool_params_int(&coll_pp, "pipeline_depth", COMPONENT->pipeline_depth_text, 1,
                                BUFPOOL_MAX_DEPTH, DEFAULT_PIPELINE_DEPTH);
    t->max_requests =
        (int)bufpool_params_int(&coll_pp, "max_requests", COMPONENT->max_requests_text, 0,
                                BUFPOOL_MAX_REQUESTS_LIMIT, DEFAULT_MAX_REQUESTS);
    if (1 == t->max_requests) {
        /* An exchange step needs its send and its receive in flight at once. */
        bufpool_params_bad(&coll_pp, "max_requests", COMPONENT->max_requests_text,
                           "below 2 (an exchange needs a send and a receive in flight at once)",
                           "0 or an integer from 2 to 65536", DEFAULT_MAX_REQUESTS);
        t->max_requests = BUFPOOL_MAX_REQUESTS_DEFAULT;
    }
    (void)mca_coll_bufpool_priority(); /* report a bad value at MPI_Init already */
    t->segment_size = (size_t)bufpool_params_size(
        &coll_pp, "segment_size", COMPONENT->segment_size_text, DEFAULT_SEGMENT_SIZE,
        BUFPOOL_SEGMENT_MIN, BUFPOOL_SEGMENT_MAX, "a size from 4K to 64M");
    t->min_size =
        (size_t)bufpool_params_size(&coll_pp, "min_size", COMPONENT->min_size_text,
                                    DEFAULT_MIN_SIZE, 0, UINT64_MAX, "a size such as 0, 64K or 1M");
    /* The default small_size may exceed a small segment_size the user
     * chose: that is not the user's mistake, so clamp it silently. */
    t->small_size = (size_t)bufpool_params_size(&coll_pp, "small_size", COMPONENT->small_size_text,
                                                DEFAULT_SMALL_SIZE, 0, UINT64_MAX,
                                                "a size from 0 to segment_size");
    if (t->small_size > t->segment_size) {
        if (NULL != COMPONENT->small_size_text &&
            0 != strcmp(COMPONENT->small_size_text, DEFAULT_SMALL_SIZE)) {
            bufpool_params_bad(&coll_pp, "small_size", COMPONENT->small_size_text,
                               "above segment_size", "a size from 0 to segment_size",
                               "segment_size");
        }
        t->small_size = t->segment_size;
    }
    check_model_links();
    check_test_host_map();
    load_rules();
    COMPONENT->nonblocking =
        bufpool_params_bool(&coll_pp, "nonblocking", COMPONENT->nonblocking_text, true);
    COMPONENT->persistent =
        bufpool_params_bool(&coll_pp, "persistent", COMPONENT->persistent_text, true);
    COMPONENT->test_nbc_tag_range = (int)bufpool_params_int(
        &coll_pp, "test_nbc_tag_range", COMPONENT->test_nbc_tag_range_text, 0, 1 << 24, "0");
    COMPONENT->nb_stack_size = (size_t)bufpool_params_size(
        &coll_pp, "nb_stack_size", COMPONENT->nb_stack_size_text, DEFAULT_NB_STACK_SIZE,
        (uint64_t)64 << 10, (uint64_t)64 << 20, "a size from 64K to 64M");

    for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
        char param[64];
        snprintf(param, sizeof(param), "%s_enable", mca_coll_bufpool_coll_names[id]);
        COMPONENT->coll[id].enabled =
            bufpool_params_bool(&coll_pp, param, COMPONENT->coll[id].enable_text, true);
        snprintf(param, sizeof(param), "%s_algorithm", mca_coll_bufpool_coll_names[id]);
        int alg = bufpool_params_name(&coll_pp, param, COMPONENT->coll[id].algorithm_text,
                                      mca_coll_bufpool_algorithm_names[id], "auto");
        COMPONENT->coll[id].algorithm = alg < 0 ? BUFPOOL_ALG_AUTO : alg;
    }
}

static int bufpool_open(void)
{
    OBJ_CONSTRUCT(&COMPONENT->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&COMPONENT->modules_lock, opal_mutex_t);
    COMPONENT->modules = NULL;
    memset(COMPONENT->retired_calls, 0, sizeof(COMPONENT->retired_calls));
    memset(COMPONENT->retired_fallbacks, 0, sizeof(COMPONENT->retired_fallbacks));
    check_params();
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
    COMPONENT->tuning.rules = NULL;
    bufpool_rules_free(&COMPONENT->rules);
    free(priority_parsed_text);
    priority_parsed_text = NULL;
    free(COMPONENT->test_host_map);
    COMPONENT->test_host_map = NULL;
    COMPONENT->test_host_map_n = 0;
    return OMPI_SUCCESS;
}
