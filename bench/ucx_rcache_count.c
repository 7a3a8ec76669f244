/*
 * LD_PRELOAD shim for bench/reg_ucx_lookups.sh: counts UCX's registration
 * cache lookups (ucs_rcache_get) per region returned, and says which of
 * those regions lie in a /dev/shm file other than Open MPI's or UCX's own
 * (bufpool's node segments).  Debian's UCX has no statistics build, so the
 * count is taken at the call.  Prints one summary line per process at exit
 * (stderr); never changes what UCX does.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int ucs_status_t; /* UCS_OK is 0 */
/* ucs_rcache_region_t begins with its ucs_pgt_region_t: start, end. */
typedef struct {
    uintptr_t start, end;
} region_head_t;

#define MAX_REGIONS 1024

static struct {
    uintptr_t start, end;
    long lookups;
    int in_segment;
} regions[MAX_REGIONS];
static int nregions;
static long lookups, segment_lookups, untracked;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Is address in a /dev/shm file that is neither Open MPI's btl file nor
 * UCX's own?  Read once per new region, so cost stays out of the count. */
static int in_node_segment(uintptr_t address)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[640];
    int found = 0;
    while (NULL != maps && NULL != fgets(line, sizeof(line), maps)) {
        unsigned long lo, hi;
        char path[512] = "";
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %511[^\n]", &lo, &hi, path) >= 2 &&
            address >= lo && address < hi) {
            found = NULL != strstr(path, "/dev/shm/") && NULL == strstr(path, "vader_segment") &&
                    NULL == strstr(path, "sm_segment") && NULL == strstr(path, "ucx");
            break;
        }
    }
    if (NULL != maps) {
        fclose(maps);
    }
    return found;
}

/* The function interposed: libucs's own is found with dlsym at the first
 * call.  (Declared for -Wmissing-prototypes: no UCX header is needed.) */
ucs_status_t ucs_rcache_get(void *rcache, void *address, size_t length, int prot, void *arg,
                            region_head_t **region_p);

ucs_status_t ucs_rcache_get(void *rcache, void *address, size_t length, int prot, void *arg,
                            region_head_t **region_p)
{
    static ucs_status_t (*real)(void *, void *, size_t, int, void *, region_head_t **);
    if (NULL == real) {
        real = (ucs_status_t(*)(void *, void *, size_t, int, void *, region_head_t **))dlsym(
            RTLD_NEXT, "ucs_rcache_get");
    }
    const ucs_status_t status = real(rcache, address, length, prot, arg, region_p);
    if (0 != status || NULL == *region_p) {
        return status;
    }
    const region_head_t *r = *region_p;
    pthread_mutex_lock(&lock);
    lookups++;
    int i = 0;
    while (i < nregions && (regions[i].start != r->start || regions[i].end != r->end)) {
        i++;
    }
    if (i == nregions && nregions < MAX_REGIONS) {
        regions[i].start = r->start;
        regions[i].end = r->end;
        regions[i].in_segment = in_node_segment(r->start);
        nregions++;
    }
    if (i < nregions) {
        regions[i].lookups++;
        segment_lookups += regions[i].in_segment;
    } else {
        untracked++;
    }
    pthread_mutex_unlock(&lock);
    return status;
}

__attribute__((destructor)) static void report(void)
{
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    int segment_regions = 0;
    size_t segment_bytes = 0;
    for (int i = 0; i < nregions; i++) {
        if (regions[i].in_segment) {
            segment_regions++;
            segment_bytes += regions[i].end - regions[i].start;
        }
    }
    fprintf(stderr,
            "ucx_rcache_count: rank %s lookups %ld regions %d segment_lookups %ld "
            "segment_regions %d segment_region_kib %zu untracked %ld\n",
            NULL != rank ? rank : "?", lookups, nregions, segment_lookups, segment_regions,
            segment_bytes >> 10, untracked);
}
