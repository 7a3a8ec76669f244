/*
 * libFuzzer target: the pool core driven by the input as a program of
 * operations, against a model of the buffers that are out.
 *
 * The first bytes choose a configuration (valid or not: an invalid one
 * must be refused by regpar_pool_config_check and regpar_pool_create alike,
 * with a message).  The rest is a sequence of operations: allocations of
 * any size and alignment, frees, bad frees (interior, double, foreign),
 * collections, clock advances, injected failures of mmap, munmap and
 * madvise, reports.  After every operation:
 *   - a new buffer is page aligned (or as asked), overlaps no buffer that is
 *     out and holds what is written to it until it is freed;
 *   - a bad free returns -1 and changes no counter;
 *   - allocs == hits + misses + direct_allocs, allocs - frees == buffers
 *     out, bytes_in_use == the sum of their sizes, bytes_held >= bytes_in_use;
 *   - with nothing out, bytes_held <= max_capacity;
 *   - an allocation fails only when a failure was injected.
 * Pre-faulting is skipped (madvise is a hook) so that runs stay fast: this
 * fuzzes the pool's logic, not the kernel.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "regpar_pool.h"

#define MIB        ((size_t)1 << 20)
#define MAX_LIVE   64
#define MAX_BYTES  (96 * MIB)
#define MAX_FREED  16
#define PAGE_GUESS 4096

typedef struct {
    const uint8_t *p;
    size_t n;
} input_t;

static uint8_t take8(input_t *in)
{
    if (!in->n) {
        return 0;
    }
    in->n--;
    return *in->p++;
}

static uint32_t take_bytes(input_t *in, int k)
{
    uint32_t v = 0;
    for (int i = 0; i < k; i++) {
        v = v << 8 | take8(in);
    }
    return v;
}

/* ------------------------------------------------------------------------ */
/* System hooks with injected failures */

static struct {
    unsigned fail_mmap, fail_munmap, fail_populate, fail_hugepage;
    unsigned long injected; /* failures that could make an allocation fail */
} faults;

static void *hook_mmap(void *addr, size_t len, int prot, int flags, int fd, long off)
{
    if (faults.fail_mmap) {
        faults.fail_mmap--;
        faults.injected++;
        errno = ENOMEM;
        return MAP_FAILED;
    }
    return mmap(addr, len, prot, flags, fd, (off_t)off);
}

/* A failed munmap is reported to the pool, but the range is unmapped all
 * the same: the pool must not touch it again either way, and millions of
 * runs must not leak address space. */
static int hook_munmap(void *addr, size_t len)
{
    int rc = munmap(addr, len);
    if (faults.fail_munmap) {
        faults.fail_munmap--;
        errno = EINVAL;
        return -1;
    }
    return rc;
}

static int hook_madvise(void *addr, size_t len, int advice)
{
    (void)addr;
    (void)len;
    if (advice == MADV_HUGEPAGE) {
        if (faults.fail_hugepage) {
            faults.fail_hugepage--;
            errno = EINVAL;
            return -1;
        }
        return 0;
    }
    if (faults.fail_populate) {
        faults.fail_populate--;
        faults.injected++;
        errno = ENOMEM;
        return -1;
    }
    return 0; /* populated lazily: the test touches only what it checks */
}

static const regpar_sys_ops_t hooks = {hook_mmap, hook_munmap, hook_madvise};

static uint64_t fake_now;

static uint64_t fake_clock(void *arg)
{
    (void)arg;
    return fake_now;
}

static void quiet_log(void *arg, int level, const char *msg)
{
    (void)arg;
    (void)level;
    FUZZ_CHECK(msg && msg[0]);
}

/* ------------------------------------------------------------------------ */
/* The model */

typedef struct {
    unsigned char *addr;
    size_t request, size, align;
    uint8_t tag;
} live_t;

static struct {
    live_t live[MAX_LIVE];
    size_t nlive, bytes_requested, bytes_out;
    void *freed[MAX_FREED]; /* recently freed addresses, for double frees */
    size_t nfreed;
    uint64_t frees;
    size_t page;
} model;

