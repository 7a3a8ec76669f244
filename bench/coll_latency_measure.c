/*
 * One point of coll_latency: warm-up, then timed calls of one collective in
 * one configuration (each rank timing its own calls, a barrier after each,
 * as OSU does), the counters around the timed loop, a data check after it,
 * and the statistics over ranks; and the median over repetitions.
 */
#include "bufpool_config.h"

#include "coll_latency.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void *alloc_touched(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (NULL != p) {
        memset(p, 0, bytes); /* fault the pages in now, not in a timed loop */
    }
    return p;
}

int point_setup_alloc(point_setup *ps, size_t send_bytes, size_t recv_bytes, size_t floor_max,
                      long max_iters)
{
    const int p = ps->args.nprocs;
    ps->args.sendbuf = alloc_touched(send_bytes);
    ps->args.recvbuf = alloc_touched(recv_bytes);
    ps->args.rcounts = calloc((size_t)p, sizeof(int));
    ps->args.displs = calloc((size_t)p, sizeof(int));
    ps->samples = calloc((size_t)max_iters, sizeof(double));
    ps->floor_src = alloc_touched(floor_max);
    ps->floor_dst = alloc_touched(floor_max);
    int ok = NULL != ps->args.sendbuf && NULL != ps->args.recvbuf && NULL != ps->args.rcounts &&
             NULL != ps->args.displs && NULL != ps->floor_src && NULL != ps->floor_dst &&
             NULL != ps->samples;
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, ps->sync);
    return all_ok ? 0 : -1;
}

void point_setup_free(point_setup *ps)
{
    free(ps->args.sendbuf);
    free(ps->args.recvbuf);
    free(ps->args.rcounts);
    free(ps->args.displs);
    free(ps->floor_src);
    free(ps->floor_dst);
    free(ps->samples);
}

static void copy_floor_once(char *dst, const char *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    /* the copy is the measurement: keep the compiler from dropping it */
    __asm__ __volatile__("" : : "r"(dst) : "memory");
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* samples, when given, receives each call's duration (for the median). */
static int run_calls(const point_setup *ps, const bench_config *cfg, long calls, double *elapsed,
                     double *samples)
{
    double total = 0.0;
    for (long i = 0; i < calls; i++) {
        double t0 = MPI_Wtime();
        if (cfg->is_floor) {
            copy_floor_once(ps->floor_dst, ps->floor_src, ps->floor_bytes);
        } else if (MPI_SUCCESS != ps->cd->call(&ps->args, cfg->comm)) {
            return -1;
        }
        double t1 = MPI_Wtime();
        MPI_Barrier(ps->sync);
        total += t1 - t0;
        if (NULL != samples) {
            samples[i] = t1 - t0;
        }
    }
    *elapsed = total;
    return 0;
}

static double delta(double after, double before)
{
    return isnan(after) || isnan(before) ? NAN : after - before;
}

point_result measure_point(const point_setup *ps, const bench_config *cfg, long iters, long warmup,
                           unsigned check_seed)
{
    point_result r = {.iterations = iters};
    double elapsed = 0.0;
    int failed = 0;
    MPI_Barrier(ps->sync);
    failed |= run_calls(ps, cfg, warmup, &elapsed, NULL);
    MPI_Barrier(ps->sync);
    counters before = counters_sample(ps->coll_index, cfg->uses_bufpool);
    failed |= run_calls(ps, cfg, iters, &elapsed, ps->samples);
    counters after = counters_sample(ps->coll_index, cfg->uses_bufpool);

    long wrong = 0;
    if (!cfg->is_floor && !failed) {
        ps->cd->fill(&ps->args, check_seed);
        MPI_Barrier(ps->sync);
        if (MPI_SUCCESS != ps->cd->call(&ps->args, cfg->comm)) {
            failed = 1;
        } else {
            wrong = ps->cd->verify(&ps->args, check_seed);
        }
    }
    if (failed) {
        wrong = LONG_MAX / 4; /* an MPI error is a failed check, never a number */
    }

    double latency = elapsed * 1e6 / (double)iters;
    /* OSU's mean is what the tables show; the median resists the odd call
     * that a busy machine descheduled. */
    qsort(ps->samples, (size_t)iters, sizeof(double), compare_doubles);
    double p50 = 1e6 * (0 == iters % 2 ? (ps->samples[iters / 2 - 1] + ps->samples[iters / 2]) / 2
                                       : ps->samples[iters / 2]);
    double p50_sum;
    MPI_Reduce(&p50, &p50_sum, 1, MPI_DOUBLE, MPI_SUM, 0, ps->sync);
    r.p50_us = p50_sum / ps->args.nprocs;
    double lat_min, lat_max, lat_sum;
    MPI_Reduce(&latency, &lat_min, 1, MPI_DOUBLE, MPI_MIN, 0, ps->sync);
    MPI_Reduce(&latency, &lat_max, 1, MPI_DOUBLE, MPI_MAX, 0, ps->sync);
    MPI_Reduce(&latency, &lat_sum, 1, MPI_DOUBLE, MPI_SUM, 0, ps->sync);
    r.avg_us = lat_sum / ps->args.nprocs;
    r.min_us = lat_min;
    r.max_us = lat_max;

    /* A counter absent on every rank (NaN) stays NaN through MPI_SUM and MPI_MAX. */
    enum { SUMS = 6, MAXES = 2 };
    double sums[SUMS] = {(double)wrong,
                         after.minflt - before.minflt,
                         delta(after.pool_sys_allocs, before.pool_sys_allocs),
                         delta(after.pool_regs, before.pool_regs),
                         delta(after.own_calls, before.own_calls),
                         delta(after.fallbacks, before.fallbacks)};
    double maxes[MAXES] = {after.maxrss_kib - before.maxrss_kib, after.scratch_peak};
    double sums_out[SUMS], maxes_out[MAXES];
    /* every rank learns the check result: it sets the exit status */
    MPI_Allreduce(sums, sums_out, SUMS, MPI_DOUBLE, MPI_SUM, ps->sync);
    MPI_Allreduce(maxes, maxes_out, MAXES, MPI_DOUBLE, MPI_MAX, ps->sync);
    r.wrong = sums_out[0];
    r.minflt = sums_out[1];
    r.sys_allocs = sums_out[2];
    r.regs = sums_out[3];
    r.own_calls = sums_out[4];
    r.fallbacks = sums_out[5];
    r.rss_growth = maxes_out[0];
    r.scratch_peak = maxes_out[1];
    if (cfg->is_floor) {
        r.minflt = r.rss_growth = NAN;
    }
    if (!cfg->uses_bufpool) {
        r.sys_allocs = r.regs = r.scratch_peak = r.own_calls = r.fallbacks = NAN;
    }
    return r;
}

const point_result *median_rep(const point_result *reps, int n)
{
    double avgs[MAX_REPEAT];
    for (int i = 0; i < n; i++) {
        avgs[i] = reps[i].avg_us;
    }
    qsort(avgs, (size_t)n, sizeof(double), compare_doubles);
    double med = avgs[(n - 1) / 2];
    for (int i = 0; i < n; i++) {
        if (reps[i].avg_us == med) {
            return &reps[i];
        }
    }
    return &reps[0];
}
