/*
 * bench_reg: the cost of registering and deregistering large slabs,
 * sequential against parallel against the engine's auto policy, on memory
 * that was pre-touched or never touched.  The table mirrors the Mooncake
 * measurement (seeds/000): allocate, register, unregister, total, ratio.
 *
 *   bench_reg [--sizes 1G,4G,16G] [--reps 3] [--backend pin|ofi|none|registrar]
 *             [--provider NAME] [--modes seq,par,auto,par-nopf,seq-nopf]
 *             [--memory touched,untouched] [--threads N] [--chunk 256M]
 *             [--threshold 64M] [--thp] [--stat median|min]
 *
 * Modes (all with the same backend, threads, chunk and threshold):
 *   seq       reg_parallel=off, prefault on    (the reference for ratios)
 *   par       reg_parallel=on,  prefault on
 *   auto      reg_parallel=auto, prefault on   (the default)
 *   par-nopf  reg_parallel=on,  prefault off   (Mooncake's trap: threads
 *             fault and pin untouched memory at once)
 *   seq-nopf  reg_parallel=off, prefault off   (plain one-call pinning)
 * --backend registrar registers through the registrar interface the
 * transports use (regpar_reg_engine_attach), with mlock as the registration
 * and thread_safe false, as the btl/ucx/mtl registrars declare: pre-fault in
 * parallel, register one call at a time (the transport registrars
 * themselves need an MPI job: bench/reg_transport.sh).
 * Every figure is the median (or, with --stat min, the minimum: the better
 * estimate on a machine other jobs are loading) over --reps runs; modes
 * take turns within a run so that drift hits them alike.  Nothing here
 * passes or fails.
 */
#include "bufpool_config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "regpar_reg.h"
#include "regpar_size.h"

#define MAX_SIZES 16
#define MAX_REPS  99

typedef struct mode {
    const char *name;
    regpar_reg_parallel_t parallel;
    bool prefault;
} bench_mode_t;

static const bench_mode_t all_modes[] = {
    {"seq", REGPAR_PAR_OFF, true},       {"par", REGPAR_PAR_ON, true},
    {"auto", REGPAR_PAR_AUTO, true},     {"par-nopf", REGPAR_PAR_ON, false},
    {"seq-nopf", REGPAR_PAR_OFF, false},
};
#define NMODES ((int)(sizeof(all_modes) / sizeof(all_modes[0])))

typedef struct options {
    uint64_t sizes[MAX_SIZES];
    int nsizes;
    int reps;
    regpar_reg_backend_t backend;
    const char *provider;
    bool mode_on[NMODES];
    bool touched, untouched;
    unsigned threads;
    uint64_t chunk, threshold;
    bool thp;
    bool use_min;
} options_t;

typedef struct sample {
    double allocate, prefault, reg, unreg;
    unsigned threads;
    bool failed;
} sample_t;

static double seconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) * 1e-9;
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--sizes 1G,4G,16G] [--reps 3] [--backend pin|ofi|none|registrar] "
            "[--provider NAME]\n"
            "          [--modes seq,par,auto,par-nopf,seq-nopf] [--memory touched,untouched]\n"
            "          [--threads N] [--chunk 256M] [--threshold 64M] [--thp] "
            "[--stat median|min]\n",
            argv0);
}

static int parse_size_arg(const char *what, const char *text, uint64_t *out)
{
    char err[128];
    if (0 != regpar_parse_size(text, out, err, sizeof(err)) || 0 == *out) {
        fprintf(stderr, "bench_reg: %s '%s': %s\n", what, text, 0 == *out ? "zero" : err);
        return -1;
    }
    return 0;
}

/* Split a comma list in place, calling fn on every item. */
static int for_each_item(char *list, int (*fn)(options_t *, const char *), options_t *opt)
{
    for (char *save = NULL, *item = strtok_r(list, ",", &save); item;
         item = strtok_r(NULL, ",", &save)) {
        if (0 != fn(opt, item)) {
            return -1;
        }
    }
    return 0;
}

