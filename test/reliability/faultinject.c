/*
 * libfaultinject.so: an LD_PRELOAD interposer that makes the system and
 * network calls of our two components fail at the Nth call.
 *
 * Only calls made from our components count and fail: glibc, Open MPI and
 * the providers call mmap & co. everywhere, and failing those would test
 * Open MPI, not us.  A call is ours when its return address lies in a
 * shared object whose path contains one of FAULT_LIBS (dladdr).
 *
 * Environment (all optional; without FAULT_FUNC nothing fails and the
 * library only counts):
 *   FAULT_FUNC    classes to fail, comma separated: mmap, munmap, madvise,
 *                 mlock (mlock, mlock2, syscall(SYS_mlock[2])), munlock,
 *                 fi_open (fi_getinfo, fi_fabric), fi_mr_reg, ibv_open
 *                 (ibv_get_device_list, ibv_open_device, ibv_alloc_pd),
 *                 ibv_reg_mr (ibv_reg_mr, ibv_reg_mr_iova2), pthread_create,
 *                 malloc (malloc, calloc, realloc, strdup, strndup,
 *                 posix_memalign, aligned_alloc; only with FAULT_MALLOC=1),
 *                 pmix_get (PMIx_Get, failing with PMIX_ERR_NOMEM: from
 *                 Open MPI 5.0 coll/bufpool looks its peers' settings up
 *                 with it; 4.1's calls come from its pmix framework, not
 *                 ours, and are neither counted nor failed)
 *   FAULT_AT      the first failing call, 1-based, counting calls of the
 *                 selected classes together (default 1)
 *   FAULT_COUNT   consecutive failures (default 1; -1 = every later call)
 *   FAULT_ERRNO   errno of the failures (default ENOMEM)
 *   FAULT_PHASE   count only while the program is in this phase (see
 *                 faultinject.h; "init" is the phase from load to the first
 *                 marker); unset = the whole run
 *   FAULT_RANK    fail only in this MPI rank (OMPI_COMM_WORLD_RANK)
 *   FAULT_LIBS    colon-separated substrings naming our objects (default
 *                 "mca_mpool_regpar:mca_coll_bufpool")
 *   FAULT_REPORT  append one line per phase and class with the calls seen
 *                 and the failures injected to this file
 *   FAULT_BACKTRACE=1  print the stack of every injected failure on stderr
 *   FAULT_MALLOC=1  look at the allocations too (class malloc): every
 *                 allocation of the process then pays a dladdr, so it is
 *                 off unless asked for; without it the class is neither
 *                 counted nor failed.  (Under AddressSanitizer, whose
 *                 allocator comes first in LD_PRELOAD, nothing reaches it.)
 *   FAULT_FAKE_VERBS=1  answer our components' verbs calls with one fake
 *                 device ("fakeib0") whose registrations are bookkeeping
 *                 only, so that the verbs backend runs without hardware
 *   FAULT_KEEP_LOADED=1  make dlclose a no-op: Open MPI unloads its
 *                 components at MPI_Finalize, and valgrind's leak report
 *                 at exit could then not say which object a frame was in
 *
 * fi_mr_reg is a static inline function of libfabric's headers that calls
 * domain->mr->reg: it cannot be interposed by name.  fi_fabric (a real
 * function) is, so the fabrics our components open get a copy of their
 * operation tables whose domain() wraps the domain's mr->reg.
 */
#define _GNU_SOURCE
#include "bufpool_config.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef HAVE_LIBFABRIC
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#endif
#ifdef HAVE_VERBS
#include <infiniband/verbs.h>
/* The header makes ibv_reg_mr a macro over an inline function; the exported
 * function of that name is what the inline one calls. */
#undef ibv_reg_mr
#endif

/* Exported entry point of the phase markers (faultinject.h). */
void faultinject_set_phase(const char *name);

