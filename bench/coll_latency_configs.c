/*
 * coll_latency's configurations.  Each is a duplicate of MPI_COMM_WORLD
 * created with Open MPI's per-communicator "ompi_comm_coll_preference" info
 * key, so that one job alternates bufpool, Open MPI's default selection and
 * the collective components of the running Open MPI (tuned, han with and
 * without its persistent buffers, acoll, xhc, adapt, basic) size by size;
 * "world" keeps whatever this mpirun selected, and "floor" is no
 * communicator at all (a memcpy).
 *
 * A peer is measured only where it can serve: han takes only communicators
 * that span several hosts, acoll and xhc only single-host ones (acoll from
 * coll_acoll_comm_size_thresh ranks), and each runs only the collectives it
 * implements (elsewhere the next component, tuned, would serve, which the
 * default configuration measures already).  What is left out is printed
 * with the reason ("# configuration X skipped ...").
 */
#include "bufpool_config.h"

#include "coll_latency.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Which collectives a component implements itself (its blocking entry
 * points; the nonblocking and persistent forms go to libnbc for all of
 * them but adapt), read in the Open MPI sources of each series. */
typedef struct {
    const char *name;        /* configuration */
    const char *component;   /* the coll component it puts first, NULL: none */
    const char *blocking;    /* ",a,b," its blocking collectives, NULL: every one */
    const char *nonblocking; /* the same for MPI_I<coll>, NULL: every one */
    const char *persistent;  /* the same for MPI_<coll>_init, NULL: every one */
} config_def;

#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 6
#define HAN_BLOCKING ",allgather,allreduce,alltoall,bcast,gather,reduce,scatter,"
#else
#define HAN_BLOCKING ",allgather,allreduce,bcast,gather,reduce,scatter,"
#endif

static const config_def defs[] = {
    {"world", NULL, NULL, NULL, NULL},
    {"floor", NULL, NULL, NULL, NULL},
    {"default", NULL, NULL, NULL, NULL},
    {"bufpool", "bufpool", NULL, NULL, NULL},
    /* tuned has no nonblocking or persistent collectives: libnbc serves them */
    {"tuned", "tuned", NULL, ",", ","},
    {"han", "han", HAN_BLOCKING, ",", ","},
    {"han_nopersist", "han", HAN_BLOCKING, ",", ","},
    {"acoll", "acoll", ",allgather,allreduce,alltoall,barrier,bcast,gather,reduce,", ",", ","},
    {"xhc", "xhc", ",allreduce,barrier,bcast,reduce,", ",", ","},
    {"adapt", "adapt", ",bcast,reduce,", ",bcast,reduce,", ","},
    {"basic", "basic", NULL, NULL, NULL},
};
#define NDEFS ((int)(sizeof(defs) / sizeof(defs[0])))

static const config_def *find_def(const char *name)
{
    for (int i = 0; i < NDEFS; i++) {
        if (0 == strcmp(defs[i].name, name)) {
            return &defs[i];
        }
    }
    return NULL;
}

/* The preference value for a configuration: listed components go first, and
 * everything after '^' is excluded. */
static int config_preference(const char *config, char *pref, size_t len)
{
    const config_def *def = find_def(config);
    if (0 == strcmp(config, "default")) {
        snprintf(pref, len, "^bufpool");
    } else if (0 == strcmp(config, "bufpool")) {
        snprintf(pref, len, "bufpool");
    } else if (0 == strcmp(config, "basic")) {
        char comps[64][32];
        int n = list_coll_components(comps, 64);
        size_t used = (size_t)snprintf(pref, len, "basic,self,libnbc");
        const char *sep = ",^";
        for (int i = 0; i < n && used < len; i++) {
            if (0 == strcmp(comps[i], "basic") || 0 == strcmp(comps[i], "self") ||
                0 == strcmp(comps[i], "libnbc")) {
                continue;
            }
            used += (size_t)snprintf(pref + used, len - used, "%s%s", sep, comps[i]);
            sep = ",";
        }
        if (used >= len) {
            return -1;
        }
    } else if (NULL != def && NULL != def->component) {
        snprintf(pref, len, "%s,^bufpool", def->component);
    } else {
        return -1;
    }
    return 0;
}

/* Where the processes run: hosts (shared-memory domains) and the most
 * ranks on one of them. */
