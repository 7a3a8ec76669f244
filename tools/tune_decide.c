/*
 * bufpool-tune's decisions (tune_decide.h).
 */
#include "tune_decide.h"

#include "coll_bufpool_rules.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Statistics                                                                */

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double tune_quantile(const double *sorted, int n, double f)
{
    if (n <= 0) {
        return NAN;
    }
    double pos = f * (double)(n - 1);
    int lo = (int)floor(pos);
    if (lo >= n - 1) {
        return sorted[n - 1];
    }
    return sorted[lo] + (pos - (double)lo) * (sorted[lo + 1] - sorted[lo]);
}

static bool measured(double t)
{
    return isfinite(t) && t > 0;
}

int tune_ratio_stats(const double *a, const double *b, int n, double *median, double *spread)
{
    double r[TUNE_MAX_REPS];
    int m = 0;
    for (int i = 0; i < n && i < TUNE_MAX_REPS; i++) {
        if (measured(a[i]) && measured(b[i])) {
            r[m++] = a[i] / b[i];
        }
    }
    qsort(r, (size_t)m, sizeof(double), compare_doubles);
    *median = tune_quantile(r, m, 0.5);
    *spread = m > 0 ? (tune_quantile(r, m, 0.75) - tune_quantile(r, m, 0.25)) / 2 : NAN;
    return m;
}

double tune_median(const double *t, int n)
{
    double v[TUNE_MAX_REPS];
    int m = 0;
    for (int i = 0; i < n && i < TUNE_MAX_REPS; i++) {
        if (measured(t[i])) {
            v[m++] = t[i];
        }
    }
    qsort(v, (size_t)m, sizeof(double), compare_doubles);
    return tune_quantile(v, m, 0.5);
}

/* ------------------------------------------------------------------------ */
/* Decisions                                                                 */

static int find_cfg(const tune_point_t *pt, const char *name)
{
    for (int c = 0; c < pt->ncfg; c++) {
        if (0 == strcmp(pt->cfg[c].name, name)) {
            return c;
        }
    }
    return -1;
}

const char *tune_reason_text(tune_reason_t why)
{
    switch (why) {
        case TUNE_FASTER:
            return "faster by more than the margin";
        case TUNE_WITHIN_NOISE:
            return "faster, but within the margin";
        case TUNE_SLOWER:
            return "no algorithm faster";
        case TUNE_NONE_SERVED:
            return "no algorithm served it";
        case TUNE_PREVIOUS_WRONG:
            return "the previous module failed its data check";
        default:
            return "the previous module was not measured";
    }
}

