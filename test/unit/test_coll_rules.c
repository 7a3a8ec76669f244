/*
 * coll/bufpool's rules (ompi-mca-coll-bufpool/coll_bufpool_rules.c) without
 * MPI: what the parser accepts and every error it reports (file, line and
 * what is wrong; nothing kept from a bad file), how rows match a call, and
 * that a communicator's size map answers every byte count exactly as
 * reading the rows in place does (the map is what the entry of a call
 * looks up).
 */
#include "coll_bufpool_rules.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "unit.h"
#include "unit_rules.h"

#define K ((size_t)1 << 10)
#define M ((size_t)1 << 20)

static int parse(bufpool_rules_t *r, const char *text, char *err, size_t errlen)
{
    return bufpool_rules_parse(r, text, strlen(text), "t.rules", err, errlen);
}

static void test_accepts(void)
{
    bufpool_rules_t r;
    char err[256] = "";
    bufpool_rules_init(&r);
    const char *text = "# a comment first\r\n"
                       "\n"
                       "bufpool-rules 1   # the header may carry a comment\n"
                       "allreduce ranks=16.. hosts=1 bytes=4K..128K alg=previous "
                       "measured=\"16 cores, \\\"p = 16\\\"\"\n"
                       "  bcast ranks=8..15 ppn=8 bytes=16K+1..512K op=any inplace=no "
                       "form=nonblocking alg=binomial seg=64K depth=8\r\n"
                       "reduce op=noncommutative bytes=..1M-1 alg=previous # trailing\n"
                       "scan ranks=3 hosts=2..4 bytes=* alg=chain\n";
    UNIT_CHECK_EQ_U64(parse(&r, text, err, sizeof(err)), 0);
    UNIT_REQUIRE(4 == r.n);
    const bufpool_rule_t *a = &r.rows[0], *b = &r.rows[1], *c = &r.rows[2], *d = &r.rows[3];
    UNIT_CHECK_EQ_U64(a->coll, BUFPOOL_COLL_allreduce);
    UNIT_CHECK_EQ_U64(a->ranks_min, 16);
    UNIT_CHECK_EQ_U64(a->ranks_max, INT_MAX);
    UNIT_CHECK_EQ_U64(a->hosts_min, 1);
    UNIT_CHECK_EQ_U64(a->hosts_max, 1);
    UNIT_CHECK(a->ppn_any);
    UNIT_CHECK_EQ_U64(a->bytes_min, 4 * K);
    UNIT_CHECK_EQ_U64(a->bytes_max, 128 * K);
    UNIT_CHECK_EQ_U64(a->alg, BUFPOOL_ALG_PREVIOUS);
    UNIT_CHECK_EQ_U64(a->line, 4);
    UNIT_CHECK(0 == strcmp(a->why, "auto, rules t.rules:4 (16 cores, \"p = 16\")"));
    UNIT_CHECK_EQ_U64(b->coll, BUFPOOL_COLL_bcast);
    UNIT_CHECK(!b->ppn_any && 8 == b->ppn_min && 8 == b->ppn_max);
    UNIT_CHECK_EQ_U64(b->bytes_min, 16 * K + 1);
    UNIT_CHECK_EQ_U64(b->bytes_max, 512 * K);
    UNIT_CHECK_EQ_U64(b->in_place, BUFPOOL_RULE_NO);
    UNIT_CHECK_EQ_U64(b->commutative, BUFPOOL_RULE_ANY);
    UNIT_CHECK_EQ_U64(b->form, BUFPOOL_FORM_NONBLOCKING);
    UNIT_CHECK_EQ_U64(b->alg, BUFPOOL_BCAST_BINOMIAL);
    UNIT_CHECK_EQ_U64(b->seg_bytes, 64 * K);
    UNIT_CHECK_EQ_U64(b->depth, 8);
    UNIT_CHECK(0 == strcmp(b->why, "auto, rules t.rules:5"));
    UNIT_CHECK_EQ_U64(c->commutative, BUFPOOL_RULE_NO);
    UNIT_CHECK_EQ_U64(c->bytes_min, 0);
    UNIT_CHECK_EQ_U64(c->bytes_max, 1 * M - 1);
    UNIT_CHECK_EQ_U64(d->ranks_min, 3);
    UNIT_CHECK_EQ_U64(d->ranks_max, 3);
    UNIT_CHECK_EQ_U64(d->hosts_min, 2);
    UNIT_CHECK_EQ_U64(d->hosts_max, 4);
    UNIT_CHECK_EQ_U64(d->bytes_max, SIZE_MAX);
    UNIT_CHECK_EQ_U64(d->alg, BUFPOOL_SCAN_CHAIN);
    /* A second file appends after the first. */
    UNIT_CHECK_EQ_U64(parse(&r, "bufpool-rules 1\ngather alg=linear\n", err, sizeof(err)), 0);
    UNIT_CHECK_EQ_U64(r.n, 5);
    bufpool_rules_free(&r);
    UNIT_CHECK_EQ_U64(r.n, 0);
}

