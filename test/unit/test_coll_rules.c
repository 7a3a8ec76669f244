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
                       "scan ranks=3 hosts=2..4 bytes=* alg=chain\n"
                       "allgather hosts=1 bytes=4K+1.. alg=node_cma\n";
    UNIT_CHECK_EQ_U64(parse(&r, text, err, sizeof(err)), 0);
    UNIT_REQUIRE(5 == r.n);
    UNIT_CHECK_EQ_U64(r.rows[4].alg, BUFPOOL_ALLGATHER_NODE_CMA);
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
    UNIT_CHECK_EQ_U64(r.n, 6);
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
        {"bufpool-rules 1\nreduce alg=node_cma\n", "alg=node_cma: not an algorithm of reduce", 2},
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
    /* bcast's and allgather's node_cma, by name, and nobody else's. */
    UNIT_CHECK(0 == bufpool_algorithm_list_parse("bcast:node_cma,allgather:node_cma", forced, err,
                                                 sizeof(err)));
    UNIT_CHECK(BUFPOOL_BCAST_NODE_CMA == forced[BUFPOOL_COLL_bcast]);
    UNIT_CHECK(BUFPOOL_ALLGATHER_NODE_CMA == forced[BUFPOOL_COLL_allgather]);
    UNIT_CHECK(-1 == bufpool_algorithm_list_parse("allreduce:node_cma", forced, err, sizeof(err)));
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
    /* reduce at 4 ranks on one host around 64 KiB: the blocking form goes
     * back to tuned, MPI_Ireduce (0.81 x libnbc there) stays served. */
    s = shape(4, 1, 4, true, false);
    UNIT_CHECK_EQ_U64(bufpool_rules_choose(r, BUFPOOL_COLL_reduce, &s, 64 * K, 0, NULL).alg, P);
    UNIT_CHECK_EQ_U64(bufpool_rules_choose(r, BUFPOOL_COLL_allgather, &s, 1 * M, 0, NULL).alg, P);
    s.form = BUFPOOL_FORM_NONBLOCKING;
    UNIT_CHECK_EQ_U64(bufpool_rules_choose(r, BUFPOOL_COLL_reduce, &s, 64 * K, 0, NULL).alg,
                      BUFPOOL_REDUCE_BINARY);
    UNIT_CHECK(P != bufpool_rules_choose(r, BUFPOOL_COLL_allgather, &s, 1 * M, 0, NULL).alg);
}

/* Provenance directives: @source names a text once, @from gives it to the
 * rows after it, a row's from= overrides; the reason reads "SOURCE:
 * MEASURED", exactly as the same row with the whole text in measured=. */