void tune_decide_point(tune_point_t *pt, double min_margin)
{
    tune_verdict_t *v = &pt->v;
    const int prev = find_cfg(pt, TUNE_CFG_PREV), aa = find_cfg(pt, TUNE_CFG_AA);
    *v = (tune_verdict_t){.alg = BUFPOOL_ALG_PREVIOUS,
                          .best = -1,
                          .ratio = NAN,
                          .noise = NAN,
                          .margin = NAN,
                          .aa = NAN,
                          .aa_spread = NAN,
                          .prev_us = NAN,
                          .why = TUNE_NO_REFERENCE};
    if (prev < 0 || !isfinite(tune_median(pt->cfg[prev].t, pt->nreps))) {
        return;
    }
    const tune_cfg_t *ref = &pt->cfg[prev];
    v->prev_us = tune_median(ref->t, pt->nreps);

    /* The noise of a ratio where nothing differs: how far the A/A pair's
     * median is from 1, and how widely its repetitions spread. */
    double point_noise = 0;
    if (aa >= 0 && !pt->cfg[aa].wrong &&
        tune_ratio_stats(pt->cfg[aa].t, ref->t, pt->nreps, &v->aa, &v->aa_spread) > 0) {
        point_noise = fmax(fabs(v->aa - 1), v->aa_spread);
    }

    int best = -1, chosen = -1, best_n = 0, chosen_n = 0;
    double best_ratio = INFINITY, best_noise = NAN, chosen_ratio = INFINITY, chosen_noise = NAN;
    for (int c = 0; c < pt->ncfg; c++) {
        const tune_cfg_t *cfg = &pt->cfg[c];
        double ratio, spread;
        if (BUFPOOL_ALG_PREVIOUS == cfg->alg || cfg->wrong || cfg->handed_back) {
            continue;
        }
        int n = tune_ratio_stats(cfg->t, ref->t, pt->nreps, &ratio, &spread);
        if (0 == n) {
            continue;
        }
        double noise = fmax(point_noise, spread);
        if (ratio < best_ratio) {
            best = c;
            best_ratio = ratio;
            best_noise = noise;
            best_n = n;
        }
        if (ratio < 1 - fmax(min_margin, noise) && ratio < chosen_ratio) {
            chosen = c;
            chosen_ratio = ratio;
            chosen_noise = noise;
            chosen_n = n;
        }
    }
    if (ref->wrong) {
        /* Correct before fast: the fastest correct algorithm, if any. */
        v->why = TUNE_PREVIOUS_WRONG;
        chosen = best;
        chosen_ratio = best_ratio;
        chosen_noise = best_noise;
        chosen_n = best_n;
    }
    if (chosen >= 0) {
        v->alg = pt->cfg[chosen].alg;
        v->best = chosen;
        v->ratio = chosen_ratio;
        v->noise = chosen_noise;
        v->reps = chosen_n;
        if (!ref->wrong) {
            v->why = TUNE_FASTER;
        }
    } else if (best >= 0) {
        v->best = best;
        v->ratio = best_ratio;
        v->noise = best_noise;
        v->reps = best_n;
        if (!ref->wrong) {
            v->why = best_ratio < 1 ? TUNE_WITHIN_NOISE : TUNE_SLOWER;
        }
    } else if (!ref->wrong) {
        v->why = TUNE_NONE_SERVED;
        v->noise = point_noise;
    }
    v->margin = fmax(min_margin, isfinite(v->noise) ? v->noise : 0);
}

/* ------------------------------------------------------------------------ */
/* Rows                                                                      */

static int compare_points(const void *a, const void *b)
{
    const tune_point_t *x = a, *y = b;
    if (x->coll != y->coll) {
        return (x->coll > y->coll) - (x->coll < y->coll);
    }
    if (x->ranks != y->ranks) {
        return (x->ranks > y->ranks) - (x->ranks < y->ranks);
    }
    return (x->bytes > y->bytes) - (x->bytes < y->bytes);
}

