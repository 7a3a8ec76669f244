/*
 * Node-shared memory segments (see coll_bufpool_shm.h).
 */
#include "coll_bufpool_shm.h"

#include <errno.h>
#include <fcntl.h>
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

int bufpool_shm_create(bufpool_shm_t *shm, size_t bytes, unsigned long long nonce,
                       bufpool_shm_range_t own)
{
    static unsigned counter;
    const size_t size = page_round(bytes);
    char name[BUFPOOL_SHM_NAME_MAX];
    snprintf(name, sizeof(name), "/bufpool-%ld-%u-%llx", (long)getpid(),
             __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED), nonce);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        return errno;
    }
    /* The size now, the pages by their owners: tmpfs would otherwise hand
     * out a mapping that raises SIGBUS at the first touch past its free
     * space. */
    int rc = 0 == ftruncate(fd, (off_t)size) ? reserve(fd, size, own) : errno;
    rc = map_and_close(fd, rc, size, name, shm);
    if (0 != rc) {
        shm_unlink(name);
    }
    return rc;
}

int bufpool_shm_attach(bufpool_shm_t *shm, const char *name, size_t bytes, bufpool_shm_range_t own)
{
    const size_t size = page_round(bytes);
    int fd = shm_open(name, O_RDWR, 0);
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
        (void)shm_unlink(shm->name);
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