static void test_directives(void)
{
    bufpool_rules_t r, flat;
    char err[256] = "";
    bufpool_rules_init(&r);
    bufpool_rules_init(&flat);
    UNIT_CHECK_EQ_U64(
        parse(&r,
              "bufpool-rules 1\n"
              "@source p16 \"16 cores, p = 16\"   # a comment\n"
              "@source two-ranks \"2 cores, 2 ranks (\\\"quoted\\\")\"\n"
              "bcast ranks=2 alg=previous measured=\"before any @from\"\n"
              "@from p16\n"
              "bcast ranks=16.. bytes=..4K alg=previous measured=\"tuned's binomial\"\n"
              "bcast ranks=16.. alg=chain\n"
              "bcast ranks=3 alg=linear from=two-ranks measured=\"one message\"\n"
              "bcast ranks=4 alg=linear from=none measured=\"its own text\"\n"
              "@from none\n"
              "bcast ranks=5 alg=linear\n"
              "  @from two-ranks\n"
              "bcast ranks=6 alg=linear measured=\"\"\n",
              err, sizeof(err)),
        0);
    UNIT_REQUIRE(7 == r.n);
    static const char *const want[] = {
        "auto, rules t.rules:4 (before any @from)",
        "auto, rules t.rules:6 (16 cores, p = 16: tuned's binomial)",
        "auto, rules t.rules:7 (16 cores, p = 16)",
        "auto, rules t.rules:8 (2 cores, 2 ranks (\"quoted\"): one message)",
        "auto, rules t.rules:9 (its own text)",
        "auto, rules t.rules:11",
        "auto, rules t.rules:13 (2 cores, 2 ranks (\"quoted\"))",
    };
    for (size_t i = 0; i < r.n; i++) {
        if (0 != strcmp(r.rows[i].why, want[i])) {
            fprintf(stderr, "row %zu: '%s', expected '%s'\n", i, r.rows[i].why, want[i]);
            unit_failures++;
        }
    }
    /* The same rows written out in full (format 1 without directives). */
    UNIT_CHECK_EQ_U64(
        parse(&flat,
              "bufpool-rules 1\n\n\n"
              "bcast ranks=2 alg=previous measured=\"before any @from\"\n\n"
              "bcast ranks=16.. bytes=..4K alg=previous measured=\"16 cores, p = 16: tuned's "
              "binomial\"\n"
              "bcast ranks=16.. alg=chain measured=\"16 cores, p = 16\"\n"
              "bcast ranks=3 alg=linear measured=\"2 cores, 2 ranks (\\\"quoted\\\"): one "
              "message\"\n"
              "bcast ranks=4 alg=linear measured=\"its own text\"\n\n"
              "bcast ranks=5 alg=linear\n\n"
              "bcast ranks=6 alg=linear measured=\"2 cores, 2 ranks (\\\"quoted\\\")\"\n",
              err, sizeof(err)),
        0);
    UNIT_REQUIRE(7 == flat.n);
    for (size_t i = 0; i < r.n; i++) {
        UNIT_CHECK(0 == strcmp(r.rows[i].why, flat.rows[i].why));
        UNIT_CHECK_EQ_U64(r.rows[i].ranks_min, flat.rows[i].ranks_min);
    }
    /* Directives are the file's own: a second file starts without them. */
    UNIT_CHECK_EQ_U64(parse(&r, "bufpool-rules 1\nbcast alg=chain from=p16\n", err, sizeof(err)),
                      (uint64_t)-1);
    UNIT_CHECK(NULL != strstr(err, "t.rules:2: from=p16: no '@source p16' above this line"));
    UNIT_CHECK_EQ_U64(r.n, 7);
    bufpool_rules_free(&r);
    bufpool_rules_free(&flat);
}