enum fault_class {
    FC_MMAP,
    FC_MUNMAP,
    FC_MADVISE,
    FC_MLOCK,
    FC_MUNLOCK,
    FC_FI_OPEN,
    FC_FI_MR_REG,
    FC_IBV_OPEN,
    FC_IBV_REG_MR,
    FC_PTHREAD_CREATE,
    FC_MALLOC,
    FC_PMIX_GET,
    FC_NCLASSES
};

static const char *const class_names[FC_NCLASSES] = {
    "mmap",      "munmap",   "madvise",    "mlock",          "munlock", "fi_open",
    "fi_mr_reg", "ibv_open", "ibv_reg_mr", "pthread_create", "malloc",  "pmix_get",
};

#define MAX_PHASES   16
#define MAX_LIBS     8
#define PHASE_NAME_N 32

static struct {
    pthread_once_t once;
    unsigned class_mask; /* FAULT_FUNC */
    long at;             /* FAULT_AT */
    long count;          /* FAULT_COUNT, -1 = forever */
    int error;           /* FAULT_ERRNO */
    char phase[PHASE_NAME_N];
    bool any_phase;
    bool rank_selected;
    bool fake_verbs;
    bool backtrace;
    int rank;
    char libs[MAX_LIBS][64];
    int nlibs;
    char report[512];
} cfg = {.once = PTHREAD_ONCE_INIT};

/* FAULT_MALLOC, once the configuration is loaded: until then (and without
 * it) the allocation wrappers only pass the call on, since they may run
 * inside load_config itself, which pthread_once would then wait for. */
static atomic_bool malloc_watched;

static struct {
    pthread_mutex_t lock; /* phase changes and reports */
    char names[MAX_PHASES][PHASE_NAME_N];
    atomic_int current;
    int nphases;
    atomic_long calls[MAX_PHASES][FC_NCLASSES];
    atomic_long injected[MAX_PHASES][FC_NCLASSES];
    atomic_long armed; /* selected calls seen in the selected phase */
} state = {.lock = PTHREAD_MUTEX_INITIALIZER, .names = {"init"}, .nphases = 1};

/* ------------------------------------------------------------------------ */
/* Configuration */

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        return dflt;
    }
    char *end;
    long x = strtol(v, &end, 10);
    if (*end) {
        fprintf(stderr, "faultinject: %s=%s is not an integer; using %ld\n", name, v, dflt);
        return dflt;
    }
    return x;
}

static void parse_classes(const char *list)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", list);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int c = 0; c < FC_NCLASSES; c++) {
            if (0 == strcmp(tok, class_names[c])) {
                found = c;
            }
        }
        if (found < 0) {
            fprintf(stderr, "faultinject: unknown class '%s' in FAULT_FUNC\n", tok);
            continue;
        }
        cfg.class_mask |= 1u << found;
    }
}

static void load_config(void)
{
    const char *v = getenv("FAULT_FUNC");
    if (v && *v) {
        parse_classes(v);
    }
    cfg.at = env_long("FAULT_AT", 1);
    cfg.count = env_long("FAULT_COUNT", 1);
    cfg.error = (int)env_long("FAULT_ERRNO", ENOMEM);
    v = getenv("FAULT_PHASE");
    cfg.any_phase = !v || !*v;
    snprintf(cfg.phase, sizeof(cfg.phase), "%s", cfg.any_phase ? "" : v);
    cfg.rank = (int)env_long("OMPI_COMM_WORLD_RANK", -1);
    long only = env_long("FAULT_RANK", -1);
    cfg.rank_selected = only < 0 || only == cfg.rank;
    cfg.fake_verbs = env_long("FAULT_FAKE_VERBS", 0) != 0;
    cfg.backtrace = env_long("FAULT_BACKTRACE", 0) != 0;
    v = getenv("FAULT_LIBS");
    char libs[512];
    snprintf(libs, sizeof(libs), "%s", v && *v ? v : "mca_mpool_regpar:mca_coll_bufpool");
    char *save = NULL;
    for (char *tok = strtok_r(libs, ":", &save); tok && cfg.nlibs < MAX_LIBS;
         tok = strtok_r(NULL, ":", &save)) {
        snprintf(cfg.libs[cfg.nlibs++], sizeof(cfg.libs[0]), "%s", tok);
    }
    v = getenv("FAULT_REPORT");
    snprintf(cfg.report, sizeof(cfg.report), "%s", v ? v : "");
    /* Last: the allocation wrappers look at nothing before the rest is
     * set (load_config's own calls may allocate). */
    atomic_store(&malloc_watched, env_long("FAULT_MALLOC", 0) != 0);
}

