/*
 * Failure paths of the registration engine.  Each must print one message
 * naming the backend, the cause and the parameter to change, roll back
 * every chunk already registered, and leave an engine that still hands out
 * usable (unregistered) memory with nothing leaked: statistics and the
 * kernel's VmLck back to their baseline.
 *
 *   - mlock failing at the Nth chunk (fault injection through cfg->sys),
 *     sequential and parallel, first / middle / last chunk;
 *   - the registration hook failing (cfg->sys->reg_fail_fn);
 *   - a real RLIMIT_MEMLOCK too small for backend pin, in a child that
 *     gives up CAP_IPC_LOCK (root ignores the limit otherwise);
 *   - verbs without a device, an unknown verbs device, an unknown ofi
 *     provider, a backend name that does not exist;
 *   - MADV_POPULATE_WRITE unsupported (touch fallback) or failing.
 */
#include "reg_test_util.h"

#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define MiB        ((size_t)1 << 20)
#define MAX_RANGES 1024

/* ------------------------------------------------------------------------ */
/* mlock/munlock that really lock, fail on request and keep a ledger. */

typedef struct ledger {
    pthread_mutex_t lock;
    int calls;   /* mlock calls so far */
    int fail_at; /* 1-based mlock call that fails; 0 = none */
    int fail_code;
    int nlocked;
    uintptr_t addr[MAX_RANGES];
    size_t len[MAX_RANGES];
    int locks, unlocks, stray_unlocks;
} ledger_t;

static ledger_t ledger = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void ledger_reset(int fail_at, int fail_code)
{
    pthread_mutex_lock(&ledger.lock);
    ledger.calls = 0;
    ledger.fail_at = fail_at;
    ledger.fail_code = fail_code;
    ledger.nlocked = 0;
    ledger.locks = ledger.unlocks = ledger.stray_unlocks = 0;
    pthread_mutex_unlock(&ledger.lock);
}

static int ledger_mlock(const void *addr, size_t len)
{
    pthread_mutex_lock(&ledger.lock);
    int call = ++ledger.calls;
    int rc = call == ledger.fail_at ? ledger.fail_code : test_mlock(addr, len);
    if (0 == rc) {
        UNIT_REQUIRE(ledger.nlocked < MAX_RANGES);
        ledger.addr[ledger.nlocked] = (uintptr_t)addr;
        ledger.len[ledger.nlocked] = len;
        ledger.nlocked++;
        ledger.locks++;
    }
    pthread_mutex_unlock(&ledger.lock);
    errno = rc; /* the C library's convention, as regpar_sys_ops_t asks */
    return 0 == rc ? 0 : -1;
}

static int ledger_munlock(const void *addr, size_t len)
{
    pthread_mutex_lock(&ledger.lock);
    bool found = false;
    for (int i = 0; i < ledger.nlocked && !found; i++) {
        if (ledger.addr[i] == (uintptr_t)addr && ledger.len[i] == len) {
            ledger.addr[i] = ledger.addr[ledger.nlocked - 1];
            ledger.len[i] = ledger.len[ledger.nlocked - 1];
            ledger.nlocked--;
            found = true;
        }
    }
    if (found) {
        ledger.unlocks++;
    } else {
        ledger.stray_unlocks++;
    }
    int rc = test_munlock(addr, len);
    pthread_mutex_unlock(&ledger.lock);
    errno = rc; /* the C library's convention, as regpar_sys_ops_t asks */
    return 0 == rc ? 0 : -1;
}

static const regpar_sys_ops_t ledger_ops = {.mlock_fn = ledger_mlock, .munlock_fn = ledger_munlock};

/* ------------------------------------------------------------------------ */

static regpar_reg_engine_t *make_engine(regpar_reg_config_t *cfg, capture_t *cap)
{
    cfg->log = capture_log;
    cfg->log_arg = cap;
    return reg_test_engine(cfg);
}

/* After a failure: a region still comes back, usable, registered exactly
 * when the backend in use registers. */