/* Every malformed directive is refused whole, with its line. */
static void test_directive_rejects(void)
{
    static const struct {
        const char *text;
        const char *expect;
        int line;
    } bad[] = {
        {"bufpool-rules 1\n@define x \"y\"\n", "'@define' is not a directive", 2},
        {"bufpool-rules 1\n@source\n", "expected '@source NAME \"TEXT\"'", 2},
        {"bufpool-rules 1\n@source x\n", "expected '@source NAME \"TEXT\"'", 2},
        {"bufpool-rules 1\n@source x \"a\" \"b\"\n", "expected '@source NAME \"TEXT\"'", 2},
        {"bufpool-rules 1\n@source x \"\"\n", "@source x: the text must be 1 to 512", 2},
        {"bufpool-rules 1\n@source a/b \"t\"\n", "@source a/b: a name is 1 to 32", 2},
        {"bufpool-rules 1\n@source none \"t\"\n", "'none' means no source", 2},
        {"bufpool-rules 1\n@source x \"t\"\n\n@source x \"u\"\n", "x: already defined at line 2",
         4},
        {"bufpool-rules 1\n@source x \"open\n", "a quoted value is not closed", 2},
        {"bufpool-rules 1\n@from\n", "expected '@from NAME'", 2},
        {"bufpool-rules 1\n@from x y\n", "expected '@from NAME'", 2},
        {"bufpool-rules 1\n@from x\n", "@from x: no '@source x' above this line", 2},
        {"bufpool-rules 1\nbcast alg=chain from=x\n@source x \"t\"\n", "from=x: no '@source x'", 2},
        {"bufpool-rules 1\nbcast alg=chain from=\n", "from: an empty value", 2},
        {"bufpool-rules 1\n@source x \"t\"\nbcast alg=chain from=x from=x\n",
         "'from' is given twice", 3},
        {"@source x \"t\"\nbufpool-rules 1\n", "the first line must be 'bufpool-rules 1'", 1},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        bufpool_rules_t r;
        char err[256] = "", want[64];
        bufpool_rules_init(&r);
        UNIT_CHECK_EQ_U64(parse(&r, "bufpool-rules 1\ngather alg=linear\n", err, sizeof(err)), 0);
        UNIT_CHECK_EQ_U64(parse(&r, bad[i].text, err, sizeof(err)), (uint64_t)-1);
        snprintf(want, sizeof(want), "t.rules:%d: ", bad[i].line);
        if (0 != strncmp(err, want, strlen(want)) || NULL == strstr(err, bad[i].expect)) {
            fprintf(stderr, "directive case %zu: message '%s', expected '%s...%s'\n", i, err, want,
                    bad[i].expect);
            unit_failures++;
        }
        UNIT_CHECK_EQ_U64(r.n, 1);
        bufpool_rules_free(&r);
    }
    /* At most BUFPOOL_RULES_MAX_SOURCES of them. */
    static char many[(BUFPOOL_RULES_MAX_SOURCES + 2) * 32];
    size_t n = (size_t)snprintf(many, sizeof(many), "bufpool-rules 1\n");
    for (int i = 0; i <= BUFPOOL_RULES_MAX_SOURCES; i++) {
        n += (size_t)snprintf(many + n, sizeof(many) - n, "@source s%d \"t\"\n", i);
    }
    bufpool_rules_t r;
    char err[256];
    bufpool_rules_init(&r);
    UNIT_CHECK_EQ_U64(parse(&r, many, err, sizeof(err)), (uint64_t)-1);
    UNIT_CHECK(NULL != strstr(err, "more than 256 @source directives"));
    bufpool_rules_free(&r);
}

/* The lint. */
typedef struct lint_seen {
    size_t n;
    bufpool_lint_kind_t kind[64];
    int line[64], other[64];
    char text[64][512];
} lint_seen_t;

static void lint_collect(const bufpool_lint_finding_t *f, void *arg)
{
    lint_seen_t *s = arg;
    if (s->n < 64) {
        s->kind[s->n] = f->kind;
        s->line[s->n] = f->row->line;
        s->other[s->n] = NULL != f->other ? f->other->line : 0;
        snprintf(s->text[s->n], sizeof(s->text[0]), "%s", f->text);
        s->n++;
    }
}

