/*
 * coll_latency's command line (see usage() for every option).
 */
#include "bufpool_config.h"

#include "coll_latency.h"
#include "regpar_size.h"

#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#define LARGE_MESSAGE_SIZE 8192 /* OSU: above this, the "large" counts apply */
#define DEFAULT_MAX_SIZE   ((size_t)64 << 20)
#define DEFAULT_MEM_LIMIT  ((size_t)4 << 30)
#define BUDGET_MIN_ITERS   3 /* never fewer timed calls per point than this */
#define BUDGET_MIN_WARMUP  2 /* a pool needs one call to fill, one to prove it reuses */

static void usage(const char *prog)
{
    root_printf(
        "Usage: %s [options]\n"
        "  -c, --collective LIST     collectives to run, comma separated, or \"all\" (default):\n"
        "                            allreduce reduce bcast allgather reduce_scatter\n"
        "                            reduce_scatter_block alltoall gather scatter scan exscan\n"
        "  -C, --configs LIST        coll selections to alternate in this job (default world):\n"
        "                            world   = whatever this mpirun selected (job-level mode)\n"
        "                            default = Open MPI's own selection without bufpool\n"
        "                            bufpool = bufpool first (skipped if it is not loaded)\n"
        "                            bufpool+ALG = bufpool with its algorithm ALG forced\n"
        "                                      for each collective of -c (the info key\n"
        "                                      coll_bufpool_<coll>_algorithm), beside the\n"
        "                                      others in one job: bufpool+node, bufpool+chain\n"
        "                            tuned, han, acoll, xhc, adapt = that component first,\n"
        "                                      the rest as default, where it serves (han:\n"
        "                                      several hosts; acoll, xhc: one host) and only\n"
        "                                      the collectives it implements\n"
        "                            han_nopersist = han with coll_han_use_persist_buffers 0\n"
        "                                      (set through MPI_T while its points run)\n"
        "                            basic   = basic only (with self and libnbc)\n"
        "                            floor   = memcpy of the bytes the collective must move\n"
        "                            what a job cannot measure is skipped with the reason\n"
        "  -m, --message-size [MIN:]MAX  sizes in bytes, suffixes K M G (default 1:64M)\n"
        "      --size-factor N       each size N times the one before (2 to 16, default 2)\n"
        "  -i, --iterations N        timed iterations up to 8 KiB (default 1000)\n"
        "  -x, --warmup N            warm-up iterations up to 8 KiB (default 200)\n"
        "      --iterations-large N  timed iterations above 8 KiB (default 100)\n"
        "      --warmup-large N      warm-up iterations above 8 KiB (default 10)\n"
        "  -b, --large-budget BYTES  above 8 KiB, cap iterations x size at BYTES (min %d\n"
        "                            timed, %d warm-up); 0 = OSU's fixed counts (default)\n"
        "  -r, --repeat N            measure every point N times, interleaved (default 1);\n"
        "                            tables show the median\n"
        "  -M, --mem-limit BYTES     per-process buffer limit; larger sizes are skipped\n"
        "                            (default 4G)\n"
        "  -o, --csv FILE            append one CSV row per measured point to FILE\n"
        "  -t, --tag TEXT            copy TEXT into the CSV tag column\n"
        "  -n, --world-name NAME     label the world configuration NAME in tables and CSV\n"
        "                            (job mode: the configuration this mpirun selected)\n"
        "  -F, --form FORM           blocking (default): MPI_<Coll>; nonblocking: MPI_I<coll>\n"
        "                            + MPI_Wait; persistent: MPI_Start + MPI_Wait of an\n"
        "                            MPI_<Coll>_init request made before the point's warm-up;\n"
        "                            overlap: OSU's measure, MPI_I<coll>, computation as long\n"
        "                            as the pure communication, MPI_Wait (overlap %%)\n"
        "      --op sum|user         the reductions' operation: MPI_SUM (default), or the\n"
        "                            same float sum as a user-defined operation\n"
        "                            (MPI_Op_create), which components may serve apart\n"
        "      --test-calls N        overlap: MPI_Test calls spread over the computation\n"
        "                            (default 0, as OSU's)\n"
        "      --progress FILE       rank 0 rewrites FILE with the point about to run\n"
        "                            (collective configuration size repetition), so that a\n"
        "                            runner can tell which point a crashed job was in\n"
        "      --skip LIST           points not to measure: config:collective:SIZE, SIZE+ for\n"
        "                            that size and larger ones, * for every size\n"
        "      --point-timeout SEC   a point (warm-up, timed calls, check) that takes longer\n"
        "                            ends the job with \"# coll_latency: point timed out\"\n"
        "                            (default 0: no limit)\n"
        "      --inject KIND:CONFIG:COLLECTIVE:SIZE  testing the runner: at that point rank 1\n"
        "                            crashes (KIND crash), hangs (hang) or reports a wrong\n"
        "                            element (wrong)\n"
        "      --list-configs        print which configurations of -C this job can measure\n"
        "                            (\"# configuration NAME available\", or skipped and why)\n"
        "                            and stop\n"
        "      --list-points         print the points a run with these options would measure,\n"
        "                            one line each (\"# point COLLECTIVE CONFIG SIZE ITERATIONS\n"
        "                            WARMUP REPEAT\"), after --list-configs' lines, and stop\n"
        "  -f, --full                accepted for OSU compatibility (columns are always full)\n"
        "  -h, --help                this message\n",
        prog, BUDGET_MIN_ITERS, BUDGET_MIN_WARMUP);
}