static void world_placement(int *hosts, int *ppn)
{
    MPI_Comm node;
    int node_rank, node_size, leader;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &node_size);
    leader = 0 == node_rank;
    MPI_Allreduce(&leader, hosts, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&node_size, ppn, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Comm_free(&node);
}

static int hosts_, ppn_;

void configs_placement(int *hosts, int *ppn)
{
    *hosts = hosts_;
    *ppn = ppn_;
}

/* Whether a component other than tuned would take a single-host (or, for
 * han, a multi-host) communicator from tuned in Open MPI's own selection:
 * then "tuned" differs from "default" and is worth its own column. */
static int default_is_tuned(void)
{
    const double tuned = cvar_read_number("coll_tuned_priority");
    static const char *const others[] = {"acoll", "xhc", "adapt", "hcoll", "ucc", "sm", "han"};
    if (tuned < 0) {
        return 0;
    }
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        char var[64];
        snprintf(var, sizeof(var), "coll_%s_priority", others[i]);
        if (0 == strcmp(others[i], "han") && hosts_ < 2) {
            continue; /* han disqualifies itself on one host */
        }
        if (cvar_exists(var) && cvar_read_number(var) > tuned) {
            return 0;
        }
    }
    return 1;
}

static int config_available(const char *config, int nprocs, const char **why)
{
    static char text[256];
    const config_def *def = find_def(config);
    if (0 == strcmp(config, "bufpool") && !cvar_exists("coll_bufpool_priority")) {
        *why = "coll/bufpool is not loaded (no coll_bufpool_priority variable); put the directory "
               "of mca_coll_bufpool.so in OMPI_MCA_mca_base_component_path";
        return 0;
    }
    if (NULL != def && NULL != def->component && 0 != strcmp(def->component, "bufpool")) {
        char var[64];
        snprintf(var, sizeof(var), "coll_%s_priority", def->component);
        if (!cvar_exists(var)) {
            snprintf(text, sizeof(text), "coll/%s is not part of this Open MPI (no %s variable)",
                     def->component, var);
            *why = text;
            return 0;
        }
    }
    if (0 == strcmp(config, "tuned") && default_is_tuned()) {
        *why = hosts_ < 2 ? "the same selection as default on one host (han disqualifies itself "
                            "there and no other component is above tuned)"
                          : "the same selection as default here (no component above tuned on "
                            "multi-host communicators)";
        return 0;
    }
    if (0 == strncmp(config, "han", 3) && hosts_ < 2) {
        *why = "han takes only communicators that span several hosts (on one host it "
               "disqualifies itself and tuned serves); measure it with run-side-by-side.sh "
               "--hosts H --ppn N";
        return 0;
    }
    if (0 == strcmp(config, "han_nopersist")) {
        if (!cvar_exists("coll_han_use_persist_buffers")) {
            *why = "this Open MPI's han has no persistent buffers (coll_han_use_persist_buffers "
                   "appears in 6.0): the han configuration is han without them";
            return 0;
        }
        if (cvar_read_number("coll_han_use_persist_buffers") == 0) {
            *why = "coll_han_use_persist_buffers is off in this job already: the han "
                   "configuration measures han without them";
            return 0;
        }
    }
    if ((0 == strcmp(config, "acoll") || 0 == strcmp(config, "xhc")) && hosts_ > 1) {
        snprintf(text, sizeof(text),
                 "%s serves single-host communicators only (this one spans %d hosts)", config,
                 hosts_);
        *why = text;
        return 0;
    }
    if (0 == strcmp(config, "acoll")) {
        const double thresh = cvar_read_number("coll_acoll_comm_size_thresh");
        if (thresh > nprocs) {
            snprintf(text, sizeof(text),
                     "acoll takes communicators of at least coll_acoll_comm_size_thresh = %.0f "
                     "ranks (this one has %d): set OMPI_MCA_coll_acoll_comm_size_thresh "
                     "(run-side-by-side.sh sets 2)",
                     thresh, nprocs);
            *why = text;
            return 0;
        }
    }
    if (0 == strcmp(config, "basic") && !cvar_exists("coll_basic_priority")) {
        *why = "coll/basic is not loaded";
        return 0;
    }
    return 1;
}

/* The largest size at which a configuration measures a collective in a
 * form: SIZE_MAX for every size, 0 for none; where less than every size,
 * why (printed once per collective by the driver). */