static void test_lint(void)
{
    bufpool_rules_t r;
    char err[256];
    size_t counts[BUFPOOL_LINT_KINDS];
    static lint_seen_t seen;
    bufpool_rules_init(&r);
    UNIT_REQUIRE(0 == parse(&r,
                            "bufpool-rules 1\n"
                            "bcast ranks=8.. bytes=..4K alg=previous\n"             /* 2 */
                            "bcast ranks=8..15 hosts=1 bytes=1K..2K alg=binomial\n" /* 3 */
                            "bcast ranks=2..3 hosts=4 alg=linear\n"                 /* 4 */
                            "reduce bytes=..4K-1 alg=previous\n"                    /* 5 */
                            "reduce hosts=1 ranks=8.. bytes=2K..8K alg=binary\n"    /* 6 */
                            "reduce ranks=2 alg=previous\n"                         /* 7 */
                            "reduce op=noncommutative alg=chain\n"                  /* 8 */
                            "allreduce ranks=2..3 bytes=..1K alg=rsag\n"            /* 9 */
                            "allreduce ranks=4.. bytes=..1K alg=ring\n"             /* 10 */
                            "allreduce bytes=..512 form=blocking alg=previous\n"    /* 11 */
                            "allreduce bytes=..2K form=persistent alg=ring\n"       /* 12 */
                            "scan ranks=2 ppn=3 alg=chain\n"                        /* 13 */
                            "scan ranks=4 ppn=1 hosts=2 alg=chain\n"                /* 14 */
                            "scan ranks=4 ppn=2 hosts=1 alg=chain\n"                /* 15 */
                            "gather ranks=4 ppn=2 hosts=2 alg=linear\n"             /* 16 */
                            "gather ranks=4 ppn=2 alg=binomial\n",                  /* 17 */
                            err, sizeof(err)));
    UNIT_CHECK_EQ_U64(bufpool_rules_lint(&r, lint_collect, &seen, counts), 0);
    UNIT_CHECK_EQ_U64(counts[BUFPOOL_LINT_SHADOWED], 2);
    UNIT_CHECK_EQ_U64(counts[BUFPOOL_LINT_UNREACHABLE], 4);
    UNIT_CHECK_EQ_U64(counts[BUFPOOL_LINT_OVERLAP], 1);
    UNIT_CHECK_EQ_U64(counts[BUFPOOL_LINT_EXCEPTION], 5);
    UNIT_CHECK_EQ_U64(counts[BUFPOOL_LINT_UNCHECKED], 0);
    static const struct {
        bufpool_lint_kind_t kind;
        int line, other;
        const char *text;
    } want[] = {
        {BUFPOOL_LINT_SHADOWED, 3, 2,
         "t.rules:3: shadowed: bcast ranks=8..15 hosts=1 bytes=1K..2K alg=binomial never "
         "decides a call: the row at line 2 matches every call it matches"},
        {BUFPOOL_LINT_UNREACHABLE, 4, 0,
         "t.rules:4: unreachable: bcast ranks=2..3 hosts=4 alg=linear matches no communicator "
         "(more hosts than ranks)"},
        {BUFPOOL_LINT_OVERLAP, 6, 5,
         "t.rules:6: overlap: reduce ranks=8.. hosts=1 bytes=2K..8K alg=binary and line 5 "
         "(reduce bytes=..4K-1 alg=previous) cross on bytes, and line 5 is nowhere narrower: it "
         "decides ranks=8.. hosts=1 bytes=2K..4K-1"},
        {BUFPOOL_LINT_EXCEPTION, 8, 5, "t.rules:8: exception: line 5"},
        {BUFPOOL_LINT_EXCEPTION, 8, 6, "t.rules:8: exception: line 6"},
        {BUFPOOL_LINT_EXCEPTION, 8, 7,
         "t.rules:8: exception: line 7 (reduce ranks=2 alg=previous) takes ranks=2 "
         "op=noncommutative from reduce op=noncommutative alg=chain"},
        {BUFPOOL_LINT_SHADOWED, 11, 10,
         "t.rules:11: shadowed: allreduce bytes=..512 form=blocking alg=previous never decides "
         "a call: the rows at lines 9 and 10 match every call it matches"},
        /* (line 10 takes some of line 12 too, with the same choice: not reported) */
        {BUFPOOL_LINT_EXCEPTION, 12, 9, "t.rules:12: exception: line 9 (allreduce ranks=2..3 "},
        {BUFPOOL_LINT_UNREACHABLE, 13, 0, "(more ranks per host than ranks)"},
        {BUFPOOL_LINT_UNREACHABLE, 14, 0, "(fewer places (ppn x hosts) than ranks)"},
        {BUFPOOL_LINT_UNREACHABLE, 15, 0, "(fewer places (ppn x hosts) than ranks)"},
        {BUFPOOL_LINT_EXCEPTION, 17, 16,
         "t.rules:17: exception: line 16 (gather ranks=4 hosts=2 ppn=2 alg=linear) takes ranks=4 "
         "hosts=2 ppn=2 from gather ranks=4 ppn=2 alg=binomial"},
    };
    UNIT_CHECK_EQ_U64(seen.n, sizeof(want) / sizeof(*want));
    for (size_t i = 0; i < seen.n && i < sizeof(want) / sizeof(*want); i++) {
        if (seen.kind[i] != want[i].kind || seen.line[i] != want[i].line ||
            seen.other[i] != want[i].other || NULL == strstr(seen.text[i], want[i].text)) {
            fprintf(stderr,
                    "lint finding %zu: kind %d line %d other %d '%s'\n  expected %d %d %d '%s'\n",
                    i, seen.kind[i], seen.line[i], seen.other[i], seen.text[i], want[i].kind,
                    want[i].line, want[i].other, want[i].text);
            unit_failures++;
        }
    }
    bufpool_rules_free(&r);
}