/* Every malformed file is refused whole, with its line and the reason. */
static void test_rejects(void)
{
    static const struct {
        const char *text;
        const char *expect; /* in the message, after "t.rules:LINE: " */
        int line;
    } bad[] = {
        {"", "no 'bufpool-rules 1' line", 1},
        {"# only comments\n\n", "no 'bufpool-rules 1' line", 2},
        {"allreduce alg=rsag\n", "the first line must be 'bufpool-rules 1'", 1},
        {"bufpool-rules 2\n", "rules format 2 is not known", 1},
        {"bufpool-rules one\n", "the first line must be", 1},
        {"bufpool-rules 1 extra\n", "the first line must be", 1},
        {"bufpool-rules 1\nallgatherv alg=ring\n", "'allgatherv' is not a collective", 2},
        {"bufpool-rules 1\n\nbcast alg=chain size=4K\n", "unknown key 'size'", 3},
        {"bufpool-rules 1\nbcast alg=chain alg=linear\n", "'alg' is given twice", 2},
        {"bufpool-rules 1\nbcast bytes=4K\n", "a row needs alg=", 2},
        {"bufpool-rules 1\nbcast alg=ring\n", "alg=ring: not an algorithm of bcast", 2},
        {"bufpool-rules 1\nbcast alg=auto\n", "alg=auto: not an algorithm of bcast", 2},
        {"bufpool-rules 1\nbcast alg=\n", "alg: an empty value", 2},
        {"bufpool-rules 1\nbcast chain\n", "'chain' is not key=value", 2},
        {"bufpool-rules 1\nbcast ranks=1 alg=chain\n", "ranks=1: out of range", 2},
        {"bufpool-rules 1\nbcast ranks=8..4 alg=chain\n", "the range is empty", 2},
        {"bufpool-rules 1\nbcast ranks=x alg=chain\n", "ranks: 'x' is not a count", 2},
        {"bufpool-rules 1\nbcast ranks=.. alg=chain\n", "'..' needs at least one end", 2},
        {"bufpool-rules 1\nbcast hosts=0 alg=chain\n", "hosts=0: out of range", 2},
        {"bufpool-rules 1\nbcast bytes=4Q alg=chain\n", "'4Q' is not a size", 2},
        {"bufpool-rules 1\nbcast bytes=4K+x alg=chain\n", "a number of bytes is expected", 2},
        {"bufpool-rules 1\nbcast bytes=1K-2K alg=chain\n", "out of range", 2},
        {"bufpool-rules 1\nbcast bytes=2K..1K alg=chain\n", "the range is empty", 2},
        {"bufpool-rules 1\nbcast op=sum alg=chain\n", "op=sum: expected any, commutative", 2},
        {"bufpool-rules 1\nbcast inplace=maybe alg=chain\n", "inplace=maybe: expected", 2},
        {"bufpool-rules 1\nbcast form=async alg=chain\n", "form=async: expected", 2},
        {"bufpool-rules 1\nbcast alg=chain seg=1K\n", "seg=1K: out of range", 2},
        {"bufpool-rules 1\nbcast alg=chain seg=4K..8K\n", "one size, not a range", 2},
        {"bufpool-rules 1\nbcast alg=chain depth=0\n", "depth=0", 2},
        {"bufpool-rules 1\nbcast alg=chain depth=65\n", "depth=65", 2},
        {"bufpool-rules 1\nbcast alg=previous seg=64K\n", "seg and depth apply", 2},
        {"bufpool-rules 1\nbcast alg=chain measured=\"open\n", "a quoted value is not closed", 2},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        bufpool_rules_t r;
        char err[256] = "", want[64];
        bufpool_rules_init(&r);
        /* A good row first: nothing of it may stay behind. */
        UNIT_CHECK_EQ_U64(parse(&r, "bufpool-rules 1\ngather alg=linear\n", err, sizeof(err)), 0);
        UNIT_CHECK_EQ_U64(parse(&r, bad[i].text, err, sizeof(err)), (uint64_t)-1);
        snprintf(want, sizeof(want), "t.rules:%d: ", bad[i].line);
        if (0 != strncmp(err, want, strlen(want)) || NULL == strstr(err, bad[i].expect)) {
            fprintf(stderr, "case %zu: message '%s', expected '%s...%s'\n", i, err, want,
                    bad[i].expect);
            unit_failures++;
        }
        UNIT_CHECK_EQ_U64(r.n, 1);
        bufpool_rules_free(&r);
    }
    /* A NUL byte and an overlong line. */
    bufpool_rules_t r;
    char err[256];
    bufpool_rules_init(&r);
    const char nul[] = "bufpool-rules 1\nbcast alg=chain\0 x\n";
    UNIT_CHECK_EQ_U64(bufpool_rules_parse(&r, nul, sizeof(nul) - 1, "t.rules", err, sizeof(err)),
                      (uint64_t)-1);
    UNIT_CHECK(NULL != strstr(err, "t.rules:2: a NUL byte"));
    static char longline[BUFPOOL_RULES_MAX_LINE + 64];
    snprintf(longline, sizeof(longline), "bufpool-rules 1\nbcast alg=chain measured=\"");
    memset(longline + strlen(longline), 'x', BUFPOOL_RULES_MAX_LINE);
    UNIT_CHECK_EQ_U64(parse(&r, longline, err, sizeof(err)), (uint64_t)-1);
    UNIT_CHECK(NULL != strstr(err, "t.rules:2: a line longer than"));
    UNIT_CHECK_EQ_U64(r.n, 0);
    bufpool_rules_free(&r);
}

