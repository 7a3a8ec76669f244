/*
 * The node segments' files (runtime/coll_bufpool_shm.c) without MPI:
 * names in /dev/shm carrying this process's pid; their cleanup registered
 * with the runtime a batch of 64 names at a time, each name before its
 * file exists, and the batch starting anew in a forked child (its own
 * pid); a segment's size, its mapping shared with a second mapping (as
 * another rank's), its name gone after unlink while the mappings stay;
 * attaching refused for a size that differs, a name that does not exist,
 * and a name bufpool does not give.  Skipped (77) where /dev/shm cannot
 * hold a file.
 */
#include "runtime/coll_bufpool_shm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

static char registered[8][64 * BUFPOOL_SHM_NAME_MAX];
static int registrations;
/* Whether every name created was in a registered batch, and no batch's
 * first file existed yet when the batch was registered. */
static int ahead_of_file = 1;

static void record(const char *paths)
{
    UNIT_REQUIRE(registrations < 8);
    /* The batch's first name is the one being created: not there yet. */
    char first[BUFPOOL_SHM_NAME_MAX];
    snprintf(first, sizeof(first), "%.*s", (int)strcspn(paths, ","), paths);
    struct stat st;
    ahead_of_file = ahead_of_file && 0 != stat(first, &st);
    snprintf(registered[registrations++], sizeof(registered[0]), "%s", paths);
}

static int count_names(const char *list)
{
    int n = 1;
    for (const char *c = list; *c; c++) {
        n += ',' == *c;
    }
    return n;
}

static int in_batches(const char *name)
{
    for (int i = 0; i < registrations; i++) {
        const char *hit = strstr(registered[i], name);
        const size_t len = strlen(name);
        if (NULL != hit && (',' == hit[len] || '\0' == hit[len])) {
            return 1;
        }
    }
    return 0;
}

int main(void)
{
    const bufpool_shm_range_t own = {.offset = 0, .bytes = 4096};
    bufpool_shm_t a, b;
    char prefix[64];
    snprintf(prefix, sizeof(prefix), BUFPOOL_SHM_DIR "/bufpool-%ld-", (long)getpid());

    int rc = bufpool_shm_create(&a, 10000, 0x1234abcdULL, own, record);
    if (ENOENT == rc || EACCES == rc || EROFS == rc) {
        printf("test_coll_shm: %s cannot hold a file here (%s): skipped\n", BUFPOOL_SHM_DIR,
               strerror(rc));
        return 77;
    }
    UNIT_REQUIRE(0 == rc);
    UNIT_CHECK(0 == strncmp(a.name, prefix, strlen(prefix)));
    UNIT_CHECK_EQ_U64(a.bytes, 12288); /* page multiple */
    UNIT_CHECK_EQ_U64(registrations, 1);
    UNIT_CHECK_EQ_U64(count_names(registered[0]), 64);
    UNIT_CHECK(in_batches(a.name));
    struct stat st;
    UNIT_CHECK(0 == stat(a.name, &st) && 12288 == st.st_size);

    /* Another rank's mapping: the same memory. */
    UNIT_REQUIRE(0 == bufpool_shm_attach(&b, a.name, 10000, own));
    ((volatile char *)a.base)[5000] = 42;
    UNIT_CHECK_EQ_U64(((volatile char *)b.base)[5000], 42);
    b.name[0] = '\0';                                                      /* the creator unlinks */
    UNIT_CHECK_EQ_U64(bufpool_shm_attach(&b, a.name, 20000, own), EINVAL); /* b unchanged */
    char path[BUFPOOL_SHM_NAME_MAX];
    snprintf(path, sizeof(path), "%s", a.name);
    bufpool_shm_unlink(&a);
    bufpool_shm_unlink(&a); /* twice: harmless */
    UNIT_CHECK(0 != stat(path, &st) && ENOENT == errno);
    ((volatile char *)a.base)[6000] = 7; /* mappings outlive the name */
    UNIT_CHECK_EQ_U64(((volatile char *)b.base)[6000], 7);
    bufpool_shm_detach(&b);
    bufpool_shm_detach(&a);
    UNIT_CHECK_EQ_U64(bufpool_shm_attach(&b, path, 10000, own), ENOENT);
    UNIT_CHECK_EQ_U64(bufpool_shm_attach(&b, "/etc/passwd", 10000, own), EINVAL);
    UNIT_CHECK_EQ_U64(
        bufpool_shm_attach(&b, BUFPOOL_SHM_DIR "/bufpool-1/../../etc/passwd", 4096, own), EINVAL);

    /* 63 more segments ride on the first batch; the 65th registers the
     * next one; every name is in a batch registered before its file. */
    for (int i = 1; i <= 64; i++) {
        rc = bufpool_shm_create(&a, 4096, 99, own, record);
        UNIT_REQUIRE(0 == rc);
        ahead_of_file = ahead_of_file && in_batches(a.name);
        bufpool_shm_unlink(&a);
        bufpool_shm_detach(&a);
        UNIT_CHECK_EQ_U64(registrations, i < 64 ? 1 : 2);
    }
    UNIT_CHECK(ahead_of_file);
    /* No hook: nothing registered, a segment all the same. */
    UNIT_REQUIRE(0 == bufpool_shm_create(&a, 4096, 5, own, NULL));
    bufpool_shm_unlink(&a);
    bufpool_shm_detach(&a);
    UNIT_CHECK_EQ_U64(registrations, 2);

    /* A forked child names its segments with its own pid and registers its
     * own batch. */
    const pid_t child = fork();
    UNIT_REQUIRE(child >= 0);
    if (0 == child) {
        char mine[64];
        snprintf(mine, sizeof(mine), BUFPOOL_SHM_DIR "/bufpool-%ld-", (long)getpid());
        const int before = registrations;
        int ok = 0 == bufpool_shm_create(&a, 4096, 6, own, record);
        ok = ok && 0 == strncmp(a.name, mine, strlen(mine)) && registrations == before + 1 &&
             in_batches(a.name);
        bufpool_shm_unlink(&a);
        bufpool_shm_detach(&a);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    UNIT_REQUIRE(child == waitpid(child, &status, 0));
    UNIT_CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status));
    return unit_finish("test_coll_shm");
}