static int add_size(options_t *opt, const char *item)
{
    if (opt->nsizes >= MAX_SIZES) {
        fprintf(stderr, "bench_reg: at most %d sizes\n", MAX_SIZES);
        return -1;
    }
    return parse_size_arg("size", item, &opt->sizes[opt->nsizes++]);
}

static int add_mode(options_t *opt, const char *item)
{
    for (int m = 0; m < NMODES; m++) {
        if (0 == strcmp(item, all_modes[m].name)) {
            opt->mode_on[m] = true;
            return 0;
        }
    }
    fprintf(stderr, "bench_reg: unknown mode '%s' (seq, par, auto, par-nopf, seq-nopf)\n", item);
    return -1;
}

static int add_memory(options_t *opt, const char *item)
{
    if (0 == strcmp(item, "touched")) {
        opt->touched = true;
    } else if (0 == strcmp(item, "untouched")) {
        opt->untouched = true;
    } else {
        fprintf(stderr, "bench_reg: unknown memory state '%s' (touched, untouched)\n", item);
        return -1;
    }
    return 0;
}

static int parse_options(int argc, char **argv, options_t *opt)
{
    memset(opt, 0, sizeof(*opt));
    opt->reps = 3;
    opt->backend = REGPAR_REG_PIN;
    opt->chunk = REGPAR_REG_DEFAULT_CHUNK_SIZE;
    opt->threshold = REGPAR_REG_DEFAULT_THRESHOLD;
    bool modes_given = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        char *value = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (0 == strcmp(arg, "--thp")) {
            opt->thp = true;
            continue;
        }
        if (0 == strcmp(arg, "--help") || 0 == strcmp(arg, "-h") || !value) {
            usage(argv[0]);
            return -1;
        }
        i++;
        if (0 == strcmp(arg, "--sizes")) {
            rc = for_each_item(value, add_size, opt);
        } else if (0 == strcmp(arg, "--modes")) {
            modes_given = true;
            rc = for_each_item(value, add_mode, opt);
        } else if (0 == strcmp(arg, "--memory")) {
            rc = for_each_item(value, add_memory, opt);
        } else if (0 == strcmp(arg, "--reps")) {
            opt->reps = atoi(value);
            if (opt->reps < 1 || opt->reps > MAX_REPS) {
                fprintf(stderr, "bench_reg: --reps must be 1..%d\n", MAX_REPS);
                rc = -1;
            }
        } else if (0 == strcmp(arg, "--backend")) {
            if (0 != regpar_reg_backend_parse(value, &opt->backend) ||
                REGPAR_REG_AUTO == opt->backend) {
                fprintf(stderr,
                        "bench_reg: --backend must be pin, ofi, verbs, none or registrar\n");
                rc = -1;
            }
        } else if (0 == strcmp(arg, "--stat")) {
            opt->use_min = 0 == strcmp(value, "min");
            if (!opt->use_min && 0 != strcmp(value, "median")) {
                fprintf(stderr, "bench_reg: --stat must be median or min\n");
                rc = -1;
            }
        } else if (0 == strcmp(arg, "--provider")) {
            opt->provider = value;
        } else if (0 == strcmp(arg, "--threads")) {
            int threads = atoi(value);
            if (threads < 0 || threads > REGPAR_REG_MAX_THREADS) {
                fprintf(stderr, "bench_reg: --threads must be 0..%d\n", REGPAR_REG_MAX_THREADS);
                rc = -1;
            }
            opt->threads = (unsigned)threads;
        } else if (0 == strcmp(arg, "--chunk")) {
            rc = parse_size_arg("chunk", value, &opt->chunk);
        } else if (0 == strcmp(arg, "--threshold")) {
            rc = parse_size_arg("threshold", value, &opt->threshold);
        } else {
            usage(argv[0]);
            rc = -1;
        }
        if (0 != rc) {
            return -1;
        }
    }
    if (0 == opt->nsizes) {
        opt->sizes[0] = (uint64_t)1 << 30;
        opt->sizes[1] = (uint64_t)4 << 30;
        opt->sizes[2] = (uint64_t)16 << 30;
        opt->nsizes = 3;
    }
    if (!modes_given) {
        for (int m = 0; m < NMODES; m++) {
            opt->mode_on[m] = true;
        }
    }
    if (!opt->touched && !opt->untouched) {
        opt->touched = opt->untouched = true;
    }
    return 0;
}

