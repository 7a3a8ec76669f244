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

/* The computation of the overlap measure: busy for `seconds`, with
 * test_calls MPI_Test of req spread evenly over it (0: none, as OSU's
 * default), so that only what the collective's first call posted, and
 * what the transport moves by itself, can overlap it. */
static void compute_for(double seconds, int test_calls, MPI_Request *req)
{
    const double t0 = MPI_Wtime();
    int tests = 0;
    double now;
    while ((now = MPI_Wtime()) - t0 < seconds) {
        if (tests < test_calls && now - t0 >= seconds * (tests + 1) / (test_calls + 1)) {
            int flag;
            if (NULL != req && MPI_REQUEST_NULL != *req) {
                (void)MPI_Test(req, &flag, MPI_STATUS_IGNORE);
            }
            tests++;
        }
    }
}

/* One call of the collective in the point's form (overlap: compute_s of
 * computation between the start and the wait; 0: none). */
static int call_once(const point_setup *ps, const bench_config *cfg, MPI_Request *persistent,
                     double compute_s)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int rc;
    switch (ps->form) {
        case FORM_NONBLOCKING:
        case FORM_OVERLAP:
            rc = ps->cd->start(&ps->args, cfg->comm, 0, &req);
            if (MPI_SUCCESS == rc && compute_s > 0) {
                compute_for(compute_s, ps->test_calls, &req);
            }
            return MPI_SUCCESS == rc ? MPI_Wait(&req, MPI_STATUS_IGNORE) : rc;
        case FORM_PERSISTENT:
            rc = MPI_Start(persistent);
            return MPI_SUCCESS == rc ? MPI_Wait(persistent, MPI_STATUS_IGNORE) : rc;
        default:
            return ps->cd->call(&ps->args, cfg->comm);
    }
}

/* samples, when given, receives each call's duration (for the median). */
static int run_calls(const point_setup *ps, const bench_config *cfg, long calls, double *elapsed,
                     double *samples, MPI_Request *persistent, double compute_s)
{
    double total = 0.0;
    for (long i = 0; i < calls; i++) {
        double t0 = MPI_Wtime();
        if (cfg->is_floor) {
            copy_floor_once(ps->floor_dst, ps->floor_src, ps->floor_bytes);
        } else if (MPI_SUCCESS != call_once(ps, cfg, persistent, compute_s)) {
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

/* Long on purpose: one point's measurement protocol (warm-up, the
 * configurations interleaved round by round, the check, the statistics) in
 * the order it runs; the steps share its buffers and timers. */
point_result measure_point(const point_setup *ps, const bench_config *cfg, long iters, long warmup,
                           unsigned check_seed)
{
    point_result r = {.iterations = iters, .comm_us = NAN, .compute_us = NAN, .overlap_pct = NAN};
    double elapsed = 0.0;
    int failed = 0;
    MPI_Request persistent = MPI_REQUEST_NULL;
    counters made_before = {0}, made_after = {0};
    /* Another configuration's calls must not reach bufpool (han builds
     * sub-communicators of its own, where bufpool could sit below the
     * component han prefers): count what it served meanwhile. */
    const double inside_before = cfg->hide_bufpool ? bufpool_calls_total() : NAN;
    if (FORM_PERSISTENT == ps->form && !cfg->is_floor) {
        /* Made (and decided) once per point: who serves it is known here. */
        made_before = counters_sample(ps->coll_index, cfg->uses_bufpool);
        failed |= MPI_SUCCESS != ps->cd->start(&ps->args, cfg->comm, 1, &persistent);
        made_after = counters_sample(ps->coll_index, cfg->uses_bufpool);
    }
    MPI_Barrier(ps->sync);
    if (!failed) {
        failed |= run_calls(ps, cfg, warmup, &elapsed, NULL, &persistent, 0);
    }
    double comm_s = 0.0, compute_s = 0.0;
    if (FORM_OVERLAP == ps->form && !failed) {
        /* OSU: the pure communication time, then a computation of that
         * length timed alone, then both together. */
        MPI_Barrier(ps->sync);
        failed |= run_calls(ps, cfg, iters, &elapsed, NULL, NULL, 0);
        comm_s = elapsed / (double)iters;
        const long n = iters < 10 ? iters : 10;
        double t0 = MPI_Wtime();
        for (long i = 0; i < n; i++) {
            compute_for(comm_s, 0, NULL);
        }
        compute_s = (MPI_Wtime() - t0) / (double)n;
    }
    MPI_Barrier(ps->sync);
    counters before = counters_sample(ps->coll_index, cfg->uses_bufpool);
    /* One call more, untimed, for every configuration: reading bufpool's
     * counters (MPI_T) leaves the calls' data cold, and the first timed
     * call paid for it (3-4 us a point at 2 ranks, +15 % on the mean of
     * 100 calls of 16 bytes; the median did not move).  Counted in the
     * deltas with the timed calls, a call of the same kind. */
    if (!failed) {
        failed |= run_calls(ps, cfg, 1, &elapsed, NULL, &persistent, 0);
    }
    if (!failed) {
        failed |= run_calls(ps, cfg, iters, &elapsed, ps->samples, &persistent, comm_s);
    }
    counters after = counters_sample(ps->coll_index, cfg->uses_bufpool);
    if (FORM_PERSISTENT == ps->form && !cfg->is_floor) {
        after.own_calls = made_after.own_calls;
        after.fallbacks = made_after.fallbacks;
        before.own_calls = made_before.own_calls;
        before.fallbacks = made_before.fallbacks;
    }

    long wrong = 0;
    if (!cfg->is_floor && !failed) {
        ps->cd->fill(&ps->args, check_seed);
        MPI_Barrier(ps->sync);
        if (MPI_SUCCESS != call_once(ps, cfg, &persistent, 0)) {
            failed = 1;
        } else {
            wrong = ps->cd->verify(&ps->args, check_seed);
        }
    }
    if (MPI_REQUEST_NULL != persistent) {
        failed |= MPI_SUCCESS != MPI_Request_free(&persistent);
    }
    if (failed) {
        wrong = LONG_MAX / 4; /* an MPI error is a failed check, never a number */
    }
    const double inside = delta(cfg->hide_bufpool ? bufpool_calls_total() : NAN, inside_before);

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
    if (FORM_OVERLAP == ps->form && !cfg->is_floor) {
        /* Each rank's own overlap, as OSU computes it, averaged. */
        const double overall = elapsed / (double)iters;
        double pct = comm_s > 0 ? 100.0 * (1.0 - (overall - compute_s) / comm_s) : 0.0;
        pct = pct < 0 ? 0 : (pct > 100 ? 100 : pct);
        double mine[3] = {comm_s * 1e6, compute_s * 1e6, pct}, all[3];
        MPI_Allreduce(mine, all, 3, MPI_DOUBLE, MPI_SUM, ps->sync);
        r.comm_us = all[0] / ps->args.nprocs;
        r.compute_us = all[1] / ps->args.nprocs;
        r.overlap_pct = all[2] / ps->args.nprocs;
    }

    /* A counter absent on every rank (NaN) stays NaN through MPI_SUM and MPI_MAX. */
    enum { SUMS = 7, MAXES = 2 };
    double sums[SUMS] = {(double)wrong,
                         after.minflt - before.minflt,
                         delta(after.pool_sys_allocs, before.pool_sys_allocs),
                         delta(after.pool_regs, before.pool_regs),
                         delta(after.own_calls, before.own_calls),
                         delta(after.fallbacks, before.fallbacks),
                         inside};
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
    r.bufpool_inside = sums_out[6];
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