static void check_engine_still_works(regpar_reg_engine_t *engine, size_t len)
{
    size_t page = test_page_size();
    char *addr = map_fresh(len);
    long long before = vm_locked_bytes();
    regpar_reg_region_t region;
    UNIT_CHECK(0 == regpar_reg_region_register(engine, addr, len, &region));
    bool registers = REGPAR_REG_NONE != regpar_reg_engine_backend(engine);
    UNIT_CHECK(region.registered == registers);
    UNIT_CHECK(region.prefaulted);
    UNIT_CHECK_EQ_U64(resident_pages(addr, len), len / page);
    UNIT_CHECK_EQ_U64(pattern_roundtrip(addr, len, 0xabcdef), 0);
    regpar_reg_region_deregister(engine, &region);
    UNIT_CHECK_EQ_U64(vm_locked_bytes(), before);
    check_nothing_registered(engine);
    munmap(addr, len);
}

static void test_mlock_fails_at_chunk(regpar_reg_parallel_t parallel, int fail_at, int code,
                                      const char *expect_cause)
{
    const size_t len = 64 * MiB, chunk = 8 * MiB;
    const int nchunks = (int)(len / chunk);
    capture_t cap = {0};
    regpar_reg_config_t cfg;
    reg_test_config(&cfg, REGPAR_REG_PIN, parallel, 4, chunk, 0, &cap);
    cfg.sys = &ledger_ops;
    regpar_reg_engine_t *engine = make_engine(&cfg, &cap);

    long long before = vm_locked_bytes();
    for (int round = 0; round < 2; round++) {
        ledger_reset(fail_at, code);
        char *addr = map_fresh(len);
        regpar_reg_region_t region;
        UNIT_CHECK(0 == regpar_reg_region_register(engine, addr, len, &region));
        UNIT_CHECK(!region.registered);
        UNIT_CHECK(NULL == region.chunks && 0 == region.nchunks);
        UNIT_CHECK(region.prefaulted);
        /* every chunk that was locked was unlocked, and nothing else */
        UNIT_CHECK_EQ_U64(ledger.nlocked, 0);
        UNIT_CHECK_EQ_U64(ledger.locks, ledger.unlocks);
        UNIT_CHECK_EQ_U64(ledger.stray_unlocks, 0);
        if (REGPAR_PAR_OFF == parallel) {
            /* in order: exactly the chunks before the failing one */
            UNIT_CHECK_EQ_U64(ledger.locks, fail_at - 1);
        }
        UNIT_CHECK(ledger.calls >= fail_at && ledger.calls <= nchunks);
        UNIT_CHECK_EQ_U64(vm_locked_bytes(), before);
        UNIT_CHECK_EQ_U64(pattern_roundtrip(addr, len, (uint64_t)fail_at), 0);
        regpar_reg_region_deregister(engine, &region); /* harmless on a failed region */
        UNIT_CHECK_EQ_U64(ledger.stray_unlocks, 0);
        munmap(addr, len);

        regpar_reg_stats_t st;
        regpar_reg_get_stats(engine, &st);
        UNIT_CHECK_EQ_U64(st.reg_failures, round + 1);
        UNIT_CHECK_EQ_U64(st.bytes_registered, 0);
        UNIT_CHECK_EQ_U64(st.regions_registered, 0);
        UNIT_CHECK_EQ_U64(st.chunks_registered, 0);
    }
    /* one message for two failures with the same cause */
    UNIT_CHECK_EQ_U64(capture_warnings(&cap), 1);
    const char *msg =
        capture_find(&cap, "regpar: pin registration failed: ", expect_cause,
                     "mpool_regpar_reg_backend", "; continuing with unregistered memory", NULL);
    UNIT_CHECK(msg != NULL);
    if (!msg) {
        capture_dump(&cap);
    }

    ledger_reset(0, 0);
    check_engine_still_works(engine, 32 * MiB);
    UNIT_CHECK_EQ_U64(ledger.locks, 4);
    UNIT_CHECK_EQ_U64(ledger.unlocks, 4);
    regpar_reg_engine_destroy(engine);
}

/* ------------------------------------------------------------------------ */

typedef struct hook_state {
    uintptr_t fail_addr;
    int code;
    atomic_int calls;
} hook_state_t;

