/*
 * The system-call and message context shared by the pool core and the
 * registration engine (regpar_sys.h).
 */
#include "bufpool_config.h"

#include "regpar_sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 0x01
#endif

void regpar_sys_init(regpar_sys_t *sys, const regpar_sys_ops_t *ops, regpar_log_fn log,
                     void *log_arg, int verbose, const char *name)
{
    memset(sys, 0, sizeof(*sys));
    sys->ops = ops;
    sys->log = log;
    sys->log_arg = log_arg;
    sys->verbose = verbose;
    sys->name = name;
    atomic_init(&sys->populate_unsupported, false);
    atomic_init(&sys->nonce, 0);
    pthread_mutex_init(&sys->once_lock, NULL);
}

void regpar_sys_fini(regpar_sys_t *sys)
{
    pthread_mutex_destroy(&sys->once_lock);
}

/* ------------------------------------------------------------------------ */
/* System calls */

static const regpar_sys_ops_t *ops_of(const regpar_sys_t *sys)
{
    return sys ? sys->ops : NULL;
}

void *regpar_sys_map(const regpar_sys_t *sys, size_t len)
{
    const regpar_sys_ops_t *ops = ops_of(sys);
    int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
    if (ops && ops->mmap_fn) {
        return ops->mmap_fn(NULL, len, prot, flags, -1, 0);
    }
    return mmap(NULL, len, prot, flags, -1, 0);
}

int regpar_sys_munmap(const regpar_sys_t *sys, void *addr, size_t len)
{
    const regpar_sys_ops_t *ops = ops_of(sys);
    return ops && ops->munmap_fn ? ops->munmap_fn(addr, len) : munmap(addr, len);
}

int regpar_sys_madvise(const regpar_sys_t *sys, void *addr, size_t len, int advice)
{
    const regpar_sys_ops_t *ops = ops_of(sys);
    int rc;
    do {
        if (ops && ops->madvise_fn) {
            rc = 0 == ops->madvise_fn(addr, len, advice) ? 0 : errno;
        } else {
            rc = 0 == madvise(addr, len, advice) ? 0 : errno;
        }
    } while (EINTR == rc);
    return rc;
}

/* The system calls themselves: sanitizer runtimes replace mlock() and
 * munlock() with no-ops, which would make the pinning backend pin exists
 * to measure silently disappear in sanitized builds. */
int regpar_sys_mlock(const regpar_sys_t *sys, const void *addr, size_t len, bool onfault)
{
    const regpar_sys_ops_t *ops = ops_of(sys);
    if (ops && ops->mlock_fn) {
        return 0 == ops->mlock_fn(addr, len) ? 0 : errno;
    }
#ifdef SYS_mlock2
    if (onfault) {
        return 0 == syscall(SYS_mlock2, addr, len, MLOCK_ONFAULT) ? 0 : errno;
    }
#else
    (void)onfault;
#endif
    return 0 == syscall(SYS_mlock, addr, len) ? 0 : errno;
}

int regpar_sys_munlock(const regpar_sys_t *sys, const void *addr, size_t len)
{
    const regpar_sys_ops_t *ops = ops_of(sys);
    if (ops && ops->munlock_fn) {
        return 0 == ops->munlock_fn(addr, len) ? 0 : errno;
    }
    return 0 == syscall(SYS_munlock, addr, len) ? 0 : errno;
}

bool regpar_sys_mlock_onfault_supported(void)
{
#ifdef SYS_mlock2
    return 0 == syscall(SYS_mlock2, NULL, 0, MLOCK_ONFAULT);
#else
    return false;
#endif
}

int regpar_sys_injected_failure(const regpar_sys_t *sys, const void *addr, size_t len)
{
    const regpar_sys_ops_t *ops = ops_of(sys);
    return ops && ops->reg_fail_fn ? ops->reg_fail_fn(ops->reg_fail_arg, addr, len) : 0;
}

/* Runnable threads on the machine besides the caller, from the 4th field
 * of /proc/loadavg ("running/total"); 0 when it cannot be read. */
static unsigned busy_threads_from_loadavg(void)
{
    char text[128];
    int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    unsigned running = 0, total = 0;
    if (n <= 0) {
        return 0;
    }
    text[n] = '\0';
    if (2 != sscanf(text, "%*f %*f %*f %u/%u", &running, &total) || 0 == running) {
        return 0;
    }
    return running - 1;
}

