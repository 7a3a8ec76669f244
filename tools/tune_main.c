/*
 * bufpool-tune-decide: bufpool-tune's side without MPI (docs/tuning.md).
 *
 *   bufpool-tune-decide check [--collectives L] [--sizes L] [--ranks L]
 *                             [--skip L] [--reps N] [--batch-ms MS]
 *                             [--margin PCT] [--stat mean|p50] [--mem-limit B]
 *       checks bufpool-tune's options before a job starts: exit 0, or 2
 *       with a message.
 *   bufpool-tune-decide decide --raw FILE --output FILE [--margin PCT]
 *                             [--stat mean|p50] [--open-ended] [--partial]
 *                             [--command TEXT] [--mpirun TEXT]
 *       reads what bufpool-tune-measure printed, decides every point
 *       (tune_decide.h), writes the rules file (to a temporary file in the
 *       same directory, checked by parsing it back, then renamed over
 *       FILE) and prints what it chose and why, and the expected gains.
 *       Exit 0; 2 bad usage; 3 the measurements are incomplete (the job
 *       died; --partial decides from what there is); 4 the file could not
 *       be written.
 */
#include "bufpool_config.h"

#include "coll_bufpool_rules.h"
#include "regpar_size.h"
#include "tune_args.h"
#include "tune_decide.h"

#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROG "bufpool-tune"

typedef struct {
    const char *colls, *sizes, *ranks, *skip, *reps, *batch_ms, *margin, *stat, *mem_limit;
    const char *raw, *output, *command, *mpirun;
    bool open_ended, partial;
} main_options;

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