static int failing_hook(void *arg, const void *addr, size_t len)
{
    (void)len;
    hook_state_t *hook = arg;
    atomic_fetch_add(&hook->calls, 1);
    return (uintptr_t)addr == hook->fail_addr ? hook->code : 0;
}

static void test_registration_hook(void)
{
    const size_t len = 40 * MiB, chunk = 4 * MiB;
    hook_state_t hook = {.code = EPERM};
    atomic_init(&hook.calls, 0);
    regpar_sys_ops_t ops = {.mlock_fn = ledger_mlock,
                            .munlock_fn = ledger_munlock,
                            .reg_fail_fn = failing_hook,
                            .reg_fail_arg = &hook};
    capture_t cap = {0};
    regpar_reg_config_t cfg;
    reg_test_config(&cfg, REGPAR_REG_PIN, REGPAR_PAR_ON, 3, chunk, 0, &cap);
    cfg.sys = &ops;
    regpar_reg_engine_t *engine = make_engine(&cfg, &cap);
    char *addr = map_fresh(len);
    hook.fail_addr = (uintptr_t)addr + 7 * chunk; /* the 8th of 10 chunks */
    ledger_reset(0, 0);
    long long before = vm_locked_bytes();
    regpar_reg_region_t region;
    UNIT_CHECK(0 == regpar_reg_region_register(engine, addr, len, &region));
    UNIT_CHECK(!region.registered);
    UNIT_CHECK(atomic_load(&hook.calls) >= 8);
    UNIT_CHECK_EQ_U64(ledger.nlocked, 0);
    UNIT_CHECK_EQ_U64(ledger.locks, ledger.unlocks);
    UNIT_CHECK_EQ_U64(vm_locked_bytes(), before);
    /* EPERM is what mlock says when the limit is 0 */
    UNIT_CHECK(NULL !=
               capture_find(&cap, "pin registration failed", "RLIMIT_MEMLOCK", "ulimit -l", NULL));
    UNIT_CHECK_EQ_U64(pattern_roundtrip(addr, len, 3), 0);
    regpar_reg_region_deregister(engine, &region);
    munmap(addr, len);
    hook.fail_addr = 0;
    check_engine_still_works(engine, 8 * MiB);
    regpar_reg_engine_destroy(engine);
}

/* ------------------------------------------------------------------------ */
/* The real memlock limit.  Root has CAP_IPC_LOCK, which makes mlock ignore
 * RLIMIT_MEMLOCK: the child drops that capability first. */

static int drop_ipc_lock(void)
{
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    if (0 != syscall(SYS_capget, &header, data)) {
        return -1;
    }
    data[CAP_TO_INDEX(CAP_IPC_LOCK)].effective &= ~CAP_TO_MASK(CAP_IPC_LOCK);
    data[CAP_TO_INDEX(CAP_IPC_LOCK)].permitted &= ~CAP_TO_MASK(CAP_IPC_LOCK);
    data[CAP_TO_INDEX(CAP_IPC_LOCK)].inheritable &= ~CAP_TO_MASK(CAP_IPC_LOCK);
    return (int)syscall(SYS_capset, &header, data);
}

