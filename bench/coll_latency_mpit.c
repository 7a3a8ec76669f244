/*
 * coll_latency and MPI_T: the pool's and bufpool's performance variables
 * (through test/mpi/pvar_util, as the tests read them), control variables,
 * and the coll components this Open MPI loaded.
 */
#include "bufpool_config.h"

#include "coll_latency.h"
#include "cvar_value.h"
#include "pvar_util.h"
#include "regpar_size.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static int mpit_ready;

/* One handle per variable for the whole run: Open MPI reports a counter
 * (and a timer or aggregate) relative to the moment its handle was
 * allocated, so a handle made per read would always read about zero.
 * pvar_util keeps the handle a name got at its first read. */
typedef struct {
    int present;
    char name[64];
} pvar_probe;

static pvar_probe probe_open(const char *name)
{
    pvar_probe probe = {0};
    unsigned long long value;
    snprintf(probe.name, sizeof(probe.name), "%s", name);
    probe.present = mpit_ready && PVAR_OK == pvar_util_read(name, &value);
    return probe;
}

/* NaN when the variable does not exist (component not loaded): the tables
 * print it as "n/a". */
static double probe_read(const pvar_probe *probe)
{
    unsigned long long value;
    if (!probe->present || PVAR_OK != pvar_util_read(probe->name, &value)) {
        return NAN;
    }
    return (double)value;
}

typedef struct {
    pvar_probe slabs_mapped, direct_allocs, reg_regions, scratch_peak;
    pvar_probe own_calls[NUM_COLLECTIVES], fallbacks[NUM_COLLECTIVES];
    /* every form's calls and fallbacks of every collective */
    pvar_probe any[3][2][NUM_COLLECTIVES];
} bufpool_probes;

static bufpool_probes probes;

void mpit_open(bench_form form)
{
    /* The form's counters: persistent requests are decided (and counted)
     * at init, so their served calls are the starts. */
    static const char *const calls[] = {"coll_bufpool_%s_calls", "coll_bufpool_i%s_calls",
                                        "coll_bufpool_%s_init_calls", "coll_bufpool_i%s_calls"};
    static const char *const fallbacks[] = {
        "coll_bufpool_%s_fallbacks", "coll_bufpool_i%s_fallbacks", "coll_bufpool_%s_init_fallbacks",
        "coll_bufpool_i%s_fallbacks"};
    mpit_ready = PVAR_OK == pvar_util_init();
    probes.slabs_mapped = probe_open("mpool_regpar_slabs_mapped");
    probes.direct_allocs = probe_open("mpool_regpar_direct_allocs");
    probes.reg_regions = probe_open("mpool_regpar_reg_regions");
    probes.scratch_peak = probe_open("coll_bufpool_scratch_bytes_peak");
    for (int k = 0; k < NUM_COLLECTIVES; k++) {
        char name[128];
        snprintf(name, sizeof(name), calls[form], bench_collectives[k].name);
        probes.own_calls[k] = probe_open(name);
        snprintf(name, sizeof(name), fallbacks[form], bench_collectives[k].name);
        probes.fallbacks[k] = probe_open(name);
        for (int f = 0; f < 3; f++) {
            snprintf(name, sizeof(name), calls[f], bench_collectives[k].name);
            probes.any[f][0][k] = probe_open(name);
            snprintf(name, sizeof(name), fallbacks[f], bench_collectives[k].name);
            probes.any[f][1][k] = probe_open(name);
        }
    }
}

double bufpool_calls_total(void)
{
    double sum = 0;
    int any = 0;
    for (int f = 0; f < 3; f++) {
        for (int w = 0; w < 2; w++) {
            for (int k = 0; k < NUM_COLLECTIVES; k++) {
                if (probes.any[f][w][k].present) {
                    sum += probe_read(&probes.any[f][w][k]);
                    any = 1;
                }
            }
        }
    }
    return any ? sum : NAN;
}

void mpit_close(void)
{
    if (mpit_ready) {
        pvar_util_finalize();
        mpit_ready = 0;
    }
}

int probes_bufpool_present(void)
{
    return probes.scratch_peak.present;
}

double cvar_read_number(const char *name)
{
    return mpit_ready ? cvar_value(name) : -1.0;
}

int cvar_exists(const char *name)
{
    int index;
    return mpit_ready && MPI_SUCCESS == MPI_T_cvar_get_index(name, &index);
}