static bufpool_shape_t shape(int ranks, int hosts, int ppn, bool commutative, bool in_place)
{
    return (bufpool_shape_t){.ranks = ranks,
                             .hosts = hosts,
                             .ppn = ppn,
                             .commutative = commutative,
                             .in_place = in_place,
                             .form = BUFPOOL_FORM_BLOCKING};
}

static void test_matching(void)
{
    bufpool_rules_t r;
    char err[256];
    bufpool_rules_init(&r);
    UNIT_REQUIRE(0 == parse(&r,
                            "bufpool-rules 1\n"
                            "allreduce hosts=1 bytes=..1K alg=previous\n"          /* 0 */
                            "allreduce op=noncommutative alg=recursive_doubling\n" /* 1 */
                            "allreduce inplace=yes bytes=..64K alg=ring\n"         /* 2 */
                            "allreduce ppn=4 alg=hier\n"                           /* 3 */
                            "allreduce form=nonblocking alg=ring\n"                /* 4 */
                            "allreduce ranks=2..3 alg=rsag\n",                     /* 5 */
                            err, sizeof(err)));
    bufpool_shape_t s = shape(2, 0, 0, true, false);
    const bufpool_coll_id_t A = BUFPOOL_COLL_allreduce;
    UNIT_CHECK(&r.rows[0] == bufpool_rules_match(&r, A, &s, 1024)); /* hosts 0 is one host */
    UNIT_CHECK(&r.rows[5] == bufpool_rules_match(&r, A, &s, 1025)); /* first match in order */
    UNIT_CHECK(NULL == bufpool_rules_match(&r, BUFPOOL_COLL_reduce, &s, 1025));
    s.hosts = 2;
    UNIT_CHECK(&r.rows[5] == bufpool_rules_match(&r, A, &s, 10));
    s.commutative = false;
    UNIT_CHECK(&r.rows[1] == bufpool_rules_match(&r, A, &s, 10));
    s = shape(8, 2, 0, true, true);
    UNIT_CHECK(&r.rows[2] == bufpool_rules_match(&r, A, &s, 64 * K));
    /* An unknown ppn never meets a row that names one. */
    UNIT_CHECK(NULL == bufpool_rules_match(&r, A, &s, 64 * K + 1));
    s.ppn = 4;
    UNIT_CHECK(&r.rows[3] == bufpool_rules_match(&r, A, &s, 64 * K + 1));
    s.ppn = 5;
    s.form = BUFPOOL_FORM_NONBLOCKING;
    UNIT_CHECK(&r.rows[4] == bufpool_rules_match(&r, A, &s, 64 * K + 1));
    /* A forced algorithm wins over every row; without a row, DEFAULT. */
    bufpool_choice_t c = bufpool_rules_choose(&r, A, &s, 10, BUFPOOL_ALLREDUCE_RSAG, NULL);
    UNIT_CHECK(BUFPOOL_SOURCE_FORCED == c.source && BUFPOOL_ALLREDUCE_RSAG == c.alg);
    s.form = BUFPOOL_FORM_BLOCKING;
    c = bufpool_rules_choose(&r, A, &s, 64 * K + 1, BUFPOOL_ALG_AUTO, "note");
    UNIT_CHECK(BUFPOOL_SOURCE_DEFAULT == c.source && BUFPOOL_ALG_AUTO == c.alg);
    UNIT_CHECK(0 == strcmp(c.note, "note"));
    bufpool_rules_free(&r);
}