static int memlock_child(void)
{
    const size_t limit = 6 * MiB;
    if (0 == geteuid() && 0 != drop_ipc_lock()) {
        fprintf(stderr, "cannot drop CAP_IPC_LOCK: %s\n", strerror(errno));
        return 2;
    }
    struct rlimit rl = {.rlim_cur = limit, .rlim_max = limit};
    UNIT_REQUIRE(0 == setrlimit(RLIMIT_MEMLOCK, &rl));
    /* The limit must now really apply, or the test proves nothing. */
    char *probe = map_fresh(8 * MiB);
    UNIT_REQUIRE(0 != test_mlock(probe, 8 * MiB));
    munmap(probe, 8 * MiB);

    capture_t cap = {0};
    regpar_reg_config_t cfg;
    reg_test_config(&cfg, REGPAR_REG_PIN, REGPAR_PAR_ON, 2, 4 * MiB, 0, &cap);
    regpar_reg_engine_t *engine = make_engine(&cfg, &cap);
    long long before = vm_locked_bytes();
    for (int round = 0; round < 2; round++) {
        char *addr = map_fresh(16 * MiB);
        regpar_reg_region_t region;
        UNIT_CHECK(0 == regpar_reg_region_register(engine, addr, 16 * MiB, &region));
        UNIT_CHECK(!region.registered);
        UNIT_CHECK_EQ_U64(vm_locked_bytes(), before);
        UNIT_CHECK_EQ_U64(pattern_roundtrip(addr, 16 * MiB, 11), 0);
        regpar_reg_region_deregister(engine, &region);
        munmap(addr, 16 * MiB);
    }
    UNIT_CHECK_EQ_U64(capture_warnings(&cap), 1);
    const char *msg =
        capture_find(&cap, "regpar: pin registration failed: mlock of a 4M chunk",
                     "RLIMIT_MEMLOCK is 6M", "raise RLIMIT_MEMLOCK (ulimit -l",
                     "mpool_regpar_reg_backend=none", "continuing with unregistered memory", NULL);
    UNIT_CHECK(msg != NULL);
    if (msg) {
        printf("memlock message: %s\n", msg);
    } else {
        capture_dump(&cap);
    }
    regpar_reg_stats_t st;
    regpar_reg_get_stats(engine, &st);
    UNIT_CHECK_EQ_U64(st.reg_failures, 2);
    UNIT_CHECK_EQ_U64(st.bytes_registered, 0);
    /* within the limit the same engine still pins */
    check_engine_still_works(engine, 4 * MiB);
    regpar_reg_engine_destroy(engine);
    return unit_finish("memlock child");
}

static void test_memlock_limit(void)
{
    fflush(NULL);
    pid_t pid = fork();
    UNIT_REQUIRE(pid >= 0);
    if (0 == pid) {
        int rc = memlock_child();
        fflush(NULL);
        _exit(rc);
    }
    int status = 0;
    UNIT_REQUIRE(pid == waitpid(pid, &status, 0));
    UNIT_CHECK(WIFEXITED(status));
    UNIT_CHECK_EQ_U64(WEXITSTATUS(status), 0);
}

/* ------------------------------------------------------------------------ */
/* Backends that cannot open: one message, then backend none. */

static void check_open_failure(regpar_reg_config_t *cfg, const char *backend_text,
                               const char *cause, const char *parameter)
{
    capture_t cap = {0};
    regpar_reg_engine_t *engine = make_engine(cfg, &cap);
    UNIT_CHECK(REGPAR_REG_NONE == regpar_reg_engine_backend(engine));
    UNIT_CHECK_EQ_U64(capture_warnings(&cap), 1);
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "regpar: %s registration failed: ", backend_text);
    const char *msg =
        capture_find(&cap, prefix, cause, parameter, "; continuing with unregistered memory", NULL);
    UNIT_CHECK(msg != NULL);
    if (msg) {
        printf("%s message: %s\n", backend_text, msg);
    } else {
        capture_dump(&cap);
    }
    check_engine_still_works(engine, 16 * MiB);
    regpar_reg_stats_t st;
    regpar_reg_get_stats(engine, &st);
    UNIT_CHECK_EQ_U64(st.regions_registered, 0);
    regpar_reg_engine_destroy(engine);
    UNIT_CHECK_EQ_U64(capture_warnings(&cap), 1);
}

#ifdef HAVE_VERBS
static bool have_rdma_device(void)
{
    return 0 == access("/sys/class/infiniband", F_OK);
}
#endif

static void test_verbs_without_device(void)
{
    regpar_reg_config_t cfg;
    regpar_reg_config_defaults(&cfg);
    cfg.backend = REGPAR_REG_VERBS;
#ifdef HAVE_VERBS
    if (!have_rdma_device()) {
        check_open_failure(&cfg, "verbs", "no RDMA device found", "mpool_regpar_reg_backend");
    }
    regpar_reg_config_defaults(&cfg);
    cfg.backend = REGPAR_REG_VERBS;
    cfg.verbs_device = "nosuchdev0";
    if (have_rdma_device()) {
        check_open_failure(&cfg, "verbs", "RDMA device 'nosuchdev0' not found",
                           "mpool_regpar_verbs_device");
    } else {
        check_open_failure(&cfg, "verbs", "no RDMA device found", "mpool_regpar_reg_backend");
    }
#else
    check_open_failure(&cfg, "verbs", "not built with rdma-core verbs", "--with-verbs");
#endif
}