static uint64_t available_memory(void)
{
    FILE *meminfo = fopen("/proc/meminfo", "r");
    unsigned long long kib = 0;
    char line[256];
    while (meminfo && fgets(line, sizeof(line), meminfo)) {
        if (1 == sscanf(line, "MemAvailable: %llu kB", &kib)) {
            break;
        }
    }
    if (meminfo) {
        fclose(meminfo);
    }
    return (uint64_t)kib * 1024;
}

static void print_log(void *arg, int level, const char *msg)
{
    (void)arg;
    if (level <= 1) {
        fprintf(stderr, "%s\n", msg);
    }
}

/* The stand-in registrar: what a transport's register_mem does, pinning. */
static int mlock_reg(void *arg, regpar_reg_chunk_t *chunk)
{
    (void)arg;
    return 0 == mlock(chunk->addr, chunk->len) ? 0 : errno;
}

static int mlock_dereg(void *arg, regpar_reg_chunk_t *chunk)
{
    (void)arg;
    return 0 == munlock(chunk->addr, chunk->len) ? 0 : errno;
}

static const regpar_registrar_t mlock_registrar = {
    .name = "registrar(mlock)",
    .thread_safe = false,
    .reg = mlock_reg,
    .dereg = mlock_dereg,
    .remedy = "raise ulimit -l",
};

static regpar_reg_engine_t *make_engine(const options_t *opt, const bench_mode_t *mode)
{
    regpar_reg_config_t cfg;
    regpar_reg_config_defaults(&cfg);
    bool registrar = REGPAR_REG_REGISTRAR == opt->backend;
    cfg.backend = registrar ? REGPAR_REG_NONE : opt->backend;
    cfg.parallel = mode->parallel;
    cfg.prefault = mode->prefault;
    cfg.threads = opt->threads;
    cfg.chunk_size = opt->chunk;
    cfg.threshold = opt->threshold;
    cfg.ofi_provider = opt->provider;
    cfg.log = print_log;
    regpar_reg_engine_t *engine = NULL;
    char err[512];
    if (0 != regpar_reg_engine_create(&cfg, &engine, err, sizeof(err))) {
        fprintf(stderr, "bench_reg: %s\n", err);
        return NULL;
    }
    if (registrar) {
        (void)regpar_reg_engine_attach(engine, &mlock_registrar, NULL);
    }
    return engine;
}