static int compare_ints(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

long tune_build_rows(tune_point_t *points, size_t n, bool open_ended, tune_row_t **rows_out)
{
    *rows_out = NULL;
    if (0 == n) {
        return 0;
    }
    qsort(points, n, sizeof(*points), compare_points);
    /* The communicator sizes measured, whatever the collective. */
    int *sizes = malloc(n * sizeof(int));
    tune_row_t *rows = malloc(n * sizeof(tune_row_t));
    if (NULL == sizes || NULL == rows) {
        free(sizes);
        free(rows);
        return -1;
    }
    size_t nsizes = 0;
    for (size_t i = 0; i < n; i++) {
        sizes[nsizes++] = points[i].ranks;
    }
    qsort(sizes, nsizes, sizeof(int), compare_ints);
    size_t u = 0;
    for (size_t i = 0; i < nsizes; i++) {
        if (0 == u || sizes[u - 1] != sizes[i]) {
            sizes[u++] = sizes[i];
        }
    }
    nsizes = u;

    long nrows = 0;
    for (size_t i = 0; i < n;) {
        /* One collective and communicator size: points i..end-1. */
        size_t end = i;
        while (end < n && points[end].coll == points[i].coll &&
               points[end].ranks == points[i].ranks) {
            end++;
        }
        size_t k = 0;
        while (sizes[k] != points[i].ranks) {
            k++;
        }
        int ranks_min = open_ended && 0 == k ? 2 : sizes[k];
        int ranks_max = k + 1 < nsizes ? sizes[k + 1] - 1 : open_ended ? 0 : sizes[k];
        for (size_t first = i; first < end;) {
            size_t last = first;
            while (last + 1 < end && points[last + 1].v.alg == points[first].v.alg) {
                last++;
            }
            tune_row_t *row = &rows[nrows++];
            row->coll = points[first].coll;
            row->ranks_min = ranks_min;
            row->ranks_max = ranks_max;
            row->hosts = points[first].hosts;
            row->ppn = points[first].ppn;
            row->alg = points[first].v.alg;
            row->first = first;
            row->last = last;
            row->bytes_min =
                first == i ? (open_ended ? 0 : points[first].bytes) : points[first].bytes;
            if (last + 1 < end) {
                row->bytes_max = points[last + 1].bytes - 1;
            } else if (open_ended || points[last].bytes > SIZE_MAX / 2 ||
                       0 == points[last].bytes /* barrier: no message size */) {
                row->bytes_max = SIZE_MAX;
            } else {
                row->bytes_max = 2 * points[last].bytes - 1;
            }
            first = last + 1;
        }
        i = end;
    }
    free(sizes);
    *rows_out = rows;
    return nrows;
}

void tune_format_size(size_t v, char *buf, size_t len)
{
    static const struct {
        size_t unit;
        char suffix;
    } units[] = {{(size_t)1 << 30, 'G'}, {(size_t)1 << 20, 'M'}, {(size_t)1 << 10, 'K'}};
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        const size_t unit = units[u].unit;
        if (v >= unit && 0 == v % unit) {
            snprintf(buf, len, "%zu%c", v / unit, units[u].suffix);
            return;
        }
        if (v + 1 >= unit && 0 == (v + 1) % unit) {
            snprintf(buf, len, "%zu%c-1", (v + 1) / unit, units[u].suffix);
            return;
        }
        if (v > unit && 0 == (v - 1) % unit) {
            snprintf(buf, len, "%zu%c+1", (v - 1) / unit, units[u].suffix);
            return;
        }
    }
    snprintf(buf, len, "%zu", v);
}

void tune_format_bytes_range(size_t lo, size_t hi, char *buf, size_t len)
{
    char a[32], b[32];
    tune_format_size(lo, a, sizeof(a));
    tune_format_size(hi, b, sizeof(b));
    if (0 == lo && SIZE_MAX == hi) {
        snprintf(buf, len, "*");
    } else if (SIZE_MAX == hi) {
        snprintf(buf, len, "%s..", a);
    } else if (0 == lo) {
        snprintf(buf, len, "..%s", b);
    } else if (lo == hi) {
        snprintf(buf, len, "%s", a);
    } else {
        snprintf(buf, len, "%s..%s", a, b);
    }
}

static void format_range_ranks(int lo, int hi, char *buf, size_t len)
{
    if (0 == hi) {
        snprintf(buf, len, "%d..", lo);
    } else if (lo == hi) {
        snprintf(buf, len, "%d", lo);
    } else {
        snprintf(buf, len, "%d..%d", lo, hi);
    }
}

static bool is_reduction(bufpool_coll_id_t id)
{
    return BUFPOOL_COLL_allreduce == id || BUFPOOL_COLL_reduce == id ||
           BUFPOOL_COLL_reduce_scatter == id || BUFPOOL_COLL_reduce_scatter_block == id ||
           BUFPOOL_COLL_scan == id || BUFPOOL_COLL_exscan == id;
}

/* "0.62" or "0.62-0.71". */
static void format_ratios(double lo, double hi, char *buf, size_t len)
{
    if (fabs(hi - lo) < 0.005) {
        snprintf(buf, len, "%.2f", lo);
    } else {
        snprintf(buf, len, "%.2f-%.2f", lo, hi);
    }
}