static void test_unknown_ofi_provider(void)
{
    regpar_reg_config_t cfg;
    regpar_reg_config_defaults(&cfg);
    cfg.backend = REGPAR_REG_OFI;
    cfg.ofi_provider = "nosuchprov";
#ifdef HAVE_LIBFABRIC
    check_open_failure(&cfg, "ofi", "no usable libfabric provider named 'nosuchprov'",
                       "set mpool_regpar_ofi_provider to one of: ");
#else
    check_open_failure(&cfg, "ofi", "not built with libfabric", "--with-libfabric");
#endif
}

static void test_unknown_backend_name(void)
{
    regpar_reg_config_t cfg;
    regpar_reg_config_defaults(&cfg);
    capture_t cap = {0};
    cfg.log = capture_log;
    cfg.log_arg = &cap;
    UNIT_CHECK(-1 == regpar_reg_config_set_backend(&cfg, "rdma"));
    UNIT_CHECK(REGPAR_REG_NONE == cfg.backend);
    const char *msg = capture_find(
        &cap, "regpar: rdma registration failed: ", "unknown registration backend 'rdma'",
        "set mpool_regpar_reg_backend to auto, ofi, verbs, pin or none",
        "; continuing with unregistered memory", NULL);
    UNIT_CHECK(msg != NULL);
    if (msg) {
        printf("backend-name message: %s\n", msg);
    }
    regpar_reg_engine_t *engine = make_engine(&cfg, &cap);
    UNIT_CHECK(REGPAR_REG_NONE == regpar_reg_engine_backend(engine));
    check_engine_still_works(engine, 8 * MiB);
    UNIT_CHECK_EQ_U64(capture_warnings(&cap), 1);
    regpar_reg_engine_destroy(engine);
}

/* ------------------------------------------------------------------------ */
/* Pre-faulting: an old kernel (EINVAL) falls back to touching pages without
 * changing data; a populate failure is reported once and registration
 * still goes on. */

static atomic_int madvise_calls;
static int madvise_code;

static int failing_madvise(void *addr, size_t len, int advice)
{
    atomic_fetch_add(&madvise_calls, 1);
    if (0 == madvise_code) {
        return madvise(addr, len, advice);
    }
    errno = madvise_code;
    return -1;
}

