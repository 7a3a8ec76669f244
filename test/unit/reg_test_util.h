/*
 * Helpers shared by the registration engine tests: a log callback that
 * keeps every message, the locked-memory figure the kernel reports, fresh
 * anonymous mappings and a data pattern to write and verify through a
 * registered range.
 */
#ifndef REG_TEST_UTIL_H
#define REG_TEST_UTIL_H

#include "bufpool_config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "regpar_reg.h"
#include "unit.h"

#define CAPTURE_MAX 64

typedef struct capture {
    int count;
    int levels[CAPTURE_MAX];
    char msgs[CAPTURE_MAX][1024];
} capture_t;

static inline void capture_log(void *arg, int level, const char *msg)
{
    capture_t *cap = arg;
    if (cap->count < CAPTURE_MAX) {
        cap->levels[cap->count] = level;
        snprintf(cap->msgs[cap->count], sizeof(cap->msgs[0]), "%s", msg);
    }
    cap->count++;
}

/* Messages at level 0 or 1: the ones a user sees by default. */
static inline int capture_warnings(const capture_t *cap)
{
    int n = 0;
    for (int i = 0; i < cap->count && i < CAPTURE_MAX; i++) {
        n += cap->levels[i] <= 1;
    }
    return n;
}

/* The first warning (level <= 1) holding every one of the NULL-terminated
 * needles, or NULL. */
static inline const char *capture_find(const capture_t *cap, const char *needle, ...)
{
    for (int i = 0; i < cap->count && i < CAPTURE_MAX; i++) {
        if (cap->levels[i] > 1) {
            continue;
        }
        bool all = true;
        va_list ap;
        va_start(ap, needle);
        for (const char *n = needle; n && all; n = va_arg(ap, const char *)) {
            all = NULL != strstr(cap->msgs[i], n);
        }
        va_end(ap);
        if (all) {
            return cap->msgs[i];
        }
    }
    return NULL;
}

static inline void capture_dump(const capture_t *cap)
{
    for (int i = 0; i < cap->count && i < CAPTURE_MAX; i++) {
        fprintf(stderr, "  log[%d] level %d: %s\n", i, cap->levels[i], cap->msgs[i]);
    }
}

/* A "<field> <n> kB" line of a /proc file, in bytes; the test stops if the
 * file or the line is missing. */
static inline long long proc_kib_field(const char *path, const char *scan)
{
    FILE *file = fopen(path, "r");
    UNIT_REQUIRE(file != NULL);
    char line[256];
    long long kib = -1;
    while (fgets(line, sizeof(line), file)) {
        if (1 == sscanf(line, scan, &kib)) {
            break;
        }
    }
    fclose(file);
    UNIT_REQUIRE(kib >= 0);
    return kib * 1024;
}

/* VmLck of this process in bytes (the kernel's own count of locked pages). */
static inline long long vm_locked_bytes(void)
{
    return proc_kib_field("/proc/self/status", "VmLck: %lld kB");
}

/* Resident pages of locked mappings ("Locked:" of smaps_rollup), in bytes.
 * Unlike VmLck, which counts what was asked to be locked, this counts
 * pages that are present and locked: a lock armed on fault whose pages
 * were never brought in does not show here. */
static inline long long locked_resident_bytes(void)
{
    return proc_kib_field("/proc/self/smaps_rollup", "Locked: %lld kB");
}

/* mlock/munlock as system calls: sanitizer runtimes turn the libc
 * functions into no-ops.  Return 0 or errno. */
static inline int test_mlock(const void *addr, size_t len)
{
    return 0 == syscall(SYS_mlock, addr, len) ? 0 : errno;
}

static inline int test_munlock(const void *addr, size_t len)
{
    return 0 == syscall(SYS_munlock, addr, len) ? 0 : errno;
}

static inline size_t test_page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* A fresh private anonymous mapping: no page is present yet. */
static inline void *map_fresh(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    UNIT_REQUIRE(p != MAP_FAILED);
    return p;
}

/* Pages of [addr, addr+len) present in memory, counted by mincore. */
static inline size_t resident_pages(void *addr, size_t len)
{
    size_t page = test_page_size();
    size_t npages = (len + page - 1) / page;
    unsigned char *vec = malloc(npages);
    UNIT_REQUIRE(vec != NULL);
    UNIT_REQUIRE(0 == mincore(addr, len, vec));
    size_t n = 0;
    for (size_t i = 0; i < npages; i++) {
        n += vec[i] & 1;
    }
    free(vec);
    return n;
}

/* Write a position-dependent pattern over one word per 512 bytes and read
 * it back; returns the number of mismatches. */
static inline size_t pattern_roundtrip(void *addr, size_t len, uint64_t seed)
{
    /* memcpy: the range may start anywhere */
    char *bytes = addr;
    size_t n = len / sizeof(uint64_t), bad = 0;
    for (size_t i = 0; i < n; i += 64) {
        uint64_t word = seed ^ (i * 0x9e3779b97f4a7c15ull);
        memcpy(bytes + i * sizeof(word), &word, sizeof(word));
    }
    uint64_t last = ~seed, got;
    if (n > 0) {
        memcpy(bytes + (n - 1) * sizeof(last), &last, sizeof(last));
    }
    for (size_t i = 0; i < n; i += 64) {
        if (i != n - 1) {
            memcpy(&got, bytes + i * sizeof(got), sizeof(got));
            bad += got != (seed ^ (i * 0x9e3779b97f4a7c15ull));
        }
    }
    if (n > 0) {
        memcpy(&got, bytes + (n - 1) * sizeof(got), sizeof(got));
        bad += got != last;
    }
    return bad;
}

/* An engine configuration with what the tests vary; messages into cap
 * when given. */
static inline void reg_test_config(regpar_reg_config_t *cfg, regpar_reg_backend_t backend,
                                   regpar_reg_parallel_t parallel, unsigned threads, size_t chunk,
                                   size_t threshold, capture_t *cap)
{
    regpar_reg_config_defaults(cfg);
    cfg->backend = backend;
    cfg->parallel = parallel;
    cfg->threads = threads;
    cfg->chunk_size = chunk;
    cfg->threshold = threshold;
    if (cap) {
        cfg->log = capture_log;
        cfg->log_arg = cap;
    }
}

/* The engine of cfg; the test stops if it cannot be created. */
static inline regpar_reg_engine_t *reg_test_engine(const regpar_reg_config_t *cfg)
{
    regpar_reg_engine_t *engine = NULL;
    char err[512];
    if (0 != regpar_reg_engine_create(cfg, &engine, err, sizeof(err))) {
        fprintf(stderr, "engine_create: %s\n", err);
    }
    UNIT_REQUIRE(engine != NULL);
    return engine;
}

/* Engine statistics that must be back to their baseline once every region
 * is deregistered. */
static inline void check_nothing_registered(regpar_reg_engine_t *engine)
{
    regpar_reg_stats_t st;
    regpar_reg_get_stats(engine, &st);
    UNIT_CHECK_EQ_U64(st.bytes_registered, 0);
    UNIT_CHECK_EQ_U64(st.chunks_registered, st.chunks_deregistered);
    UNIT_CHECK_EQ_U64(st.regions_registered, st.regions_deregistered);
}

#endif /* REG_TEST_UTIL_H */