static void touch_and_tag(live_t *b)
{
    b->addr[0] = b->tag;
    b->addr[b->size - 1] = (uint8_t)~b->tag;
    b->addr[b->size / 2] = (uint8_t)(b->tag + 1);
}

static void check_tag(const live_t *b)
{
    FUZZ_CHECK_MSG(b->addr[0] == b->tag && b->addr[b->size - 1] == (uint8_t)~b->tag &&
                       b->addr[b->size / 2] == (uint8_t)(b->tag + 1),
                   "buffer %p of %zu bytes lost its contents", (void *)b->addr, b->size);
}

static bool is_live(const void *p)
{
    for (size_t i = 0; i < model.nlive; i++) {
        if (model.live[i].addr == p) {
            return true;
        }
    }
    return false;
}

static void check_invariants(regpar_pool_t *pool, const regpar_pool_config_t *cfg)
{
    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    FUZZ_CHECK(st.allocs == st.hits + st.misses + st.direct_allocs);
    FUZZ_CHECK_MSG(st.allocs - st.frees == model.nlive, "allocs %llu frees %llu out %zu",
                   (unsigned long long)st.allocs, (unsigned long long)st.frees, model.nlive);
    FUZZ_CHECK(st.frees == model.frees);
    FUZZ_CHECK_MSG(st.bytes_in_use == model.bytes_out, "bytes_in_use %llu, model %zu",
                   (unsigned long long)st.bytes_in_use, model.bytes_out);
    FUZZ_CHECK(st.bytes_held >= st.bytes_in_use);
    FUZZ_CHECK(st.bytes_peak >= st.bytes_held && st.bytes_in_use_peak >= st.bytes_in_use);
    FUZZ_CHECK(st.slabs_mapped >= st.slabs_released);
    if (model.nlive == 0) {
        FUZZ_CHECK_MSG(st.bytes_held <= cfg->max_capacity,
                       "nothing out but %llu bytes held, cap %zu",
                       (unsigned long long)st.bytes_held, cfg->max_capacity);
    }
}

static size_t round_page(size_t v)
{
    return (v + model.page - 1) / model.page * model.page;
}

/* ------------------------------------------------------------------------ */
/* Operations */

static size_t draw_size(input_t *in)
{
    uint8_t kind = take8(in);
    switch (kind % 6) {
        case 0:
            return 0;
        case 1:
            return take_bytes(in, 2) % 70000;
        case 2: /* around page multiples */
            return (size_t)(take8(in) % 64 + 1) * model.page + (size_t)(take8(in) % 3) - 1;
        case 3: /* around powers of two (bucket sizes with factor 2) */
            return ((size_t)1 << (12 + take8(in) % 12)) + (size_t)(take8(in) % 3) - 1;
        default:
            return take_bytes(in, 3) % (12 * MIB);
    }
}

static void op_alloc(regpar_pool_t *pool, input_t *in, bool aligned)
{
    size_t request = draw_size(in), align = 0;
    if (aligned) {
        uint8_t a = take8(in);
        align = a & 0x80 ? (size_t)(a & 0x7f) : (size_t)1 << (a % 24);
    }
    if (model.nlive == MAX_LIVE || model.bytes_requested + request > MAX_BYTES) {
        return;
    }
    regpar_pool_stats_t before;
    regpar_pool_get_stats(pool, &before);
    unsigned long injected = faults.injected;
    unsigned char *p = aligned ? regpar_pool_alloc_aligned(pool, request, align)
                               : regpar_pool_alloc(pool, request);
    bool bad_align = aligned && align && ((align & (align - 1)) || align > ((size_t)1 << 30));
    if (!p) {
        FUZZ_CHECK_MSG(bad_align || faults.injected != injected,
                       "allocation of %zu (align %zu) failed with no failure injected", request,
                       align);
        regpar_pool_stats_t after;
        regpar_pool_get_stats(pool, &after);
        FUZZ_CHECK(after.alloc_failures == before.alloc_failures + 1);
        return;
    }
    FUZZ_CHECK_MSG(!bad_align, "alignment %zu accepted", align);
    FUZZ_CHECK(((uintptr_t)p % model.page) == 0);
    if (align > model.page) {
        FUZZ_CHECK_MSG(((uintptr_t)p % align) == 0, "%p not aligned to %zu", (void *)p, align);
    }
    regpar_buffer_info_t info;
    FUZZ_CHECK(regpar_pool_buffer_info(pool, p, &info) == 0);
    FUZZ_CHECK(info.base == p && !info.registered && info.size >= request && info.size > 0);
    FUZZ_CHECK(info.size % model.page == 0);
    if (!aligned) {
        size_t bucket = regpar_pool_bucket_size(pool, request);
        FUZZ_CHECK_MSG(bucket ? info.size == bucket
                              : info.size == round_page(request ? request : 1),
                       "request %zu got %zu, bucket_size says %zu", request, info.size, bucket);
    }
    FUZZ_CHECK(regpar_pool_owns(pool, p));
    for (size_t i = 0; i < model.nlive; i++) {
        const live_t *o = &model.live[i];
        FUZZ_CHECK_MSG(p + info.size <= o->addr || o->addr + o->size <= p,
                       "new buffer %p+%zu overlaps %p+%zu", (void *)p, info.size, (void *)o->addr,
                       o->size);
    }
    live_t *b = &model.live[model.nlive++];
    *b = (live_t){p, request, info.size, align, (uint8_t)(take8(in) | 1)};
    touch_and_tag(b);
    model.bytes_requested += request;
    model.bytes_out += info.size;
}

