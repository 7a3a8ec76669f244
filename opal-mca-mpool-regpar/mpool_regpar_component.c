/*
 * mpool/regpar component: parameters, MPI_T variables, hint matching and the
 * life cycle of the process's pool.
 */
#include "opal_config.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "opal/mca/base/base.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/mpool/base/base.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/argv.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "mpool_regpar.h"
#include "bufpool_params.h"
#include "mpool_regpar_registrar.h"
#include "regpar_size.h"

static int regpar_register(void);
static int regpar_open(void);
static int regpar_close(void);
static int regpar_query(const char *hints, int *priority, mca_mpool_base_module_t **module);

mca_mpool_regpar_component_t mca_mpool_regpar_component = {
    .super =
        {
            .mpool_version = BUFPOOL_COMPONENT_VERSION(BUFPOOL_MPOOL_BASE_VERSION, "regpar",
                                                       regpar_open, regpar_close, regpar_register),
            .mpool_data = {MCA_BASE_METADATA_PARAM_CHECKPOINT},
            .mpool_query = regpar_query,
        },
};

#define COMPONENT (&mca_mpool_regpar_component)
#define PARAMS    (&mca_mpool_regpar_component.params)

/* The parameter library's view of this component (messages name
 * mpool_regpar_<param>; every rank speaks once verbose is 1). */
static const bufpool_params_t regpar_pp = {
    .component = &mca_mpool_regpar_component.super.mpool_version,
    .prefix = "mpool_regpar",
    .verbose = &mca_mpool_regpar_component.params.verbose,
    .help_file = "help-mpool-regpar.txt",
};

#define SIZE_EXPECTED "a size such as 64K, 2M or 1G"

/* Defaults, as the user would type them.  Chosen for collective scratch:
 * segments are tens to hundreds of KiB, so buckets up to 64M cover every
 * sensible segment; slabs of 32M keep a handful of registrations per bucket;
 * 256M idle per process bounds the footprint on a many-core node. */
#define DEFAULT_BUCKET_MIN     "4K"
#define DEFAULT_BUCKET_MAX     "64M"
#define DEFAULT_BUCKET_FACTOR  "2"
#define DEFAULT_PRIORITY       "0"
#define DEFAULT_VERBOSE        "0"
#define DEFAULT_SLAB_SIZE      "32M"
#define DEFAULT_MAX_CAPACITY   "256M"
#define DEFAULT_GC_AGE         "10s"
#define DEFAULT_REG_CHUNK_SIZE "256M"
#define DEFAULT_REG_THRESHOLD  "64M"

/* The configuration parsed at open; the pool is created from it on first
 * use. */
static regpar_pool_config_t regpar_pool_cfg;
static regpar_reg_config_t regpar_reg_cfg;

/* ---------------------------------------------------------------------- */
/* MPI_T performance variables: each reads one counter of a stats snapshot. */

typedef struct regpar_pvar {
    const char *name;
    const char *help;
    int var_class;
    size_t offset; /* of a uint64_t inside regpar_pool_stats_t */
} regpar_pvar_t;

#define POOL_STAT(f) offsetof(regpar_pool_stats_t, f)
#define REG_STAT(f)  (offsetof(regpar_pool_stats_t, reg) + offsetof(regpar_reg_stats_t, f))