/* A row the rows before it cut into too many pieces: reported unchecked,
 * not guessed. */
static void test_lint_unchecked(void)
{
    static char text[3000 * 48 + 64];
    size_t n = (size_t)snprintf(text, sizeof(text), "bufpool-rules 1\n");
    for (int i = 0; i < 3000; i++) {
        n += (size_t)snprintf(text + n, sizeof(text) - n, "bcast ranks=%d bytes=%d alg=previous\n",
                              2 + i % 40, 3 * (i / 40) + i % 3);
    }
    snprintf(text + n, sizeof(text) - n, "bcast alg=chain\n");
    bufpool_rules_t r;
    char err[256];
    size_t counts[BUFPOOL_LINT_KINDS];
    static lint_seen_t seen;
    bufpool_rules_init(&r);
    UNIT_REQUIRE(0 == parse(&r, text, err, sizeof(err)));
    UNIT_CHECK_EQ_U64(bufpool_rules_lint(&r, lint_collect, &seen, counts), 0);
    UNIT_CHECK_EQ_U64(counts[BUFPOOL_LINT_UNCHECKED], 1);
    UNIT_CHECK_EQ_U64(counts[BUFPOOL_LINT_SHADOWED], 0);
    UNIT_CHECK(1 == seen.n && BUFPOOL_LINT_UNCHECKED == seen.kind[0] && 3002 == seen.line[0]);
    bufpool_rules_free(&r);
}

/* The lint's verdict against brute force: random rows over small ranges,
 * every call of the ranges' critical values (the tails of open ranges
 * included) matched in place; a row is shadowed exactly when no call has
 * it as its first match. */
