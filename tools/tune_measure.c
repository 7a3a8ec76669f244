/*
 * bufpool-tune-measure: the MPI job of bufpool-tune (docs/tuning.md).
 *
 * For every communicator size asked (the first p ranks of MPI_COMM_WORLD),
 * every collective and every message size, it times the previous module
 * (a communicator with ompi_comm_coll_preference=^bufpool), a second copy
 * of it (the A/A pair that measures the noise) and each of bufpool's
 * algorithms (one communicator per algorithm, forced with the info key
 * coll_bufpool_<coll>_algorithm), interleaved: each repetition runs every
 * configuration once, in an order rotated from one repetition to the
 * next, as a batch of calls sized to take about --batch-ms.  The calls,
 * their data, and the independent check of every batch's result are
 * bench/coll_latency's (coll_latency_colls.c, coll_latency_measure.c).
 *
 * Rank 0 writes what it measured to stdout as "bpt" lines, which
 * bufpool-tune-decide reads (tune_decide.h: "H" header, "C" communicator,
 * "R" a configuration starts, "M" its measurement, "W" a wrong result,
 * "N" a note, "D" the end), and one progress line per point to stderr.
 * Standard output goes back to mpirun's terminal, so no shared file
 * system is needed.
 */
#include "bufpool_config.h"

#include "coll_latency.h"
#include "coll_bufpool_rules.h"
#include "regpar_size.h"
#include "tune_args.h"
#include "tune_decide.h"
#include "tune_measure.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TUNE_MAX_ITERS 20000 /* timed calls of one batch, at most */
#define TUNE_MIN_ITERS 3

static int world_rank;

/* A "bpt" line on stdout from rank 0, flushed at once so that a job that
 * dies leaves everything it measured (and what it was doing) behind. */
static void raw(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void raw(const char *fmt, ...)
{
    if (0 != world_rank) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    fputs("bpt ", stdout);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    fflush(stdout);
}

/* A message on stderr from rank 0. */
#define say(...) tune_say(0 == world_rank ? stderr : NULL, __VA_ARGS__)

/* ------------------------------------------------------------------------ */
/* Where ranks run                                                           */

typedef struct {
    int *host; /* host index of each rank of MPI_COMM_WORLD */
    char *names;
    int nhosts;
} placement;

static int placement_scan(MPI_Comm world, placement *pl)
{
    int np, len;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Comm_size(world, &np);
    memset(name, 0, sizeof(name));
    MPI_Get_processor_name(name, &len);
    pl->names = calloc((size_t)np, MPI_MAX_PROCESSOR_NAME);
    pl->host = calloc((size_t)np, sizeof(int));
    if (NULL == pl->names || NULL == pl->host) {
        return -1;
    }
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, pl->names, MPI_MAX_PROCESSOR_NAME,
                  MPI_CHAR, world);
    pl->nhosts = 0;
    for (int r = 0; r < np; r++) {
        const char *mine = pl->names + (size_t)r * MPI_MAX_PROCESSOR_NAME;
        int h = 0;
        while (h < r && 0 != strcmp(mine, pl->names + (size_t)h * MPI_MAX_PROCESSOR_NAME)) {
            h++;
        }
        pl->host[r] = h < r ? pl->host[h] : pl->nhosts++;
    }
    return 0;
}

/* Hosts and the fullest host's ranks among the first p ranks. */
static void placement_of(const placement *pl, int p, int *hosts, int *ppn)
{
    int *count = calloc((size_t)pl->nhosts, sizeof(int));
    *hosts = 0;
    *ppn = 0;
    for (int r = 0; r < p && NULL != count; r++) {
        if (0 == count[pl->host[r]]++) {
            ++*hosts;
        }
        if (count[pl->host[r]] > *ppn) {
            *ppn = count[pl->host[r]];
        }
    }
    free(count);
}

/* ------------------------------------------------------------------------ */
/* Configurations                                                            */

typedef struct {
    char name[TUNE_NAME_LEN];
    int alg; /* BUFPOOL_ALG_PREVIOUS for the previous module and its copy */
    bench_config bc;
    bool wrong;       /* failed its check at this point (reported) */
    bool handed_back; /* bufpool handed its calls back at this point */
} tune_config;