/* One allocate / register / deregister / unmap cycle. */
static sample_t run_once(regpar_reg_engine_t *engine, size_t len, bool touched, bool thp)
{
    sample_t s = {0};
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    char *addr =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (MAP_FAILED == addr) {
        fprintf(stderr, "bench_reg: mmap of %zu bytes: %s\n", len, strerror(errno));
        s.failed = true;
        return s;
    }
    if (thp) {
        madvise(addr, len, MADV_HUGEPAGE);
    }
    if (touched) {
        /* what an application that initialises its buffers does */
        memset(addr, 1, len);
    }
    s.allocate = seconds_since(&start);

    regpar_reg_stats_t before, after;
    regpar_reg_get_stats(engine, &before);
    s.threads = regpar_reg_engine_plan_threads(engine, len);
    regpar_reg_region_t region;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int rc = regpar_reg_region_register(engine, addr, len, &region);
    s.reg = seconds_since(&start);
    regpar_reg_get_stats(engine, &after);
    s.prefault = (double)(after.prefault_time_ns - before.prefault_time_ns) * 1e-9;
    /* the plan samples the machine's load before the call: report what ran */
    if (after.parallel_regions == before.parallel_regions) {
        s.threads = 1;
    }
    s.failed =
        0 != rc || (REGPAR_REG_NONE != regpar_reg_engine_backend(engine) && !region.registered);

    clock_gettime(CLOCK_MONOTONIC, &start);
    regpar_reg_region_deregister(engine, &region);
    s.unreg = seconds_since(&start);
    munmap(addr, len);
    return s;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static bool use_min;

static double typical(double *values, int n)
{
    qsort(values, (size_t)n, sizeof(double), compare_double);
    if (use_min) {
        return values[0];
    }
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

typedef struct row {
    double allocate, prefault, reg, unreg, total;
    unsigned threads;
    int failures;
} row_t;

static row_t summarise(const sample_t *samples, int n)
{
    double a[MAX_REPS], p[MAX_REPS], r[MAX_REPS], u[MAX_REPS], t[MAX_REPS];
    row_t row = {0};
    for (int i = 0; i < n; i++) {
        a[i] = samples[i].allocate;
        p[i] = samples[i].prefault;
        r[i] = samples[i].reg;
        u[i] = samples[i].unreg;
        t[i] = a[i] + r[i] + u[i];
        row.failures += samples[i].failed;
        if (samples[i].threads > row.threads) {
            row.threads = samples[i].threads;
        }
    }
    row.allocate = typical(a, n);
    row.prefault = typical(p, n);
    row.reg = typical(r, n);
    row.unreg = typical(u, n);
    row.total = typical(t, n);
    return row;
}

/* reference / value, or ">999" when value is too small to compare (a
 * registration that is a table insert takes microseconds). */
static void format_ratio(double reference, double value, char *buf, size_t len)
{
    if (value <= 0 || reference / value > 999) {
        snprintf(buf, len, ">999");
    } else {
        snprintf(buf, len, "%.2f", reference / value);
    }
}

/* /proc/loadavg as one line, or "unknown". */
static void read_load(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *loadavg = fopen("/proc/loadavg", "r");
    if (loadavg) {
        if (!fgets(buf, (int)len, loadavg)) {
            snprintf(buf, len, "unknown");
        }
        buf[strcspn(buf, "\n")] = '\0';
        fclose(loadavg);
    }
}

static void print_header(const options_t *opt)
{
    char chunk[32], threshold[32];
    regpar_format_size(opt->chunk, chunk, sizeof(chunk));
    regpar_format_size(opt->threshold, threshold, sizeof(threshold));
    struct rlimit limit;
    getrlimit(RLIMIT_MEMLOCK, &limit);
    char memlock[32] = "unlimited";
    if (RLIM_INFINITY != limit.rlim_cur) {
        regpar_format_size(limit.rlim_cur, memlock, sizeof(memlock));
    }
    /* Other jobs on the machine show up in every figure: say how busy it was. */
    char load[64];
    read_load(load, sizeof(load));
    printf("# bench_reg: backend %s%s%s, chunk %s, threshold %s, threads %u (0 = cores), "
           "%ld online cores, THP %s, %s of %d run(s), RLIMIT_MEMLOCK %s, load %s\n",
           regpar_reg_backend_name(opt->backend), opt->provider ? " provider " : "",
           opt->provider ? opt->provider : "", chunk, threshold, opt->threads,
           sysconf(_SC_NPROCESSORS_ONLN), opt->thp ? "madvise(MADV_HUGEPAGE)" : "off",
           opt->use_min ? "minimum" : "median", opt->reps, memlock, load);
    printf("# times in seconds; register includes prefault; thr = most threads a run used; x-seq = "
           "seq time / this time for the engine's work (register + unregister) and for the total "
           "(>1 is faster)\n");
    printf("%-6s %-10s %-9s %3s %9s %9s %9s %9s %9s %7s %7s\n", "size", "memory", "mode", "thr",
           "allocate", "prefault", "register", "unreg", "total", "x-seq", "x-seq");
    printf("%-6s %-10s %-9s %3s %9s %9s %9s %9s %9s %7s %7s\n", "", "", "", "", "", "", "", "", "",
           "work", "total");
}

int main(int argc, char **argv)
{
    options_t opt;
    if (0 != parse_options(argc, argv, &opt)) {
        return 2;
    }
    use_min = opt.use_min;
    int nmodes = 0, modes[NMODES];
    for (int m = 0; m < NMODES; m++) {
        if (opt.mode_on[m]) {
            modes[nmodes++] = m;
        }
    }
    regpar_reg_engine_t *engines[NMODES] = {NULL};
    for (int i = 0; i < nmodes; i++) {
        engines[modes[i]] = make_engine(&opt, &all_modes[modes[i]]);
        if (!engines[modes[i]]) {
            return 2;
        }
        if (regpar_reg_engine_backend(engines[modes[i]]) != opt.backend) {
            fprintf(stderr, "bench_reg: backend %s is not available here (message above)\n",
                    regpar_reg_backend_name(opt.backend));
            return 2;
        }
    }
    print_header(&opt);

    static sample_t samples[NMODES][MAX_REPS];
    for (int s = 0; s < opt.nsizes; s++) {
        size_t len = (size_t)opt.sizes[s];
        char size_text[32];
        regpar_format_size(len, size_text, sizeof(size_text));
        uint64_t avail = available_memory();
        if (avail && len + ((uint64_t)1 << 30) > avail) {
            printf("%-6s skipped: %llu MiB available, need %zu MiB + 1 GiB\n", size_text,
                   (unsigned long long)(avail >> 20), len >> 20);
            continue;
        }
        for (int state = 0; state < 2; state++) {
            bool touched = 0 == state;
            if ((touched && !opt.touched) || (!touched && !opt.untouched)) {
                continue;
            }
            for (int rep = 0; rep < opt.reps; rep++) {
                for (int k = 0; k < nmodes; k++) {
                    int m = modes[(k + rep) % nmodes];
                    samples[m][rep] = run_once(engines[m], len, touched, opt.thp);
                }
            }
            row_t rows[NMODES];
            for (int k = 0; k < nmodes; k++) {
                rows[modes[k]] = summarise(samples[modes[k]], opt.reps);
            }
            const row_t *ref = opt.mode_on[0] ? &rows[0] : NULL;
            for (int k = 0; k < nmodes; k++) {
                int m = modes[k];
                const row_t *r = &rows[m];
                char work_ratio[16] = "-", total_ratio[16] = "-";
                if (ref) {
                    format_ratio(ref->reg + ref->unreg, r->reg + r->unreg, work_ratio,
                                 sizeof(work_ratio));
                    format_ratio(ref->total, r->total, total_ratio, sizeof(total_ratio));
                }
                printf("%-6s %-10s %-9s %3u %9.3f %9.3f %9.3f %9.3f %9.3f %7s %7s%s\n", size_text,
                       touched ? "touched" : "untouched", all_modes[m].name, r->threads,
                       r->allocate, r->prefault, r->reg, r->unreg, r->total, work_ratio,
                       total_ratio, r->failures ? "  REGISTRATION FAILED (see message)" : "");
            }
            fflush(stdout);
        }
    }
    for (int i = 0; i < nmodes; i++) {
        regpar_reg_engine_destroy(engines[modes[i]]);
    }
    char load[64];
    read_load(load, sizeof(load));
    printf("# load at the end: %s\n", load);
    return 0;
}
