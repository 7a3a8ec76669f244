/*
 * coll_latency: OSU-style latency benchmark for the collectives coll/bufpool
 * implements, able to measure several coll selections side by side in one job.
 *
 * Conventions kept from the OSU micro-benchmarks so numbers compare directly:
 * message sizes by powers of two, warm-up then timed iterations with a barrier
 * after each call, each rank timing its own calls, and average/min/max over
 * ranks of the per-rank mean; the table columns start exactly like
 * "osu_<coll> -f".  Sizes follow OSU's meaning (per-rank block for allgather,
 * gather, scatter; per-pair block for alltoall; whole vector otherwise).
 *
 * Side by side: each configuration is a duplicate of MPI_COMM_WORLD created
 * with Open MPI's per-communicator "ompi_comm_coll_preference" info key, so
 * one job can alternate bufpool, Open MPI's default selection and Open MPI's
 * own components (tuned, han, acoll, xhc, adapt, basic) size by size (and
 * repetition by repetition), and machine drift hits them alike.  A
 * pseudo-configuration "floor" times plain memcpy of the bytes a
 * bandwidth-optimal algorithm must move, on every rank at once.
 *
 * For a runner that must survive a peer's crash or hang: --progress names
 * the point in progress, --point-timeout ends a hung job, --skip leaves
 * points out when the job runs again (bench/run-side-by-side.sh).
 *
 * This file is the driver; coll_latency.h lists the other pieces.
 */
#include "bufpool_config.h"

#include "coll_latency.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CONFIGS 16
#define MAX_SIZES   64

/* The point in progress, for --progress and the --point-timeout message. */
static char point_text[160];
static size_t point_text_len;
static int point_timeout_s;

static void point_timed_out(int sig)
{
    (void)sig;
    static const char head[] = "\n# coll_latency: point timed out: ";
    ssize_t ignored = write(STDOUT_FILENO, head, sizeof(head) - 1);
    ignored = write(STDOUT_FILENO, point_text, point_text_len);
    (void)ignored;
    _exit(124);
}

/* Before each point: rank 0 rewrites the progress file, and every rank
 * arms the point's time limit. */
static void point_begin(const bench_options *opt, const char *coll, const bench_config *cfg,
                        size_t size, int rep)
{
    int len =
        snprintf(point_text, sizeof(point_text), "%s %s %zu %d\n", coll, cfg->name, size, rep);
    point_text_len = len > 0 && (size_t)len < sizeof(point_text) ? (size_t)len : 0;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (0 == rank && NULL != opt->progress_path) {
        int fd = open(opt->progress_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            ssize_t ignored = write(fd, point_text, point_text_len);
            (void)ignored;
            close(fd);
        }
    }
    if (point_timeout_s > 0) {
        alarm((unsigned)point_timeout_s);
    }
}

static void point_end(void)
{
    if (point_timeout_s > 0) {
        alarm(0);
    }
}

/* --inject (testing the runner): rank 1 crashes or hangs at this point;
 * "wrong" is applied to the point's result. */
static void inject_fault(const char *kind, int rank)
{
    if (NULL == kind || 1 != rank) {
        return;
    }
    if (0 == strcmp(kind, "crash")) {
        fprintf(stderr, "coll_latency: --inject crash: rank 1 raises SIGSEGV\n");
        fflush(stderr);
        raise(SIGSEGV);
    } else if (0 == strcmp(kind, "hang")) {
        for (;;) {
            pause();
        }
    }
}

/* The sizes of one collective this job measures: from -m's MIN, each
 * --size-factor times the one before, those that hold one element per rank,
 * up to the largest whose buffers fit -M on every rank (*max_size).  Returns
 * how many (at most MAX_SIZES). */