size_t config_max_size(const bench_config *cfg, const char *coll, bench_form form, const char **why)
{
    static char text[256];
    const config_def *def = find_def(cfg->kind);
    if (NULL == def || cfg->is_floor) {
        return SIZE_MAX;
    }
    char key[64];
    snprintf(key, sizeof(key), ",%s,", coll);
    /* xhc copies reductions through its own buffers up to 4 KiB; above, it
     * maps the peers' buffers, which needs XPMEM: over CMA it jumps to
     * address 0 from 8 KiB (6.0.x, mca_coll_xhc_get_registration). */
    const size_t xhc_reduce_max_without_xpmem = 4096;
    if (0 == strcmp(def->name, "xhc") && !cvar_exists("smsc_xpmem_priority") &&
        FORM_BLOCKING == form && (0 == strcmp(coll, "allreduce") || 0 == strcmp(coll, "reduce"))) {
        *why = "measured up to 4 KiB only: above, xhc's reductions need XPMEM, which this Open MPI "
               "lacks (over CMA they jump to address 0 from 8 KiB, in "
               "mca_coll_xhc_get_registration)";
        return xhc_reduce_max_without_xpmem;
    }
    const char *list = FORM_BLOCKING == form     ? def->blocking
                       : FORM_PERSISTENT == form ? def->persistent
                                                 : def->nonblocking;
    if (NULL != list && NULL == strstr(list, key)) {
        static const char *const form_names[] = {"", "nonblocking ", "persistent ", "nonblocking "};
        snprintf(text, sizeof(text),
                 "%s has no %s%s of its own (the component below it would serve, as in "
                 "default)",
                 def->component, form_names[form], coll);
        *why = text;
        return 0;
    }
    return SIZE_MAX;
}

/* bufpool+ALG: the info keys that force ALG for each collective of the
 * -c list (every one for "all") on the communicator, so that one job
 * measures an algorithm of bufpool beside its defaults and Open MPI's.
 * coll_bufpool_<coll>_algorithm where the key fits MPI_MAX_INFO_KEY, else
 * (reduce_scatter, reduce_scatter_block) a pair in coll_bufpool_algorithm
 * ("COLL:ALG,..."): not every pair there, because the component ignores
 * that whole key when one pair names an algorithm its collective lacks. */
static void set_algorithm_keys(MPI_Info info, const char *alg, const char *collectives)
{
    char list[512], pairs[512] = "";
    size_t used = 0;
    snprintf(list, sizeof(list), ",%s,", collectives);
    for (int i = 0; i < NUM_COLLECTIVES; i++) {
        const char *coll = bench_collectives[i].name;
        char key[64];
        snprintf(key, sizeof(key), ",%s,", coll);
        if (0 != strcmp(collectives, "all") && NULL == strstr(list, key)) {
            continue;
        }
        snprintf(key, sizeof(key), "coll_bufpool_%s_algorithm", coll);
        if (strlen(key) < MPI_MAX_INFO_KEY) {
            MPI_Info_set(info, key, alg);
        } else if (used < sizeof(pairs)) {
            used += (size_t)snprintf(pairs + used, sizeof(pairs) - used, "%s%s:%s",
                                     0 == used ? "" : ",", coll, alg);
        }
    }
    if (used > 0) {
        MPI_Info_set(info, "coll_bufpool_algorithm", pairs);
    }
}