static MPI_Comm dup_with(MPI_Comm comm, const char *key1, const char *val1, const char *key2,
                         const char *val2)
{
    MPI_Info info;
    MPI_Comm out;
    MPI_Info_create(&info);
    MPI_Info_set(info, key1, val1);
    if (NULL != key2) {
        MPI_Info_set(info, key2, val2);
    }
    MPI_Comm_dup_with_info(comm, info, &out);
    MPI_Info_free(&info);
    MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN);
    return out;
}

/* The previous module, its A/A copy, and every algorithm not left out. */
static int configs_make(bufpool_coll_id_t id, MPI_Comm sub, int p, int hosts, const tune_options *o,
                        const bufpool_tuning_t *tuning, tune_config *cfg)
{
    int n = 0;
    for (int k = 0; k < 2; k++) {
        tune_config *c = &cfg[n++];
        memset(c, 0, sizeof(*c));
        snprintf(c->name, sizeof(c->name), "%s", 0 == k ? TUNE_CFG_PREV : TUNE_CFG_AA);
        c->alg = BUFPOOL_ALG_PREVIOUS;
        c->bc.comm = dup_with(sub, COLL_PREFERENCE_KEY, "^bufpool", NULL, NULL);
    }
    for (int alg = 1; NULL != bufpool_algorithm_names[id][alg]; alg++) {
        const char *name = bufpool_algorithm_names[id][alg];
        const char *note = NULL;
        if (o->skip[id][alg]) {
            raw("N %s %d %s: left out (--skip)", bufpool_coll_names[id], p, name);
            continue;
        }
        if (alg != bufpool_forced_for(id, alg, hosts, tuning, &note)) {
            raw("N %s %d %s: left out (%s)", bufpool_coll_names[id], p, name,
                NULL != note ? note : "does not apply");
            continue;
        }
        /* coll_bufpool_<coll>_algorithm is too long an info key for
         * reduce_scatter(_block): the list key serves every collective. */
        char value[96];
        snprintf(value, sizeof(value), "%s:%s", bufpool_coll_names[id], name);
        tune_config *c = &cfg[n++];
        memset(c, 0, sizeof(*c));
        snprintf(c->name, sizeof(c->name), "%s", name);
        c->alg = alg;
        c->bc.uses_bufpool = 1;
        c->bc.comm =
            dup_with(sub, COLL_PREFERENCE_KEY, "bufpool", BUFPOOL_ALGORITHM_INFO_KEY, value);
    }
    return n;
}

static void configs_release(tune_config *cfg, int n)
{
    for (int c = 0; c < n; c++) {
        MPI_Comm_free(&cfg[c].bc.comm);
    }
}

/* ------------------------------------------------------------------------ */
/* Measurement                                                               */

static size_t rules_bytes(const coll_desc *cd, bufpool_coll_id_t id, int count, int p)
{
    if (BUFPOOL_COLL_reduce_scatter_block == id) {
        return (size_t)count * (size_t)p * sizeof(float);
    }
    if (BUFPOOL_COLL_barrier == id) {
        return 0; /* no message: the rules see 0 bytes */
    }
    return (size_t)count * (cd->reduction ? sizeof(float) : 1);
}

static size_t buffer_need(const coll_desc *cd, size_t size, int p)
{
    size_t need = 0;
    for (int r = 0; r < 2 && r < p; r++) {
        size_t n = cd->send_bytes(size, p, r) + cd->recv_bytes(size, p, r);
        need = n > need ? n : need;
    }
    return need;
}

/* The sizes of one collective at p ranks: those with one element per
 * rank at least, and buffers within --mem-limit. */
static int sizes_for(const coll_desc *cd, int p, const tune_options *o, size_t *out,
                     size_t *left_out)
{
    int n = 0;
    *left_out = 0;
    /* barrier has no message size: one point, named by the first size. */
    if (0 == strcmp(cd->name, "barrier")) {
        if (o->nsizes > 0) {
            out[n++] = o->sizes[0];
        }
        return n;
    }
    for (int i = 0; i < o->nsizes; i++) {
        if (cd->count(o->sizes[i], p) <= 0) {
            continue;
        }
        if (buffer_need(cd, o->sizes[i], p) > o->mem_limit) {
            if (0 == *left_out) {
                *left_out = o->sizes[i];
            }
            continue;
        }
        out[n++] = o->sizes[i];
    }
    return n;
}