void tune_format_row(const tune_row_t *row, const tune_point_t *points, char *buf, size_t len)
{
    char ranks[32], bytes[64], ratios[32], measured[BUFPOOL_RULES_MAX_MEASURED];
    char algs[128] = "";
    double rmin = INFINITY, rmax = -INFINITY, noise = 0;
    int reps = TUNE_MAX_REPS, with_ratio = 0, wrong_prev = 0;
    size_t used = 0;
    for (size_t i = row->first; i <= row->last; i++) {
        const tune_verdict_t *v = &points[i].v;
        wrong_prev |= TUNE_PREVIOUS_WRONG == v->why;
        if (v->best < 0 || !isfinite(v->ratio)) {
            continue;
        }
        with_ratio++;
        rmin = fmin(rmin, v->ratio);
        rmax = fmax(rmax, v->ratio);
        noise = fmax(noise, v->noise);
        reps = v->reps < reps ? v->reps : reps;
        const char *name = points[i].cfg[v->best].name;
        if (NULL == strstr(algs, name) && used < sizeof(algs)) {
            used +=
                (size_t)snprintf(algs + used, sizeof(algs) - used, "%s%s", used ? ", " : "", name);
        }
    }
    format_range_ranks(row->ranks_min, row->ranks_max, ranks, sizeof(ranks));
    tune_format_bytes_range(row->bytes_min, row->bytes_max, bytes, sizeof(bytes));
    format_ratios(rmin, rmax, ratios, sizeof(ratios));
    const int npts = (int)(row->last - row->first + 1);
    int m =
        snprintf(measured, sizeof(measured),
                 "bufpool-tune, %d ranks on %d host(s), %d per host: ", points[row->first].ranks,
                 row->hosts, row->ppn);
    const size_t ml = sizeof(measured) - (size_t)m;
    if (BUFPOOL_ALG_PREVIOUS != row->alg) {
        snprintf(measured + m, ml, "%s %s x previous at %d size(s), noise <= %.0f %%, %d reps%s",
                 bufpool_algorithm_names[row->coll][row->alg], ratios, npts, 100 * noise, reps,
                 wrong_prev ? "; the previous module failed its data check" : "");
    } else if (with_ratio > 0) {
        snprintf(measured + m, ml,
                 "previous; best bufpool %s x (%s) at %d size(s), noise <= %.0f %%, %d reps",
                 ratios, algs, npts, 100 * noise, reps);
    } else {
        snprintf(measured + m, ml, "previous; no bufpool algorithm served at %d size(s)", npts);
    }
    snprintf(buf, len, "%s ranks=%s hosts=%d bytes=%s%s form=blocking alg=%s measured=\"%s\"",
             bufpool_coll_names[row->coll], ranks, row->hosts, bytes,
             is_reduction(row->coll) ? " op=commutative" : "",
             BUFPOOL_ALG_PREVIOUS == row->alg ? "previous"
                                              : bufpool_algorithm_names[row->coll][row->alg],
             measured);
}