static const regpar_pvar_t regpar_pvars[] = {
    {"allocs", "Buffers handed out by the pool", MCA_BASE_PVAR_CLASS_COUNTER, POOL_STAT(allocs)},
    {"frees", "Buffers given back to the pool", MCA_BASE_PVAR_CLASS_COUNTER, POOL_STAT(frees)},
    {"hits", "Allocations served from a free buffer (no system call)", MCA_BASE_PVAR_CLASS_COUNTER,
     POOL_STAT(hits)},
    {"misses", "Allocations that had to map (and register) a new slab", MCA_BASE_PVAR_CLASS_COUNTER,
     POOL_STAT(misses)},
    {"direct_allocs", "Requests above mpool_regpar_bucket_max, served by a direct mapping",
     MCA_BASE_PVAR_CLASS_COUNTER, POOL_STAT(direct_allocs)},
    {"over_capacity", "Allocations served although they took the pool above max_capacity",
     MCA_BASE_PVAR_CLASS_COUNTER, POOL_STAT(over_capacity)},
    {"slabs_mapped", "Slabs mapped from the system", MCA_BASE_PVAR_CLASS_COUNTER,
     POOL_STAT(slabs_mapped)},
    {"slabs_released", "Slabs given back to the system", MCA_BASE_PVAR_CLASS_COUNTER,
     POOL_STAT(slabs_released)},
    {"bytes_held", "Bytes of slabs the pool holds now (in use and idle)", MCA_BASE_PVAR_CLASS_SIZE,
     POOL_STAT(bytes_held)},
    {"bytes_in_use", "Bytes of buffers out now", MCA_BASE_PVAR_CLASS_SIZE, POOL_STAT(bytes_in_use)},
    {"bytes_peak", "High-water mark of bytes_held", MCA_BASE_PVAR_CLASS_HIGHWATERMARK,
     POOL_STAT(bytes_peak)},
    {"bytes_in_use_peak", "High-water mark of bytes_in_use", MCA_BASE_PVAR_CLASS_HIGHWATERMARK,
     POOL_STAT(bytes_in_use_peak)},
    {"bytes_collected", "Bytes released because they were cold or above max_capacity",
     MCA_BASE_PVAR_CLASS_COUNTER, POOL_STAT(bytes_collected)},
    {"alloc_failures", "Requests that failed because the system was out of memory",
     MCA_BASE_PVAR_CLASS_COUNTER, POOL_STAT(alloc_failures)},
    {"bytes_outside",
     "Bytes mapped outside the pool that count against max_capacity (coll/bufpool's node-shared "
     "segments)",
     MCA_BASE_PVAR_CLASS_SIZE, POOL_STAT(bytes_outside)},
    {"outside_registered",
     "Ranges mapped outside the pool and registered now as its slabs are (the chunk segments "
     "that coll/bufpool's allreduce hier_node exchanges from between hosts)",
     MCA_BASE_PVAR_CLASS_LEVEL, POOL_STAT(outside_live)},
    {"outside_registrations", "Registrations of such outside ranges made (pvar outside_registered)",
     MCA_BASE_PVAR_CLASS_COUNTER, POOL_STAT(outside_made)},
    {"reg_regions", "Slabs (and outside ranges) registered with the network",
     MCA_BASE_PVAR_CLASS_COUNTER, REG_STAT(regions_registered)},
    {"dereg_regions", "Slabs (and outside ranges) deregistered", MCA_BASE_PVAR_CLASS_COUNTER,
     REG_STAT(regions_deregistered)},
    {"reg_chunks", "Registration chunks (one registration call each)", MCA_BASE_PVAR_CLASS_COUNTER,
     REG_STAT(chunks_registered)},
    {"reg_bytes", "Bytes registered now", MCA_BASE_PVAR_CLASS_SIZE, REG_STAT(bytes_registered)},
    {"reg_failures", "Slabs whose registration failed (served unregistered)",
     MCA_BASE_PVAR_CLASS_COUNTER, REG_STAT(reg_failures)},
    {"reg_time_ns", "Cumulative wall time of registrations, pre-fault included (ns)",
     MCA_BASE_PVAR_CLASS_COUNTER, REG_STAT(reg_time_ns)},
    {"prefault_time_ns", "Cumulative wall time of pre-faulting (ns)", MCA_BASE_PVAR_CLASS_COUNTER,
     REG_STAT(prefault_time_ns)},
    {"dereg_time_ns", "Cumulative wall time of deregistrations (ns)", MCA_BASE_PVAR_CLASS_COUNTER,
     REG_STAT(dereg_time_ns)},
    {"reg_parallel_regions", "Slabs registered with more than one thread",
     MCA_BASE_PVAR_CLASS_COUNTER, REG_STAT(parallel_regions)},
};