static int check_options(const main_options *o, double *margin)
{
    char err[512];
    bool colls[BUFPOOL_NCOLLS], skip[BUFPOOL_NCOLLS][BUFPOOL_MAX_ALGORITHMS] = {{false}};
    size_t sizes[TUNE_MAX_SIZES];
    int ranks[TUNE_MAX_RANKS];
    long n;
    double d;
    uint64_t bytes;
    if (NULL != o->colls && 0 != tune_parse_colls(o->colls, colls, err, sizeof(err))) {
        return fail(2, "--collectives: %s", err);
    }
    if (NULL != o->sizes &&
        tune_parse_sizes(o->sizes, (size_t)1 << 30, sizes, TUNE_MAX_SIZES, err, sizeof(err)) < 0) {
        return fail(2, "--sizes: %s", err);
    }
    if (NULL != o->ranks &&
        tune_parse_ranks(o->ranks, ranks, TUNE_MAX_RANKS, err, sizeof(err)) < 0) {
        return fail(2, "--ranks: %s", err);
    }
    if (NULL != o->skip && 0 != tune_parse_skips(o->skip, skip, err, sizeof(err))) {
        return fail(2, "--skip: %s", err);
    }
    if (NULL != o->reps && 0 != regpar_parse_int(o->reps, 1, TUNE_MAX_REPS, &n, err, sizeof(err))) {
        return fail(2, "--reps %s: %s", o->reps, err);
    }
    if (NULL != o->batch_ms &&
        0 != regpar_parse_decimal(o->batch_ms, 0.01, 10000, &d, err, sizeof(err))) {
        return fail(2, "--batch-ms %s: %s (0.01 to 10000)", o->batch_ms, err);
    }
    *margin = 0.03;
    if (NULL != o->margin) {
        if (0 != regpar_parse_decimal(o->margin, 0, 90, &d, err, sizeof(err))) {
            return fail(2, "--margin %s: %s (a percentage, 0 to 90)", o->margin, err);
        }
        *margin = d / 100;
    }
    if (NULL != o->stat && 0 != strcmp(o->stat, "mean") && 0 != strcmp(o->stat, "p50")) {
        return fail(2, "--stat %s: use mean or p50", o->stat);
    }
    if (NULL != o->mem_limit && 0 != regpar_parse_size(o->mem_limit, &bytes, err, sizeof(err))) {
        return fail(2, "--mem-limit %s: %s", o->mem_limit, err);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The report                                                                */

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    double aa_med, aa_p90, noise_med, noise_p90;
    size_t taken, with_aa;
    double gain_med, gain_best;
    size_t best_point;
} summary;

static summary summarize(const tune_point_t *pts, size_t n)
{
    summary s = {NAN, NAN, NAN, NAN, 0, 0, NAN, NAN, 0};
    double *aa = calloc(n + 1, sizeof(double)), *noise = calloc(n + 1, sizeof(double)),
           *gain = calloc(n + 1, sizeof(double));
    size_t nn = 0;
    for (size_t i = 0; NULL != aa && NULL != noise && NULL != gain && i < n; i++) {
        const tune_verdict_t *v = &pts[i].v;
        if (isfinite(v->aa)) {
            aa[s.with_aa++] = fabs(v->aa - 1);
        }
        if (isfinite(v->noise)) {
            noise[nn++] = v->noise;
        }
        if (BUFPOOL_ALG_PREVIOUS != v->alg) {
            if (0 == s.taken || v->ratio < s.gain_best) {
                s.gain_best = v->ratio;
                s.best_point = i;
            }
            gain[s.taken++] = v->ratio;
        }
    }
    if (NULL != aa && NULL != noise && NULL != gain) {
        qsort(aa, s.with_aa, sizeof(double), compare_doubles);
        qsort(noise, nn, sizeof(double), compare_doubles);
        qsort(gain, s.taken, sizeof(double), compare_doubles);
        s.aa_med = tune_quantile(aa, (int)s.with_aa, 0.5);
        s.aa_p90 = tune_quantile(aa, (int)s.with_aa, 0.9);
        s.noise_med = tune_quantile(noise, (int)nn, 0.5);
        s.noise_p90 = tune_quantile(noise, (int)nn, 0.9);
        s.gain_med = tune_quantile(gain, (int)s.taken, 0.5);
    }
    free(aa);
    free(noise);
    free(gain);
    return s;
}

static const char *alg_name(bufpool_coll_id_t id, int alg)
{
    return BUFPOOL_ALG_PREVIOUS == alg ? "previous" : bufpool_algorithm_names[id][alg];
}

/* Per collective and communicator size: each row's bytes, choice, ratios
 * and noise, and why. */
static void print_choices(FILE *out, const tune_point_t *pts, const tune_row_t *rows, long nrows)
{
    fprintf(out, "\nWhat bufpool-tune chose, and why (ratio: bufpool's time over the previous "
                 "module's, median over the repetitions;\nnoise: the larger of the A/A pair's "
                 "distance from 1 and the spreads of the repetitions):\n");
    for (long r = 0; r < nrows; r++) {
        const tune_row_t *row = &rows[r];
        const tune_point_t *first = &pts[row->first];
        if (0 == r || rows[r - 1].coll != row->coll ||
            pts[rows[r - 1].first].ranks != first->ranks) {
            fprintf(out, "\n%s, %d ranks on %d host(s), at most %d per host:\n",
                    bufpool_coll_names[row->coll], first->ranks, row->hosts, row->ppn);
        }
        char range[64], ratios[64] = "-", algs[128] = "";
        double lo = INFINITY, hi = -INFINITY, noise = 0;
        int within = 0, slower = 0, none = 0, wrong_prev = 0;
        size_t used = 0;
        for (size_t i = row->first; i <= row->last; i++) {
            const tune_verdict_t *v = &pts[i].v;
            within += TUNE_WITHIN_NOISE == v->why;
            slower += TUNE_SLOWER == v->why;
            none += TUNE_NONE_SERVED == v->why || TUNE_NO_REFERENCE == v->why;
            wrong_prev += TUNE_PREVIOUS_WRONG == v->why;
            if (v->best >= 0) {
                lo = fmin(lo, v->ratio);
                hi = fmax(hi, v->ratio);
                noise = fmax(noise, v->noise);
                const char *name = pts[i].cfg[v->best].name;
                if (NULL == strstr(algs, name) && used < sizeof(algs)) {
                    used += (size_t)snprintf(algs + used, sizeof(algs) - used, "%s%s",
                                             used ? "," : "", name);
                }
            }
        }
        tune_format_bytes_range(row->bytes_min, row->bytes_max, range, sizeof(range));
        if (isfinite(lo)) {
            snprintf(ratios, sizeof(ratios), fabs(hi - lo) < 0.005 ? "%.2f" : "%.2f-%.2f", lo, hi);
        }
        if (BUFPOOL_ALG_PREVIOUS != row->alg) {
            fprintf(out, "  bytes %-14s %-19s %s x previous, noise <= %.0f %%%s\n", range,
                    alg_name(row->coll, row->alg), ratios, 100 * noise,
                    wrong_prev ? " (the previous module failed its data check)" : "");
        } else {
            char why[160];
            size_t w = 0;
            why[0] = '\0';
            if (within) {
                w += (size_t)snprintf(why + w, sizeof(why) - w, "%sfaster within the margin at %d",
                                      w ? "; " : "", within);
            }
            if (slower) {
                w += (size_t)snprintf(why + w, sizeof(why) - w, "%snot faster at %d", w ? "; " : "",
                                      slower);
            }
            if (none && w < sizeof(why)) {
                w += (size_t)snprintf(why + w, sizeof(why) - w, "%sno algorithm served at %d",
                                      w ? "; " : "", none);
            }
            if (wrong_prev && w < sizeof(why)) {
                snprintf(why + w, sizeof(why) - w, "%sprevious wrong, nothing better at %d",
                         w ? "; " : "", wrong_prev);
            }
            if (isfinite(lo)) {
                fprintf(out, "  bytes %-14s %-19s best bufpool %s x (%s), noise <= %.0f %%: %s\n",
                        range, "previous", ratios, algs, 100 * noise, why);
            } else {
                fprintf(out, "  bytes %-14s %-19s %s\n", range, "previous", why);
            }
        }
    }
}

static void print_gains(FILE *out, const tune_point_t *pts, size_t n, const summary *s)
{
    fprintf(out, "\nExpected gains where bufpool takes a point (time with bufpool / time with the "
                 "previous module):\n");
    if (0 == s->taken) {
        fprintf(out, "  none: bufpool measured faster than the margin nowhere.\n");
    } else {
        fprintf(out, "  %-21s %5s %9s  %-19s %6s %6s %12s\n", "collective", "ranks", "bytes",
                "algorithm", "ratio", "noise", "previous us");
        for (size_t i = 0; i < n; i++) {
            const tune_point_t *pt = &pts[i];
            if (BUFPOOL_ALG_PREVIOUS == pt->v.alg) {
                continue;
            }
            char sz[32];
            tune_format_size(pt->bytes, sz, sizeof(sz));
            fprintf(out, "  %-21s %5d %9s  %-19s %6.2f %5.0f%% %12.1f\n",
                    bufpool_coll_names[pt->coll], pt->ranks, sz, alg_name(pt->coll, pt->v.alg),
                    pt->v.ratio, 100 * pt->v.noise, pt->v.prev_us);
        }
    }
    fprintf(out, "\nbufpool takes %zu of %zu points", s->taken, n);
    if (s->taken > 0) {
        const tune_point_t *b = &pts[s->best_point];
        char sz[32];
        tune_format_size(b->bytes, sz, sizeof(sz));
        fprintf(out,
                "; at those, bufpool / previous: median %.2f x, best %.2f x (%s, %d ranks, %s, "
                "%s)",
                s->gain_med, s->gain_best, bufpool_coll_names[b->coll], b->ranks, sz,
                alg_name(b->coll, b->v.alg));
    }
    fprintf(out,
            ".\nNoise: |A/A - 1| median %.1f %%, 90th percentile %.1f %% (%zu points); the "
            "noise each point had to beat: median %.1f %%, 90th percentile %.1f %%.\n",
            100 * s->aa_med, 100 * s->aa_p90, s->with_aa, 100 * s->noise_med, 100 * s->noise_p90);
}

/* ------------------------------------------------------------------------ */
/* The rules file                                                            */

static const char *hdr(const tune_raw_t *raw, const char *key, const char *missing)
{
    const char *h = tune_raw_header(raw, key);
    return NULL != h ? h : missing;
}

static void write_rules(FILE *f, const tune_raw_t *raw, const main_options *o, double margin,
                        const char *stat, const tune_point_t *pts, size_t n, const tune_row_t *rows,
                        long nrows, const summary *s)
{
    fprintf(f, "%s %d\n", BUFPOOL_RULES_MAGIC, BUFPOOL_RULES_VERSION);
    fprintf(f, "# Measured on this machine by bufpool-tune (%s %s), %s.\n", PACKAGE_NAME,
            PACKAGE_VERSION, hdr(raw, "date", "date unknown"));
    if (NULL != o->command) {
        fprintf(f, "# Command: %s\n", o->command);
    }
    if (NULL != o->mpirun) {
        fprintf(f, "# mpirun: %s\n", o->mpirun);
    }
    fprintf(f, "# Open MPI: %s\n", hdr(raw, "ompi", "unknown"));
    fprintf(f, "# Job: %s ranks on", hdr(raw, "np", "?"));
    for (size_t i = 0; i < raw->nheaders; i++) {
        if (0 == strcmp(raw->headers[i].key, "host")) {
            char name[256];
            int count = 0;
            if (2 == sscanf(raw->headers[i].value, "%255s %d", name, &count)) {
                fprintf(f, " %s (%d)", name, count);
            }
        }
    }
    fprintf(f, "\n# Communicators: the first p ranks of MPI_COMM_WORLD, p =");
    const char *sep = "";
    for (size_t i = 0; i < n; i++) {
        if (0 == i || pts[i].ranks > pts[i - 1].ranks) {
            bool seen = false;
            for (size_t j = 0; j < i; j++) {
                seen |= pts[j].ranks == pts[i].ranks;
            }
            if (!seen) {
                fprintf(f, "%s %d (%d host(s), %d per host at most)", sep, pts[i].ranks,
                        pts[i].hosts, pts[i].ppn);
                sep = ",";
            }
        }
    }
    fprintf(f, "\n# Collectives: %s\n", hdr(raw, "collectives", "?"));
    fprintf(f, "# Sizes: %s\n", hdr(raw, "sizes", "?"));
    fprintf(f,
            "# Each point: the previous module (ompi_comm_coll_preference=^bufpool), a second copy "
            "of it (A/A) and\n# every bufpool algorithm (info key "
            "coll_bufpool_algorithm=<coll>:<algorithm>), "
            "%s repetitions interleaved\n# (order rotated each repetition), each a batch of calls "
            "of about %s ms; statistic: %s time per call.\n",
            hdr(raw, "reps", "?"), hdr(raw, "batch_ms", "?"),
            0 == strcmp(stat, "p50") ? "each rank's median" : "the mean");
    fprintf(f,
            "# bufpool's parameters in the job: segment_size %s, pipeline_depth %s, "
            "max_requests %s, min_size %s\n",
            hdr(raw, "segment_size", "?"), hdr(raw, "pipeline_depth", "?"),
            hdr(raw, "max_requests", "?"), hdr(raw, "min_size", "?"));
    fprintf(f,
            "# Noise measured: |A/A - 1| median %.1f %%, 90th percentile %.1f %%; noise per "
            "point (the larger of\n# |A/A - 1| and the spreads of the repetitions) median "
            "%.1f %%, 90th percentile %.1f %%.\n",
            100 * s->aa_med, 100 * s->aa_p90, 100 * s->noise_med, 100 * s->noise_p90);
    fprintf(f,
            "# Rule: a bufpool algorithm takes a point where its median ratio over the previous "
            "module is below\n# 1 - max(%.1f %%, the noise at that point); elsewhere "
            "alg=previous.  bufpool takes %zu of %zu points.\n",
            100 * margin, s->taken, n);
    fprintf(f,
            "# Rows: bytes from each measured size to just below the next (the largest up to "
            "%s), ranks from each\n# measured size to just below the next (the largest %s); "
            "blocking calls, commutative operations.\n# Use: mpirun --mca "
            "coll_bufpool_rules_file THIS_FILE ...  (docs/tuning.md, docs/rules.md)\n",
            o->open_ended ? "any size" : "twice itself minus 1",
            o->open_ended ? "and above" : "alone");
    if (!raw->complete) {
        fprintf(f, "# INCOMPLETE: the job ended before it had measured every point (--partial).\n");
    }
    for (long r = 0; r < nrows; r++) {
        char line[BUFPOOL_RULES_MAX_LINE];
        if (0 == r || rows[r - 1].coll != rows[r].coll) {
            fprintf(f, "\n# %s\n", bufpool_coll_names[rows[r].coll]);
        }
        tune_format_row(&rows[r], pts, line, sizeof(line));
        fprintf(f, "%s\n", line);
    }
}

/* Writes text to a temporary file beside path, then renames it over path:
 * a reader never sees half a file. */
static int write_atomically(const char *path, const char *text, size_t len)
{
    char *tmp = malloc(strlen(path) + 16);
    if (NULL == tmp) {
        return fail(4, "out of memory");
    }
    sprintf(tmp, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(tmp);
        return fail(4, "cannot write %s: %s", path, strerror(e));
    }
    mode_t mask = umask(0);
    umask(mask);
    int rc = fchmod(fd, 0666 & ~mask);
    size_t done = 0;
    while (0 == rc && done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && EINTR == errno) {
            continue;
        }
        if (w <= 0) {
            rc = -1;
            break;
        }
        done += (size_t)w;
    }
    if (0 == rc) {
        rc = fsync(fd);
    }
    int e = errno;
    if (0 != close(fd) && 0 == rc) {
        rc = -1;
        e = errno;
    }
    if (0 == rc && 0 != rename(tmp, path)) {
        rc = -1;
        e = errno;
    }
    if (0 != rc) {
        unlink(tmp);
        free(tmp);
        return fail(4, "cannot write %s: %s", path, strerror(e));
    }
    free(tmp);
    return 0;
}

