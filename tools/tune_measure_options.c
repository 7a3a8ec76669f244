/*
 * bufpool-tune-measure's command line (see tune_measure.h).
 */
#include "tune_measure.h"

#include "regpar_size.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

void tune_say(FILE *errs, const char *fmt, ...)
{
    if (NULL == errs) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(errs, fmt, ap);
    va_end(ap);
    fflush(errs);
}

static void usage(FILE *errs)
{
    tune_say(
        errs,
        "Usage: bufpool-tune-measure [options]   (started by bufpool-tune under mpirun)\n"
        "  --collectives LIST  comma list or all (default %s)\n"
        "  --sizes LIST        message sizes and MIN..MAX ranges (default %s)\n"
        "  --ranks LIST        communicator sizes (default: powers of two up to the job, and\n"
        "                      the job's size)\n"
        "  --reps N            repetitions (default 5)\n"
        "  --batch-ms MS       time of each batch of calls (default 5)\n"
        "  --skip LIST         COLL:ALG algorithms to leave out\n"
        "  --mem-limit BYTES   buffers per rank, at most (default 1G); larger sizes are left out\n"
        "  --quiet             no progress lines\n",
        TUNE_DEFAULT_COLLS, TUNE_DEFAULT_SIZES);
}

int tune_measure_options_parse(int argc, char **argv, tune_options *o, FILE *errs)
{
    static const struct option longopts[] = {{"collectives", required_argument, NULL, 'c'},
                                             {"sizes", required_argument, NULL, 's'},
                                             {"ranks", required_argument, NULL, 'p'},
                                             {"reps", required_argument, NULL, 'r'},
                                             {"batch-ms", required_argument, NULL, 'b'},
                                             {"skip", required_argument, NULL, 'x'},
                                             {"mem-limit", required_argument, NULL, 'M'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *colls = TUNE_DEFAULT_COLLS, *sizes = TUNE_DEFAULT_SIZES;
    char err[512];
    memset(o, 0, sizeof(*o));
    o->reps = 5;
    o->batch_ms = 5;
    o->mem_limit = TUNE_DEFAULT_MEM;
    opterr = 0;
    for (int c; - 1 != (c = getopt_long(argc, argv, "", longopts, NULL));) {
        long n;
        uint64_t bytes;
        switch (c) {
            case 'c':
                colls = optarg;
                break;
            case 's':
                sizes = optarg;
                break;
            case 'p':
                o->nranks = tune_parse_ranks(optarg, o->ranks, TUNE_MAX_RANKS, err, sizeof(err));
                if (o->nranks < 0) {
                    tune_say(errs, "bufpool-tune: --ranks: %s\n", err);
                    return 2;
                }
                break;
            case 'r':
                if (0 != regpar_parse_int(optarg, 1, TUNE_MAX_REPS, &n, err, sizeof(err))) {
                    tune_say(errs, "bufpool-tune: --reps %s: %s\n", optarg, err);
                    return 2;
                }
                o->reps = (int)n;
                break;
            case 'b':
                if (0 !=
                    regpar_parse_decimal(optarg, 0.01, 10000, &o->batch_ms, err, sizeof(err))) {
                    tune_say(errs, "bufpool-tune: --batch-ms %s: %s (0.01 to 10000)\n", optarg,
                             err);
                    return 2;
                }
                break;
            case 'x':
                if (0 != tune_parse_skips(optarg, o->skip, err, sizeof(err))) {
                    tune_say(errs, "bufpool-tune: --skip: %s\n", err);
                    return 2;
                }
                break;
            case 'M':
                if (0 != regpar_parse_size(optarg, &bytes, err, sizeof(err))) {
                    tune_say(errs, "bufpool-tune: --mem-limit %s: %s\n", optarg, err);
                    return 2;
                }
                o->mem_limit = (size_t)bytes;
                break;
            case 'q':
                o->quiet = true;
                break;
            case 'h':
                usage(errs);
                return 1;
            default:
                tune_say(errs, "bufpool-tune-measure: unknown option or missing value: %s\n",
                         argv[optind - 1]);
                return 2;
        }
    }
    if (optind < argc) {
        tune_say(errs, "bufpool-tune-measure: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (0 != tune_parse_colls(colls, o->colls, err, sizeof(err))) {
        tune_say(errs, "bufpool-tune: --collectives: %s\n", err);
        return 2;
    }
    o->nsizes = tune_parse_sizes(sizes, TUNE_MAX_SIZE, o->sizes, TUNE_MAX_SIZES, err, sizeof(err));
    if (o->nsizes < 0) {
        tune_say(errs, "bufpool-tune: --sizes: %s\n", err);
        return 2;
    }
    return 0;
}
