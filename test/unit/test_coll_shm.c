/*
 * The node segments' files (runtime/coll_bufpool_shm.c) without MPI.
 * Named ones: names in /dev/shm carrying this process's pid; their cleanup
 * registered with the runtime a batch of 64 names at a time, each name
 * before its file exists, and the batch starting anew in a forked child
 * (its own pid); a segment's size, its mapping shared with a second
 * mapping (as another rank's), its name gone after unlink while the
 * mappings stay; attaching refused for a size that differs, a name that
 * does not exist, another file, and a name bufpool does not give.
 * Unnamed ones (the default): no name in /dev/shm at any time, nothing
 * registered, the link /proc/PID/fd/FD shared with a forked child (as
 * another rank), the link refused once the creator closed it and for a
 * file that is not the creator's, and after bufpool_shm_links_refused the
 * process's segments named.  Every mapping, the creator's and another
 * rank's, has an inaccessible page on either side, and detach releases
 * them with it.  Skipped (77) where /dev/shm cannot hold a file.
 */
#include "runtime/coll_bufpool_shm.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
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

/* The names in /dev/shm that start with prefix. */
static int names_with(const char *prefix)
{
    DIR *d = opendir(BUFPOOL_SHM_DIR);
    int n = 0;
    const char *base = prefix + sizeof(BUFPOOL_SHM_DIR); /* past the slash */
    for (struct dirent *e; NULL != d && NULL != (e = readdir(d));) {
        n += 0 == strncmp(e->d_name, base, strlen(base));
    }
    if (NULL != d) {
        closedir(d);
    }
    return n;
}

/* The unnamed segments: shared through the link, refused where it does
 * not lead to the creator's file, then named once refused. */
/* Whether the page at p is mapped (accessible or not). */
static bool page_mapped(const void *p)
{
    unsigned char vec;
    return 0 == mincore((void *)p, 4096, &vec);
}

/* Whether the pages either side of a segment's mapping are mapped without
 * access (a "---p" entry of /proc/self/maps covers each). */
static bool guarded(const bufpool_shm_t *shm)
{
    const uintptr_t lo = (uintptr_t)shm->base - 4096, hi = (uintptr_t)shm->base + shm->bytes;
    bool before = false, after = false;
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    while (NULL != f && NULL != fgets(line, sizeof(line), f)) {
        unsigned long start, end;
        char perms[8];
        if (3 == sscanf(line, "%lx-%lx %7s", &start, &end, perms) &&
            0 == strncmp(perms, "---", 3)) {
            before = before || (start <= lo && lo + 4096 <= end);
            after = after || (start <= hi && hi + 4096 <= end);
        }
    }
    if (NULL != f) {
        fclose(f);
    }
    return before && after && page_mapped((void *)lo) && page_mapped((void *)hi);
}

static void unnamed_segments(const char *prefix, bufpool_shm_range_t own)
{
    bufpool_shm_t a, b;
    const int before = registrations;
    UNIT_REQUIRE(0 == bufpool_shm_create(&a, 10000, 77, own, record, true));
    char link[64];
    snprintf(link, sizeof(link), "/proc/%ld/fd/", (long)getpid());
    UNIT_CHECK(a.linked && 0 == strncmp(a.name, link, strlen(link)));
    UNIT_CHECK_EQ_U64(a.bytes, 12288);
    UNIT_CHECK_EQ_U64(names_with(prefix), 0); /* no name at all */
    UNIT_CHECK_EQ_U64(registrations, before); /* nothing to clean up */
    ((volatile char *)a.base)[100] = 9;

    /* Another process (a forked rank) maps it through the link. */
    const pid_t child = fork();
    UNIT_REQUIRE(child >= 0);
    if (0 == child) {
        bufpool_shm_t c;
        int ok = 0 == bufpool_shm_attach(&c, a.name, a.id, 10000, own);
        ok = ok && 9 == ((volatile char *)c.base)[100];
        if (ok) {
            ((volatile char *)c.base)[200] = 11;
        }
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    UNIT_REQUIRE(child == waitpid(child, &status, 0));
    UNIT_CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status));
    UNIT_CHECK_EQ_U64(((volatile char *)a.base)[200], 11);

    /* Another file behind the link: refused, not mapped. */
    bufpool_shm_id_t other = a.id;
    other.ino++;
    UNIT_CHECK_EQ_U64(bufpool_shm_attach(&b, a.name, other, 10000, own),
                      (uint64_t)(int64_t)BUFPOOL_SHM_LINK_REFUSED);
    UNIT_CHECK_EQ_U64(bufpool_shm_attach(&b, a.name, a.id, 20000, own), EINVAL);
    UNIT_CHECK_EQ_U64(bufpool_shm_attach(&b, "/proc/1x/fd/3", a.id, 10000, own), EINVAL);
    UNIT_CHECK_EQ_U64(bufpool_shm_attach(&b, "/proc/1/fd/3/../../mem", a.id, 10000, own), EINVAL);
    char path[BUFPOOL_SHM_NAME_MAX];
    snprintf(path, sizeof(path), "%s", a.name);
    bufpool_shm_unlink(&a); /* closes the link's descriptor */
    UNIT_CHECK('\0' == a.name[0] && !a.linked);
    bufpool_shm_unlink(&a);
    UNIT_CHECK_EQ_U64(bufpool_shm_attach(&b, path, a.id, 10000, own),
                      (uint64_t)(int64_t)BUFPOOL_SHM_LINK_REFUSED);
    bufpool_shm_detach(&a);

    /* Not wanted: named. */
    UNIT_REQUIRE(0 == bufpool_shm_create(&a, 4096, 78, own, record, false));
    UNIT_CHECK(!a.linked && 0 == strncmp(a.name, prefix, strlen(prefix)));
    bufpool_shm_unlink(&a);
    bufpool_shm_detach(&a);
    /* Refused once: named from then on, in a forked child unnamed again. */
    bufpool_shm_links_refused();
    UNIT_REQUIRE(0 == bufpool_shm_create(&a, 4096, 79, own, record, true));
    UNIT_CHECK(!a.linked && 0 == strncmp(a.name, prefix, strlen(prefix)));
    bufpool_shm_unlink(&a);
    bufpool_shm_detach(&a);
    const pid_t child2 = fork();
    UNIT_REQUIRE(child2 >= 0);
    if (0 == child2) {
        int ok = 0 == bufpool_shm_create(&a, 4096, 80, own, record, true) && a.linked;
        bufpool_shm_unlink(&a);
        bufpool_shm_detach(&a);
        _exit(ok ? 0 : 1);
    }
    UNIT_REQUIRE(child2 == waitpid(child2, &status, 0));
    UNIT_CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status));
}