/* Calls per batch: about batch_ms of the previous module's calls. */
static void calibrate(point_setup *ps, MPI_Comm comm, double batch_ms, long *iters, long *warmup)
{
    ps->cd->call(&ps->args, comm);
    MPI_Barrier(ps->sync);
    double t0 = MPI_Wtime();
    for (int i = 0; i < 3; i++) {
        ps->cd->call(&ps->args, comm);
        MPI_Barrier(ps->sync);
    }
    double t = (MPI_Wtime() - t0) / 3;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, ps->sync);
    double n = batch_ms * 1e-3 / (t > 1e-9 ? t : 1e-9);
    *iters = n < TUNE_MIN_ITERS ? TUNE_MIN_ITERS : n > TUNE_MAX_ITERS ? TUNE_MAX_ITERS : (long)n;
    *warmup = *iters / 8 < 2 ? 2 : *iters / 8 > 200 ? 200 : *iters / 8;
}

typedef struct {
    int done, total;
    double start;
    const tune_options *o;
} progress;

static void progress_line(progress *pr, const char *coll, int p, int hosts, size_t size,
                          const tune_config *cfg, int ncfg, double t[][TUNE_MAX_REPS], int reps)
{
    pr->done++;
    if (pr->o->quiet || 0 != world_rank) {
        return;
    }
    char sz[32], where[32] = "", line[1024];
    tune_format_size(size, sz, sizeof(sz));
    if (hosts > 1) {
        snprintf(where, sizeof(where), " (%d hosts)", hosts);
    }
    int width = snprintf(NULL, 0, "%d", pr->total);
    size_t used = (size_t)snprintf(line, sizeof(line), "[%*d/%d] %s p=%d%s %s:", width, pr->done,
                                   pr->total, coll, p, where, sz);
    double prev = tune_median(t[0], reps);
    used += (size_t)snprintf(line + used, sizeof(line) - used, " previous %.1f us;", prev);
    for (int c = 1; c < ncfg && used < sizeof(line); c++) {
        double ratio, spread;
        char value[32];
        if (cfg[c].wrong) {
            snprintf(value, sizeof(value), "WRONG");
        } else if (cfg[c].handed_back) {
            snprintf(value, sizeof(value), "handed-back");
        } else if (0 == tune_ratio_stats(t[c], t[0], reps, &ratio, &spread)) {
            snprintf(value, sizeof(value), "-");
        } else {
            snprintf(value, sizeof(value), "%.2f", ratio);
        }
        used += (size_t)snprintf(line + used, sizeof(line) - used, " %s %s",
                                 1 == c ? "A/A" : cfg[c].name, value);
    }
    fprintf(stderr, "%s  (%.0f s)\n", line, MPI_Wtime() - pr->start);
    fflush(stderr);
}

/* For testing only (test/tune/tune_errors.sh): whether the environment
 * variable name holds COLL:CONFIG.  Every rank reads the same value. */
static bool test_hook(const char *name, const char *coll, const char *cfg)
{
    const char *at = getenv(name);
    char want[96];
    snprintf(want, sizeof(want), "%s:%s", coll, cfg);
    return NULL != at && 0 == strcmp(at, want);
}

/* BUFPOOL_TUNE_TEST_CRASH=COLL:CONFIG: the last rank of the communicator
 * aborts when that configuration starts, as an algorithm that crashes
 * would. */
static void crash_if_asked(const char *coll, const char *cfg, int rank, int p)
{
    if (test_hook("BUFPOOL_TUNE_TEST_CRASH", coll, cfg) && rank == p - 1) {
        fprintf(stderr, "bufpool-tune-measure: BUFPOOL_TUNE_TEST_CRASH=%s:%s: aborting\n", coll,
                cfg);
        abort();
    }
}

/* About 105 lines: one collective's sizes, each measured in every
 * configuration in interleaved repetitions, as the raw format records it. */
