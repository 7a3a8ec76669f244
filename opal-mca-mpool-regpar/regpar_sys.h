/*
 * regpar_sys: the system-call and message context shared by the pool core
 * (regpar_pool*.c) and the registration engine (regpar_reg*.c).  Free of
 * Open MPI types.
 *
 * One table of overridable system calls (tests and fuzzers inject failures
 * through it), one log callback type, one log-once scheme and one
 * pre-fault path, so that the pool and the engine fail, fall back and
 * report the same way.
 */
#ifndef REGPAR_SYS_H
#define REGPAR_SYS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/mman.h>

#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux >= 5.14; older kernels answer EINVAL */
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Messages to the user (invalid settings, failed system calls).  level: 0 =
 * error, 1 = warning (every fallback message), 2+ = verbose detail. */
typedef void (*regpar_log_fn)(void *arg, int level, const char *msg);

/*
 * System calls the pool and the engine make, overridable so that tests
 * inject failures at the Nth call.  NULL members mean the real call.  The
 * memory calls follow the C library's convention (0, or -1 with errno;
 * mmap: MAP_FAILED with errno).
 */
typedef struct regpar_sys_ops {
    void *(*mmap_fn)(void *addr, size_t len, int prot, int flags, int fd, long off);
    int (*munmap_fn)(void *addr, size_t len);
    int (*madvise_fn)(void *addr, size_t len, int advice);
    /* Replaces the lock call of backend pin, whichever it is (mlock, or
     * mlock2 with MLOCK_ONFAULT when the engine pre-faults afterwards). */
    int (*mlock_fn)(const void *addr, size_t len);
    int (*munlock_fn)(const void *addr, size_t len);
    /* Called by the engine before every chunk registration, whatever the
     * backend (mlock, fi_mr_reg, ibv_reg_mr, a registrar's reg), when set:
     * returning non-zero (an errno-style positive code) makes that
     * registration fail with it instead of making the call. */
    int (*reg_fail_fn)(void *arg, const void *addr, size_t len);
    void *reg_fail_arg;
    /* Threads of other work runnable on the machine right now, which
     * reg_parallel=auto leaves their cores to (default: from the running
     * count of /proc/loadavg). */
    unsigned (*busy_threads_fn)(void);
} regpar_sys_ops_t;

/* Distinct causes remembered for log-once; later ones are still logged,
 * only not deduplicated. */
#define REGPAR_SYS_ONCE_MAX 32
#define REGPAR_SYS_KEY_LEN  64

/* One user of the context (a pool, an engine).  Filled by
 * regpar_sys_init; the members are not for the user to touch. */
typedef struct regpar_sys {
    const regpar_sys_ops_t *ops; /* NULL = every call real */
    regpar_log_fn log;           /* NULL = stderr for levels 0 and 1 */
    void *log_arg;
    /* Levels above this are not emitted (the callback is not called);
     * REGPAR_SYS_VERBOSE_ALL leaves the choice to the callback. */
    int verbose;
    /* Without a callback, messages go to stderr as "<name>: error: <msg>"
     * (or warning); with name NULL, as the bare message. */
    const char *name;
    /* Remember that MADV_POPULATE_WRITE is unknown (kernel < 5.14) and go
     * straight to touching from then on: set by the engine, which
     * pre-faults in many pieces from several threads; the pool asks once
     * per slab anyway. */
    bool remember_unsupported;
    atomic_bool populate_unsupported;
    /* Log-once: causes reported since they were (re-)armed. */
    pthread_mutex_t once_lock;
    atomic_uint nonce;
    char once[REGPAR_SYS_ONCE_MAX][REGPAR_SYS_KEY_LEN];
} regpar_sys_t;

#define REGPAR_SYS_VERBOSE_ALL 1000

void regpar_sys_init(regpar_sys_t *sys, const regpar_sys_ops_t *ops, regpar_log_fn log,
                     void *log_arg, int verbose, const char *name);
void regpar_sys_fini(regpar_sys_t *sys);

/* ---- system calls: the hook when set, else the real call ------------- */

/* Anonymous private read/write mapping of len bytes; MAP_FAILED with errno. */
void *regpar_sys_map(const regpar_sys_t *sys, size_t len);
/* 0 or -1 with errno. */
int regpar_sys_munmap(const regpar_sys_t *sys, void *addr, size_t len);
/* 0 or an errno code (EINTR retried). */
int regpar_sys_madvise(const regpar_sys_t *sys, void *addr, size_t len, int advice);
/* mlock (or mlock2 MLOCK_ONFAULT when onfault) / munlock as system calls
 * (sanitizer runtimes turn the libc functions into no-ops): 0 or errno. */
int regpar_sys_mlock(const regpar_sys_t *sys, const void *addr, size_t len, bool onfault);
int regpar_sys_munlock(const regpar_sys_t *sys, const void *addr, size_t len);
/* Whether mlock2(MLOCK_ONFAULT) is available (Linux >= 4.4, no seccomp
 * filter refusing it). */
bool regpar_sys_mlock_onfault_supported(void);
/* The injected failure of a registration of [addr, addr+len): 0 to go on
 * with the real call. */
int regpar_sys_injected_failure(const regpar_sys_t *sys, const void *addr, size_t len);
/* Runnable threads of other work (hook, or /proc/loadavg). */
unsigned regpar_sys_busy_threads(const regpar_sys_t *sys);

/*
 * Fault every page of [addr, addr+len) in for writing:
 * madvise(MADV_POPULATE_WRITE), or, where the kernel does not know that
 * advice, one atomic no-op write per page (data already there survives).
 * Returns 0 or the errno of a populate that failed for another reason
 * (ENOMEM, EFAULT: touching would crash the same way).  page: the page
 * size.  Thread-safe; the caller reports a failure.
 */
int regpar_sys_prefault(regpar_sys_t *sys, void *addr, size_t len, size_t page);

/* ---- messages -------------------------------------------------------- */

/* Hand msg to log (or stderr, see regpar_sys_t.name) with no context:
 * for messages about a configuration before any pool or engine exists. */
void regpar_sys_emit(regpar_log_fn log, void *log_arg, const char *name, int level,
                     const char *msg);

void regpar_sys_log(const regpar_sys_t *sys, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* True the first time key is seen since it was (re-)armed. */
bool regpar_sys_first(regpar_sys_t *sys, const char *key);

/* Report a cause once until it is re-armed (an episode, not every call);
 * repeats are still visible at verbose >= 2. */
void regpar_sys_log_once(regpar_sys_t *sys, const char *key, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The cause is over (the call succeeded again): report it next time. */
void regpar_sys_log_rearm(regpar_sys_t *sys, const char *key);

#ifdef __cplusplus
}
#endif

#endif /* REGPAR_SYS_H */