static int regpar_pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    const regpar_pvar_t *desc = (const regpar_pvar_t *)pvar->ctx;
    regpar_pool_stats_t stats;
    (void)obj;

    memset(&stats, 0, sizeof(stats));
    /* Before first use there is no pool: every counter is zero. */
    if (COMPONENT->module_ready) {
        regpar_pool_get_stats(COMPONENT->module.pool, &stats);
    }
    memcpy(value, (const char *)&stats + desc->offset, sizeof(uint64_t));
    return OPAL_SUCCESS;
}

static void register_pvars(void)
{
    for (size_t i = 0; i < sizeof(regpar_pvars) / sizeof(regpar_pvars[0]); i++) {
        (void)mca_base_component_pvar_register(
            &COMPONENT->super.mpool_version, regpar_pvars[i].name, regpar_pvars[i].help,
            OPAL_INFO_LVL_4, regpar_pvars[i].var_class, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
            MCA_BASE_VAR_BIND_NO_OBJECT,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, regpar_pvar_read, NULL,
            NULL, (void *)&regpar_pvars[i]);
    }
}

/* Every parameter, typed as text and checked by parse_settings
 * (common/bufpool_params.h says why): name, default, help, and where its
 * text is kept.  A new parameter is one row here and one line there. */
typedef struct regpar_param {
    const char *name;
    const char *dflt;
    const char *help;
    size_t offset; /* of its char * in mca_mpool_regpar_params_t */
} regpar_param_t;

static const regpar_param_t regpar_params[] = {
    {"priority", DEFAULT_PRIORITY,
     "Priority of the regpar pool when a lookup does not name an mpool (an integer; a hint "
     "mpool=regpar always selects it with priority 100). The default 0 keeps MPI_Alloc_mem without "
     "hints on Open MPI's default allocator",
     offsetof(mca_mpool_regpar_params_t, priority_text)},
    {"verbose", DEFAULT_VERBOSE,
     "Verbosity (0 to 9): 0 errors and warnings only, 1 adds a report of the counters at finalize, "
     "2 explains decisions, 3 traces every slab",
     offsetof(mca_mpool_regpar_params_t, verbose_text)},
    {"bucket_min", DEFAULT_BUCKET_MIN,
     "Smallest bucket (bytes; suffixes K, M, G). A page multiple, at least one page, at most "
     "bucket_max",
     offsetof(mca_mpool_regpar_params_t, bucket_min)},
    {"bucket_max", DEFAULT_BUCKET_MAX,
     "Largest bucket (bytes; suffixes K, M, G). A page multiple. Larger requests are served by a "
     "direct mapping that is released on free",
     offsetof(mca_mpool_regpar_params_t, bucket_max)},
    {"bucket_factor", DEFAULT_BUCKET_FACTOR,
     "Growth factor between consecutive bucket sizes (each rounded up to a page), a decimal number "
     "greater than 1 and at most 16. 2 wastes at most half a buffer; smaller factors waste less "
     "and keep more buckets",
     offsetof(mca_mpool_regpar_params_t, bucket_factor)},
    {"slab_size", DEFAULT_SLAB_SIZE,
     "Largest slab the pool maps at once (bytes; suffixes K, M, G; a multiple of 2M). A bucket's "
     "slabs start at 2M (or one buffer) and double up to this",
     offsetof(mca_mpool_regpar_params_t, slab_size)},
    {"max_capacity", DEFAULT_MAX_CAPACITY,
     "Bytes the pool keeps while idle (suffixes K, M, G), less what coll/bufpool's node-shared "
     "segments map (pvar bytes_outside). Above it, wholly free slabs are released; requests "
     "beyond it are still served. At least one slab of the smallest bucket (2M with the "
     "defaults)",
     offsetof(mca_mpool_regpar_params_t, max_capacity)},
    {"gc_age", DEFAULT_GC_AGE,
     "Idle time after which a wholly free slab is released (units ns, us, ms, s, m, h; a bare "
     "number is seconds; 0 disables collection by age)",
     offsetof(mca_mpool_regpar_params_t, gc_age)},
    {"hugepages", "on",
     "Ask for transparent huge pages on slabs with madvise(MADV_HUGEPAGE) (on|off): fewer page "
     "faults and fewer NIC translation entries",
     offsetof(mca_mpool_regpar_params_t, hugepages)},
    {"numa", "off",
     "NUMA placement of slabs: off (first touch decides), local (the node of the CPU that creates "
     "the pool) or a node number",
     offsetof(mca_mpool_regpar_params_t, numa)},
    {"reg_backend", "auto",
     "How slabs are registered: auto (once per slab where the selected transport looks: btl for "
     "pml ob1 with registering BTLs, ucx for pml ucx, mtl for pml cm + mtl ofi where its MR cache "
     "takes it; else none), btl, ucx, mtl (force that registrar), pin (mlock: real pinning, counts "
     "against RLIMIT_MEMLOCK), none, or verbs / ofi (a private domain no transport uses: only for "
     "tools that take the descriptors; never chosen by auto)",
     offsetof(mca_mpool_regpar_params_t, reg_backend)},
    {"reg_parallel", "auto",
     "Register large slabs with several threads: auto (only where it helps: several cores, slab at "
     "least reg_threshold, pre-fault done), on, off",
     offsetof(mca_mpool_regpar_params_t, reg_parallel)},
    {"reg_threads", "0",
     "Registration threads, 0 to 64 (0 = one per idle core, at most 16); created once",
     offsetof(mca_mpool_regpar_params_t, reg_threads)},
    {"reg_chunk_size", DEFAULT_REG_CHUNK_SIZE,
     "Bytes per registration chunk of a large slab (suffixes K, M, G; a page multiple). Keep below "
     "4G for EFA",
     offsetof(mca_mpool_regpar_params_t, reg_chunk_size)},
    {"reg_threshold", DEFAULT_REG_THRESHOLD,
     "Slabs at least this large are split into chunks and may be registered in parallel (suffixes "
     "K, M, G)",
     offsetof(mca_mpool_regpar_params_t, reg_threshold)},
    {"prefault", "on",
     "Pre-fault slabs when they are created, before registration (on|off), so that no collective "
     "pays a page fault on pool memory",
     offsetof(mca_mpool_regpar_params_t, prefault)},
    {"bind_threads", "off", "Bind registration threads to cores (on|off)",
     offsetof(mca_mpool_regpar_params_t, bind_threads)},
    {"ofi_provider", "",
     "libfabric provider for reg_backend ofi (for example verbs, efa, tcp, shm); empty = the first "
     "provider found",
     offsetof(mca_mpool_regpar_params_t, ofi_provider)},
    {"verbs_device", "",
     "RDMA device for reg_backend verbs (for example mlx5_0); empty = the first",
     offsetof(mca_mpool_regpar_params_t, verbs_device)},
};