static int cvar_handle(const char *name, MPI_T_cvar_handle *handle, int *count)
{
    int index;
    return mpit_ready && MPI_SUCCESS == MPI_T_cvar_get_index(name, &index) &&
                   MPI_SUCCESS == MPI_T_cvar_handle_alloc(index, NULL, handle, count)
               ? 0
               : -1;
}

/* String variables written by cvar_write_text, with the value each had. */
static struct {
    char name[64];
    char *saved;
} saved_cvars[4];

int cvar_write_text(const char *name, const char *value)
{
    MPI_T_cvar_handle handle;
    int count, slot = -1;
    if (0 != cvar_handle(name, &handle, &count)) {
        return -1;
    }
    for (int i = 0; i < 4 && slot < 0; i++) {
        if (0 == strcmp(saved_cvars[i].name, name) || '\0' == saved_cvars[i].name[0]) {
            slot = i;
        }
    }
    if (slot >= 0 && NULL == saved_cvars[slot].saved) {
        char *text = calloc((size_t)count + 1, 1);
        if (NULL != text && MPI_SUCCESS == MPI_T_cvar_read(handle, text)) {
            snprintf(saved_cvars[slot].name, sizeof(saved_cvars[slot].name), "%s", name);
            saved_cvars[slot].saved = text;
        } else {
            free(text);
        }
    }
    int rc = MPI_T_cvar_write(handle, value);
    MPI_T_cvar_handle_free(&handle);
    return MPI_SUCCESS == rc ? 0 : -1;
}

void cvar_restore(const char *name)
{
    for (int i = 0; i < 4; i++) {
        if (0 == strcmp(saved_cvars[i].name, name) && NULL != saved_cvars[i].saved) {
            MPI_T_cvar_handle handle;
            int count;
            if (0 == cvar_handle(name, &handle, &count)) {
                (void)MPI_T_cvar_write(handle, saved_cvars[i].saved);
                MPI_T_cvar_handle_free(&handle);
            }
        }
    }
}

int cvar_write_int(const char *name, int value)
{
    MPI_T_cvar_handle handle;
    int count;
    if (0 != cvar_handle(name, &handle, &count)) {
        return -1;
    }
    int rc = MPI_T_cvar_write(handle, &value);
    MPI_T_cvar_handle_free(&handle);
    return MPI_SUCCESS == rc ? 0 : -1;
}

/* Every loaded coll component, from its priority control variable. */
int list_coll_components(char names[][32], int max)
{
    int num = 0, n = 0;
    if (!mpit_ready || MPI_SUCCESS != MPI_T_cvar_get_num(&num)) {
        return 0;
    }
    for (int i = 0; i < num && n < max; i++) {
        char name[256];
        int nlen = sizeof(name), dlen = 0, verbosity, bind, scope;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        if (MPI_SUCCESS != MPI_T_cvar_get_info(i, name, &nlen, &verbosity, &type, &enumtype, NULL,
                                               &dlen, &bind, &scope)) {
            continue;
        }
        size_t len = strlen(name);
        const char *suffix = "_priority";
        if (len > 5 + strlen(suffix) && 0 == strncmp(name, "coll_", 5) &&
            0 == strcmp(name + len - strlen(suffix), suffix) && len - 5 - strlen(suffix) < 32) {
            size_t clen = len - 5 - strlen(suffix);
            memcpy(names[n], name + 5, clen);
            names[n][clen] = '\0';
            if (0 != strcmp(names[n], "base")) {
                n++;
            }
        }
    }
    return n;
}

/* Pool counters are process-wide: only configurations that run bufpool
 * read them, so that no other row shows numbers it did not cause. */
counters counters_sample(int coll_index, int with_pool)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    counters c = {
        .minflt = (double)ru.ru_minflt,
        .maxrss_kib = (double)ru.ru_maxrss,
        .pool_sys_allocs = NAN,
        .pool_regs = NAN,
        .scratch_peak = NAN,
        .own_calls = NAN,
        .fallbacks = NAN,
    };
    if (with_pool) {
        c.pool_sys_allocs = probe_read(&probes.slabs_mapped) + probe_read(&probes.direct_allocs);
        c.pool_regs = probe_read(&probes.reg_regions);
        c.scratch_peak = probe_read(&probes.scratch_peak);
        c.own_calls = probe_read(&probes.own_calls[coll_index]);
        c.fallbacks = probe_read(&probes.fallbacks[coll_index]);
    }
    return c;
}
