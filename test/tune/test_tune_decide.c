/*
 * bufpool-tune's decisions without MPI (tools/tune_decide.c): the margin
 * rule on measured medians and noise, which algorithm takes a point, what
 * is left out, the merging of points into rows and their ranges, the
 * rules text (parsed back by the component's parser), the job's output,
 * and the option lists.
 */
#include "tune_args.h"
#include "tune_decide.h"
#include "unit.h"

#include "coll_bufpool_rules.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* A point of allreduce with the previous module at 10 us in every
 * repetition, its A/A copy at aa[r] * 10 and algorithm a at ratio[a][r] * 10. */
static void make_point(tune_point_t *pt, int reps, const double *aa, const char *const *algs,
                       const double ratio[][TUNE_MAX_REPS], int nalgs)
{
    memset(pt, 0, sizeof(*pt));
    pt->coll = BUFPOOL_COLL_allreduce;
    pt->ranks = 2;
    pt->hosts = 1;
    pt->ppn = 2;
    pt->size = pt->bytes = 1024;
    pt->nreps = reps;
    tune_cfg_t *prev = tune_point_cfg(pt, TUNE_CFG_PREV);
    tune_cfg_t *copy = tune_point_cfg(pt, TUNE_CFG_AA);
    for (int r = 0; r < reps; r++) {
        prev->t[r] = 10;
        copy->t[r] = 10 * aa[r];
    }
    for (int a = 0; a < nalgs; a++) {
        tune_cfg_t *cfg = tune_point_cfg(pt, algs[a]);
        UNIT_REQUIRE(NULL != cfg && cfg->alg > 0);
        for (int r = 0; r < reps; r++) {
            cfg->t[r] = 10 * ratio[a][r];
        }
    }
}

static const double flat[TUNE_MAX_REPS] = {1, 1, 1, 1, 1};

static void test_statistics(void)
{
    const double sorted[] = {1, 2, 3, 4, 5};
    UNIT_CHECK(3 == tune_quantile(sorted, 5, 0.5));
    UNIT_CHECK(2 == tune_quantile(sorted, 5, 0.25));
    UNIT_CHECK(4.5 == tune_quantile(sorted, 5, 0.875));
    UNIT_CHECK(isnan(tune_quantile(sorted, 0, 0.5)));
    const double a[] = {9, 8, NAN, 12, 10}, b[] = {10, 10, 10, 0, 10};
    double median, spread;
    /* only repetitions where both were measured count */
    UNIT_CHECK(3 == tune_ratio_stats(a, b, 5, &median, &spread));
    UNIT_CHECK(fabs(median - 0.9) < 1e-12 && fabs(spread - 0.05) < 1e-12);
    UNIT_CHECK(0 == tune_ratio_stats(a, b, 0, &median, &spread));
    UNIT_CHECK(10 == tune_median(b, 5)); /* 0 is not a measurement */
}

