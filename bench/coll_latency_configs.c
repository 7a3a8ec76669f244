/*
 * coll_latency's configurations.  Each is a duplicate of MPI_COMM_WORLD
 * created with Open MPI's per-communicator "ompi_comm_coll_preference" info
 * key, so that one job alternates bufpool, Open MPI's default selection,
 * adapt and basic size by size; "world" keeps whatever this mpirun
 * selected, and "floor" is no communicator at all (a memcpy).
 */
#include "bufpool_config.h"

#include "coll_latency.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The preference value for a configuration: listed components go first, and
 * everything after '^' is excluded. */
static int config_preference(const char *config, char *pref, size_t len)
{
    if (0 == strcmp(config, "default")) {
        snprintf(pref, len, "^bufpool");
    } else if (0 == strcmp(config, "bufpool")) {
        snprintf(pref, len, "bufpool");
    } else if (0 == strcmp(config, "adapt")) {
        snprintf(pref, len, "adapt,^bufpool");
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
    } else {
        return -1;
    }
    return 0;
}

static int config_available(const char *config, const char **why)
{
    if (0 == strcmp(config, "bufpool") && !cvar_exists("coll_bufpool_priority")) {
        *why = "coll/bufpool is not loaded (no coll_bufpool_priority variable); put the directory "
               "of mca_coll_bufpool.so in OMPI_MCA_mca_base_component_path";
        return 0;
    }
    if (0 == strcmp(config, "adapt") && !cvar_exists("coll_adapt_priority")) {
        *why = "coll/adapt is not part of this Open MPI";
        return 0;
    }
    if (0 == strcmp(config, "basic") && !cvar_exists("coll_basic_priority")) {
        *why = "coll/basic is not loaded";
        return 0;
    }
    return 1;
}

int configs_create(const char *list, const char *world_name, bench_config *configs, int max)
{
    char *copy = strdup(list);
    int n = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); NULL != tok;
         tok = strtok_r(NULL, ",", &save)) {
        const char *why = NULL;
        int known = 0 == strcmp(tok, "world") || 0 == strcmp(tok, "floor") ||
                    0 == strcmp(tok, "default") || 0 == strcmp(tok, "bufpool") ||
                    0 == strcmp(tok, "adapt") || 0 == strcmp(tok, "basic");
        if (!known) {
            root_printf("coll_latency: -C: unknown configuration \"%s\" (use world, default, "
                        "bufpool, adapt, basic, floor)\n",
                        tok);
            free(copy);
            return -1;
        }
        if (n == max) {
            root_printf("coll_latency: -C: at most %d configurations\n", max);
            free(copy);
            return -1;
        }
        if (!config_available(tok, &why)) {
            root_printf("# configuration %s skipped: %s\n", tok, why);
            continue;
        }
        bench_config *cfg = &configs[n];
        memset(cfg, 0, sizeof(*cfg));
        snprintf(cfg->name, sizeof(cfg->name), "%s", 0 == strcmp(tok, "world") ? world_name : tok);
        cfg->is_floor = 0 == strcmp(tok, "floor");
        cfg->uses_bufpool =
            0 == strcmp(tok, "bufpool") || (0 == strcmp(tok, "world") && probes_bufpool_present());
        cfg->comm = MPI_COMM_NULL;
        if (0 == strcmp(tok, "world")) {
            MPI_Comm_dup(MPI_COMM_WORLD, &cfg->comm);
        } else if (!cfg->is_floor) {
            char pref[1024];
            MPI_Info info;
            if (0 != config_preference(tok, pref, sizeof(pref))) {
                root_printf("coll_latency: too many coll components to build the %s preference\n",
                            tok);
                free(copy);
                return -1;
            }
            MPI_Info_create(&info);
            MPI_Info_set(info, COLL_PREFERENCE_KEY, pref);
            MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &cfg->comm);
            MPI_Info_free(&info);
            root_printf("# configuration %s: communicator info %s=%s\n", tok, COLL_PREFERENCE_KEY,
                        pref);
        }
        n++;
    }
    free(copy);
    return n;
}

void configs_free(bench_config *configs, int n)
{
    for (int c = 0; c < n; c++) {
        if (MPI_COMM_NULL != configs[c].comm) {
            MPI_Comm_free(&configs[c].comm);
        }
    }
}