static void op_free(regpar_pool_t *pool, size_t index)
{
    live_t b = model.live[index];
    check_tag(&b);
    FUZZ_CHECK(regpar_pool_free(pool, b.addr) == 0);
    model.live[index] = model.live[--model.nlive];
    model.bytes_requested -= b.request;
    model.bytes_out -= b.size;
    model.frees++;
    FUZZ_CHECK(!regpar_pool_owns(pool, b.addr));
    if (model.nfreed < MAX_FREED) {
        model.freed[model.nfreed++] = b.addr;
    } else {
        model.freed[b.tag % MAX_FREED] = b.addr;
    }
}

static void op_bad_free(regpar_pool_t *pool, input_t *in)
{
    uint8_t how = take8(in);
    void *bad = NULL;
    int on_stack;
    switch (how % 4) {
        case 0:
            if (model.nlive) {
                const live_t *b = &model.live[take8(in) % model.nlive];
                size_t off = (size_t)take_bytes(in, 3) % b->size;
                bad = b->addr + (off ? off : 1);
            }
            break;
        case 1:
            if (model.nfreed) {
                bad = model.freed[take8(in) % model.nfreed];
            }
            break;
        case 2:
            bad = &on_stack;
            break;
        default:
            bad = (void *)(uintptr_t)take_bytes(in, 4);
            break;
    }
    if (!bad || is_live(bad)) {
        return; /* a freed address handed out again is not a bad free */
    }
    regpar_pool_stats_t before, after;
    regpar_pool_get_stats(pool, &before);
    FUZZ_CHECK_MSG(regpar_pool_free(pool, bad) == -1, "bad free of %p accepted", bad);
    FUZZ_CHECK(!regpar_pool_owns(pool, bad));
    regpar_buffer_info_t info;
    FUZZ_CHECK(regpar_pool_buffer_info(pool, bad, &info) == -1);
    regpar_pool_get_stats(pool, &after);
    FUZZ_CHECK(before.frees == after.frees && before.bytes_in_use == after.bytes_in_use &&
               before.bytes_held == after.bytes_held);
}

static void op_collect(regpar_pool_t *pool, input_t *in)
{
    regpar_pool_stats_t before, after;
    regpar_pool_get_stats(pool, &before);
    size_t released = regpar_pool_collect(pool, take8(in) & 1);
    regpar_pool_get_stats(pool, &after);
    FUZZ_CHECK_MSG(before.bytes_held - after.bytes_held == released,
                   "collect says %zu released, held went %llu -> %llu", released,
                   (unsigned long long)before.bytes_held, (unsigned long long)after.bytes_held);
    FUZZ_CHECK(after.bytes_in_use == before.bytes_in_use);
}