static void ensure_config(void)
{
    pthread_once(&cfg.once, load_config);
}

/* ------------------------------------------------------------------------ */
/* Whose call is it, and does it fail? */

static bool address_is_ours(const void *ret)
{
    Dl_info info;
    if (!ret || !dladdr(ret, &info) || !info.dli_fname) {
        return false;
    }
    for (int i = 0; i < cfg.nlibs; i++) {
        if (strstr(info.dli_fname, cfg.libs[i])) {
            return true;
        }
    }
    return false;
}

/* Counts a call of ours and decides whether it fails. */
static bool call_fails(enum fault_class c)
{
    int phase = atomic_load(&state.current);
    atomic_fetch_add(&state.calls[phase][c], 1);
    if (!(cfg.class_mask & (1u << c)) || !cfg.rank_selected ||
        (!cfg.any_phase && 0 != strcmp(state.names[phase], cfg.phase))) {
        return false;
    }
    long k = atomic_fetch_add(&state.armed, 1) + 1;
    if (k < cfg.at || (cfg.count >= 0 && k >= cfg.at + cfg.count)) {
        return false;
    }
    atomic_fetch_add(&state.injected[phase][c], 1);
    if (cfg.backtrace) {
        /* backtrace() may allocate the first time (it loads libgcc_s):
         * those allocations are not ours, so they pass. */
        void *frames[32];
        const int n = backtrace(frames, 32);
        char head[128];
        const int len = snprintf(head, sizeof(head), "faultinject: rank %d: %s fails here:\n",
                                 cfg.rank, class_names[c]);
        if (len > 0 && write(STDERR_FILENO, head, (size_t)len) < 0) {
            return true;
        }
        backtrace_symbols_fd(frames, n, STDERR_FILENO);
    }
    return true;
}

/* Evaluated in the interposed function itself so that the return address is
 * its caller's. */
#define OUR_CALL_FAILS(c)                                                                          \
    (ensure_config(), address_is_ours(__builtin_return_address(0)) && call_fails(c))

/* The next definition of a symbol: the global scope first, then the libraries
 * our components loaded privately (Open MPI may dlopen them RTLD_LOCAL). */
static void *real_symbol(const char *name, const char *const *libs)
{
    void *f = dlsym(RTLD_NEXT, name);
    for (int i = 0; !f && libs && libs[i]; i++) {
        void *h = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            f = dlsym(h, name);
            dlclose(h);
        }
    }
    if (!f) {
        fprintf(stderr, "faultinject: cannot find the real %s\n", name);
        abort();
    }
    return f;
}

/* real_NAME: the definition our NAME hides, with NAME's own type. */
#define REAL(name, libs)                                                                           \
    static __typeof__(&name) real_##name;                                                          \
    if (!real_##name) {                                                                            \
        *(void **)&real_##name = real_symbol(#name, libs);                                         \
    }

/* ------------------------------------------------------------------------ */
/* Phases and the report */

static void report_phase(int phase)
{
    if (!cfg.report[0]) {
        return;
    }
    int fd = open(cfg.report, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return;
    }
    for (int c = 0; c < FC_NCLASSES; c++) {
        long calls = atomic_load(&state.calls[phase][c]);
        long injected = atomic_load(&state.injected[phase][c]);
        if (calls || injected) {
            char line[256];
            /* One write per line: lines of concurrent processes stay whole. */
            int n = snprintf(line, sizeof(line),
                             "rank=%d pid=%d phase=%s class=%s calls=%ld injected=%ld\n", cfg.rank,
                             (int)getpid(), state.names[phase], class_names[c], calls, injected);
            if (n > 0 && write(fd, line, (size_t)n) < 0) {
                break;
            }
        }
    }
    close(fd);
}