static void test_margin_rule(void)
{
    const char *const rd[] = {"recursive_doubling"};
    const char *const two[] = {"rsag", "ring"};
    tune_point_t pt;

    /* 10 % faster, no noise: bufpool takes it (3 % margin). */
    const double r90[][TUNE_MAX_REPS] = {{0.9, 0.9, 0.9, 0.9, 0.9}};
    make_point(&pt, 5, flat, rd, r90, 1);
    tune_decide_point(&pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING == pt.v.alg && TUNE_FASTER == pt.v.why);
    UNIT_CHECK(fabs(pt.v.ratio - 0.9) < 1e-12 && 0 == pt.v.noise && 5 == pt.v.reps);
    UNIT_CHECK(fabs(pt.v.margin - 0.03) < 1e-12 && 10 == pt.v.prev_us);
    /* The same with a 10 % minimum margin: not by enough. */
    tune_decide_point(&pt, 0.10);
    UNIT_CHECK(BUFPOOL_ALG_PREVIOUS == pt.v.alg && TUNE_WITHIN_NOISE == pt.v.why);
    UNIT_CHECK(0 == strcmp("recursive_doubling", pt.cfg[pt.v.best].name));

    /* 2 % faster: within the minimum margin. */
    const double r98[][TUNE_MAX_REPS] = {{0.98, 0.98, 0.98, 0.98, 0.98}};
    make_point(&pt, 5, flat, rd, r98, 1);
    tune_decide_point(&pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALG_PREVIOUS == pt.v.alg && TUNE_WITHIN_NOISE == pt.v.why);

    /* The A/A pair 6 % apart: 5 % faster is noise, 10 % is not. */
    const double aa6[TUNE_MAX_REPS] = {1.06, 1.06, 1.06, 1.06, 1.06};
    const double r95[][TUNE_MAX_REPS] = {{0.95, 0.95, 0.95, 0.95, 0.95}};
    make_point(&pt, 5, aa6, rd, r95, 1);
    tune_decide_point(&pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALG_PREVIOUS == pt.v.alg && fabs(pt.v.noise - 0.06) < 1e-9);
    UNIT_CHECK(fabs(pt.v.aa - 1.06) < 1e-12);
    make_point(&pt, 5, aa6, rd, r90, 1);
    tune_decide_point(&pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING == pt.v.alg);
    UNIT_CHECK(fabs(pt.v.margin - 0.06) < 1e-9);
    /* An A/A pair that spreads: half its interquartile range is noise. */
    const double aa_wide[TUNE_MAX_REPS] = {0.8, 0.9, 1.0, 1.1, 1.2};
    make_point(&pt, 5, aa_wide, rd, r90, 1);
    tune_decide_point(&pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALG_PREVIOUS == pt.v.alg && fabs(pt.v.noise - 0.1) < 1e-9);
    UNIT_CHECK(fabs(pt.v.aa_spread - 0.1) < 1e-9);

    /* An algorithm whose repetitions spread: its median alone is not enough. */
    const double erratic[][TUNE_MAX_REPS] = {{0.5, 0.9, 1.3, 0.7, 1.1}};
    make_point(&pt, 5, flat, rd, erratic, 1);
    tune_decide_point(&pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALG_PREVIOUS == pt.v.alg && fabs(pt.v.noise - 0.2) < 1e-9);

    /* Of two, the faster of those beyond their noise takes it: ring's
     * median is lower but it spreads. */
    const double mixed[][TUNE_MAX_REPS] = {{0.8, 0.8, 0.8, 0.8, 0.8}, {0.1, 0.3, 0.75, 1.0, 1.2}};
    make_point(&pt, 5, flat, two, mixed, 2);
    tune_decide_point(&pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALLREDUCE_RSAG == pt.v.alg && fabs(pt.v.ratio - 0.8) < 1e-12);
    UNIT_CHECK(0 == strcmp("rsag", pt.cfg[pt.v.best].name));
    /* Both beyond their noise: the faster. */
    const double both[][TUNE_MAX_REPS] = {{0.8, 0.8, 0.8, 0.8, 0.8}, {0.7, 0.7, 0.7, 0.7, 0.7}};
    make_point(&pt, 5, flat, two, both, 2);
    tune_decide_point(&pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALLREDUCE_RING == pt.v.alg);
    /* Slower everywhere. */
    const double slow[][TUNE_MAX_REPS] = {{1.2, 1.2, 1.2, 1.2, 1.2}, {1.5, 1.5, 1.5, 1.5, 1.5}};
    make_point(&pt, 5, flat, two, slow, 2);
    tune_decide_point(&pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALG_PREVIOUS == pt.v.alg && TUNE_SLOWER == pt.v.why);
    UNIT_CHECK(0 == strcmp("rsag", pt.cfg[pt.v.best].name) && fabs(pt.v.ratio - 1.2) < 1e-12);
}

static void test_left_out(void)
{
    const char *const two[] = {"rsag", "ring"};
    const double both[][TUNE_MAX_REPS] = {{0.8, 0.8, 0.8, 0.8, 0.8}, {0.7, 0.7, 0.7, 0.7, 0.7}};
    tune_point_t pt;
    /* A wrong result or a hand-back leaves an algorithm out. */
    make_point(&pt, 5, flat, two, both, 2);
    pt.cfg[3].wrong = true; /* ring */
    tune_decide_point(&pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALLREDUCE_RSAG == pt.v.alg);
    pt.cfg[2].handed_back = true; /* rsag */
    tune_decide_point(&pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALG_PREVIOUS == pt.v.alg && TUNE_NONE_SERVED == pt.v.why && pt.v.best < 0);
    /* The previous module wrong: the fastest correct algorithm, even slower. */
    const double slow[][TUNE_MAX_REPS] = {{1.2, 1.2, 1.2, 1.2, 1.2}, {1.5, 1.5, 1.5, 1.5, 1.5}};
    make_point(&pt, 5, flat, two, slow, 2);
    pt.cfg[0].wrong = true;
    tune_decide_point(&pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALLREDUCE_RSAG == pt.v.alg && TUNE_PREVIOUS_WRONG == pt.v.why);
    /* No measurement of the previous module: nothing to compare with. */
    make_point(&pt, 5, flat, two, both, 2);
    for (int r = 0; r < TUNE_MAX_REPS; r++) {
        pt.cfg[0].t[r] = NAN;
    }
    tune_decide_point(&pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALG_PREVIOUS == pt.v.alg && TUNE_NO_REFERENCE == pt.v.why);
    /* Repetitions missing on one side are left out of the ratio. */
    make_point(&pt, 5, flat, two, both, 2);
    pt.cfg[3].t[0] = pt.cfg[3].t[1] = NAN;
    tune_decide_point(&pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALLREDUCE_RING == pt.v.alg && 3 == pt.v.reps);
}