static int collective_sizes(const bench_options *opt, const coll_desc *cd, int p, int has_floor,
                            size_t sizes[MAX_SIZES], size_t *max_size_out)
{
    size_t max_size = opt->max_size;
    for (;;) {
        size_t need = cd->send_bytes(max_size, p, 0) + cd->recv_bytes(max_size, p, 0) +
                      (has_floor ? 2 * (size_t)floor_bytes(cd, max_size, p) : 0);
        if (need <= opt->mem_limit || max_size <= opt->min_size) {
            break;
        }
        max_size /= 2;
    }
    if (max_size < opt->max_size) {
        root_printf("# %s: sizes above %zu skipped: their buffers exceed -M %zu bytes\n", cd->name,
                    max_size, opt->mem_limit);
    }
    int nsizes = 0;
    for (size_t s = opt->min_size; s <= max_size && nsizes < MAX_SIZES; s *= opt->size_factor) {
        if (cd->count(s, p) > 0) {
            sizes[nsizes++] = s;
        }
    }
    *max_size_out = max_size;
    return nsizes;
}

/* Up to which size each configuration measures this collective (runs[c], 0:
 * not at all); the others are named with the reason. */
static void collective_configs(const bench_options *opt, const coll_desc *cd,
                               const bench_config *configs, int nconfigs, size_t *runs)
{
    for (int c = 0; c < nconfigs; c++) {
        const char *why = NULL;
        runs[c] = config_max_size(&configs[c], cd->name, opt->form, &why);
        if (runs[c] < SIZE_MAX) {
            char name[64];
            root_printf("# configuration %s skipped for %s: %s\n", configs[c].name,
                        form_coll_name(opt->form, cd->name, name, sizeof(name)), why);
        }
    }
}

/* --list-points: the points a run with these options would measure, one
 * line each ("# point COLLECTIVE CONFIG SIZE ITERATIONS WARMUP REPEAT"), for
 * a runner's progress display and estimate of the time left. */
static void list_points(const bench_options *opt, int coll_index, const bench_config *configs,
                        int nconfigs, int p)
{
    const coll_desc *cd = &bench_collectives[coll_index];
    int has_floor = 0;
    for (int c = 0; c < nconfigs; c++) {
        has_floor |= configs[c].is_floor;
    }
    size_t sizes[MAX_SIZES], max_size;
    int nsizes = collective_sizes(opt, cd, p, has_floor, sizes, &max_size);
    size_t runs[MAX_CONFIGS];
    collective_configs(opt, cd, configs, nconfigs, runs);
    char name[64];
    form_coll_name(opt->form, cd->name, name, sizeof(name));
    for (int si = 0; si < nsizes; si++) {
        long iters, warmup;
        options_iterations_for(opt, sizes[si], &iters, &warmup);
        for (int c = 0; c < nconfigs; c++) {
            if (sizes[si] <= runs[c] && !options_skips(opt, configs[c].name, name, sizes[si])) {
                root_printf("# point %s %s %zu %ld %ld %d\n", name, configs[c].name, sizes[si],
                            iters, warmup, opt->repeat);
            }
        }
    }
}

/* Long on purpose (about 120 lines): the loop over sizes with its skips,
 * progress and CSV in the order a reader of the output meets them. */
/* Every size of one collective in every configuration; sync carries the
 * harness's own barriers and reductions. */