static void run_collective(bufpool_coll_id_t id, MPI_Comm sub, MPI_Comm sync, int p, int hosts,
                           int ppn, const tune_options *o, const bufpool_tuning_t *tuning,
                           progress *pr)
{
    const coll_desc *cd = &bench_collectives[id];
    const char *coll = bufpool_coll_names[id];
    size_t sizes[TUNE_MAX_SIZES], left_out;
    int nsizes = sizes_for(cd, p, o, sizes, &left_out);
    if (0 != left_out) {
        char sz[32];
        tune_format_size(left_out, sz, sizeof(sz));
        raw("N %s %d: sizes from %s left out: their buffers exceed --mem-limit %zu bytes", coll, p,
            sz, o->mem_limit);
        say("bufpool-tune: %s at %d ranks: sizes from %s left out (buffers above --mem-limit)\n",
            coll, p, sz);
    }
    if (0 == nsizes) {
        return;
    }
    tune_config cfg[TUNE_MAX_CFGS];
    int ncfg = configs_make(id, sub, p, hosts, o, tuning, cfg);

    point_setup ps = {.cd = cd, .coll_index = (int)id, .sync = sync};
    MPI_Comm_rank(sub, &ps.args.rank);
    ps.args.nprocs = p;
    ps.args.op = MPI_SUM; /* what the rules are measured with */
    size_t send_max = 0, recv_max = 0;
    for (int i = 0; i < nsizes; i++) {
        size_t s = cd->send_bytes(sizes[i], p, ps.args.rank),
               r = cd->recv_bytes(sizes[i], p, ps.args.rank);
        send_max = s > send_max ? s : send_max;
        recv_max = r > recv_max ? r : recv_max;
    }
    if (0 != point_setup_alloc(&ps, send_max, recv_max, 1, TUNE_MAX_ITERS)) {
        say("bufpool-tune: %s at %d ranks: cannot allocate %zu + %zu bytes of buffers; lower "
            "--mem-limit or --sizes\n",
            coll, p, send_max, recv_max);
        raw("N %s %d: left out: buffers could not be allocated", coll, p);
        point_setup_free(&ps);
        configs_release(cfg, ncfg);
        pr->done += nsizes;
        return;
    }

    for (int si = 0; si < nsizes; si++) {
        const size_t size = sizes[si];
        coll_args_set_size(cd, &ps.args, size);
        const size_t bytes = rules_bytes(cd, id, ps.args.count, p);
        cd->fill(&ps.args, 0);
        long iters, warmup;
        calibrate(&ps, cfg[0].bc.comm, o->batch_ms, &iters, &warmup);
        double t[TUNE_MAX_CFGS][TUNE_MAX_REPS];
        for (int c = 0; c < ncfg; c++) {
            cfg[c].wrong = false;
            /* The node algorithms serve up to their bound; above it auto's
             * choice would be measured under their name. */
            cfg[c].handed_back = bufpool_is_node_alg(id, cfg[c].alg) &&
                                 bytes > bufpool_node_alg_max_bytes(id, cfg[c].alg, p);
            for (int r = 0; r < TUNE_MAX_REPS; r++) {
                t[c][r] = NAN;
            }
        }
        for (int rep = 0; rep < o->reps; rep++) {
            /* Rotate who goes first, so that no configuration always
             * inherits a warm (or cold) cache from the same predecessor. */
            for (int k = 0; k < ncfg; k++) {
                const int c = (k + rep + si) % ncfg;
                if (BUFPOOL_ALG_PREVIOUS != cfg[c].alg && (cfg[c].wrong || cfg[c].handed_back)) {
                    continue;
                }
                raw("R %s %d %zu %s %d", coll, p, size, cfg[c].name, rep);
                crash_if_asked(coll, cfg[c].name, ps.args.rank, p);
                /* The data of the check: the same on every rank of the
                 * communicator (ranks outside the earlier, smaller ones
                 * measured nothing there), different for every batch. */
                const unsigned seed =
                    1U + (((unsigned)p * 64U + (unsigned)id) * 64U + (unsigned)si) * 1024U +
                    (unsigned)rep * (unsigned)TUNE_MAX_CFGS + (unsigned)c;
                point_result r = measure_point(&ps, &cfg[c].bc, iters, warmup, seed);
                if (test_hook("BUFPOOL_TUNE_TEST_WRONG", coll, cfg[c].name)) {
                    r.wrong = 1; /* as a failed data check would report it */
                }
                raw("M %s %d %d %d %zu %zu %s %d %ld %.4f %.4f %.0f %.0f %.0f", coll, p, hosts, ppn,
                    size, bytes, cfg[c].name, rep, iters, r.avg_us, r.p50_us, r.wrong, r.own_calls,
                    r.fallbacks);
                t[c][rep] = r.p50_us; /* as the decider by default */
                if (0 != r.wrong) {
                    char sz[32];
                    tune_format_size(size, sz, sizeof(sz));
                    const bool error = r.wrong >= (double)(LONG_MAX / 4);
                    raw("W %s %d ranks %s %s: %s (left out at this point)", coll, p, sz,
                        cfg[c].name, error ? "an MPI call returned an error" : "wrong result");
                    if (error) {
                        say("bufpool-tune: MPI ERROR: %s at %d ranks, %s, %s: a call returned an "
                            "error; left out at this point\n",
                            coll, p, sz, cfg[c].name);
                    } else {
                        say("bufpool-tune: WRONG RESULT: %s at %d ranks, %s, %s: %.0f elements "
                            "wrong (all ranks); left out at this point\n",
                            coll, p, sz, cfg[c].name, r.wrong);
                    }
                    cfg[c].wrong = true;
                }
                if (BUFPOOL_ALG_PREVIOUS != cfg[c].alg &&
                    ((isfinite(r.fallbacks) && r.fallbacks > 0) ||
                     (isfinite(r.own_calls) && r.own_calls <= 0))) {
                    cfg[c].handed_back = true; /* it measured the previous module */
                }
            }
        }
        progress_line(pr, coll, p, hosts, size, cfg, ncfg, t, o->reps);
    }
    point_setup_free(&ps);
    configs_release(cfg, ncfg);
}