static void test_sizes(void)
{
    static const struct {
        size_t v;
        const char *text;
    } cases[] = {{0, "0"},
                 {3, "3"},
                 {16, "16"},
                 {1023, "1K-1"},
                 {1024, "1K"},
                 {1025, "1K+1"},
                 {1536, "1536"},
                 {65535, "64K-1"},
                 {(size_t)2 << 20, "2M"},
                 {((size_t)2 << 20) - 1, "2M-1"},
                 {(size_t)3 << 30, "3G"},
                 {((size_t)1 << 30) + 1, "1G+1"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[32];
        tune_format_size(cases[i].v, buf, sizeof(buf));
        if (0 != strcmp(buf, cases[i].text)) {
            fprintf(stderr, "tune_format_size(%zu) = %s, expected %s\n", cases[i].v, buf,
                    cases[i].text);
            unit_failures++;
        }
    }
    char buf[64];
    tune_format_bytes_range(0, SIZE_MAX, buf, sizeof(buf));
    UNIT_CHECK(0 == strcmp(buf, "*"));
    tune_format_bytes_range(16, 1023, buf, sizeof(buf));
    UNIT_CHECK(0 == strcmp(buf, "16..1K-1"));
    tune_format_bytes_range(1 << 20, SIZE_MAX, buf, sizeof(buf));
    UNIT_CHECK(0 == strcmp(buf, "1M.."));
    tune_format_bytes_range(0, 255, buf, sizeof(buf));
    UNIT_CHECK(0 == strcmp(buf, "..255"));
}

/* Points of allreduce at 2 and 4 ranks, bytes 16, 1K, 64K, 1M, with the
 * given verdicts (-1: previous), and bcast at 2 ranks, all previous. */
static size_t make_grid(tune_point_t *pts, const int alg2[4], const int alg4[4])
{
    static const size_t bytes[4] = {16, 1024, 65536, 1 << 20};
    size_t n = 0;
    for (int p = 4; p >= 2; p -= 2) { /* out of order: rows sort them */
        for (int i = 3; i >= 0; i--) {
            tune_point_t *pt = &pts[n++];
            memset(pt, 0, sizeof(*pt));
            pt->coll = BUFPOOL_COLL_allreduce;
            pt->ranks = p;
            pt->hosts = 1;
            pt->ppn = p;
            pt->size = pt->bytes = bytes[i];
            pt->v.alg = 2 == p ? alg2[i] : alg4[i];
            pt->v.best = -1;
            pt->v.ratio = NAN;
        }
    }
    for (int i = 0; i < 4; i++) {
        tune_point_t *pt = &pts[n++];
        memset(pt, 0, sizeof(*pt));
        pt->coll = BUFPOOL_COLL_bcast;
        pt->ranks = 2;
        pt->hosts = 1;
        pt->ppn = 2;
        pt->size = pt->bytes = bytes[i];
        pt->v.alg = BUFPOOL_ALG_PREVIOUS;
        pt->v.best = -1;
        pt->v.ratio = NAN;
    }
    return n;
}

static void test_rows(void)
{
    const int P = BUFPOOL_ALG_PREVIOUS, RD = BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING,
              RSAG = BUFPOOL_ALLREDUCE_RSAG;
    const int alg2[4] = {P, RD, RD, P}, alg4[4] = {RSAG, RSAG, RSAG, RSAG};
    tune_point_t pts[12];
    size_t n = make_grid(pts, alg2, alg4);
    tune_row_t *rows;
    long nrows = tune_build_rows(pts, n, false, &rows);
    UNIT_REQUIRE(5 == nrows);
    /* allreduce at 2 ranks: previous, recursive doubling (two points
     * merged), previous; ranks 2..3 (up to the next measured size). */
    UNIT_CHECK(BUFPOOL_COLL_allreduce == rows[0].coll && 2 == rows[0].ranks_min &&
               3 == rows[0].ranks_max);
    UNIT_CHECK(P == rows[0].alg && 16 == rows[0].bytes_min && 1023 == rows[0].bytes_max);
    UNIT_CHECK(RD == rows[1].alg && 1024 == rows[1].bytes_min &&
               ((size_t)1 << 20) - 1 == rows[1].bytes_max && 2 == rows[1].last - rows[1].first + 1);
    UNIT_CHECK(P == rows[2].alg && ((size_t)1 << 20) == rows[2].bytes_min &&
               ((size_t)2 << 20) - 1 == rows[2].bytes_max);
    /* allreduce at 4 ranks, the largest measured: one row, 4 ranks alone. */
    UNIT_CHECK(RSAG == rows[3].alg && 4 == rows[3].ranks_min && 4 == rows[3].ranks_max &&
               16 == rows[3].bytes_min && ((size_t)2 << 20) - 1 == rows[3].bytes_max);
    /* bcast measured at 2 ranks only, but 4 was measured in the job. */
    UNIT_CHECK(BUFPOOL_COLL_bcast == rows[4].coll && 2 == rows[4].ranks_min &&
               3 == rows[4].ranks_max && P == rows[4].alg);
    free(rows);

    /* Open-ended: the smallest from 0 bytes, the largest without bound. */
    nrows = tune_build_rows(pts, n, true, &rows);
    UNIT_REQUIRE(5 == nrows);
    UNIT_CHECK(0 == rows[0].bytes_min && SIZE_MAX == rows[2].bytes_max);
    UNIT_CHECK(4 == rows[3].ranks_min && 0 == rows[3].ranks_max && 0 == rows[3].bytes_min &&
               SIZE_MAX == rows[3].bytes_max);

    /* The rows as a rules file: the component's parser reads them, and
     * every point is decided by its own row. */
    char text[8192];
    size_t len = (size_t)snprintf(text, sizeof(text), "bufpool-rules 1\n");
    for (long r = 0; r < nrows; r++) {
        char line[BUFPOOL_RULES_MAX_LINE];
        tune_format_row(&rows[r], pts, line, sizeof(line));
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s\n", line);
        if (BUFPOOL_COLL_allreduce == rows[r].coll) {
            UNIT_CHECK(NULL != strstr(line, " op=commutative form=blocking "));
        } else {
            UNIT_CHECK(NULL == strstr(line, " op=") && NULL != strstr(line, " form=blocking "));
        }
    }
    UNIT_CHECK(NULL != strstr(text, "allreduce ranks=2..3 hosts=1 bytes=..1K-1 op=commutative "
                                    "form=blocking alg=previous measured=\""));
    UNIT_CHECK(NULL != strstr(text, "allreduce ranks=4.. hosts=1 bytes=* op=commutative "
                                    "form=blocking alg=rsag measured=\""));
    char err[512];
    UNIT_CHECK(0 == tune_verify_rules(text, len, "t.rules", pts, n, err, sizeof(err)));
    /* A point the rows decide otherwise is caught. */
    pts[0].v.alg = RSAG; /* allreduce, 2 ranks, 16 bytes: its row says previous */
    UNIT_CHECK(-1 == tune_verify_rules(text, len, "t.rules", pts, n, err, sizeof(err)));
    UNIT_CHECK(NULL != strstr(err, "expected rsag"));
    /* A file the parser refuses is reported. */
    UNIT_CHECK(-1 == tune_verify_rules("bufpool-rules 1\nbcast alg=nope\n", 31, "t.rules", pts, 0,
                                       err, sizeof(err)));
    UNIT_CHECK(NULL != strstr(err, "t.rules:2"));
    free(rows);
}

static void test_raw(void)
{
    static const char text[] =
        "some other output\n"
        "bpt H version 1\n"
        "bpt H date 2026-11-26 12:00 UTC\n"
        "bpt H host vm 2\n"
        "bpt C 2 1 2\n"
        "bpt N allreduce 2 hier: left out (one host)\n"
        "bpt R allreduce 2 1024 previous 0\n"
        "bpt M allreduce 2 1 2 1024 1024 previous 0 100 10.0 9.0 0 nan nan\n"
        "bpt M allreduce 2 1 2 1024 1024 previous/aa 0 100 10.0 9.5 0 nan nan\n"
        "bpt M allreduce 2 1 2 1024 1024 rsag 0 100 8.0 7.0 0 200 0\n"
        "[1,0]<stdout>:bpt M allreduce 2 1 2 1024 1024 ring 0 100 8.0 7.0 0 100 100\n"
        "echo bpt M gather 2 1 2 64 64 previous 0 100 1 1 0 0 0\n" /* not a tag: ignored */
        "bpt M allreduce 2 1 2 1024 1024 recursive_doubling 0 100 8.0 7.0 0 0 0\n"
        "bpt M allreduce 2 1 2 1024 1024 previous 1 100 10.0 9.0 0 nan nan\n"
        "bpt M allreduce 2 1 2 1024 1024 rsag 1 100 8.0 7.0 5 200 0\n"
        "bpt W allreduce 2 ranks 1K rsag: wrong result (left out at this point)\n"
        "bpt M scan 3 1 3 64 64 previous 0 100 2.0 2.0 0 nan nan\n"
        "bpt R scan 3 64 chain 0\n";
    FILE *f = fmemopen((void *)text, sizeof(text) - 1, "r");
    tune_raw_t raw;
    char err[512];
    tune_raw_init(&raw);
    UNIT_REQUIRE(0 == tune_raw_read(f, "p50", &raw, err, sizeof(err)));
    fclose(f);
    UNIT_CHECK(!raw.complete && 0 == strcmp(raw.last_run, "scan 3 64 chain 0") &&
               !raw.last_run_done);
    UNIT_CHECK(0 == strcmp(tune_raw_header(&raw, "date"), "2026-11-26 12:00 UTC"));
    UNIT_CHECK(NULL == tune_raw_header(&raw, "nothing"));
    UNIT_CHECK(2 == raw.nnotes && 'N' == raw.notes[0][0] && 'W' == raw.notes[1][0]);
    UNIT_REQUIRE(2 == raw.npoints);
    tune_point_t *pt = &raw.points[0];
    UNIT_CHECK(BUFPOOL_COLL_allreduce == pt->coll && 2 == pt->ranks && 1024 == pt->bytes &&
               2 == pt->nreps && 5 == pt->ncfg);
    UNIT_CHECK(9.0 == pt->cfg[0].t[0] && 7.0 == pt->cfg[2].t[0]); /* p50 */
    UNIT_CHECK(pt->cfg[2].wrong && !pt->cfg[2].handed_back);      /* rsag: 5 wrong */
    UNIT_CHECK(pt->cfg[3].handed_back);                           /* ring: fallbacks */
    UNIT_CHECK(pt->cfg[4].handed_back);                           /* rd: never served */
    UNIT_CHECK(!pt->cfg[0].handed_back && !pt->cfg[1].handed_back);
    tune_decide_point(pt, 0.03);
    UNIT_CHECK(BUFPOOL_ALG_PREVIOUS == pt->v.alg && TUNE_NONE_SERVED == pt->v.why);
    tune_raw_free(&raw);

    /* The mean instead of the median. */
    f = fmemopen((void *)text, sizeof(text) - 1, "r");
    tune_raw_init(&raw);
    UNIT_REQUIRE(0 == tune_raw_read(f, "mean", &raw, err, sizeof(err)));
    fclose(f);
    UNIT_CHECK(10.0 == raw.points[0].cfg[0].t[0]);
    tune_raw_free(&raw);

    static const char *const bad[] = {
        "bpt M allreduce 2 1 2 1024 1024 previous 0 100 10.0 9.0 0 nan nan\n", /* no version */
        "bpt H version 2\n",
        "bpt H version 1\nbpt M allreduce 2 1 2 1024\n",
        "bpt H version 1\nbpt M allreduce 2 1 2 1024 1024 nope 0 100 1 1 0 0 0\n",
        "bpt H version 1\nbpt M nope 2 1 2 1024 1024 previous 0 100 1 1 0 0 0\n",
        "bpt H version 1\nbpt M allreduce 2 1 2 1024 1024 previous 99 100 1 1 0 0 0\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        f = fmemopen((void *)bad[i], strlen(bad[i]), "r");
        tune_raw_init(&raw);
        UNIT_CHECK(-1 == tune_raw_read(f, "p50", &raw, err, sizeof(err)));
        fclose(f);
        tune_raw_free(&raw);
    }
}

static void test_args(void)
{
    char err[512];
    size_t sizes[TUNE_MAX_SIZES];
    int ranks[TUNE_MAX_RANKS];
    UNIT_CHECK(23 == tune_parse_sizes("4..16M", 1 << 30, sizes, TUNE_MAX_SIZES, err, sizeof(err)));
    UNIT_CHECK(4 == sizes[0] && ((size_t)16 << 20) == sizes[22]);
    UNIT_CHECK(
        4 == tune_parse_sizes("64K,1K,1K,3..5", 1 << 30, sizes, TUNE_MAX_SIZES, err, sizeof(err)));
    UNIT_CHECK(3 == sizes[0] && 5 == sizes[1] && 1024 == sizes[2] && 65536 == sizes[3]);
    static const char *const bad_sizes[] = {"", "0", "16..4", "4..abc", "2G", "1..", "x"};
    for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
        if (tune_parse_sizes(bad_sizes[i], 1 << 30, sizes, TUNE_MAX_SIZES, err, sizeof(err)) >= 0) {
            fprintf(stderr, "--sizes '%s' was accepted\n", bad_sizes[i]);
            unit_failures++;
        }
    }
    UNIT_CHECK(-1 == tune_parse_sizes("1..1G", 1 << 30, sizes, 8, err, sizeof(err)));
    UNIT_CHECK(4 == tune_parse_ranks("2..16", ranks, TUNE_MAX_RANKS, err, sizeof(err)));
    UNIT_CHECK(2 == ranks[0] && 16 == ranks[3]);
    UNIT_CHECK(-1 == tune_parse_ranks("1,2", ranks, TUNE_MAX_RANKS, err, sizeof(err)));
    UNIT_CHECK(-1 == tune_parse_ranks("2K", ranks, TUNE_MAX_RANKS, err, sizeof(err)));
    UNIT_CHECK(3 == tune_default_ranks(6, ranks, TUNE_MAX_RANKS) && 6 == ranks[2]);
    UNIT_CHECK(3 == tune_default_ranks(8, ranks, TUNE_MAX_RANKS) && 8 == ranks[2]);
    UNIT_CHECK(1 == tune_default_ranks(2, ranks, TUNE_MAX_RANKS) && 2 == ranks[0]);

    bool colls[BUFPOOL_NCOLLS];
    UNIT_CHECK(0 == tune_parse_colls("all", colls, err, sizeof(err)));
    for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
        UNIT_CHECK(colls[id]);
    }
    UNIT_CHECK(0 == tune_parse_colls("scan,reduce_scatter_block", colls, err, sizeof(err)));
    UNIT_CHECK(colls[BUFPOOL_COLL_scan] && colls[BUFPOOL_COLL_reduce_scatter_block] &&
               !colls[BUFPOOL_COLL_allreduce]);
    UNIT_CHECK(-1 == tune_parse_colls("allreduce,nope", colls, err, sizeof(err)));
    UNIT_CHECK(NULL != strstr(err, "unknown collective 'nope'"));
    UNIT_CHECK(-1 == tune_parse_colls(",", colls, err, sizeof(err)));

    bool skip[BUFPOOL_NCOLLS][BUFPOOL_MAX_ALGORITHMS] = {{false}};
    UNIT_CHECK(0 == tune_parse_skips("allreduce:ring,bcast:linear", skip, err, sizeof(err)));
    UNIT_CHECK(skip[BUFPOOL_COLL_allreduce][BUFPOOL_ALLREDUCE_RING] &&
               skip[BUFPOOL_COLL_bcast][BUFPOOL_BCAST_LINEAR]);
    UNIT_CHECK(-1 == tune_parse_skips("allreduce", skip, err, sizeof(err)));
    UNIT_CHECK(-1 == tune_parse_skips("allreduce:auto", skip, err, sizeof(err)));
    UNIT_CHECK(-1 == tune_parse_skips("allreduce:previous", skip, err, sizeof(err)));
    UNIT_CHECK(-1 == tune_parse_skips("nope:ring", skip, err, sizeof(err)));
    /* recursive_doubling rsag ring hier node node_rsag hier_node */
    UNIT_CHECK(7 == tune_algorithm_count(BUFPOOL_COLL_allreduce));
}

int main(void)
{
    test_statistics();
    test_margin_rule();
    test_left_out();
    test_sizes();
    test_rows();
    test_raw();
    test_args();
    return unit_finish("test_tune_decide");
}