/* Read the raw measurements of --raw into raw: 0, or the exit status
 * (reported; raw freed) when they cannot be read, are incomplete without
 * --partial, or hold nothing. */
static int read_measurements(const main_options *o, const char *stat, tune_raw_t *raw)
{
    FILE *in = 0 == strcmp(o->raw, "-") ? stdin : fopen(o->raw, "r");
    if (NULL == in) {
        return fail(2, "cannot read %s: %s", o->raw, strerror(errno));
    }
    char err[1024];
    tune_raw_init(raw);
    int rc = tune_raw_read(in, stat, raw, err, sizeof(err));
    if (stdin != in) {
        fclose(in);
    }
    if (0 != rc) {
        tune_raw_free(raw);
        return fail(3, "%s: %s", o->raw, err);
    }
    if (!raw->complete && !o->partial) {
        fprintf(stderr,
                PROG ": the measurements in %s are incomplete: the job ended before its "
                     "last point",
                o->raw);
        if ('\0' != raw->last_run[0] && !raw->last_run_done) {
            fprintf(stderr,
                    ", while measuring \"%s\" (collective, ranks, size, configuration, "
                    "repetition)",
                    raw->last_run);
        }
        fprintf(stderr, ".  Nothing written.\n");
        tune_raw_free(raw);
        return 3;
    }
    if (0 == raw->npoints) {
        tune_raw_free(raw);
        return fail(3, "%s holds no measurement", o->raw);
    }
    return 0;
}