/* Every rank of ctl meets here; ranks with nothing to do sleep between
 * polls, so that they leave the cores to the ranks being measured. */
static void meet(MPI_Comm ctl, bool idle)
{
    MPI_Request req;
    int done = 0;
    MPI_Ibarrier(ctl, &req);
    while (!done) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (!done && idle) {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
    }
}

static void header_lines(const tune_options *o, int np, const placement *pl,
                         const bufpool_tuning_t *tuning, const char *colls_text)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING], when[64];
    int len;
    MPI_Get_library_version(version, &len);
    version[strcspn(version, "\n")] = '\0';
    time_t now = time(NULL);
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime(&now));
    raw("H version %d", TUNE_RAW_VERSION);
    raw("H date %s", when);
    raw("H ompi %s", version);
    raw("H np %d", np);
    for (int h = 0; h < pl->nhosts; h++) {
        int count = 0, first = -1;
        for (int r = 0; r < np; r++) {
            if (pl->host[r] == h) {
                count++;
                first = first < 0 ? r : first;
            }
        }
        raw("H host %s %d", pl->names + (size_t)first * MPI_MAX_PROCESSOR_NAME, count);
    }
    raw("H reps %d", o->reps);
    raw("H batch_ms %g", o->batch_ms);
    raw("H collectives %s", colls_text);
    char sizes[1024] = "";
    size_t used = 0;
    for (int i = 0; i < o->nsizes && used < sizeof(sizes); i++) {
        char sz[32];
        tune_format_size(o->sizes[i], sz, sizeof(sz));
        used += (size_t)snprintf(sizes + used, sizeof(sizes) - used, "%s%s", i ? "," : "", sz);
    }
    raw("H sizes %s", sizes);
    raw("H segment_size %zu", tuning->segment_size);
    raw("H pipeline_depth %d", tuning->pipeline_depth);
    raw("H max_requests %d", tuning->max_requests);
    raw("H min_size %zu", tuning->min_size);
}