/* The size map against the rows read in place, at every byte count where
 * an answer may change and either side of it. */
static unsigned long long rng = 88172645463325252ull;
static unsigned long long next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void check_map(const bufpool_rules_t *r, bufpool_coll_id_t coll, const bufpool_shape_t *s,
                      size_t min_size, int forced)
{
    bufpool_range_t *map = malloc(BUFPOOL_MAP_RANGES(r->n) * sizeof(*map));
    UNIT_REQUIRE(NULL != map);
    const size_t n = bufpool_sizemap_build(r, coll, s, min_size, forced, NULL, map);
    UNIT_REQUIRE(n >= 1 && n <= BUFPOOL_MAP_RANGES(r->n));
    UNIT_CHECK_EQ_U64(map[n - 1].bytes_max, SIZE_MAX);
    for (size_t i = 1; i < n; i++) {
        UNIT_CHECK(map[i].bytes_max > map[i - 1].bytes_max);
    }
    /* Probes: every row boundary +-1, min_size +-1, random sizes. */
    size_t probes[64], np = 0;
    probes[np++] = 0;
    probes[np++] = SIZE_MAX;
    for (size_t i = 0; i + 1 < n && np + 3 < 60; i++) {
        probes[np++] = map[i].bytes_max;
        probes[np++] = map[i].bytes_max + 1;
    }
    if (min_size > 0) {
        probes[np++] = min_size - 1;
        probes[np++] = min_size;
    }
    while (np < 64) {
        probes[np++] = (size_t)(next_rand() % ((size_t)1 << (next_rand() % 34)));
    }
    for (size_t i = 0; i < np; i++) {
        const size_t bytes = probes[i];
        const bufpool_choice_t *got = &bufpool_sizemap_find(map, bytes)->choice;
        bufpool_choice_t want =
            bytes < min_size
                ? (bufpool_choice_t){.alg = BUFPOOL_ALG_PREVIOUS, .source = BUFPOOL_SOURCE_MIN_SIZE}
                : bufpool_rules_choose(r, coll, s, bytes, forced, NULL);
        if (got->alg != want.alg || got->source != want.source || got->rule != want.rule) {
            fprintf(stderr, "map of %s p=%d hosts=%d at %zu: alg %d source %d, rows say %d %d\n",
                    bufpool_coll_names[coll], s->ranks, s->hosts, bytes, got->alg, got->source,
                    want.alg, want.source);
            unit_failures++;
        }
    }
    free(map);
}