/* Sizes accept K, M, G and T (powers of 1024), parsed as the components
 * parse their MCA size parameters. */
static int parse_size(const char *text, size_t *out)
{
    uint64_t value;
    if (0 != regpar_parse_size(text, &value, NULL, 0) || (uint64_t)(size_t)value != value) {
        return -1;
    }
    *out = (size_t)value;
    return 0;
}

static int parse_count(const char *text, long min, long *out)
{
    return regpar_parse_int(text, min, LONG_MAX, out, NULL, 0);
}

static int parse_size_range(const char *text, bench_options *opt)
{
    const char *colon = strchr(text, ':');
    if (NULL == colon) {
        return parse_size(text, &opt->max_size);
    }
    char min_text[64];
    size_t len = (size_t)(colon - text);
    if (len >= sizeof(min_text)) {
        return -1;
    }
    memcpy(min_text, text, len);
    min_text[len] = '\0';
    if (len > 0 && 0 != parse_size(min_text, &opt->min_size)) {
        return -1;
    }
    if ('\0' != colon[1] && 0 != parse_size(colon + 1, &opt->max_size)) {
        return -1;
    }
    return 0;
}

/* One "config:collective:size" entry of a point list (with_kind: a
 * leading "kind:" field): its fields, and whether its size is "SIZE+"
 * (and larger) or "*" (every size).  0 if well formed. */
typedef struct {
    char kind[16], config[32], coll[32];
    size_t size;
    int and_above;
} point_entry;

static int parse_point_entry(const char *text, size_t len, int with_kind, point_entry *e)
{
    char buf[160], *fields[4];
    int n = 0, want = with_kind ? 4 : 3;
    if (len >= sizeof(buf)) {
        return -1;
    }
    memcpy(buf, text, len);
    buf[len] = '\0';
    for (char *save = NULL, *tok = strtok_r(buf, ":", &save); NULL != tok && n < 4;
         tok = strtok_r(NULL, ":", &save)) {
        fields[n++] = tok;
    }
    if (n != want) {
        return -1;
    }
    memset(e, 0, sizeof(*e));
    int f = 0;
    if (with_kind) {
        snprintf(e->kind, sizeof(e->kind), "%s", fields[f++]);
        if (0 != strcmp(e->kind, "crash") && 0 != strcmp(e->kind, "hang") &&
            0 != strcmp(e->kind, "wrong")) {
            return -1;
        }
    }
    snprintf(e->config, sizeof(e->config), "%s", fields[f++]);
    snprintf(e->coll, sizeof(e->coll), "%s", fields[f++]);
    char *size = fields[f];
    size_t slen = strlen(size);
    if (0 == strcmp(size, "*")) {
        e->size = 0;
        e->and_above = 1;
        return 0;
    }
    if (slen > 1 && '+' == size[slen - 1]) {
        e->and_above = 1;
        size[slen - 1] = '\0';
    }
    return parse_size(size, &e->size);
}

static int check_point_list(const char *list, int with_kind)
{
    const char *p = list;
    do {
        const char *comma = strchr(p, ',');
        size_t len = NULL == comma ? strlen(p) : (size_t)(comma - p);
        point_entry e;
        if (len > 0 && 0 != parse_point_entry(p, len, with_kind, &e)) {
            return -1;
        }
        p = NULL == comma ? NULL : comma + 1;
    } while (NULL != p);
    return 0;
}

/* The first entry of a list that names this point; its kind in *kind. */
static int point_listed(const char *list, int with_kind, const char *config, const char *coll,
                        size_t size, char *kind, size_t kind_len)
{
    for (const char *p = list; NULL != p && '\0' != *p;) {
        const char *comma = strchr(p, ',');
        size_t len = NULL == comma ? strlen(p) : (size_t)(comma - p);
        point_entry e;
        if (len > 0 && 0 == parse_point_entry(p, len, with_kind, &e) &&
            0 == strcmp(e.config, config) && 0 == strcmp(e.coll, coll) &&
            (e.size == size || (e.and_above && size >= e.size))) {
            if (NULL != kind) {
                snprintf(kind, kind_len, "%s", e.kind);
            }
            return 1;
        }
        p = NULL == comma ? NULL : comma + 1;
    }
    return 0;
}