static void test_prefault_fallbacks(void)
{
    size_t page = test_page_size();
    const size_t len = 24 * MiB;
    regpar_sys_ops_t ops = {.madvise_fn = failing_madvise};
    capture_t cap = {0};
    regpar_reg_config_t cfg;
    reg_test_config(&cfg, REGPAR_REG_NONE, REGPAR_PAR_ON, 2, 4 * MiB, 0, &cap);
    cfg.sys = &ops;

    /* EINVAL: advice unknown, touch instead; data already there survives */
    madvise_code = EINVAL;
    atomic_init(&madvise_calls, 0);
    regpar_reg_engine_t *engine = make_engine(&cfg, &cap);
    char *addr = map_fresh(len);
    for (size_t off = 0; off < len; off += 3 * page + 8) {
        addr[off] = (char)(off % 251);
    }
    UNIT_CHECK(0 == regpar_reg_prefault(engine, addr, len));
    UNIT_CHECK_EQ_U64(resident_pages(addr, len), len / page);
    for (size_t off = 0; off < len; off += 3 * page + 8) {
        UNIT_CHECK_EQ_U64((unsigned char)addr[off], off % 251);
    }
    /* the engine remembers: later regions go straight to touching */
    int calls = atomic_load(&madvise_calls);
    UNIT_CHECK(calls >= 1);
    char *second = map_fresh(len);
    regpar_reg_region_t region;
    UNIT_CHECK(0 == regpar_reg_region_register(engine, second, len, &region));
    UNIT_CHECK(region.prefaulted);
    UNIT_CHECK_EQ_U64(resident_pages(second, len), len / page);
    UNIT_CHECK_EQ_U64(atomic_load(&madvise_calls), calls);
    regpar_reg_region_deregister(engine, &region);
    UNIT_CHECK_EQ_U64(capture_warnings(&cap), 0);
    regpar_reg_engine_destroy(engine);
    munmap(addr, len);
    munmap(second, len);

    /* ENOMEM under backend none: no touching (it would crash the same
     * way), one message, the region still comes back */
    madvise_code = ENOMEM;
    cap = (capture_t){0};
    engine = make_engine(&cfg, &cap);
    for (int round = 0; round < 2; round++) {
        addr = map_fresh(len);
        UNIT_CHECK(-1 == regpar_reg_prefault(engine, addr, len));
        UNIT_CHECK_EQ_U64(resident_pages(addr, len), 0);
        UNIT_CHECK(0 == regpar_reg_region_register(engine, addr, len, &region));
        UNIT_CHECK(!region.prefaulted && !region.registered);
        UNIT_CHECK_EQ_U64(pattern_roundtrip(addr, len, 8), 0);
        regpar_reg_region_deregister(engine, &region);
        munmap(addr, len);
    }
    UNIT_CHECK_EQ_U64(capture_warnings(&cap), 1);
    UNIT_CHECK(NULL != capture_find(&cap, "regpar: pre-faulting a 24M slab failed",
                                    strerror(ENOMEM), "mpool_regpar_prefault=off", NULL));
    regpar_reg_engine_destroy(engine);

    /* ENOMEM under backend pin: the pin was armed before faulting (see
     * regpar_reg_pin.c), so pages that cannot be brought in undo it, as a
     * failing mlock would */
    cap = (capture_t){0};
    cfg.backend = REGPAR_REG_PIN;
    cfg.parallel = REGPAR_PAR_AUTO;
    engine = make_engine(&cfg, &cap);
    long long before = vm_locked_bytes();
    for (int round = 0; round < 2; round++) {
        addr = map_fresh(len);
        UNIT_CHECK(0 == regpar_reg_region_register(engine, addr, len, &region));
        UNIT_CHECK(!region.prefaulted && !region.registered);
        UNIT_CHECK_EQ_U64(vm_locked_bytes(), before);
        UNIT_CHECK_EQ_U64(pattern_roundtrip(addr, len, 9), 0);
        regpar_reg_region_deregister(engine, &region);
        munmap(addr, len);
    }
    UNIT_CHECK_EQ_U64(capture_warnings(&cap), 1);
    UNIT_CHECK(NULL != capture_find(&cap,
                                    "regpar: pin registration failed: faulting in the pages "
                                    "of a 24M slab failed",
                                    strerror(ENOMEM), "mpool_regpar_reg_backend=none",
                                    "continuing with unregistered memory", NULL));
    regpar_reg_stats_t st;
    regpar_reg_get_stats(engine, &st);
    UNIT_CHECK_EQ_U64(st.reg_failures, 2);
    /* populating works again: the same engine pins */
    madvise_code = 0;
    check_engine_still_works(engine, len);
    regpar_reg_engine_destroy(engine);
}

int main(void)
{
    const char *cause_memlock = "mlock of a 8M chunk failed: Cannot allocate memory "
                                "(RLIMIT_MEMLOCK is ";
    test_mlock_fails_at_chunk(REGPAR_PAR_OFF, 1, ENOMEM, cause_memlock);
    test_mlock_fails_at_chunk(REGPAR_PAR_OFF, 3, ENOMEM, cause_memlock);
    test_mlock_fails_at_chunk(REGPAR_PAR_OFF, 8, ENOMEM, cause_memlock);
    test_mlock_fails_at_chunk(REGPAR_PAR_ON, 3, ENOMEM, cause_memlock);
    test_mlock_fails_at_chunk(REGPAR_PAR_ON, 8, ENOMEM, cause_memlock);
    test_mlock_fails_at_chunk(REGPAR_PAR_ON, 5, EAGAIN,
                              "mlock of a 8M chunk failed: Resource temporarily unavailable");
    test_registration_hook();
    test_memlock_limit();
    test_verbs_without_device();
    test_unknown_ofi_provider();
    test_unknown_backend_name();
    test_prefault_fallbacks();
    return unit_finish("test_reg_failure");
}