unsigned regpar_sys_busy_threads(const regpar_sys_t *sys)
{
    const regpar_sys_ops_t *ops = ops_of(sys);
    return ops && ops->busy_threads_fn ? ops->busy_threads_fn() : busy_threads_from_loadavg();
}

/* The advice is unknown to this kernel (or filtered): touching is safe.
 * ENOMEM, EFAULT or EPERM mean touching would crash as well. */
static bool populate_unknown(int rc)
{
    return EINVAL == rc || ENOSYS == rc || EOPNOTSUPP == rc;
}

int regpar_sys_prefault(regpar_sys_t *sys, void *addr, size_t len, size_t page)
{
    if (0 == len) {
        return 0;
    }
    uintptr_t lo = (uintptr_t)addr & ~(uintptr_t)(page - 1);
    uintptr_t hi = ((uintptr_t)addr + len + page - 1) & ~(uintptr_t)(page - 1);
    if (!sys || !atomic_load_explicit(&sys->populate_unsupported, memory_order_relaxed)) {
        int rc = regpar_sys_madvise(sys, (void *)lo, (size_t)(hi - lo), MADV_POPULATE_WRITE);
        if (!populate_unknown(rc)) {
            return rc;
        }
        if (sys && sys->remember_unsupported) {
            atomic_store_explicit(&sys->populate_unsupported, true, memory_order_relaxed);
        }
    }
    /* One atomic no-op write per page, on a byte of the range itself: the
     * page is faulted for writing and concurrent data is preserved. */
    for (uintptr_t p = lo; p < hi; p += page) {
        char *byte = (char *)(p < (uintptr_t)addr ? (uintptr_t)addr : p);
        __atomic_fetch_add(byte, 0, __ATOMIC_RELAXED);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Messages */

void regpar_sys_emit(regpar_log_fn log, void *log_arg, const char *name, int level, const char *msg)
{
    if (log) {
        log(log_arg, level, msg);
    } else if (level <= 1 && name) {
        fprintf(stderr, "%s: %s: %s\n", name, 0 == level ? "error" : "warning", msg);
    } else if (level <= 1) {
        fprintf(stderr, "%s\n", msg);
    }
}

static void sys_vlog(const regpar_sys_t *sys, int level, const char *fmt, va_list ap)
{
    if (level >= 2 && sys->verbose < level) {
        return;
    }
    char msg[1024];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    regpar_sys_emit(sys->log, sys->log_arg, sys->name, level, msg);
}

void regpar_sys_log(const regpar_sys_t *sys, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sys_vlog(sys, level, fmt, ap);
    va_end(ap);
}

bool regpar_sys_first(regpar_sys_t *sys, const char *key)
{
    bool first = true;
    pthread_mutex_lock(&sys->once_lock);
    unsigned n = atomic_load_explicit(&sys->nonce, memory_order_relaxed);
    for (unsigned i = 0; i < n && first; i++) {
        first = 0 != strcmp(sys->once[i], key);
    }
    if (first && n < REGPAR_SYS_ONCE_MAX) {
        snprintf(sys->once[n], sizeof(sys->once[n]), "%s", key);
        atomic_store_explicit(&sys->nonce, n + 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&sys->once_lock);
    return first;
}

void regpar_sys_log_once(regpar_sys_t *sys, const char *key, int level, const char *fmt, ...)
{
    bool first = regpar_sys_first(sys, key);
    va_list ap;
    va_start(ap, fmt);
    sys_vlog(sys, first ? level : (level < 2 ? 2 : level), fmt, ap);
    va_end(ap);
}

void regpar_sys_log_rearm(regpar_sys_t *sys, const char *key)
{
    /* Called after every successful call that may have failed before: no
     * lock unless something was reported. */
    if (0 == atomic_load_explicit(&sys->nonce, memory_order_relaxed)) {
        return;
    }
    pthread_mutex_lock(&sys->once_lock);
    unsigned n = atomic_load_explicit(&sys->nonce, memory_order_relaxed);
    for (unsigned i = 0; i < n; i++) {
        if (0 == strcmp(sys->once[i], key)) {
            if (i != n - 1) {
                memcpy(sys->once[i], sys->once[n - 1], sizeof(sys->once[i]));
            }
            atomic_store_explicit(&sys->nonce, n - 1, memory_order_relaxed);
            break;
        }
    }
    pthread_mutex_unlock(&sys->once_lock);
}
