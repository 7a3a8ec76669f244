/*
 * coll/bufpool component: parameters (checked with clear messages), MPI_T
 * variables and the component structure.
 */
#include "coll_bufpool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ompi/mca/coll/base/base.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "regpar_size.h"

static int bufpool_register(void);
static int bufpool_open(void);
static int bufpool_close(void);

mca_coll_bufpool_component_t mca_coll_bufpool_component = {
    .super =
        {
            .collm_version =
                {
                    BUFPOOL_COLL_BASE_VERSION,
                    .mca_component_name = "bufpool",
                    MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
                    .mca_open_component = bufpool_open,
                    .mca_close_component = bufpool_close,
                    .mca_register_component_params = bufpool_register,
                },
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

#define NAMES(...)                                                                                 \
    (const char *const[])                                                                          \
    {                                                                                              \
        "auto", __VA_ARGS__, NULL                                                                  \
    }

const char *const *const mca_coll_bufpool_algorithm_names[BUFPOOL_NCOLLS] = {
    [BUFPOOL_COLL_allreduce] = NAMES("recursive_doubling", "rsag"),
    [BUFPOOL_COLL_reduce] = NAMES("chain", "binary", "rsg"),
    [BUFPOOL_COLL_bcast] = NAMES("binomial", "chain", "scatter_allgather", "linear"),
    [BUFPOOL_COLL_allgather] = NAMES("ring", "recursive_doubling", "direct"),
    [BUFPOOL_COLL_reduce_scatter] = NAMES("pairwise"),
    [BUFPOOL_COLL_reduce_scatter_block] = NAMES("pairwise"),
    [BUFPOOL_COLL_alltoall] = NAMES("pairwise", "linear"),
    [BUFPOOL_COLL_gather] = NAMES("binomial", "linear"),
    [BUFPOOL_COLL_scatter] = NAMES("binomial", "linear"),
    [BUFPOOL_COLL_scan] = NAMES("chain", "recursive_doubling"),
    [BUFPOOL_COLL_exscan] = NAMES("chain", "recursive_doubling"),
};

/* What each algorithm is, for the help text of its parameter. */
static const char *const algorithm_help[BUFPOOL_NCOLLS] = {
    [BUFPOOL_COLL_allreduce] =
        "recursive_doubling (latency-bound, small messages; scratch = message), rsag "
        "(pipelined pairwise reduce-scatter then allgather; scratch = depth segments)",
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
                                    "depth segments)",
    [BUFPOOL_COLL_reduce_scatter_block] = "pairwise (pipelined; commutative operations; "
                                          "scratch = depth segments)",
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

#define BUFPOOL_COLL_NAME(name) [BUFPOOL_COLL_##name] = #name,
const char *const mca_coll_bufpool_coll_names[BUFPOOL_NCOLLS] = {
    BUFPOOL_FOREACH_COLL(BUFPOOL_COLL_NAME)};
#undef BUFPOOL_COLL_NAME

static void register_var(const char *name, const char *help, mca_base_var_type_t type, int level,
                         mca_base_var_scope_t scope, void *storage)
{
    /* MPI_T_cvar_write refuses a variable without the SETTABLE flag; the
     * priority (the only ALL_EQ one) is meant to be written at run time. */
    int flags = MCA_BASE_VAR_SCOPE_ALL_EQ == scope ? MCA_BASE_VAR_FLAG_SETTABLE : 0;
    (void)mca_base_component_var_register(&COMPONENT->super.collm_version, name, help, type, NULL,
                                          0, flags, level, scope, storage);
}

/* Only the priority is writable at run time: the other values are checked
 * once, at open. */

/* ---------------------------------------------------------------------- */
/* MPI_T performance variables. */

static int read_counter(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void)obj;
    *(unsigned long long *)value = __atomic_load_n((const uint64_t *)pvar->ctx, __ATOMIC_RELAXED);
    return OPAL_SUCCESS;
}

static void register_pvar(const char *name, const char *help, int var_class, uint64_t *counter)
{
    (void)mca_base_component_pvar_register(
        &COMPONENT->super.collm_version, name, help, OPAL_INFO_LVL_4, var_class,
        MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
        MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, read_counter, NULL, NULL,
        counter);
}

static int bufpool_register(void)
{
    char name[64], help[512];

    COMPONENT->priority_text = DEFAULT_PRIORITY;
    /* Writable at run time through MPI_T: it applies to communicators
     * created afterwards, which lets one job compare bufpool with the
     * default selection communicator by communicator. */
    register_var("priority",
                 "Priority of coll bufpool (an integer). The default, 40 on Open MPI 4.1 and 33 "
                 "on 5.0 and 6.0 (below han, 35, which then keeps multi-host communicators), is "
                 "above tuned (30), so loading the component is enough to use it; a value below "
                 "30 lets tuned win "
                 "every function tuned provides, a negative value disables bufpool. Applies to "
                 "communicators "
                 "created after it is set (it may be changed at run time with MPI_T)",
                 MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
                 &COMPONENT->priority_text);
    COMPONENT->verbose_text = "0";
    register_var("verbose",
                 "Verbosity (0 to 9): 0 errors and warnings only, 1 says where scratch memory "
                 "comes from and prints the counters at finalize, 2 also explains each "
                 "algorithm choice of bcast, allgather, alltoall, gather and scatter",
                 MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
                 &COMPONENT->verbose_text);
    COMPONENT->segment_size_text = DEFAULT_SEGMENT_SIZE;
    register_var("segment_size",
                 "Bytes per pipeline segment (suffixes K, M, G), from 4K to 64M. Scratch "
                 "memory of one call is at most pipeline_depth x segment_size. Near the "
                 "network's bandwidth-delay product is best: tens to hundreds of KiB. "
                 "Transfers that need no scratch (2-rank allreduce and reduce_scatter, not "
                 "in place) use segments of 8 x segment_size",
                 MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
                 &COMPONENT->segment_size_text);
    COMPONENT->pipeline_depth_text = DEFAULT_PIPELINE_DEPTH;
    snprintf(help, sizeof(help),
             "Segments in flight per stream (1 to %d): how far the transfer of later segments "
             "runs ahead of the reduction of the current one (streams that receive straight "
             "into the user's buffer keep up to %d posted)",
             BUFPOOL_MAX_DEPTH, BUFPOOL_MAX_DEPTH);
    register_var("pipeline_depth", help, MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_5,
                 MCA_BASE_VAR_SCOPE_READONLY, &COMPONENT->pipeline_depth_text);
    COMPONENT->min_size_text = DEFAULT_MIN_SIZE;
    register_var("min_size",
                 "Messages smaller than this (bytes per process, suffixes K, M, G) go to the "
                 "previously selected module; 0 lets bufpool handle every size",
                 MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
                 &COMPONENT->min_size_text);
    COMPONENT->small_size_text = DEFAULT_SMALL_SIZE;
    register_var("small_size",
                 "Messages up to this size (bytes, suffixes K, M, G) use latency-bound "
                 "algorithms when the algorithm is auto (allreduce: recursive doubling; bcast "
                 "on 8 or more processes: binomial tree); at most segment_size",
                 MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
                 &COMPONENT->small_size_text);

    for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
        const char *coll = mca_coll_bufpool_coll_names[id];
        bufpool_coll_params_t *p = &COMPONENT->coll[id];

        p->enable_text = "on";
        snprintf(name, sizeof(name), "%s_enable", coll);
        snprintf(help, sizeof(help),
                 "Let bufpool run MPI_%s (on|off); off hands every call to the previously "
                 "selected module",
                 coll);
        register_var(name, help, MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_5,
                     MCA_BASE_VAR_SCOPE_READONLY, &p->enable_text);

        p->algorithm_text = "auto";
        snprintf(name, sizeof(name), "%s_algorithm", coll);
        snprintf(help, sizeof(help),
                 "Algorithm of MPI_%s: auto (chosen by message and communicator size), %s. A "
                 "forced algorithm that cannot serve a call (for example a non-commutative "
                 "operation) hands it to the previous module",
                 coll, algorithm_help[id]);
        register_var(name, help, MCA_BASE_VAR_TYPE_STRING, OPAL_INFO_LVL_5,
                     MCA_BASE_VAR_SCOPE_READONLY, &p->algorithm_text);

        snprintf(name, sizeof(name), "%s_calls", coll);
        snprintf(help, sizeof(help), "Calls to MPI_%s served by bufpool's own algorithms", coll);
        register_pvar(name, help, MCA_BASE_PVAR_CLASS_COUNTER, &COMPONENT->calls[id]);
        snprintf(name, sizeof(name), "%s_fallbacks", coll);
        snprintf(help, sizeof(help),
                 "Calls to MPI_%s handed to the previously selected module (below min_size, "
                 "algorithm not applicable, or auto judged the previous module faster; a "
                 "disabled collective is not installed and not counted)",
                 coll);
        register_pvar(name, help, MCA_BASE_PVAR_CLASS_COUNTER, &COMPONENT->fallbacks[id]);
    }
    register_pvar("scratch_bytes_in_use", "Scratch bytes bufpool's collectives hold now",
                  MCA_BASE_PVAR_CLASS_SIZE, &COMPONENT->scratch_bytes_in_use);
    register_pvar("scratch_bytes_peak",
                  "High-water mark of scratch bytes held at once by bufpool's collectives",
                  MCA_BASE_PVAR_CLASS_HIGHWATERMARK, &COMPONENT->scratch_bytes_peak);
    register_pvar("scratch_requests", "Scratch buffers taken (from the pool or malloc)",
                  MCA_BASE_PVAR_CLASS_COUNTER, &COMPONENT->scratch_requests);
    register_pvar("scratch_plain_allocs",
                  "Scratch buffers that came from malloc because the regpar pool was absent or "
                  "out of memory",
                  MCA_BASE_PVAR_CLASS_COUNTER, &COMPONENT->scratch_plain_allocs);
    return OMPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Checking the values, with one message per bad value. */

/* Every process parses the same values: one message per job is enough
 * (from the first process), unless the user asked for more. */
static bool speaks_for_job(void)
{
    return 0 == OPAL_PROC_MY_NAME.vpid || COMPONENT->verbose >= 1;
}

static void report_bad_value(const char *param, const char *value, const char *why,
                             const char *expected, const char *fallback)
{
    if (!speaks_for_job()) {
        return;
    }
    opal_output(0,
                "coll_bufpool_%s: invalid value \"%s\" (%s); expected %s. Using %s instead "
                "(pid %d).",
                param, NULL == value ? "" : value, why, expected, fallback, (int)getpid());
}

static size_t checked_size(const char *param, const char *text, const char *dflt, uint64_t lo,
                           uint64_t hi, const char *expected)
{
    char why[128];
    uint64_t value, fallback;
    (void)regpar_parse_size(dflt, &fallback, why, sizeof(why));
    if (0 != regpar_parse_size(text, &value, why, sizeof(why))) {
        report_bad_value(param, text, why, expected, dflt);
        return (size_t)fallback;
    }
    if (value < lo || value > hi) {
        report_bad_value(param, text, "out of range", expected, dflt);
        return (size_t)fallback;
    }
    return (size_t)value;
}

static int checked_int(const char *param, const char *text, long lo, long hi, const char *dflt)
{
    char why[128], expected[96];
    long value;
    if (0 == regpar_parse_int(text, lo, hi, &value, why, sizeof(why))) {
        return (int)value;
    }
    snprintf(expected, sizeof(expected), "an integer from %ld to %ld", lo, hi);
    report_bad_value(param, text, why, expected, dflt);
    (void)regpar_parse_int(dflt, lo, hi, &value, why, sizeof(why));
    return (int)value;
}

int mca_coll_bufpool_priority(void)
{
    /* Parsed at every call because MPI_T may change the text at run time;
     * a bad value is reported once per distinct text. */
    static char *reported;
    char why[128];
    long value;
    /* An empty value reaches us as NULL: compare it as "" so that it too
     * is reported once, not once per communicator. */
    const char *text = NULL == COMPONENT->priority_text ? "" : COMPONENT->priority_text;
    if (0 == regpar_parse_int(text, -1000000, 1000000, &value, why, sizeof(why))) {
        return (int)value;
    }
    OPAL_THREAD_LOCK(&COMPONENT->pool_lock); /* communicators may be created concurrently */
    if (NULL == reported || 0 != strcmp(reported, text)) {
        free(reported);
        reported = strdup(text);
        report_bad_value("priority", text, why, "an integer such as 40 (negative disables)",
                         DEFAULT_PRIORITY);
    }
    OPAL_THREAD_UNLOCK(&COMPONENT->pool_lock);
    (void)regpar_parse_int(DEFAULT_PRIORITY, 0, 100, &value, why, sizeof(why));
    return (int)value;
}

static void check_params(void)
{
    char why[64];

    COMPONENT->verbose = checked_int("verbose", COMPONENT->verbose_text, 0, 9, "0");
    COMPONENT->pipeline_depth = checked_int("pipeline_depth", COMPONENT->pipeline_depth_text, 1,
                                            BUFPOOL_MAX_DEPTH, DEFAULT_PIPELINE_DEPTH);
    (void)mca_coll_bufpool_priority(); /* report a bad value at MPI_Init already */
    COMPONENT->segment_size =
        checked_size("segment_size", COMPONENT->segment_size_text, DEFAULT_SEGMENT_SIZE,
                     (uint64_t)4 << 10, (uint64_t)64 << 20, "a size from 4K to 64M");
    COMPONENT->min_size = checked_size("min_size", COMPONENT->min_size_text, DEFAULT_MIN_SIZE, 0,
                                       UINT64_MAX, "a size such as 0, 64K or 1M");
    /* The default small_size may exceed a small segment_size the user
     * chose: that is not the user's mistake, so clamp it silently. */
    COMPONENT->small_size =
        checked_size("small_size", COMPONENT->small_size_text, DEFAULT_SMALL_SIZE, 0, UINT64_MAX,
                     "a size from 0 to segment_size");
    if (COMPONENT->small_size > COMPONENT->segment_size) {
        if (NULL != COMPONENT->small_size_text &&
            0 != strcmp(COMPONENT->small_size_text, DEFAULT_SMALL_SIZE)) {
            report_bad_value("small_size", COMPONENT->small_size_text, "above segment_size",
                             "a size from 0 to segment_size", "segment_size");
        }
        COMPONENT->small_size = COMPONENT->segment_size;
    }

    for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
        bufpool_coll_params_t *p = &COMPONENT->coll[id];
        const char *coll = mca_coll_bufpool_coll_names[id];
        char param[64];
        bool enabled;

        snprintf(param, sizeof(param), "%s_enable", coll);
        if (0 == regpar_parse_bool(p->enable_text, &enabled)) {
            p->enabled = enabled;
        } else {
            report_bad_value(param, p->enable_text, "not a switch", "on or off", "on");
            p->enabled = true;
        }

        snprintf(param, sizeof(param), "%s_algorithm", coll);
        p->algorithm = -1;
        for (int a = 0; NULL != mca_coll_bufpool_algorithm_names[id][a]; a++) {
            if (NULL != p->algorithm_text &&
                0 == strcasecmp(p->algorithm_text, mca_coll_bufpool_algorithm_names[id][a])) {
                p->algorithm = a;
            }
        }
        if (p->algorithm < 0) {
            char expected[256] = "one of";
            for (int a = 0; NULL != mca_coll_bufpool_algorithm_names[id][a]; a++) {
                strncat(expected, a ? ", " : " ", sizeof(expected) - strlen(expected) - 1);
                strncat(expected, mca_coll_bufpool_algorithm_names[id][a],
                        sizeof(expected) - strlen(expected) - 1);
            }
            snprintf(why, sizeof(why), "unknown algorithm");
            report_bad_value(param, p->algorithm_text, why, expected, "auto");
            p->algorithm = BUFPOOL_ALG_AUTO;
        }
    }
}

static int bufpool_open(void)
{
    OBJ_CONSTRUCT(&COMPONENT->pool_lock, opal_mutex_t);
    COMPONENT->pool_looked_up = false;
    COMPONENT->mpool = NULL;
    COMPONENT->ext = NULL;
    check_params();
    return OMPI_SUCCESS;
}

static void print_report(void)
{
    char line[256];
    opal_output(0,
                "coll_bufpool report (pid %d): scratch from %s; peak %llu bytes in %llu "
                "requests (%llu from malloc)",
                (int)getpid(), NULL != COMPONENT->mpool ? "the regpar pool" : "malloc",
                (unsigned long long)COMPONENT->scratch_bytes_peak,
                (unsigned long long)COMPONENT->scratch_requests,
                (unsigned long long)COMPONENT->scratch_plain_allocs);
    for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
        if (0 == COMPONENT->calls[id] && 0 == COMPONENT->fallbacks[id]) {
            continue;
        }
        snprintf(line, sizeof(line), "  %-22s %12llu calls %12llu fallbacks",
                 mca_coll_bufpool_coll_names[id], (unsigned long long)COMPONENT->calls[id],
                 (unsigned long long)COMPONENT->fallbacks[id]);
        opal_output(0, "%s", line);
    }
}

static int bufpool_close(void)
{
    if (COMPONENT->verbose >= 1) {
        print_report();
    }
    OBJ_DESTRUCT(&COMPONENT->pool_lock);
    return OMPI_SUCCESS;
}