/* The notes of kind ('W' wrong results, 'N' left out) under a title;
 * how many there were. */
static size_t print_notes(const tune_raw_t *raw, char kind, const char *title)
{
    size_t n = 0;
    for (size_t i = 0; i < raw->nnotes; i++) {
        if (kind == raw->notes[i][0]) {
            if (0 == n++) {
                printf("\n%s\n", title);
            }
            printf("  %s\n", raw->notes[i] + 2);
        }
    }
    return n;
}

static int decide(const main_options *o, double margin)
{
    const char *stat = NULL != o->stat ? o->stat : "p50";
    if (NULL == o->raw || NULL == o->output) {
        return fail(2, "decide needs --raw FILE and --output FILE");
    }
    tune_raw_t raw;
    int rc = read_measurements(o, stat, &raw);
    if (0 != rc) {
        return rc;
    }
    for (size_t i = 0; i < raw.npoints; i++) {
        tune_decide_point(&raw.points[i], margin);
    }
    tune_row_t *rows;
    long nrows = tune_build_rows(raw.points, raw.npoints, o->open_ended, &rows);
    if (nrows < 0) {
        tune_raw_free(&raw);
        return fail(4, "out of memory");
    }
    summary s = summarize(raw.points, raw.npoints);

    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (NULL == mem) {
        free(rows);
        tune_raw_free(&raw);
        return fail(4, "out of memory");
    }
    write_rules(mem, &raw, o, margin, stat, raw.points, raw.npoints, rows, nrows, &s);
    fclose(mem);

    /* The file must load in the component, and decide every point as
     * decided here, before anything is written. */
    char err[1024];
    rc = tune_verify_rules(text, len, o->output, raw.points, raw.npoints, err, sizeof(err));
    if (0 != rc) {
        fail(4, "internal error, nothing written: the rules do not read back as decided: %s", err);
        rc = 4;
    }

    if (0 == rc) {
        const size_t wrong =
            print_notes(&raw, 'W', "WRONG RESULTS (each left out of the decision at its point):");
        print_notes(&raw, 'N', "Left out:");
        print_choices(stdout, raw.points, rows, nrows);
        print_gains(stdout, raw.points, raw.npoints, &s);
        if (wrong > 0) {
            printf(
                "\nWARNING: %zu batch(es) gave a wrong result or an MPI error (listed at the top);"
                "\neach configuration was left out where it failed.  Please report them.\n",
                wrong);
        }
        fflush(stdout);
        rc = write_atomically(o->output, text, len);
        if (0 == rc) {
            printf("\nWrote %s (%ld row(s)).  Use it with:\n  mpirun --mca coll_bufpool_rules_file "
                   "%s ...\n",
                   o->output, nrows, o->output);
        }
    }
    free(text);
    free(rows);
    tune_raw_free(&raw);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"collectives", required_argument, NULL, 'c'}, {"sizes", required_argument, NULL, 's'},
        {"ranks", required_argument, NULL, 'p'},       {"skip", required_argument, NULL, 'x'},
        {"reps", required_argument, NULL, 'r'},        {"batch-ms", required_argument, NULL, 'b'},
        {"margin", required_argument, NULL, 'm'},      {"stat", required_argument, NULL, 'S'},
        {"mem-limit", required_argument, NULL, 'M'},   {"raw", required_argument, NULL, 'R'},
        {"output", required_argument, NULL, 'o'},      {"command", required_argument, NULL, 'C'},
        {"mpirun", required_argument, NULL, 'P'},      {"open-ended", no_argument, NULL, 'e'},
        {"partial", no_argument, NULL, 'a'},           {NULL, 0, NULL, 0}};
    main_options o = {0};
    if (argc < 2 || (0 != strcmp(argv[1], "check") && 0 != strcmp(argv[1], "decide"))) {
        return fail(2,
                    "usage: bufpool-tune-decide check|decide [options] (see bufpool-tune --help)");
    }
    const bool deciding = 0 == strcmp(argv[1], "decide");
    opterr = 0;
    optind = 2;
    for (int c; - 1 != (c = getopt_long(argc, argv, "", longopts, NULL));) {
        switch (c) {
            case 'c':
                o.colls = optarg;
                break;
            case 's':
                o.sizes = optarg;
                break;
            case 'p':
                o.ranks = optarg;
                break;
            case 'x':
                o.skip = optarg;
                break;
            case 'r':
                o.reps = optarg;
                break;
            case 'b':
                o.batch_ms = optarg;
                break;
            case 'm':
                o.margin = optarg;
                break;
            case 'S':
                o.stat = optarg;
                break;
            case 'M':
                o.mem_limit = optarg;
                break;
            case 'R':
                o.raw = optarg;
                break;
            case 'o':
                o.output = optarg;
                break;
            case 'C':
                o.command = optarg;
                break;
            case 'P':
                o.mpirun = optarg;
                break;
            case 'e':
                o.open_ended = true;
                break;
            case 'a':
                o.partial = true;
                break;
            default:
                return fail(2, "unknown option or missing value: %s", argv[optind - 1]);
        }
    }
    if (optind < argc) {
        return fail(2, "unexpected argument '%s'", argv[optind]);
    }
    double margin;
    int rc = check_options(&o, &margin);
    if (0 != rc || !deciding) {
        return rc;
    }
    return decide(&o, margin);
}