int main(void)
{
    const bufpool_shm_range_t own = {.offset = 0, .bytes = 4096};
    bufpool_shm_t a, b;
    char prefix[64];
    snprintf(prefix, sizeof(prefix), BUFPOOL_SHM_PREFIX "%ld-", (long)getpid());

    int rc = bufpool_shm_create(&a, 10000, 0x1234abcdULL, own, record, false);
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
    UNIT_REQUIRE(0 == bufpool_shm_attach(&b, a.name, a.id, 10000, own));
    UNIT_CHECK(!b.linked);
    UNIT_CHECK(guarded(&a) && guarded(&b));
    ((volatile char *)a.base)[5000] = 42;
    UNIT_CHECK_EQ_U64(((volatile char *)b.base)[5000], 42);
    b.name[0] = '\0'; /* the creator unlinks */
    UNIT_CHECK_EQ_U64(bufpool_shm_attach(&b, a.name, a.id, 20000, own), EINVAL); /* b unchanged */
    bufpool_shm_id_t other = a.id;
    other.ino++;
    UNIT_CHECK_EQ_U64(bufpool_shm_attach(&b, a.name, other, 10000, own), EINVAL);
    char path[BUFPOOL_SHM_NAME_MAX];
    snprintf(path, sizeof(path), "%s", a.name);
    bufpool_shm_unlink(&a);
    bufpool_shm_unlink(&a); /* twice: harmless */
    UNIT_CHECK(0 != stat(path, &st) && ENOENT == errno);
    ((volatile char *)a.base)[6000] = 7; /* mappings outlive the name */
    UNIT_CHECK_EQ_U64(((volatile char *)b.base)[6000], 7);
    char *const low_guard = (char *)a.base - 4096, *const high_guard = (char *)a.base + a.bytes;
    bufpool_shm_detach(&b);
    bufpool_shm_detach(&a);
    UNIT_CHECK(!page_mapped(low_guard) && !page_mapped(high_guard)); /* gone with it */
    UNIT_CHECK_EQ_U64(bufpool_shm_attach(&b, path, a.id, 10000, own), ENOENT);
    UNIT_CHECK_EQ_U64(bufpool_shm_attach(&b, "/etc/passwd", a.id, 10000, own), EINVAL);
    UNIT_CHECK_EQ_U64(
        bufpool_shm_attach(&b, BUFPOOL_SHM_PREFIX "1/../../etc/passwd", a.id, 4096, own), EINVAL);

    /* 63 more segments ride on the first batch; the 65th registers the
     * next one; every name is in a batch registered before its file. */
    for (int i = 1; i <= 64; i++) {
        rc = bufpool_shm_create(&a, 4096, 99, own, record, false);
        UNIT_REQUIRE(0 == rc);
        ahead_of_file = ahead_of_file && in_batches(a.name);
        bufpool_shm_unlink(&a);
        bufpool_shm_detach(&a);
        UNIT_CHECK_EQ_U64(registrations, i < 64 ? 1 : 2);
    }
    UNIT_CHECK(ahead_of_file);
    /* No hook: nothing registered, a segment all the same. */
    UNIT_REQUIRE(0 == bufpool_shm_create(&a, 4096, 5, own, NULL, false));
    bufpool_shm_unlink(&a);
    bufpool_shm_detach(&a);
    UNIT_CHECK_EQ_U64(registrations, 2);

    /* A forked child names its segments with its own pid and registers its
     * own batch. */
    const pid_t child = fork();
    UNIT_REQUIRE(child >= 0);
    if (0 == child) {
        char mine[64];
        snprintf(mine, sizeof(mine), BUFPOOL_SHM_PREFIX "%ld-", (long)getpid());
        const int before = registrations;
        int ok = 0 == bufpool_shm_create(&a, 4096, 6, own, record, false);
        ok = ok && 0 == strncmp(a.name, mine, strlen(mine)) && registrations == before + 1 &&
             in_batches(a.name);
        bufpool_shm_unlink(&a);
        bufpool_shm_detach(&a);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    UNIT_REQUIRE(child == waitpid(child, &status, 0));
    UNIT_CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status));

    unnamed_segments(prefix, own);
    return unit_finish("test_coll_shm");
}
