/*
 * Node-shared memory segments (see coll_bufpool_shm.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_TMPFILE */
#endif
#include "coll_bufpool_shm.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t page_size(void)
{
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (size_t)page : 4096;
}

static size_t page_round(size_t bytes)
{
    const size_t p = page_size();
    return (bytes + p - 1) / p * p;
}

/* Map size bytes of fd into *shm, when rc (the steps before) is 0, between
 * two inaccessible pages (coll_bufpool_shm.h says why): the three reserved
 * at once, the file mapped over the middle.  rc or mmap's errno. */
static int map_into(int fd, int rc, size_t size, bufpool_shm_t *shm)
{
    if (0 == rc) {
        const size_t guard = page_size();
        char *span = mmap(NULL, size + 2 * guard, PROT_NONE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (MAP_FAILED == span) {
            return errno;
        }
        void *base =
            mmap(span + guard, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
        if (MAP_FAILED == base) {
            rc = errno;
            (void)munmap(span, size + 2 * guard);
            return rc;
        }
        shm->base = base;
        shm->bytes = size;
    }
    return rc;
}

/* Reserve own's pages of fd (a segment of size bytes): allocated here, by
 * this process, on its NUMA node.  0 or posix_fallocate's error. */
static int reserve(int fd, size_t size, bufpool_shm_range_t own)
{
    if (own.offset >= size || 0 == own.bytes) {
        return 0;
    }
    const size_t bytes = own.bytes < size - own.offset ? own.bytes : size - own.offset;
    return posix_fallocate(fd, (off_t)own.offset, (off_t)bytes);
}

/* shm_open's flags: a symbolic link planted under the name is refused. */
#define SHM_OPEN_FLAGS (O_RDWR | O_NOFOLLOW | O_CLOEXEC)

/* A named segment's path: this process's pid and token, and its index. */
static void shm_path(char *path, size_t size, long pid, unsigned long long token, unsigned index)
{
    snprintf(path, size, BUFPOOL_SHM_PREFIX "%ld-%llx-%u", pid, token, index);
}

/* This process's segments: the names of the named ones, numbered, and
 * the cleanup of the next ones registered a batch at a time (one round
 * trip to the runtime per SHM_CLEANUP_BATCH segments, not one per
 * segment: about 50 us each on the 2-core machine, as long as a whole
 * set-up); whether a rank could not open its links.  pid: the process
 * this is of (a forked child starts anew). */
#define SHM_CLEANUP_BATCH 64
static struct {
    pthread_mutex_t lock;
    long pid;
    unsigned long long token;
    unsigned next, registered_end;
    bool links_refused;
} shm_state = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Under shm_state.lock: this process's state (nonce draws a new one's
 * token).  Returns its pid. */
static long shm_state_here(unsigned long long nonce)
{
    const long pid = (long)getpid();
    if (pid != shm_state.pid) {
        /* Random per process: a process of another PID namespace sharing
         * this /dev/shm under the same pid names its segments apart. */
        shm_state.pid = pid;
        shm_state.token = nonce;
        shm_state.next = shm_state.registered_end = 0;
        shm_state.links_refused = false;
    }
    return pid;
}

/* The next named segment's path, its cleanup registered with cleanup
 * (NULL: none) before it is returned. */
static void shm_next_path(char *path, size_t size, unsigned long long nonce,
                          bufpool_shm_cleanup_fn_t cleanup)
{
    pthread_mutex_lock(&shm_state.lock);
    const long pid = shm_state_here(nonce);
    const unsigned index = shm_state.next++;
    if (NULL != cleanup && index >= shm_state.registered_end) {
        char batch[SHM_CLEANUP_BATCH * BUFPOOL_SHM_NAME_MAX];
        size_t used = 0;
        for (unsigned i = 0; i < SHM_CLEANUP_BATCH; i++) {
            if (0 != i) {
                batch[used++] = ',';
            }
            shm_path(batch + used, sizeof(batch) - used, pid, shm_state.token, index + i);
            used += strlen(batch + used);
        }
        cleanup(batch);
        shm_state.registered_end = index + SHM_CLEANUP_BATCH;
    }
    shm_path(path, size, pid, shm_state.token, index);
    pthread_mutex_unlock(&shm_state.lock);
}

void bufpool_shm_links_refused(void)
{
    pthread_mutex_lock(&shm_state.lock);
    (void)shm_state_here(0);
    shm_state.links_refused = true;
    pthread_mutex_unlock(&shm_state.lock);
}

static bool shm_links_wanted(unsigned long long nonce)
{
    pthread_mutex_lock(&shm_state.lock);
    (void)shm_state_here(nonce);
    const bool wanted = !shm_state.links_refused;
    pthread_mutex_unlock(&shm_state.lock);
    return wanted;
}

/* An unnamed file on /dev/shm's tmpfs, and its link in *path; -1 where
 * the kernel or the file system has no O_TMPFILE (then a named one). */
static int shm_open_unnamed(char *path, size_t size)
{
#ifdef O_TMPFILE
    const int fd = open(BUFPOOL_SHM_DIR, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) {
        snprintf(path, size, "/proc/%ld/fd/%d", (long)getpid(), fd);
    }
    return fd;
#else
    (void)path;
    (void)size;
    return -1;
#endif
}

int bufpool_shm_create(bufpool_shm_t *shm, size_t bytes, unsigned long long nonce,
                       bufpool_shm_range_t own, bufpool_shm_cleanup_fn_t cleanup, bool linked)
{
    const size_t size = page_round(bytes);
    char name[BUFPOOL_SHM_NAME_MAX];
    int fd = linked && shm_links_wanted(nonce) ? shm_open_unnamed(name, sizeof(name)) : -1;
    const bool unnamed = fd >= 0;
    if (!unnamed) {
        shm_next_path(name, sizeof(name), nonce, cleanup);
        fd = open(name, SHM_OPEN_FLAGS | O_CREAT | O_EXCL, 0600);
        if (fd < 0) {
            return errno;
        }
    }
    /* The size now, the pages by their owners: tmpfs would otherwise hand
     * out a mapping that raises SIGBUS at the first touch past its free
     * space. */
    struct stat st;
    int rc = 0 == ftruncate(fd, (off_t)size) ? reserve(fd, size, own) : errno;
    if (0 == rc && 0 != fstat(fd, &st)) {
        rc = errno;
    }
    rc = map_into(fd, rc, size, shm);
    if (0 != rc || !unnamed) {
        close(fd);
    }
    if (0 != rc) {
        if (!unnamed) {
            unlink(name);
        }
        return rc;
    }
    shm->linked = unnamed;
    shm->fd = unnamed ? fd : -1;
    shm->id.dev = (uint64_t)st.st_dev;
    shm->id.ino = (uint64_t)st.st_ino;
    snprintf(shm->name, sizeof(shm->name), "%s", name);
    return 0;
}

bool bufpool_shm_is_link(const char *name)
{
    static const char proc[] = "/proc/", fd[] = "/fd/";
    const char *c = name;
    for (int part = 0; part < 2; part++) {
        const char *word = 0 == part ? proc : fd;
        const size_t len = 0 == part ? sizeof(proc) - 1 : sizeof(fd) - 1;
        if (0 != strncmp(c, word, len) || !isdigit((unsigned char)c[len])) {
            return false;
        }
        for (c += len; isdigit((unsigned char)*c); c++) {
        }
    }
    return '\0' == *c;
}

int bufpool_shm_attach(bufpool_shm_t *shm, const char *name, bufpool_shm_id_t id, size_t bytes,
                       bufpool_shm_range_t own)
{
    const size_t size = page_round(bytes);
    const bool link = bufpool_shm_is_link(name);
    /* Only a name bufpool_shm_create gives. */
    if (!link && (0 != strncmp(name, BUFPOOL_SHM_PREFIX, sizeof(BUFPOOL_SHM_PREFIX) - 1) ||
                  NULL != strstr(name, "/.."))) {
        return EINVAL;
    }
    /* The link is a symbolic one: no O_NOFOLLOW there. */
    int fd = open(name, link ? O_RDWR | O_CLOEXEC : SHM_OPEN_FLAGS);
    if (fd < 0) {
        return link ? BUFPOOL_SHM_LINK_REFUSED : errno;
    }
    struct stat st;
    int rc = 0 == fstat(fd, &st) ? 0 : errno;
    if (0 == rc && ((uint64_t)st.st_dev != id.dev || (uint64_t)st.st_ino != id.ino)) {
        /* Another file: a PID namespace where that pid is another process. */
        rc = link ? BUFPOOL_SHM_LINK_REFUSED : EINVAL;
    }
    if (0 == rc && (size_t)st.st_size != size) {
        rc = EINVAL;
    }
    if (0 == rc) {
        rc = reserve(fd, size, own);
    }
    rc = map_into(fd, rc, size, shm);
    close(fd);
    if (0 == rc) {
        shm->linked = false;
        shm->fd = -1;
        shm->id = id;
        snprintf(shm->name, sizeof(shm->name), "%s", name);
    }
    return rc;
}

void bufpool_shm_unlink(bufpool_shm_t *shm)
{
    if ('\0' != shm->name[0]) {
        if (shm->linked) {
            (void)close(shm->fd);
        } else {
            (void)unlink(shm->name);
        }
        shm->name[0] = '\0';
        shm->linked = false;
        shm->fd = -1;
    }
}

void bufpool_shm_detach(bufpool_shm_t *shm)
{
    if (NULL != shm->base) {
        const size_t guard = page_size();
        (void)munmap((char *)shm->base - guard, shm->bytes + 2 * guard);
        shm->base = NULL;
    }
}