int options_skips(const bench_options *opt, const char *config, const char *coll, size_t size)
{
    return point_listed(opt->skip, 0, config, coll, size, NULL, 0);
}

const char *options_injected(const bench_options *opt, const char *config, const char *coll,
                             size_t size)
{
    static char kind[16];
    return point_listed(opt->inject, 1, config, coll, size, kind, sizeof(kind)) ? kind : NULL;
}

/* Long on purpose: one getopt case per option, each checked where it is
 * read, so that an option and its message stand together. */
int options_parse(int argc, char **argv, bench_options *opt)
{
    enum {
        OPT_ITER_LARGE = 256,
        OPT_WARMUP_LARGE,
        OPT_TEST_CALLS,
        OPT_OP,
        OPT_PROGRESS,
        OPT_SKIP,
        OPT_POINT_TIMEOUT,
        OPT_INJECT,
        OPT_LIST_CONFIGS,
        OPT_LIST_POINTS,
        OPT_SIZE_FACTOR
    };
    static const struct option long_options[] = {
        {"collective", required_argument, NULL, 'c'},
        {"configs", required_argument, NULL, 'C'},
        {"message-size", required_argument, NULL, 'm'},
        {"iterations", required_argument, NULL, 'i'},
        {"warmup", required_argument, NULL, 'x'},
        {"iterations-large", required_argument, NULL, OPT_ITER_LARGE},
        {"warmup-large", required_argument, NULL, OPT_WARMUP_LARGE},
        {"large-budget", required_argument, NULL, 'b'},
        {"repeat", required_argument, NULL, 'r'},
        {"mem-limit", required_argument, NULL, 'M'},
        {"csv", required_argument, NULL, 'o'},
        {"tag", required_argument, NULL, 't'},
        {"world-name", required_argument, NULL, 'n'},
        {"form", required_argument, NULL, 'F'},
        {"test-calls", required_argument, NULL, OPT_TEST_CALLS},
        {"op", required_argument, NULL, OPT_OP},
        {"progress", required_argument, NULL, OPT_PROGRESS},
        {"skip", required_argument, NULL, OPT_SKIP},
        {"point-timeout", required_argument, NULL, OPT_POINT_TIMEOUT},
        {"inject", required_argument, NULL, OPT_INJECT},
        {"list-configs", no_argument, NULL, OPT_LIST_CONFIGS},
        {"list-points", no_argument, NULL, OPT_LIST_POINTS},
        {"size-factor", required_argument, NULL, OPT_SIZE_FACTOR},
        {"full", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *opt = (bench_options){
        .collectives = "all",
        .configs = "world",
        .min_size = 1,
        .size_factor = 2,
        .max_size = DEFAULT_MAX_SIZE,
        .iterations = 1000,
        .warmup = 200,
        .iterations_large = 100,
        .warmup_large = 10,
        .repeat = 1,
        .mem_limit = DEFAULT_MEM_LIMIT,
        .tag = "",
        .world_name = "world",
    };
    int c;
    long repeat = 1;
    while (-1 != (c = getopt_long(argc, argv, "c:C:m:i:x:b:r:M:o:t:n:F:fh", long_options, NULL))) {
        const char *bad = NULL;
        switch (c) {
            case 'c':
                opt->collectives = optarg;
                break;
            case 'C':
                opt->configs = optarg;
                break;
            case 'm':
                if (0 != parse_size_range(optarg, opt)) {
                    bad = "-m wants [MIN:]MAX in bytes, with an optional K, M or G suffix";
                }
                break;
            case 'i':
                if (0 != parse_count(optarg, 1, &opt->iterations)) {
                    bad = "-i wants a positive number of timed iterations";
                }
                break;
            case 'x':
                if (0 != parse_count(optarg, 0, &opt->warmup)) {
                    bad = "-x wants a number of warm-up iterations >= 0";
                }
                break;
            case OPT_ITER_LARGE:
                if (0 != parse_count(optarg, 1, &opt->iterations_large)) {
                    bad = "--iterations-large wants a positive number";
                }
                break;
            case OPT_WARMUP_LARGE:
                if (0 != parse_count(optarg, 0, &opt->warmup_large)) {
                    bad = "--warmup-large wants a number >= 0";
                }
                break;
            case 'b':
                if (0 != parse_size(optarg, &opt->large_budget)) {
                    bad = "-b wants a byte count (K, M, G suffixes allowed), 0 to disable";
                }
                break;
            case 'r':
                if (0 != parse_count(optarg, 1, &repeat) || repeat > MAX_REPEAT) {
                    bad = "-r wants a repetition count between 1 and 99";
                }
                opt->repeat = (int)repeat;
                break;
            case 'M':
                if (0 != parse_size(optarg, &opt->mem_limit) || 0 == opt->mem_limit) {
                    bad = "-M wants a positive byte count (K, M, G suffixes allowed)";
                }
                break;
            case 'o':
                opt->csv_path = optarg;
                break;
            case 't':
                opt->tag = optarg;
                if (NULL != strpbrk(optarg, ",\n\"")) {
                    bad = "-t must not contain commas, quotes or newlines (it is a CSV field)";
                }
                break;
            case 'n':
                opt->world_name = optarg;
                if (strlen(optarg) == 0 || strlen(optarg) >= 16 ||
                    NULL != strpbrk(optarg, ",\n\" ")) {
                    bad = "-n wants a short label (1-15 characters, no commas, quotes or spaces)";
                }
                break;
            case 'F':
                if (0 == strcmp(optarg, "blocking")) {
                    opt->form = FORM_BLOCKING;
                } else if (0 == strcmp(optarg, "nonblocking")) {
                    opt->form = FORM_NONBLOCKING;
                } else if (0 == strcmp(optarg, "persistent")) {
                    opt->form = FORM_PERSISTENT;
                } else if (0 == strcmp(optarg, "overlap")) {
                    opt->form = FORM_OVERLAP;
                } else {
                    bad = "-F wants blocking, nonblocking, persistent or overlap";
                }
                break;
            case OPT_OP:
                if (0 == strcmp(optarg, "sum")) {
                    opt->user_op = 0;
                } else if (0 == strcmp(optarg, "user")) {
                    opt->user_op = 1;
                } else {
                    bad = "--op wants sum or user";
                }
                break;
            case OPT_TEST_CALLS: {
                long n;
                if (0 != parse_count(optarg, 0, &n) || n > 1000000) {
                    bad = "--test-calls wants a number from 0 to 1000000";
                } else {
                    opt->test_calls = (int)n;
                }
                break;
            }
            case OPT_PROGRESS:
                opt->progress_path = optarg;
                break;
            case OPT_SKIP:
                opt->skip = optarg;
                if (0 != check_point_list(optarg, 0)) {
                    bad = "--skip wants config:collective:SIZE[+] entries separated by commas "
                          "(SIZE may be *)";
                }
                break;
            case OPT_POINT_TIMEOUT: {
                long n;
                if (0 != parse_count(optarg, 0, &n) || n > 86400) {
                    bad = "--point-timeout wants seconds from 0 (no limit) to 86400";
                } else {
                    opt->point_timeout = (int)n;
                }
                break;
            }
            case OPT_INJECT:
                opt->inject = optarg;
                if (0 != check_point_list(optarg, 1)) {
                    bad = "--inject wants crash|hang|wrong:config:collective:SIZE";
                }
                break;
            case OPT_SIZE_FACTOR: {
                long n;
                if (0 != parse_count(optarg, 2, &n) || n > 16) {
                    bad = "--size-factor wants a number from 2 to 16";
                } else {
                    opt->size_factor = (size_t)n;
                }
                break;
            }
            case OPT_LIST_CONFIGS:
                opt->list_configs = 1;
                break;
            case OPT_LIST_POINTS:
                opt->list_points = 1;
                break;
            case 'f':
                break;
            case 'h':
                usage(argv[0]);
                return 1;
            default:
                root_printf("%s: unknown option; see -h\n", argv[0]);
                return 2;
        }
        if (NULL != bad) {
            root_printf("%s: bad value \"%s\": %s\n", argv[0], optarg, bad);
            return 2;
        }
    }
    if (optind < argc) {
        root_printf("%s: unexpected argument \"%s\"; see -h\n", argv[0], argv[optind]);
        return 2;
    }
    if (0 == opt->min_size || opt->min_size > opt->max_size || opt->max_size > ((size_t)1 << 40)) {
        root_printf("%s: -m: need 1 <= MIN <= MAX <= 1T (got %zu:%zu)\n", argv[0], opt->min_size,
                    opt->max_size);
        return 2;
    }
    return 0;
}

void options_iterations_for(const bench_options *opt, size_t size, long *iters, long *warmup)
{
    if (size <= LARGE_MESSAGE_SIZE) {
        *iters = opt->iterations;
        *warmup = opt->warmup;
        return;
    }
    *iters = opt->iterations_large;
    *warmup = opt->warmup_large;
    if (opt->large_budget > 0) {
        long fit = (long)(opt->large_budget / size);
        if (fit < *iters) {
            *iters = fit < BUDGET_MIN_ITERS ? BUDGET_MIN_ITERS : fit;
        }
        long wfit = fit / 4;
        if (wfit < *warmup) {
            *warmup = wfit < BUDGET_MIN_WARMUP ? BUDGET_MIN_WARMUP : wfit;
        }
    }
}