int tune_verify_rules(const char *text, size_t len, const char *name, const tune_point_t *points,
                      size_t n, char *err, size_t errlen)
{
    bufpool_rules_t rules;
    bufpool_rules_init(&rules);
    if (0 != bufpool_rules_parse(&rules, text, len, name, err, errlen)) {
        bufpool_rules_free(&rules);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && 0 == rc; i++) {
        const tune_point_t *pt = &points[i];
        const bufpool_shape_t shape = {.ranks = pt->ranks,
                                       .hosts = pt->hosts,
                                       .ppn = pt->ppn,
                                       .commutative = true,
                                       .in_place = false,
                                       .form = BUFPOOL_FORM_BLOCKING};
        const bufpool_rule_t *row = bufpool_rules_match(&rules, pt->coll, &shape, pt->bytes);
        if (NULL == row || row->alg != pt->v.alg) {
            snprintf(err, errlen, "%s: %s at %d ranks, %zu bytes: %s, expected %s", name,
                     bufpool_coll_names[pt->coll], pt->ranks, pt->bytes,
                     NULL == row                        ? "no row matches"
                     : BUFPOOL_ALG_PREVIOUS == row->alg ? "its row says previous"
                                                        : "its row says another algorithm",
                     BUFPOOL_ALG_PREVIOUS == pt->v.alg
                         ? "previous"
                         : bufpool_algorithm_names[pt->coll][pt->v.alg]);
            rc = -1;
        }
    }
    bufpool_rules_free(&rules);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The job's output                                                          */

void tune_raw_init(tune_raw_t *raw)
{
    memset(raw, 0, sizeof(*raw));
}

void tune_raw_free(tune_raw_t *raw)
{
    free(raw->headers);
    free(raw->points);
    for (size_t i = 0; i < raw->nnotes; i++) {
        free(raw->notes[i]);
    }
    free(raw->notes);
    memset(raw, 0, sizeof(*raw));
}

const char *tune_raw_header(const tune_raw_t *raw, const char *key)
{
    for (size_t i = 0; i < raw->nheaders; i++) {
        if (0 == strcmp(raw->headers[i].key, key)) {
            return raw->headers[i].value;
        }
    }
    return NULL;
}

tune_point_t *tune_raw_point(tune_raw_t *raw, bufpool_coll_id_t coll, int ranks, size_t size)
{
    for (size_t i = raw->npoints; i-- > 0;) {
        tune_point_t *pt = &raw->points[i];
        if (pt->coll == coll && pt->ranks == ranks && pt->size == size) {
            return pt;
        }
    }
    if (raw->npoints == raw->cap) {
        size_t cap = raw->cap ? 2 * raw->cap : 64;
        tune_point_t *p = realloc(raw->points, cap * sizeof(*p));
        if (NULL == p) {
            return NULL;
        }
        raw->points = p;
        raw->cap = cap;
    }
    tune_point_t *pt = &raw->points[raw->npoints++];
    memset(pt, 0, sizeof(*pt));
    pt->coll = coll;
    pt->ranks = ranks;
    pt->size = size;
    return pt;
}

tune_cfg_t *tune_point_cfg(tune_point_t *pt, const char *name)
{
    int c = find_cfg(pt, name);
    if (c >= 0) {
        return &pt->cfg[c];
    }
    if (pt->ncfg == TUNE_MAX_CFGS) {
        return NULL;
    }
    tune_cfg_t *cfg = &pt->cfg[pt->ncfg++];
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->name, sizeof(cfg->name), "%s", name);
    for (int r = 0; r < TUNE_MAX_REPS; r++) {
        cfg->t[r] = NAN;
    }
    cfg->alg = BUFPOOL_ALG_PREVIOUS;
    if (0 != strcmp(name, TUNE_CFG_PREV) && 0 != strcmp(name, TUNE_CFG_AA)) {
        cfg->alg = bufpool_algorithm_index(pt->coll, name);
    }
    return cfg;
}

static int add_note(tune_raw_t *raw, const char *text)
{
    char **notes = realloc(raw->notes, (raw->nnotes + 1) * sizeof(*notes));
    if (NULL == notes) {
        return -1;
    }
    raw->notes = notes;
    raw->notes[raw->nnotes] = strdup(text);
    return NULL == raw->notes[raw->nnotes++] ? -1 : 0;
}

static int add_header(tune_raw_t *raw, const char *key, const char *value)
{
    tune_header_t *h = realloc(raw->headers, (raw->nheaders + 1) * sizeof(*h));
    if (NULL == h) {
        return -1;
    }
    raw->headers = h;
    snprintf(h[raw->nheaders].key, sizeof(h->key), "%s", key);
    snprintf(h[raw->nheaders].value, sizeof(h->value), "%s", value);
    raw->nheaders++;
    return 0;
}

static int coll_of(const char *name)
{
    for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
        if (0 == strcmp(name, bufpool_coll_names[id])) {
            return id;
        }
    }
    return -1;
}