/* About 110 lines: the measurement job's sequence (options, placement,
 * header, every communicator size and collective, the end marker) read
 * top to bottom. */
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int np;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);

    tune_options o;
    int rc = tune_measure_options_parse(argc, argv, &o, 0 == world_rank ? stderr : NULL);
    if (0 == rc && np < 2) {
        say("bufpool-tune: the job has %d rank; it needs at least 2 (mpirun -np 2 or more)\n", np);
        rc = 2;
    }
    if (0 == rc && 0 == o.nranks) {
        o.nranks = tune_default_ranks(np, o.ranks, TUNE_MAX_RANKS);
    }
    for (int i = 0; 0 == rc && i < o.nranks; i++) {
        if (o.ranks[i] > np) {
            say("bufpool-tune: --ranks: %d ranks asked, the job has %d\n", o.ranks[i], np);
            rc = 2;
        }
    }
    if (0 == rc) {
        mpit_open(FORM_BLOCKING);
        if (!cvar_exists("coll_bufpool_priority")) {
            say("bufpool-tune: coll/bufpool is not loaded in this job (no coll_bufpool_priority "
                "variable): install the components, or put their directory in "
                "OMPI_MCA_mca_base_component_path\n");
            rc = 3;
        }
    }
    if (0 != rc) {
        MPI_Finalize();
        return 1 == rc ? 0 : rc;
    }

    /* The tuning the job runs with: a row holds for it (and hier's
     * applicability depends on max_requests). */
    double seg = cvar_read_number("coll_bufpool_segment_size");
    double depth = cvar_read_number("coll_bufpool_pipeline_depth");
    double maxreq = cvar_read_number("coll_bufpool_max_requests");
    double minsize = cvar_read_number("coll_bufpool_min_size");
    const bufpool_tuning_t tuning = {.segment_size = seg > 0 ? (size_t)seg : 0,
                                     .pipeline_depth = depth > 0 ? (int)depth : 0,
                                     .max_requests = maxreq > 0 ? (int)maxreq : 0,
                                     .min_size = minsize > 0 ? (size_t)minsize : 0};

    /* The harness's own barriers and reductions stay off bufpool; an error in
     * them is the harness's own, so it stays fatal. */
    MPI_Comm ctl = dup_with(MPI_COMM_WORLD, COLL_PREFERENCE_KEY, "^bufpool", NULL, NULL);
    MPI_Comm_set_errhandler(ctl, MPI_ERRORS_ARE_FATAL);

    placement pl = {NULL, NULL, 0};
    if (0 != placement_scan(ctl, &pl)) {
        say("bufpool-tune: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }

    char colls_text[512] = "";
    size_t used = 0;
    for (int id = 0; id < BUFPOOL_NCOLLS && used < sizeof(colls_text); id++) {
        if (o.colls[id]) {
            used += (size_t)snprintf(colls_text + used, sizeof(colls_text) - used, "%s%s",
                                     used ? "," : "", bufpool_coll_names[id]);
        }
    }
    header_lines(&o, np, &pl, &tuning, colls_text);

    progress pr = {.start = MPI_Wtime(), .o = &o};
    for (int i = 0; i < o.nranks; i++) {
        for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
            size_t sizes[TUNE_MAX_SIZES], left_out;
            if (o.colls[id]) {
                pr.total += sizes_for(&bench_collectives[id], o.ranks[i], &o, sizes, &left_out);
            }
        }
    }
    say("bufpool-tune: %d point(s) (collective, communicator size, message size), each the "
        "previous module, its A/A copy and every algorithm, %d repetitions of ~%g ms batches\n",
        pr.total, o.reps, o.batch_ms);

    for (int i = 0; i < o.nranks; i++) {
        const int p = o.ranks[i];
        int hosts, ppn;
        placement_of(&pl, p, &hosts, &ppn);
        MPI_Comm sub;
        MPI_Comm_split(ctl, world_rank < p ? 0 : MPI_UNDEFINED, world_rank, &sub);
        if (MPI_COMM_NULL != sub) {
            MPI_Comm sync = dup_with(sub, COLL_PREFERENCE_KEY, "^bufpool", NULL, NULL);
            MPI_Comm_set_errhandler(sync, MPI_ERRORS_ARE_FATAL);
            raw("C %d %d %d", p, hosts, ppn);
            for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
                if (o.colls[id]) {
                    run_collective((bufpool_coll_id_t)id, sub, sync, p, hosts, ppn, &o, &tuning,
                                   &pr);
                }
            }
            MPI_Comm_free(&sync);
            MPI_Comm_free(&sub);
        }
        meet(ctl, world_rank >= p);
    }
    raw("D %d points in %.0f s", pr.total, MPI_Wtime() - pr.start);
    say("bufpool-tune: measured %d point(s) in %.0f s\n", pr.total, MPI_Wtime() - pr.start);

    free(pl.host);
    free(pl.names);
    MPI_Comm_free(&ctl);
    mpit_close();
    MPI_Finalize();
    return 0;
}