static int run_collective(const bench_options *opt, MPI_Op op, int coll_index,
                          bench_config *configs, int nconfigs, MPI_Comm sync, FILE *csv,
                          int *any_failure)
{
    const coll_desc *cd = &bench_collectives[coll_index];
    int p, rank;
    MPI_Comm_size(sync, &p);
    MPI_Comm_rank(sync, &rank);
    int has_floor = 0;
    for (int c = 0; c < nconfigs; c++) {
        has_floor |= configs[c].is_floor;
    }

    size_t sizes[MAX_SIZES], max_size;
    int nsizes = collective_sizes(opt, cd, p, has_floor, sizes, &max_size);
    if (0 == nsizes) {
        root_printf("# %s: no size in range holds one element per rank; nothing to run\n",
                    cd->name);
        return 0;
    }

    point_setup ps = {.cd = cd,
                      .form = opt->form,
                      .test_calls = opt->test_calls,
                      .coll_index = coll_index,
                      .sync = sync};
    ps.args.rank = rank;
    ps.args.nprocs = p;
    ps.args.op = op;
    size_t send_max = cd->send_bytes(max_size, p, rank);
    size_t recv_max = cd->recv_bytes(max_size, p, rank);
    size_t floor_max = has_floor ? (size_t)floor_bytes(cd, max_size, p) + 1 : 1;
    long max_iters =
        opt->iterations > opt->iterations_large ? opt->iterations : opt->iterations_large;
    point_result *results = NULL;
    if (0 == point_setup_alloc(&ps, send_max, recv_max, floor_max, max_iters)) {
        results =
            calloc((size_t)nsizes * (size_t)nconfigs * (size_t)opt->repeat, sizeof(point_result));
    }
    if (NULL == results) {
        root_printf("# %s: could not allocate buffers for sizes up to %zu (%zu + %zu bytes per "
                    "process); lower -m or -M\n",
                    cd->name, max_size, send_max, recv_max);
        *any_failure = 1;
        point_setup_free(&ps);
        return -1;
    }

    /* Which configurations measure this collective at all. */
    size_t runs[MAX_CONFIGS];
    collective_configs(opt, cd, configs, nconfigs, runs);
    char *measured = calloc((size_t)nsizes * (size_t)nconfigs, 1);
    if (NULL == measured) {
        free(results);
        point_setup_free(&ps);
        *any_failure = 1;
        return -1;
    }

    unsigned seed = 1;
    for (int si = 0; si < nsizes; si++) {
        size_t size = sizes[si];
        coll_args_set_size(cd, &ps.args, size);
        ps.floor_bytes = (size_t)floor_bytes(cd, size, p);
        /* Timed calls run on valid data (no NaN or denormal slow paths). */
        cd->fill(&ps.args, 0);
        long iters, warmup;
        options_iterations_for(opt, size, &iters, &warmup);
        for (int rep = 0; rep < opt->repeat; rep++) {
            /* Rotate who goes first so no configuration always inherits a
             * warm (or cold) cache from the same predecessor. */
            for (int k = 0; k < nconfigs; k++) {
                int c = (k + si + rep) % nconfigs;
                char name[64];
                form_coll_name(opt->form, cd->name, name, sizeof(name));
                if (size > runs[c] || options_skips(opt, configs[c].name, name, size)) {
                    seed++;
                    continue;
                }
                measured[(size_t)si * nconfigs + c] = 1;
                const char *inject = options_injected(opt, configs[c].name, name, size);
                point_begin(opt, name, &configs[c], size, rep);
                config_enter(&configs[c]);
                inject_fault(inject, rank);
                point_result r = measure_point(&ps, &configs[c], iters, warmup, seed++);
                config_leave(&configs[c]);
                point_end();
                if (NULL != inject && 0 == strcmp(inject, "wrong")) {
                    r.wrong += 1; /* as if one element had been wrong */
                }
                results[((size_t)si * nconfigs + c) * opt->repeat + rep] = r;
                if (r.wrong != 0 && !configs[c].is_floor) {
                    *any_failure = 1;
                }
                if (NULL != csv) {
                    csv_row(csv, opt->tag, cd, opt->form, &configs[c], p, size, rep, &r);
                }
            }
        }
    }

    for (int c = 0; c < nconfigs; c++) {
        int any = 0;
        for (int si = 0; si < nsizes; si++) {
            any |= measured[(size_t)si * nconfigs + c];
        }
        if (!any) {
            continue;
        }
        print_table_header(cd, opt->form, &configs[c], p);
        for (int si = 0; si < nsizes; si++) {
            if (!measured[(size_t)si * nconfigs + c]) {
                continue;
            }
            const point_result *reps = &results[((size_t)si * nconfigs + c) * opt->repeat];
            print_table_row(sizes[si], median_rep(reps, opt->repeat), opt->form, &configs[c]);
        }
    }
    fflush(stdout);
    free(measured);
    free(results);
    point_setup_free(&ps);
    return 0;
}

static int select_collectives(const char *list, int *selected)
{
    if (0 == strcmp(list, "all")) {
        for (int k = 0; k < NUM_COLLECTIVES; k++) {
            selected[k] = 1;
        }
        return 0;
    }
    char *copy = strdup(list);
    int rc = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); NULL != tok;
         tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int k = 0; k < NUM_COLLECTIVES; k++) {
            if (0 == strcmp(tok, bench_collectives[k].name)) {
                selected[k] = found = 1;
            }
        }
        if (!found) {
            root_printf("coll_latency: -c: unknown collective \"%s\"; known:", tok);
            for (int k = 0; k < NUM_COLLECTIVES; k++) {
                root_printf(" %s", bench_collectives[k].name);
            }
            root_printf(" (or all)\n");
            rc = -1;
        }
    }
    free(copy);
    return rc;
}