/* One "bpt M" line: coll p hosts ppn size bytes cfg rep iters mean p50 wrong own fallbacks. */
static int read_measurement(tune_raw_t *raw, const char *rest, bool use_p50, char *err,
                            size_t errlen)
{
    char coll[TUNE_NAME_LEN], cfg_name[TUNE_NAME_LEN], s_mean[32], s_p50[32], s_wrong[32],
        s_own[32], s_fb[32];
    int p, hosts, ppn, rep;
    size_t size, bytes;
    long iters;
    if (14 != sscanf(rest, "%31s %d %d %d %zu %zu %31s %d %ld %31s %31s %31s %31s %31s", coll, &p,
                     &hosts, &ppn, &size, &bytes, cfg_name, &rep, &iters, s_mean, s_p50, s_wrong,
                     s_own, s_fb)) {
        snprintf(err, errlen, "a measurement line has not 14 fields: %s", rest);
        return -1;
    }
    int id = coll_of(coll);
    if (id < 0 || p < 2 || rep < 0 || rep >= TUNE_MAX_REPS) {
        snprintf(err, errlen,
                 "a measurement line names no known collective or a bad rank count "
                 "or repetition: %s",
                 rest);
        return -1;
    }
    tune_point_t *pt = tune_raw_point(raw, (bufpool_coll_id_t)id, p, size);
    if (NULL == pt) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pt->hosts = hosts;
    pt->ppn = ppn;
    pt->bytes = bytes;
    tune_cfg_t *cfg = tune_point_cfg(pt, cfg_name);
    if (NULL == cfg || (BUFPOOL_ALG_PREVIOUS != cfg->alg && cfg->alg < 1)) {
        snprintf(err, errlen, "a measurement line names no algorithm of %s: %s", coll, rest);
        return -1;
    }
    double wrong = strtod(s_wrong, NULL), own = strtod(s_own, NULL), fallbacks = strtod(s_fb, NULL);
    (void)iters;
    cfg->t[rep] = strtod(use_p50 ? s_p50 : s_mean, NULL);
    cfg->wrong |= 0 != wrong;
    /* An algorithm that handed calls back, or that bufpool never saw (its
     * counters readable but zero), measured the previous module. */
    cfg->handed_back |= BUFPOOL_ALG_PREVIOUS != cfg->alg &&
                        ((isfinite(fallbacks) && fallbacks > 0) || (isfinite(own) && own <= 0));
    if (rep + 1 > pt->nreps) {
        pt->nreps = rep + 1;
    }
    return 0;
}

int tune_raw_read(FILE *f, const char *stat, tune_raw_t *raw, char *err, size_t errlen)
{
    char line[4096];
    bool use_p50 = NULL != stat && 0 == strcmp(stat, "p50");
    bool versioned = false;
    long lineno = 0;
    while (NULL != fgets(line, sizeof(line), f)) {
        lineno++;
        size_t len = strlen(line);
        while (len > 0 && ('\n' == line[len - 1] || '\r' == line[len - 1])) {
            line[--len] = '\0';
        }
        /* A "bpt" line, at the start or after mpirun's --tag-output prefix
         * ("[1,0]<stdout>:"). */
        const char *at = strstr(line, "bpt ");
        if (NULL == at ||
            (at != line && ':' != at[-1] && !(at - line >= 2 && ' ' == at[-1] && ':' == at[-2]))) {
            continue;
        }
        const char kind = at[4];
        const char *rest = at + 5;
        while (' ' == *rest) {
            rest++;
        }
        int rc = 0;
        switch (kind) {
            case 'H': {
                char key[32];
                int n = 0;
                if (1 != sscanf(rest, "%31s %n", key, &n)) {
                    break;
                }
                if (0 == strcmp(key, "version")) {
                    if (TUNE_RAW_VERSION != atoi(rest + n)) {
                        snprintf(err, errlen, "line %ld: raw data version %s, expected %d", lineno,
                                 rest + n, TUNE_RAW_VERSION);
                        return -1;
                    }
                    versioned = true;
                }
                rc = add_header(raw, key, rest + n);
                break;
            }
            case 'M':
                rc = read_measurement(raw, rest, use_p50, err, errlen);
                if (0 == rc) {
                    raw->last_run_done = true;
                }
                if (0 != rc) {
                    char why[512];
                    snprintf(why, sizeof(why), "line %ld: %s", lineno, err);
                    snprintf(err, errlen, "%s", why);
                    return -1;
                }
                break;
            case 'R':
                memcpy(raw->last_run, rest, strnlen(rest, sizeof(raw->last_run) - 1));
                raw->last_run[strnlen(rest, sizeof(raw->last_run) - 1)] = '\0';
                raw->last_run_done = false;
                break;
            case 'W':
            case 'N':
                rc = add_note(raw, at + 4);
                break;
            case 'D':
                raw->complete = true;
                break;
            default:
                break;
        }
        if (0 != rc) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (!versioned) {
        snprintf(err, errlen, "no bufpool-tune measurements in it (no 'bpt H version' line)");
        return -1;
    }
    return 0;
}