int configs_create(const char *list, const char *world_name, const char *collectives,
                   bench_config *configs, int max)
{
    char *copy = strdup(list);
    int n = 0, nprocs;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    world_placement(&hosts_, &ppn_);
    root_printf("# placement: %d processes on %d host(s), at most %d per host\n", nprocs, hosts_,
                ppn_);
    const int have_bufpool = cvar_exists("coll_bufpool_priority");
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); NULL != tok;
         tok = strtok_r(NULL, ",", &save)) {
        const char *why = NULL;
        /* bufpool+ALG is bufpool, with ALG forced on its communicator. */
        const char *alg = 0 == strncmp(tok, "bufpool+", 8) && '\0' != tok[8] ? tok + 8 : NULL;
        const char *base = NULL != alg ? "bufpool" : tok;
        const config_def *def = find_def(base);
        if (NULL == def || strlen(tok) >= sizeof(configs[0].name)) {
            root_printf("coll_latency: -C: unknown configuration \"%s\" (use world, floor, "
                        "default, bufpool, bufpool+ALG, tuned, han, han_nopersist, acoll, xhc, "
                        "adapt, basic)\n",
                        tok);
            free(copy);
            return -1;
        }
        if (n == max) {
            root_printf("coll_latency: -C: at most %d configurations\n", max);
            free(copy);
            return -1;
        }
        /* In job mode "world" is the configuration its mpirun selected:
         * named after it (-n), it is measured where that one would be. */
        const char *kind = base;
        if (0 == strcmp(tok, "world") && NULL != find_def(world_name)) {
            kind = world_name;
        }
        if (0 != strcmp(kind, "world") && !config_available(kind, nprocs, &why)) {
            root_printf("# configuration %s skipped: %s\n",
                        0 == strcmp(tok, "world") ? world_name : tok, why);
            continue;
        }
        bench_config *cfg = &configs[n];
        memset(cfg, 0, sizeof(*cfg));
        snprintf(cfg->name, sizeof(cfg->name), "%s", 0 == strcmp(tok, "world") ? world_name : tok);
        snprintf(cfg->kind, sizeof(cfg->kind), "%s", kind);
        cfg->is_floor = 0 == strcmp(tok, "floor");
        cfg->uses_bufpool =
            0 == strcmp(base, "bufpool") || (0 == strcmp(tok, "world") && probes_bufpool_present());
        /* Open MPI's own configurations run in processes where bufpool is
         * loaded: while their points run, bufpool takes no communicator
         * (priority -1), so that what han builds for itself at its first
         * calls leaves bufpool out, as in a job without it. */
        cfg->hide_bufpool = have_bufpool && !cfg->is_floor && !cfg->uses_bufpool;
        cfg->han_nopersist = 0 == strcmp(kind, "han_nopersist");
        cfg->comm = MPI_COMM_NULL;
        if (0 == strcmp(tok, "world")) {
            MPI_Comm_dup(MPI_COMM_WORLD, &cfg->comm);
        } else if (!cfg->is_floor) {
            char pref[1024];
            MPI_Info info;
            if (0 != config_preference(base, pref, sizeof(pref))) {
                root_printf("coll_latency: too many coll components to build the %s preference\n",
                            tok);
                free(copy);
                return -1;
            }
            MPI_Info_create(&info);
            MPI_Info_set(info, COLL_PREFERENCE_KEY, pref);
            if (NULL != alg) {
                set_algorithm_keys(info, alg, collectives);
            }
            MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &cfg->comm);
            MPI_Info_free(&info);
            root_printf(
                "# configuration %s: communicator info %s=%s%s%s%s\n", tok, COLL_PREFERENCE_KEY,
                pref, NULL != alg ? ", coll_bufpool_<coll>_algorithm=" : "", NULL != alg ? alg : "",
                cfg->han_nopersist ? "; coll_han_use_persist_buffers 0 (MPI_T) while "
                                     "its points run"
                                   : "");
        }
        n++;
    }
    free(copy);
    return n;
}

/* What a configuration changes through MPI_T while its points run, and
 * puts back after: every rank calls these at the same point. */
void config_enter(const bench_config *cfg)
{
    if (cfg->hide_bufpool) {
        cvar_write_text("coll_bufpool_priority", "-1");
    }
    if (cfg->han_nopersist) {
        cvar_write_int("coll_han_use_persist_buffers", 0);
    }
}

void config_leave(const bench_config *cfg)
{
    if (cfg->han_nopersist) {
        cvar_write_int("coll_han_use_persist_buffers", 1);
    }
    if (cfg->hide_bufpool) {
        cvar_restore("coll_bufpool_priority");
    }
}

/* Each communicator is freed under its configuration's settings: Open MPI
 * 6.0.x's han reads the global coll_han_use_persist_buffers again when a
 * module is destroyed (han_destroy_freelists, coll_han_module.c), so a
 * module made with the variable off and destroyed with it on destructs
 * free lists it never constructed: MPI_Comm_free crashed (address 0x30
 * under mca_coll_base_comm_unselect, with --mca coll ^bufpool too) after
 * han's allgather or gather had run there. */
void configs_free(bench_config *configs, int n)
{
    for (int c = 0; c < n; c++) {
        if (MPI_COMM_NULL != configs[c].comm) {
            config_enter(&configs[c]);
            MPI_Comm_free(&configs[c].comm);
            config_leave(&configs[c]);
        }
    }
}