/* --op user: MPI_SUM of floats written as a user-defined operation, which
 * Open MPI's components (and bufpool's guard of libnbc's nonblocking
 * reduce) serve apart from the built-in ones. */
static void user_float_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const float *a = in;
    float *b = inout;
    for (int i = 0; i < *len; i++) {
        b[i] += a[i];
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int world_rank, world_size;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);

    bench_options opt;
    int rc = options_parse(argc, argv, &opt);
    int selected[NUM_COLLECTIVES] = {0};
    if (0 == rc && 0 != select_collectives(opt.collectives, selected)) {
        rc = 2;
    }
    if (0 == rc && world_size < 2) {
        root_printf("coll_latency: needs at least 2 processes (mpirun -np 2 ...)\n");
        rc = 2;
    }
    if (0 != rc) {
        MPI_Finalize();
        return 1 == rc ? 0 : 2;
    }

    point_timeout_s = opt.point_timeout;
    if (point_timeout_s > 0) {
        signal(SIGALRM, point_timed_out);
    }
    mpit_open(opt.form);
    /* The harness's own barriers and reductions stay off bufpool, so its
     * counters only count the measured calls. */
    MPI_Comm sync_comm;
    MPI_Info sync_info;
    MPI_Info_create(&sync_info);
    MPI_Info_set(sync_info, COLL_PREFERENCE_KEY, "^bufpool");
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, sync_info, &sync_comm);
    MPI_Info_free(&sync_info);
    bench_config configs[MAX_CONFIGS];
    int nconfigs =
        configs_create(opt.configs, opt.world_name, opt.collectives, configs, MAX_CONFIGS);
    if (nconfigs <= 0) {
        if (0 == nconfigs) {
            root_printf("coll_latency: no configuration left to run\n");
        }
        MPI_Finalize();
        return 2;
    }

    if (opt.list_configs || opt.list_points) {
        for (int c = 0; c < nconfigs; c++) {
            root_printf("# configuration %s available\n", configs[c].name);
        }
        for (int k = 0; opt.list_points && k < NUM_COLLECTIVES; k++) {
            if (selected[k]) {
                list_points(&opt, k, configs, nconfigs, world_size);
            }
        }
        configs_free(configs, nconfigs);
        MPI_Comm_free(&sync_comm);
        mpit_close();
        MPI_Finalize();
        return 0;
    }

    FILE *csv = NULL;
    int csv_ok = 1;
    if (0 == world_rank && NULL != opt.csv_path) {
        csv = fopen(opt.csv_path, "a");
        if (NULL == csv) {
            fprintf(stderr, "coll_latency: -o %s: %s\n", opt.csv_path, strerror(errno));
            csv_ok = 0;
        } else if (0 == fseek(csv, 0, SEEK_END) && 0 == ftell(csv)) {
            csv_header(csv);
        }
    }
    MPI_Bcast(&csv_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!csv_ok) {
        MPI_Finalize();
        return 2;
    }

    print_preamble(&opt, world_size);
    MPI_Op op = MPI_SUM;
    if (opt.user_op) {
        MPI_Op_create(user_float_sum, 1, &op);
    }
    int any_failure = 0;
    for (int k = 0; k < NUM_COLLECTIVES; k++) {
        if (selected[k]) {
            run_collective(&opt, op, k, configs, nconfigs, sync_comm, csv, &any_failure);
        }
    }
    if (any_failure) {
        root_printf("# DATA CHECK FAILED for at least one point (see the Check column)\n");
    }
    /* the runner tells a finished job from a crashed one by this line */
    root_printf("# coll_latency: done\n");

    if (NULL != csv) {
        fclose(csv);
    }
    if (MPI_SUM != op) {
        MPI_Op_free(&op);
    }
    configs_free(configs, nconfigs);
    MPI_Comm_free(&sync_comm);
    mpit_close();
    MPI_Finalize();
    return any_failure ? 1 : 0;
}