static void test_sizemaps(void)
{
    const bufpool_rules_t *dflt = unit_default_rules();
    static const int ranks[] = {2, 3, 4, 8, 15, 16, 17, 64};
    for (int coll = 0; coll < BUFPOOL_NCOLLS; coll++) {
        for (size_t i = 0; i < sizeof(ranks) / sizeof(*ranks); i++) {
            for (int hosts = 1; hosts <= 5; hosts += 1) {
                for (int cls = 0; cls < 4; cls++) {
                    const bufpool_shape_t s =
                        shape(ranks[i], hosts, (ranks[i] + hosts - 1) / hosts, cls & 2, cls & 1);
                    check_map(dflt, (bufpool_coll_id_t)coll, &s, 0, BUFPOOL_ALG_AUTO);
                    check_map(dflt, (bufpool_coll_id_t)coll, &s, 3000, BUFPOOL_ALG_AUTO);
                    check_map(dflt, (bufpool_coll_id_t)coll, &s, 64 * K, 1);
                }
            }
        }
    }
    /* Overlapping rows of a user's file before the defaults. */
    bufpool_rules_t r;
    char err[256];
    bufpool_rules_init(&r);
    UNIT_REQUIRE(0 == parse(&r,
                            "bufpool-rules 1\n"
                            "bcast bytes=100..200 alg=chain seg=8K\n"
                            "bcast bytes=150..300 alg=previous\n"
                            "bcast bytes=0..0 alg=linear\n"
                            "bcast bytes=1G.. alg=binomial depth=2\n",
                            err, sizeof(err)));
    UNIT_REQUIRE(0 == bufpool_rules_append(&r, dflt));
    for (int p = 2; p <= 32; p *= 2) {
        const bufpool_shape_t s = shape(p, 1, p, true, false);
        check_map(&r, BUFPOOL_COLL_bcast, &s, 0, BUFPOOL_ALG_AUTO);
        check_map(&r, BUFPOOL_COLL_bcast, &s, 150, BUFPOOL_ALG_AUTO);
    }
    /* The ranges of p = 2, in order. */
    bufpool_range_t map[BUFPOOL_MAP_RANGES(16)];
    bufpool_rules_t four;
    bufpool_rules_init(&four);
    UNIT_REQUIRE(0 == parse(&four,
                            "bufpool-rules 1\n"
                            "bcast bytes=100..200 alg=chain seg=8K\n"
                            "bcast bytes=150..300 alg=previous\n"
                            "bcast bytes=0..0 alg=linear\n"
                            "bcast bytes=1G.. alg=binomial depth=2\n",
                            err, sizeof(err)));
    const bufpool_shape_t two = shape(2, 1, 2, true, false);
    size_t n =
        bufpool_sizemap_build(&four, BUFPOOL_COLL_bcast, &two, 0, BUFPOOL_ALG_AUTO, NULL, map);
    UNIT_CHECK_EQ_U64(n, 6);
    UNIT_CHECK(0 == map[0].bytes_max && BUFPOOL_BCAST_LINEAR == map[0].choice.alg);
    UNIT_CHECK(99 == map[1].bytes_max && BUFPOOL_SOURCE_DEFAULT == map[1].choice.source);
    UNIT_CHECK(200 == map[2].bytes_max && 8 * K == map[2].choice.seg_bytes);
    UNIT_CHECK(300 == map[3].bytes_max && BUFPOOL_ALG_PREVIOUS == map[3].choice.alg);
    UNIT_CHECK(((size_t)1 << 30) - 1 == map[4].bytes_max);
    UNIT_CHECK(SIZE_MAX == map[5].bytes_max && 2 == map[5].choice.depth);
    /* min_size in the middle of a row splits it. */
    n = bufpool_sizemap_build(&four, BUFPOOL_COLL_bcast, &two, 120, BUFPOOL_ALG_AUTO, NULL, map);
    UNIT_CHECK(119 == map[0].bytes_max && BUFPOOL_SOURCE_MIN_SIZE == map[0].choice.source);
    UNIT_CHECK(200 == map[1].bytes_max && BUFPOOL_BCAST_CHAIN == map[1].choice.alg);
    bufpool_rules_free(&four);
    bufpool_rules_free(&r);
}