void faultinject_set_phase(const char *name)
{
    ensure_config();
    pthread_mutex_lock(&state.lock);
    int old = atomic_load(&state.current), next = -1;
    for (int i = 0; i < state.nphases; i++) {
        if (0 == strcmp(state.names[i], name)) {
            next = i;
        }
    }
    if (next < 0 && state.nphases < MAX_PHASES) {
        next = state.nphases++;
        snprintf(state.names[next], PHASE_NAME_N, "%s", name);
    }
    if (next >= 0 && next != old) {
        report_phase(old);
        /* A phase entered twice keeps counting; report only what is new. */
        for (int c = 0; c < FC_NCLASSES; c++) {
            atomic_store(&state.calls[old][c], 0);
            atomic_store(&state.injected[old][c], 0);
        }
        atomic_store(&state.current, next);
    }
    pthread_mutex_unlock(&state.lock);
}

__attribute__((destructor)) static void faultinject_fini(void)
{
    ensure_config();
    pthread_mutex_lock(&state.lock);
    report_phase(atomic_load(&state.current));
    pthread_mutex_unlock(&state.lock);
}

/* ------------------------------------------------------------------------ */
/* Memory calls */

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    REAL(mmap, NULL);
    if (OUR_CALL_FAILS(FC_MMAP)) {
        errno = cfg.error;
        return MAP_FAILED;
    }
    return real_mmap(addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    REAL(mmap64, NULL);
    if (OUR_CALL_FAILS(FC_MMAP)) {
        errno = cfg.error;
        return MAP_FAILED;
    }
    return real_mmap64(addr, len, prot, flags, fd, off);
}

int munmap(void *addr, size_t len)
{
    REAL(munmap, NULL);
    if (OUR_CALL_FAILS(FC_MUNMAP)) {
        errno = cfg.error;
        return -1;
    }
    return real_munmap(addr, len);
}

int madvise(void *addr, size_t len, int advice)
{
    REAL(madvise, NULL);
    if (OUR_CALL_FAILS(FC_MADVISE)) {
        errno = cfg.error;
        return -1;
    }
    return real_madvise(addr, len, advice);
}

int mlock(const void *addr, size_t len)
{
    REAL(mlock, NULL);
    if (OUR_CALL_FAILS(FC_MLOCK)) {
        errno = cfg.error;
        return -1;
    }
    return real_mlock(addr, len);
}

int mlock2(const void *addr, size_t len, unsigned int flags)
{
    REAL(mlock2, NULL);
    if (OUR_CALL_FAILS(FC_MLOCK)) {
        errno = cfg.error;
        return -1;
    }
    return real_mlock2(addr, len, flags);
}

int munlock(const void *addr, size_t len)
{
    REAL(munlock, NULL);
    if (OUR_CALL_FAILS(FC_MUNLOCK)) {
        errno = cfg.error;
        return -1;
    }
    return real_munlock(addr, len);
}

/* Backend pin calls mlock through syscall() (sanitizer runtimes replace the
 * libc wrappers with no-ops). */
long syscall(long number, ...)
{
    REAL(syscall, NULL);
    va_list ap;
    long a[6];
    va_start(ap, number);
    for (int i = 0; i < 6; i++) {
        a[i] = va_arg(ap, long);
    }
    va_end(ap);
    enum fault_class c = FC_NCLASSES;
    if (SYS_mlock == number
#ifdef SYS_mlock2
        || SYS_mlock2 == number
#endif
    ) {
        c = FC_MLOCK;
    } else if (SYS_munlock == number) {
        c = FC_MUNLOCK;
    }
    if (FC_NCLASSES != c && OUR_CALL_FAILS(c)) {
        errno = cfg.error;
        return -1;
    }
    return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

int dlclose(void *handle)
{
    REAL(dlclose, NULL);
    static int keep = -1;
    if (keep < 0) {
        keep = env_long("FAULT_KEEP_LOADED", 0) != 0;
    }
    return keep ? 0 : real_dlclose(handle);
}

/* The registration engine's workers. */
int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg)
{
    REAL(pthread_create, NULL);
    if (OUR_CALL_FAILS(FC_PTHREAD_CREATE)) {
        return EAGAIN;
    }
    return real_pthread_create(thread, attr, start, arg);
}