static void test_lint_brute_force(void)
{
    static const char *const tri_op[] = {"", " op=commutative", " op=noncommutative"};
    static const char *const tri_ip[] = {"", " inplace=yes", " inplace=no"};
    static const char *const forms[] = {"", " form=blocking", " form=nonblocking",
                                        " form=persistent"};
    int shadowed_seen = 0;
    for (int trial = 0; trial < 300; trial++) {
        char text[4096];
        size_t n = (size_t)snprintf(text, sizeof(text), "bufpool-rules 1\n");
        const int nrows = 2 + (int)(next_rand() % 7);
        for (int i = 0; i < nrows; i++) {
            char ranks[32] = "", hosts[32] = "", ppn[32] = "", bytes[32] = "";
            if (next_rand() % 2) {
                const int lo = 2 + (int)(next_rand() % 4), hi = lo + (int)(next_rand() % 3);
                snprintf(ranks, sizeof(ranks), next_rand() % 3 ? " ranks=%d..%d" : " ranks=%d..",
                         lo, hi);
            }
            if (next_rand() % 2) {
                const int lo = 1 + (int)(next_rand() % 3);
                snprintf(hosts, sizeof(hosts), next_rand() % 2 ? " hosts=%d" : " hosts=%d..", lo);
            }
            if (0 == next_rand() % 4) {
                snprintf(ppn, sizeof(ppn), " ppn=%d..", 1 + (int)(next_rand() % 3));
            }
            if (next_rand() % 3) {
                const int lo = (int)(next_rand() % 16), hi = lo + (int)(next_rand() % 8);
                snprintf(bytes, sizeof(bytes), next_rand() % 4 ? " bytes=%d..%d" : " bytes=%d..",
                         lo, hi);
            }
            n += (size_t)snprintf(text + n, sizeof(text) - n, "bcast%s%s%s%s%s%s%s alg=%s\n", ranks,
                                  hosts, ppn, bytes, tri_op[next_rand() % 3],
                                  tri_ip[next_rand() % 3], forms[next_rand() % 4],
                                  next_rand() % 2 ? "chain" : "previous");
        }
        bufpool_rules_t r;
        char err[256];
        size_t counts[BUFPOOL_LINT_KINDS];
        static lint_seen_t seen;
        seen.n = 0;
        bufpool_rules_init(&r);
        UNIT_REQUIRE(0 == parse(&r, text, err, sizeof(err)));
        UNIT_CHECK_EQ_U64(bufpool_rules_lint(&r, lint_collect, &seen, counts), 0);
        bool decides[16] = {false};
        for (int ranks = 2; ranks <= 9; ranks++) {
            for (int hosts = 0; hosts <= 4; hosts++) {
                for (int ppn = 0; ppn <= 4; ppn++) {
                    for (int cls = 0; cls < 4; cls++) {
                        for (int form = 0; form < BUFPOOL_NFORMS; form++) {
                            bufpool_shape_t s = shape(ranks, hosts, ppn, cls & 1, cls & 2);
                            s.form = form;
                            for (size_t bytes = 0; bytes <= 25; bytes++) {
                                const bufpool_rule_t *m =
                                    bufpool_rules_match(&r, BUFPOOL_COLL_bcast, &s, bytes);
                                if (NULL != m) {
                                    decides[m - r.rows] = true;
                                }
                            }
                        }
                    }
                }
            }
        }
        for (size_t i = 0; i < r.n; i++) {
            bool shadowed = false, unreachable = false;
            for (size_t k = 0; k < seen.n; k++) {
                shadowed |= BUFPOOL_LINT_SHADOWED == seen.kind[k] && seen.line[k] == r.rows[i].line;
                unreachable |=
                    BUFPOOL_LINT_UNREACHABLE == seen.kind[k] && seen.line[k] == r.rows[i].line;
            }
            shadowed_seen += shadowed;
            if (!unreachable && shadowed == decides[i]) {
                fprintf(stderr, "trial %d, row %zu: lint says %s, brute force %s\n%s", trial, i,
                        shadowed ? "shadowed" : "not shadowed", decides[i] ? "decides" : "never",
                        text);
                unit_failures++;
            }
        }
        UNIT_CHECK_EQ_U64(counts[BUFPOOL_LINT_UNCHECKED], 0);
        bufpool_rules_free(&r);
    }
    UNIT_CHECK(shadowed_seen > 20); /* the trials do meet shadowed rows */
}

/* The default rules lint clean: no row shadowed, unreachable or
 * overlapping (make check also runs bench/coll_model --lint on the file,
 * test/unit/rules_lint.sh). */
static void test_default_lint(void)
{
    size_t counts[BUFPOOL_LINT_KINDS];
    static lint_seen_t seen;
    UNIT_CHECK_EQ_U64(bufpool_rules_lint(unit_default_rules(), lint_collect, &seen, counts), 0);
    UNIT_CHECK_EQ_U64(counts[BUFPOOL_LINT_SHADOWED], 0);
    UNIT_CHECK_EQ_U64(counts[BUFPOOL_LINT_UNREACHABLE], 0);
    UNIT_CHECK_EQ_U64(counts[BUFPOOL_LINT_OVERLAP], 0);
    UNIT_CHECK_EQ_U64(counts[BUFPOOL_LINT_UNCHECKED], 0);
    for (size_t i = 0; i < seen.n; i++) {
        if (BUFPOOL_LINT_EXCEPTION != seen.kind[i]) {
            fprintf(stderr, "%s\n", seen.text[i]);
        }
    }
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
    test_directives();
    test_directive_rejects();
    test_lint();
    test_lint_brute_force();
    test_lint_unchecked();
    test_default_lint();
    return unit_finish("test_coll_rules");
}