/* The default rules: parsed, every collective has rows, the hand-backs of
 * small 2-rank calls are there (the entry of such calls must cost nothing
 * over the previous module's). */
static void test_default_rules(void)
{
    const bufpool_rules_t *r = unit_default_rules();
    int per_coll[BUFPOOL_NCOLLS] = {0};
    for (size_t i = 0; i < r->n; i++) {
        per_coll[r->rows[i].coll]++;
        UNIT_CHECK(NULL != strstr(r->rows[i].why, BUFPOOL_DEFAULT_RULES_NAME ":"));
    }
    for (int c = 0; c < BUFPOOL_NCOLLS; c++) {
        if (0 == per_coll[c]) {
            fprintf(stderr, "no default row for %s\n", bufpool_coll_names[c]);
            unit_failures++;
        }
    }
}

/* The info key coll_bufpool_algorithm: a list, all or nothing. */
static void test_algorithm_list(void)
{
    int forced[BUFPOOL_NCOLLS] = {0};
    char err[256];
    UNIT_CHECK(strlen(BUFPOOL_ALGORITHM_INFO_KEY) < 36); /* MPI_MAX_INFO_KEY of Open MPI */
    UNIT_CHECK(0 == bufpool_algorithm_list_parse("reduce_scatter_block:ring,bcast:previous,"
                                                 "allreduce:rsag",
                                                 forced, err, sizeof(err)));
    UNIT_CHECK(BUFPOOL_REDUCE_SCATTER_BLOCK_RING == forced[BUFPOOL_COLL_reduce_scatter_block]);
    UNIT_CHECK(BUFPOOL_ALG_PREVIOUS == forced[BUFPOOL_COLL_bcast]);
    UNIT_CHECK(BUFPOOL_ALLREDUCE_RSAG == forced[BUFPOOL_COLL_allreduce]);
    UNIT_CHECK(BUFPOOL_ALG_AUTO == forced[BUFPOOL_COLL_reduce]);
    UNIT_CHECK(0 == bufpool_algorithm_list_parse("allreduce:auto", forced, err, sizeof(err)));
    UNIT_CHECK(BUFPOOL_ALG_AUTO == forced[BUFPOOL_COLL_allreduce]);
    UNIT_CHECK(0 == bufpool_algorithm_list_parse("", forced, err, sizeof(err)));
    /* A bad entry anywhere changes nothing. */
    static const char *const bad[] = {"bcast",  "bcast:ring", "allreduce:rsag,nope:ring",
                                      ":chain", "reduce:",    "scan:chain,,"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int before[BUFPOOL_NCOLLS];
        memcpy(before, forced, sizeof(before));
        UNIT_CHECK(-1 == bufpool_algorithm_list_parse(bad[i], forced, err, sizeof(err)));
        UNIT_CHECK(0 == memcmp(before, forced, sizeof(before)));
    }
    /* A trailing comma ends the list. */
    UNIT_CHECK(0 == bufpool_algorithm_list_parse("scan:chain,", forced, err, sizeof(err)));
    UNIT_CHECK(BUFPOOL_SCAN_CHAIN == forced[BUFPOOL_COLL_scan]);
    UNIT_CHECK(
        0 != bufpool_algorithm_list_parse("allreduce:rsag,nope:ring", forced, err, sizeof(err)) &&
        NULL != strstr(err, "'nope' is not a collective"));
    UNIT_CHECK(BUFPOOL_ALG_AUTO == forced[BUFPOOL_COLL_allreduce]);
}