/* ------------------------------------------------------------------------ */
/* Allocations (FAULT_MALLOC=1).  glibc's own entry points are called
 * directly: dlsym may allocate, so it cannot find the next malloc from
 * inside malloc.  A call is ours when its return address is in our objects
 * (libc's strdup allocates from inside libc, so strdup and strndup are
 * wrapped by name).  ensure_config runs from the library's constructor;
 * a wrapper never calls it (see malloc_watched). */
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *ptr, size_t size);
extern void *__libc_memalign(size_t align, size_t size);

__attribute__((constructor)) static void faultinject_init(void)
{
    ensure_config();
}

#define OUR_ALLOCATION_FAILS()                                                                     \
    (atomic_load_explicit(&malloc_watched, memory_order_relaxed) &&                                \
     address_is_ours(__builtin_return_address(0)) && call_fails(FC_MALLOC))

void *malloc(size_t size)
{
    if (OUR_ALLOCATION_FAILS()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
    if (OUR_ALLOCATION_FAILS()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(n, size);
}

void *realloc(void *ptr, size_t size)
{
    /* A failed realloc leaves ptr as it was, which the caller still owns. */
    if (OUR_ALLOCATION_FAILS()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(ptr, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
    if (OUR_ALLOCATION_FAILS()) {
        return ENOMEM;
    }
    if (0 == align || 0 != (align & (align - 1)) || 0 != align % sizeof(void *)) {
        return EINVAL;
    }
    void *p = __libc_memalign(align, size);
    if (NULL == p) {
        return ENOMEM;
    }
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t size)
{
    if (OUR_ALLOCATION_FAILS()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_memalign(align, size);
}

char *strdup(const char *text)
{
    if (OUR_ALLOCATION_FAILS()) {
        errno = ENOMEM;
        return NULL;
    }
    const size_t n = strlen(text) + 1;
    /* The process's malloc, not glibc's own: under a sanitizer, whose
     * allocator comes first and which does not take strdup over, the copy
     * is freed by the sanitizer's free. */
    char *copy = malloc(n);
    return NULL != copy ? memcpy(copy, text, n) : NULL;
}

char *strndup(const char *text, size_t most)
{
    if (OUR_ALLOCATION_FAILS()) {
        errno = ENOMEM;
        return NULL;
    }
    const size_t n = strnlen(text, most);
    char *copy = malloc(n + 1); /* as strdup's */
    if (NULL != copy) {
        memcpy(copy, text, n);
        copy[n] = '\0';
    }
    return copy;
}

/* ------------------------------------------------------------------------ */
/* libfabric */

#ifdef HAVE_LIBFABRIC
static const char *const fabric_libs[] = {"libfabric.so.1", "libfabric.so", NULL};

typedef struct {
    struct fi_ops_mr ops;
    struct fi_ops_mr *orig;
} wrapped_mr_ops_t;

typedef struct {
    struct fi_ops_fabric ops;
    struct fi_ops_fabric *orig;
} wrapped_fabric_ops_t;

static int wrapped_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
                          uint64_t offset, uint64_t requested_key, uint64_t flags,
                          struct fid_mr **mr, void *context)
{
    struct fid_domain *domain = (struct fid_domain *)fid;
    wrapped_mr_ops_t *w = (wrapped_mr_ops_t *)domain->mr;
    if (OUR_CALL_FAILS(FC_FI_MR_REG)) {
        return -FI_ENOMEM;
    }
    return w->orig->reg(fid, buf, len, access, offset, requested_key, flags, mr, context);
}

static void wrap_domain(struct fid_domain *domain)
{
    wrapped_mr_ops_t *w = calloc(1, sizeof(*w));
    if (!w || !domain->mr || !domain->mr->reg) {
        free(w);
        return;
    }
    size_t n = domain->mr->size < sizeof(w->ops) ? domain->mr->size : sizeof(w->ops);
    memcpy(&w->ops, domain->mr, n);
    w->orig = domain->mr;
    w->ops.reg = wrapped_mr_reg;
    domain->mr = &w->ops; /* leaked with the domain: a test tool */
}

static int wrapped_domain(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
                          void *context)
{
    wrapped_fabric_ops_t *w = (wrapped_fabric_ops_t *)fabric->ops;
    int rc = w->orig->domain(fabric, info, dom, context);
    if (0 == rc) {
        wrap_domain(*dom);
    }
    return rc;
}

static int wrapped_domain2(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom,
                           uint64_t flags, void *context)
{
    wrapped_fabric_ops_t *w = (wrapped_fabric_ops_t *)fabric->ops;
    int rc = w->orig->domain2(fabric, info, dom, flags, context);
    if (0 == rc) {
        wrap_domain(*dom);
    }
    return rc;
}

int fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
    REAL(fi_fabric, fabric_libs);
    ensure_config();
    bool ours = address_is_ours(__builtin_return_address(0));
    if (ours && call_fails(FC_FI_OPEN)) {
        return -FI_ENOMEM;
    }
    int rc = real_fi_fabric(attr, fabric, context);
    if (0 == rc && ours) {
        wrapped_fabric_ops_t *w = calloc(1, sizeof(*w));
        if (w) {
            struct fi_ops_fabric *orig = (*fabric)->ops;
            size_t n = orig->size < sizeof(w->ops) ? orig->size : sizeof(w->ops);
            memcpy(&w->ops, orig, n);
            w->orig = orig;
            w->ops.domain = wrapped_domain;
            if (n >= offsetof(struct fi_ops_fabric, domain2) + sizeof(orig->domain2) &&
                orig->domain2) {
                w->ops.domain2 = wrapped_domain2;
            }
            (*fabric)->ops = &w->ops;
        }
    }
    return rc;
}

int fi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
               const struct fi_info *hints, struct fi_info **info)
{
    REAL(fi_getinfo, fabric_libs);
    if (OUR_CALL_FAILS(FC_FI_OPEN)) {
        return -FI_ENODATA;
    }
    return real_fi_getinfo(version, node, service, flags, hints, info);
}
#endif /* HAVE_LIBFABRIC */

/* ------------------------------------------------------------------------ */
/* PMIx: a lookup that runs out of memory.  Declared without PMIx's headers
 * (its types are a status int and pointers); the real one is found in the
 * library Open MPI loaded: in the global scope from 5.0, privately for the
 * pmix component of 4.1, whose calls reach this one all the same. */
static const char *const pmix_libs[] = {"libpmix.so.2", "libpmix.so", NULL};

#define FAULT_PMIX_ERR_NOMEM (-32)

int PMIx_Get(const void *proc, const char *key, const void *info, size_t ninfo, void **val);

int PMIx_Get(const void *proc, const char *key, const void *info, size_t ninfo, void **val)
{
    REAL(PMIx_Get, pmix_libs);
    if (OUR_CALL_FAILS(FC_PMIX_GET)) {
        if (NULL != val) {
            *val = NULL;
        }
        return FAULT_PMIX_ERR_NOMEM;
    }
    return real_PMIx_Get(proc, key, info, ninfo, val);
}

/* ------------------------------------------------------------------------ */
/* rdma-core verbs, and the fake device */

#ifdef HAVE_VERBS
static const char *const verbs_libs[] = {"libibverbs.so.1", "libibverbs.so", NULL};

static struct ibv_device fake_device;
static atomic_uint fake_keys;

static bool is_fake_device(const struct ibv_device *d)
{
    return d == &fake_device;
}

static bool is_fake_context(const struct ibv_context *c)
{
    return c && is_fake_device(c->device);
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
    REAL(ibv_get_device_list, verbs_libs);
    ensure_config();
    bool ours = address_is_ours(__builtin_return_address(0));
    if (ours && call_fails(FC_IBV_OPEN)) {
        errno = cfg.error;
        return NULL;
    }
    if (!ours || !cfg.fake_verbs) {
        return real_ibv_get_device_list(num_devices);
    }
    snprintf(fake_device.name, sizeof(fake_device.name), "fakeib0");
    snprintf(fake_device.dev_name, sizeof(fake_device.dev_name), "uverbs0");
    struct ibv_device **list = calloc(2, sizeof(*list));
    if (!list) {
        errno = ENOMEM;
        return NULL;
    }
    list[0] = &fake_device;
    if (num_devices) {
        *num_devices = 1;
    }
    return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
    REAL(ibv_free_device_list, verbs_libs);
    if (list && is_fake_device(list[0])) {
        free(list);
        return;
    }
    real_ibv_free_device_list(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
    REAL(ibv_get_device_name, verbs_libs);
    return is_fake_device(device) ? fake_device.name : real_ibv_get_device_name(device);
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    REAL(ibv_open_device, verbs_libs);
    if (OUR_CALL_FAILS(FC_IBV_OPEN)) {
        errno = cfg.error;
        return NULL;
    }
    if (!is_fake_device(device)) {
        return real_ibv_open_device(device);
    }
    struct ibv_context *c = calloc(1, sizeof(*c));
    if (c) {
        c->device = device;
    }
    return c;
}

int ibv_close_device(struct ibv_context *context)
{
    REAL(ibv_close_device, verbs_libs);
    if (is_fake_context(context)) {
        free(context);
        return 0;
    }
    return real_ibv_close_device(context);
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    REAL(ibv_alloc_pd, verbs_libs);
    if (OUR_CALL_FAILS(FC_IBV_OPEN)) {
        errno = cfg.error;
        return NULL;
    }
    if (!is_fake_context(context)) {
        return real_ibv_alloc_pd(context);
    }
    struct ibv_pd *pd = calloc(1, sizeof(*pd));
    if (pd) {
        pd->context = context;
    }
    return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
    REAL(ibv_dealloc_pd, verbs_libs);
    if (pd && is_fake_context(pd->context)) {
        free(pd);
        return 0;
    }
    return real_ibv_dealloc_pd(pd);
}

static struct ibv_mr *fake_reg_mr(struct ibv_pd *pd, void *addr, size_t length)
{
    struct ibv_mr *mr = calloc(1, sizeof(*mr));
    if (!mr) {
        errno = ENOMEM;
        return NULL;
    }
    mr->context = pd->context;
    mr->pd = pd;
    mr->addr = addr;
    mr->length = length;
    mr->lkey = mr->rkey = atomic_fetch_add(&fake_keys, 1) + 1;
    return mr;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    REAL(ibv_reg_mr, verbs_libs);
    if (OUR_CALL_FAILS(FC_IBV_REG_MR)) {
        errno = cfg.error;
        return NULL;
    }
    if (pd && is_fake_context(pd->context)) {
        return fake_reg_mr(pd, addr, length);
    }
    return real_ibv_reg_mr(pd, addr, length, access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                unsigned int access)
{
    REAL(ibv_reg_mr_iova2, verbs_libs);
    if (OUR_CALL_FAILS(FC_IBV_REG_MR)) {
        errno = cfg.error;
        return NULL;
    }
    if (pd && is_fake_context(pd->context)) {
        return fake_reg_mr(pd, addr, length);
    }
    return real_ibv_reg_mr_iova2(pd, addr, length, iova, access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
    REAL(ibv_dereg_mr, verbs_libs);
    if (mr && is_fake_context(mr->context)) {
        free(mr);
        return 0;
    }
    return real_ibv_dereg_mr(mr);
}
#endif /* HAVE_VERBS */
