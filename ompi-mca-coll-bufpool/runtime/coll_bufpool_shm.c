/*
 * Node-shared memory segments (see coll_bufpool_shm.h).
 */
#include "coll_bufpool_shm.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t page_round(size_t bytes)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t p = page > 0 ? (size_t)page : 4096;
    return (bytes + p - 1) / p * p;
}

/* Map size bytes of fd into *shm under name and close fd, when rc (the
 * steps before) is 0; rc or mmap's errno. */
static int map_and_close(int fd, int rc, size_t size, const char *name, bufpool_shm_t *shm)
{
    void *base = MAP_FAILED;
    if (0 == rc) {
        base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        rc = MAP_FAILED == base ? errno : 0;
    }
    close(fd);
    if (0 == rc) {
        shm->base = base;
        shm->bytes = size;
        snprintf(shm->name, sizeof(shm->name), "%s", name);
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

/* A segment's path: this process's pid and token, and its index. */
static void shm_path(char *path, size_t size, long pid, unsigned long long token, unsigned index)
{
    snprintf(path, size, BUFPOOL_SHM_DIR "/bufpool-%ld-%llx-%u", pid, token, index);
}

/* The names of this process's segments, numbered, and the cleanup of the
 * next ones registered a batch at a time (one round trip to the runtime
 * per SHM_CLEANUP_BATCH segments, not one per segment: about 50 us each on
 * the 2-core machine, as long as a whole set-up).  pid: the process they
 * were registered for (a forked child starts its own). */
#define SHM_CLEANUP_BATCH 64
static struct {
    pthread_mutex_t lock;
    long pid;
    unsigned long long token;
    unsigned next, registered_end;
} shm_names = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The next segment's path, its cleanup registered with cleanup (NULL:
 * none) before it is returned. */
static void shm_next_path(char *path, size_t size, unsigned long long nonce,
                          bufpool_shm_cleanup_fn_t cleanup)
{
    pthread_mutex_lock(&shm_names.lock);
    const long pid = (long)getpid();
    if (pid != shm_names.pid) {
        /* Random per process: a process of another PID namespace sharing
         * this /dev/shm under the same pid names its segments apart. */
        shm_names.pid = pid;
        shm_names.token = nonce;
        shm_names.next = shm_names.registered_end = 0;
    }
    const unsigned index = shm_names.next++;
    if (NULL != cleanup && index >= shm_names.registered_end) {
        char batch[SHM_CLEANUP_BATCH * BUFPOOL_SHM_NAME_MAX];
        size_t used = 0;
        for (unsigned i = 0; i < SHM_CLEANUP_BATCH; i++) {
            if (0 != i) {
                batch[used++] = ',';
            }
            shm_path(batch + used, sizeof(batch) - used, pid, shm_names.token, index + i);
            used += strlen(batch + used);
        }
        cleanup(batch);
        shm_names.registered_end = index + SHM_CLEANUP_BATCH;
    }
    shm_path(path, size, pid, shm_names.token, index);
    pthread_mutex_unlock(&shm_names.lock);
}

int bufpool_shm_create(bufpool_shm_t *shm, size_t bytes, unsigned long long nonce,
                       bufpool_shm_range_t own, bufpool_shm_cleanup_fn_t cleanup)
{
    const size_t size = page_round(bytes);
    char name[BUFPOOL_SHM_NAME_MAX];
    shm_next_path(name, sizeof(name), nonce, cleanup);
    int fd = open(name, SHM_OPEN_FLAGS | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        return errno;
    }
    /* The size now, the pages by their owners: tmpfs would otherwise hand
     * out a mapping that raises SIGBUS at the first touch past its free
     * space. */
    int rc = 0 == ftruncate(fd, (off_t)size) ? reserve(fd, size, own) : errno;
    rc = map_and_close(fd, rc, size, name, shm);
    if (0 != rc) {
        unlink(name);
    }
    return rc;
}

int bufpool_shm_attach(bufpool_shm_t *shm, const char *name, size_t bytes, bufpool_shm_range_t own)
{
    const size_t size = page_round(bytes);
    /* Only a name bufpool_shm_create gives. */
    static const char prefix[] = BUFPOOL_SHM_DIR "/bufpool-";
    if (0 != strncmp(name, prefix, sizeof(prefix) - 1) || NULL != strstr(name, "/..")) {
        return EINVAL;
    }
    int fd = open(name, SHM_OPEN_FLAGS);
    if (fd < 0) {
        return errno;
    }
    struct stat st;
    int rc = 0 == fstat(fd, &st) ? 0 : errno;
    if (0 == rc && (size_t)st.st_size != size) {
        rc = EINVAL;
    }
    if (0 == rc) {
        rc = reserve(fd, size, own);
    }
    return map_and_close(fd, rc, size, name, shm);
}

void bufpool_shm_unlink(bufpool_shm_t *shm)
{
    if ('\0' != shm->name[0]) {
        (void)unlink(shm->name);
        shm->name[0] = '\0';
    }
}

void bufpool_shm_detach(bufpool_shm_t *shm)
{
    if (NULL != shm->base) {
        (void)munmap(shm->base, shm->bytes);
        shm->base = NULL;
    }
}