static int regpar_register(void)
{
    (void)bufpool_params_help_init(&regpar_pp);
    for (size_t i = 0; i < sizeof(regpar_params) / sizeof(regpar_params[0]); i++) {
        const regpar_param_t *pm = &regpar_params[i];
        bufpool_params_register_text(&regpar_pp, pm->name, pm->help, pm->dflt, OPAL_INFO_LVL_5,
                                     MCA_BASE_VAR_SCOPE_READONLY,
                                     (char **)((char *)PARAMS + pm->offset));
    }
    register_pvars();
    mca_mpool_regpar_ompi_register_pvars(&COMPONENT->super.mpool_version);
    return OPAL_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Parsing with one clear message per bad value. */

static bool speaks_for_job(void)
{
    return bufpool_params_speaks(&regpar_pp);
}

static int settings_numa(const char *value)
{
    /* An empty value (NULL from Open MPI) is reported like every other
     * parameter's, not taken silently as off. */
    if (NULL == value || '\0' == value[0]) {
        bufpool_params_bad(&regpar_pp, "numa", value, "empty",
                           "off, local or a node number 0..4095", "off");
        return -1;
    }
    if (0 == strcasecmp(value, "off")) {
        return -1;
    }
    if (0 == strcasecmp(value, "local")) {
        unsigned cpu, node;
        /* getcpu reports the node directly, without libnuma or hwloc. */
        return 0 == getcpu(&cpu, &node) ? (int)node : -1;
    }
    char *end;
    errno = 0;
    long node = strtol(value, &end, 10);
    if (0 == errno && '\0' == *end && end != value && node >= 0 && node < 4096) {
        return (int)node;
    }
    bufpool_params_bad(&regpar_pp, "numa", value, "not a node",
                       "off, local or a node number 0..4095", "off");
    return -1;
}

/* Build the pool/engine configuration from the MCA parameters, printing one
 * message per invalid value and using that value's default instead. */
static void parse_settings(regpar_pool_config_t *pool_cfg, regpar_reg_config_t *reg_cfg)
{
    char why[256];

    regpar_pool_config_defaults(pool_cfg);
    pool_cfg->bucket_min = bufpool_params_size(&regpar_pp, "bucket_min", PARAMS->bucket_min,
                                               DEFAULT_BUCKET_MIN, 0, UINT64_MAX, SIZE_EXPECTED);
    pool_cfg->bucket_max = bufpool_params_size(&regpar_pp, "bucket_max", PARAMS->bucket_max,
                                               DEFAULT_BUCKET_MAX, 0, UINT64_MAX, SIZE_EXPECTED);
    if (0 != regpar_parse_decimal(PARAMS->bucket_factor, 0.0, 1e9, &pool_cfg->bucket_factor, why,
                                  sizeof(why))) {
        bufpool_params_bad(&regpar_pp, "bucket_factor", PARAMS->bucket_factor, why,
                           "a decimal number above 1 and at most 16", DEFAULT_BUCKET_FACTOR);
        (void)regpar_parse_decimal(DEFAULT_BUCKET_FACTOR, 0.0, 1e9, &pool_cfg->bucket_factor, why,
                                   sizeof(why));
    }
    pool_cfg->slab_size = bufpool_params_size(&regpar_pp, "slab_size", PARAMS->slab_size,
                                              DEFAULT_SLAB_SIZE, 0, UINT64_MAX, SIZE_EXPECTED);
    pool_cfg->max_capacity =
        bufpool_params_size(&regpar_pp, "max_capacity", PARAMS->max_capacity, DEFAULT_MAX_CAPACITY,
                            0, UINT64_MAX, SIZE_EXPECTED);
    pool_cfg->gc_age_ns = bufpool_params_duration(
        &regpar_pp, "gc_age", PARAMS->gc_age, DEFAULT_GC_AGE, "a duration such as 10s or 500ms");
    pool_cfg->hugepages = bufpool_params_bool(&regpar_pp, "hugepages", PARAMS->hugepages, true);
    pool_cfg->numa_node = settings_numa(PARAMS->numa);
    pool_cfg->verbose = PARAMS->verbose;

    /* Values that parse but do not fit together (min above max, not a page
     * multiple, capacity below one bucket...): the core names the field;
     * all pool sizes then return to their defaults, which are consistent. */
    if (0 != regpar_pool_config_check(pool_cfg, (size_t)sysconf(_SC_PAGESIZE), why, sizeof(why))) {
        if (speaks_for_job())
            bufpool_params_show(&regpar_pp, "bad-pool-config",
                                "mpool_regpar: %s. Using the defaults for all pool sizes "
                                "(bucket_min %s, bucket_max %s, bucket_factor %s, slab_size %s, "
                                "max_capacity %s) (pid %d).",
                                why, DEFAULT_BUCKET_MIN, DEFAULT_BUCKET_MAX, DEFAULT_BUCKET_FACTOR,
                                DEFAULT_SLAB_SIZE, DEFAULT_MAX_CAPACITY, (int)getpid());
        (void)regpar_parse_size(DEFAULT_BUCKET_MIN, &pool_cfg->bucket_min, why, sizeof(why));
        (void)regpar_parse_size(DEFAULT_BUCKET_MAX, &pool_cfg->bucket_max, why, sizeof(why));
        (void)regpar_parse_size(DEFAULT_SLAB_SIZE, &pool_cfg->slab_size, why, sizeof(why));
        (void)regpar_parse_size(DEFAULT_MAX_CAPACITY, &pool_cfg->max_capacity, why, sizeof(why));
        (void)regpar_parse_decimal(DEFAULT_BUCKET_FACTOR, 0.0, 1e9, &pool_cfg->bucket_factor, why,
                                   sizeof(why));
    }

    regpar_reg_config_defaults(reg_cfg);
    /* ---- transport registrars (issue 11): auto, btl, ucx, mtl start the
     * engine without a backend; the registrar is attached once the
     * transport is up (mpool_regpar_registrar.c). */
    mca_mpool_regpar_want_t want = REGPAR_WANT_NONE;
    if (0 == mca_mpool_regpar_registrar_parse(PARAMS->reg_backend, &want)) {
        reg_cfg->backend = REGPAR_REG_NONE;
    } else if (0 != regpar_reg_backend_parse(PARAMS->reg_backend, &reg_cfg->backend) ||
               REGPAR_REG_AUTO == reg_cfg->backend || REGPAR_REG_REGISTRAR == reg_cfg->backend) {
        bufpool_params_bad(&regpar_pp, "reg_backend", PARAMS->reg_backend, "unknown backend",
                           "auto, btl, ucx, mtl, pin, none, verbs or ofi", "auto");
        want = REGPAR_WANT_AUTO;
        reg_cfg->backend = REGPAR_REG_NONE;
    }
    mca_mpool_regpar_registrar_set_want(want);
    /* ---- end of transport registrars */
    if (0 != regpar_reg_parallel_parse(PARAMS->reg_parallel, &reg_cfg->parallel)) {
        bufpool_params_bad(&regpar_pp, "reg_parallel", PARAMS->reg_parallel, "unknown policy",
                           "auto, on or off", "auto");
        reg_cfg->parallel = REGPAR_PAR_AUTO;
    }
    reg_cfg->threads = (unsigned)bufpool_params_int(&regpar_pp, "reg_threads", PARAMS->reg_threads,
                                                    0, REGPAR_REG_MAX_THREADS, "0");
    reg_cfg->chunk_size = bufpool_params_size(&regpar_pp, "reg_chunk_size", PARAMS->reg_chunk_size,
                                              DEFAULT_REG_CHUNK_SIZE, 0, UINT64_MAX, SIZE_EXPECTED);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (0 == reg_cfg->chunk_size || 0 != reg_cfg->chunk_size % page) {
        char value[32];
        regpar_format_size(reg_cfg->chunk_size, value, sizeof(value));
        bufpool_params_bad(&regpar_pp, "reg_chunk_size", value, "not a positive page multiple",
                           "a multiple of the page size", DEFAULT_REG_CHUNK_SIZE);
        (void)regpar_parse_size(DEFAULT_REG_CHUNK_SIZE, &reg_cfg->chunk_size, why, sizeof(why));
    }
    reg_cfg->threshold = bufpool_params_size(&regpar_pp, "reg_threshold", PARAMS->reg_threshold,
                                             DEFAULT_REG_THRESHOLD, 0, UINT64_MAX, SIZE_EXPECTED);
    reg_cfg->prefault = bufpool_params_bool(&regpar_pp, "prefault", PARAMS->prefault, true);
    reg_cfg->bind_threads =
        bufpool_params_bool(&regpar_pp, "bind_threads", PARAMS->bind_threads, false);
    reg_cfg->ofi_provider = PARAMS->ofi_provider;
    reg_cfg->verbs_device = PARAMS->verbs_device;
}

/* ---------------------------------------------------------------------- */

static int regpar_open(void)
{
    PARAMS->priority = (int)bufpool_params_int(&regpar_pp, "priority", PARAMS->priority_text,
                                               -1000000, 1000000, DEFAULT_PRIORITY);
    PARAMS->verbose =
        (int)bufpool_params_int(&regpar_pp, "verbose", PARAMS->verbose_text, 0, 9, DEFAULT_VERBOSE);
    OBJ_CONSTRUCT(&COMPONENT->lock, opal_mutex_t);
    COMPONENT->module_ready = false;
    COMPONENT->module_failed = false;
    COMPONENT->progress_registered = false;
    /* Parse now, at MPI_Init, so that a bad value is reported even by jobs
     * that end up never using the pool. */
    parse_settings(&regpar_pool_cfg, &regpar_reg_cfg);
    return OPAL_SUCCESS;
}

/* Collection from the progress engine, on every low-priority progress call:
 * the pool returns at once (a coarse clock read and two atomic loads) unless
 * a quarter of gc_age has passed.  No call count throttles it: an
 * application that computes between MPI calls makes few progress calls (an
 * MPI_Test every 100 ms makes one low-priority call about every 0.8 s), and
 * a throttle of 64 of them kept idle slabs for minutes. */
static int regpar_progress(void)
{
    if (COMPONENT->module_ready) {
        (void)regpar_pool_collect(COMPONENT->module.pool, false);
    }
    return 0;
}

static int regpar_close(void)
{
    if (COMPONENT->progress_registered) {
        opal_progress_unregister(regpar_progress);
        COMPONENT->progress_registered = false;
    }
    if (COMPONENT->module_ready) {
        if (PARAMS->verbose >= 1) {
            mca_mpool_regpar_report(&COMPONENT->module);
        }
        COMPONENT->module_ready = false;
        mca_mpool_regpar_module_fini(&COMPONENT->module);
    }
    OBJ_DESTRUCT(&COMPONENT->lock);
    return OPAL_SUCCESS;
}

/* Does the hint string name us ("mpool=regpar"), name another mpool, or
 * not name any? */
typedef enum { HINT_NONE, HINT_US, HINT_OTHER } hint_match_t;

static hint_match_t match_hints(const char *hints)
{
    hint_match_t match = HINT_NONE;
    if (NULL == hints) {
        return match;
    }
    char **pairs = opal_argv_split(hints, ',');
    for (int i = 0; NULL != pairs && NULL != pairs[i]; i++) {
        char *value = strchr(pairs[i], '=');
        if (NULL == value) {
            continue;
        }
        *value++ = '\0';
        if (0 == strcasecmp(pairs[i], "mpool")) {
            match = 0 == strcasecmp(value, "regpar") ? HINT_US : HINT_OTHER;
        }
    }
    opal_argv_free(pairs);
    return match;
}

/* Create the pool on first use; later calls only check the flag. */
static bool ensure_module(void)
{
    if (COMPONENT->module_ready) {
        return true;
    }
    OPAL_THREAD_LOCK(&COMPONENT->lock);
    if (!COMPONENT->module_ready && !COMPONENT->module_failed) {
        const mca_mpool_regpar_setup_t setup = {.component = &COMPONENT->super,
                                                .pp = &regpar_pp,
                                                .pool = regpar_pool_cfg,
                                                .reg = regpar_reg_cfg};
        if (OPAL_SUCCESS == mca_mpool_regpar_module_init(&COMPONENT->module, &setup)) {
            opal_atomic_wmb();
            COMPONENT->module_ready = true;
            if (OPAL_SUCCESS == opal_progress_register_lp(regpar_progress)) {
                COMPONENT->progress_registered = true;
            }
        } else {
            COMPONENT->module_failed = true;
        }
    }
    OPAL_THREAD_UNLOCK(&COMPONENT->lock);
    return COMPONENT->module_ready;
}

static int regpar_query(const char *hints, int *priority, mca_mpool_base_module_t **module)
{
    int my_priority;
    switch (match_hints(hints)) {
        case HINT_US:
            my_priority = 100;
            break;
        case HINT_OTHER:
            return OPAL_ERR_NOT_FOUND;
        default:
            my_priority = PARAMS->priority;
            /* Not asked for by name and not preferred: do not create a pool
             * that will not be used. */
            if (my_priority <= mca_mpool_base_default_priority) {
                return OPAL_ERR_NOT_FOUND;
            }
    }
    if (!ensure_module()) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    if (priority) {
        *priority = my_priority;
    }
    if (module) {
        *module = &COMPONENT->module.head.super;
    }
    return OPAL_SUCCESS;
}