/* The default rows of the nonblocking and persistent forms at 2 ranks
 * (measured against libnbc): small data movement goes to libnbc, and a
 * blocking-only row leaves the other forms alone. */
static void test_default_form_rows(void)
{
    const bufpool_rules_t *r = unit_default_rules();
    bufpool_shape_t s = shape(2, 1, 2, true, false);
    const int P = BUFPOOL_ALG_PREVIOUS;
    s.form = BUFPOOL_FORM_NONBLOCKING;
    UNIT_CHECK_EQ_U64(bufpool_rules_choose(r, BUFPOOL_COLL_bcast, &s, 64 * M, 0, NULL).alg, P);
    UNIT_CHECK_EQ_U64(bufpool_rules_choose(r, BUFPOOL_COLL_allgather, &s, 2 * K, 0, NULL).alg, P);
    UNIT_CHECK(P != bufpool_rules_choose(r, BUFPOOL_COLL_allgather, &s, 2 * K + 1, 0, NULL).alg);
    UNIT_CHECK_EQ_U64(bufpool_rules_choose(r, BUFPOOL_COLL_alltoall, &s, 64 * K, 0, NULL).alg, P);
    UNIT_CHECK_EQ_U64(bufpool_rules_choose(r, BUFPOOL_COLL_alltoall, &s, 64 * K + 1, 0, NULL).alg,
                      BUFPOOL_ALLTOALL_LINEAR);
    UNIT_CHECK_EQ_U64(bufpool_rules_choose(r, BUFPOOL_COLL_gather, &s, 1, 0, NULL).alg, P);
    UNIT_CHECK_EQ_U64(bufpool_rules_choose(r, BUFPOOL_COLL_scatter, &s, 16 * K, 0, NULL).alg, P);
    UNIT_CHECK(P != bufpool_rules_choose(r, BUFPOOL_COLL_scatter, &s, 16 * K + 1, 0, NULL).alg);
    /* The blocking form's allreduce hand-back up to 4 KiB is not theirs. */
    UNIT_CHECK(P != bufpool_rules_choose(r, BUFPOOL_COLL_allreduce, &s, 2 * K, 0, NULL).alg);
    s.form = BUFPOOL_FORM_PERSISTENT;
    UNIT_CHECK_EQ_U64(bufpool_rules_choose(r, BUFPOOL_COLL_allreduce, &s, 256, 0, NULL).alg, P);
    UNIT_CHECK(P != bufpool_rules_choose(r, BUFPOOL_COLL_allreduce, &s, 512, 0, NULL).alg);
    UNIT_CHECK_EQ_U64(bufpool_rules_choose(r, BUFPOOL_COLL_alltoall, &s, 128 * K, 0, NULL).alg, P);
    UNIT_CHECK(P != bufpool_rules_choose(r, BUFPOOL_COLL_scatter, &s, 8 * K + 1, 0, NULL).alg);
    UNIT_CHECK_EQ_U64(bufpool_rules_choose(r, BUFPOOL_COLL_bcast, &s, 1, 0, NULL).alg, P);
    s.form = BUFPOOL_FORM_BLOCKING;
    UNIT_CHECK_EQ_U64(bufpool_rules_choose(r, BUFPOOL_COLL_bcast, &s, 64 * M, 0, NULL).alg, P);
    UNIT_CHECK_EQ_U64(bufpool_rules_choose(r, BUFPOOL_COLL_allreduce, &s, 2 * K, 0, NULL).alg, P);
}

int main(void)
{
    test_accepts();
    test_algorithm_list();
    test_rejects();
    test_matching();
    test_sizemaps();
    test_default_rules();
    test_default_form_rows();
    return unit_finish("test_coll_rules");
}