static void op_report(regpar_pool_t *pool, input_t *in)
{
    char buf[512];
    size_t len = take8(in) * 2u;
    memset(buf, 'x', sizeof(buf));
    int need = regpar_pool_report(pool, len ? buf : NULL, len);
    FUZZ_CHECK(need > 0);
    if (len) {
        FUZZ_CHECK(memchr(buf, '\0', len) != NULL);
        FUZZ_CHECK(strlen(buf) == ((size_t)need < len ? (size_t)need : len - 1));
    }
}

/* ------------------------------------------------------------------------ */
/* Configuration */

static void draw_config(input_t *in, regpar_pool_config_t *cfg)
{
    static const size_t maxes[] = {16384, 65536, MIB, 4 * MIB, 8 * MIB, 64 * MIB, 3000, 4096, 8192};
    static const double factors[] = {2.0, 1.5, 1.1, 3.0, 16.0, 1.0, 17.0, 1.0001, 1.25};
    static const size_t slabs[] = {2 * MIB, 4 * MIB, 8 * MIB, 2 * MIB, 3 * MIB, 0};
    static const size_t caps[] = {2 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, MIB, 6 * MIB};
    static const uint64_t ages[] = {0, 1000000, 10000000, 1000000000};
    static const int nodes[] = {-1, -1, -1, 0, 2000, -2};
#define PICK(table) table[take8(in) % (sizeof(table) / sizeof(table[0]))]
    regpar_pool_config_defaults(cfg);
    uint8_t min = take8(in);
    cfg->bucket_min = min & 0x80 ? (size_t)(min & 0x7f) * 1000 : (size_t)(min % 4 + 1) * model.page;
    cfg->bucket_max = PICK(maxes);
    cfg->bucket_factor = PICK(factors);
    cfg->slab_size = PICK(slabs);
    cfg->max_capacity = PICK(caps);
    cfg->gc_age_ns = PICK(ages);
    cfg->numa_node = PICK(nodes);
#undef PICK
    cfg->hugepages = take8(in) & 1;
    cfg->clock = fake_clock;
    cfg->log = quiet_log;
    cfg->sys = &hooks;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input_t in = {data, size};
    memset(&model, 0, sizeof(model));
    memset(&faults, 0, sizeof(faults));
    model.page = (size_t)sysconf(_SC_PAGESIZE);
    fake_now = 1000000000ULL;

    regpar_pool_config_t cfg;
    draw_config(&in, &cfg);
    char err[256] = "", err2[256] = "";
    int valid = regpar_pool_config_check(&cfg, model.page, err, sizeof(err));
    regpar_pool_t *pool = NULL;
    int rc = regpar_pool_create(&cfg, &pool, err2, sizeof(err2));
    FUZZ_CHECK_MSG((valid == 0) == (rc == 0), "check says %d, create says %d (%s)", valid, rc,
                   err2);
    if (rc != 0) {
        FUZZ_CHECK(pool == NULL && err[0] && strcmp(err, err2) == 0);
        return 0;
    }

    while (in.n) {
        uint8_t op = take8(&in);
        switch (op % 12) {
            case 0:
            case 1:
            case 2:
                op_alloc(pool, &in, false);
                break;
            case 3:
                op_alloc(pool, &in, true);
                break;
            case 4:
            case 5:
            case 6:
                if (model.nlive) {
                    op_free(pool, take8(&in) % model.nlive);
                }
                break;
            case 7:
                op_bad_free(pool, &in);
                break;
            case 8:
                op_collect(pool, &in);
                break;
            case 9:
                fake_now += (uint64_t)take_bytes(&in, 2) * 1000000ULL;
                break;
            case 10: {
                uint8_t f = take8(&in);
                faults.fail_mmap = f & 3;
                faults.fail_munmap = (f >> 2) & 3;
                faults.fail_populate = (f >> 4) & 3;
                faults.fail_hugepage = (f >> 6) & 3;
                break;
            }
            default:
                op_report(pool, &in);
                break;
        }
        check_invariants(pool, &cfg);
    }

    /* Everything back: nothing out, the cap respected. */
    faults.fail_mmap = faults.fail_populate = 0;
    while (model.nlive) {
        op_free(pool, model.nlive - 1);
    }
    check_invariants(pool, &cfg);
    regpar_pool_destroy(pool);
    return 0;
}
