/*
 * Persistent collectives must not leak: --cycles (default 10000) cycles of
 * MPI_<Allreduce>_init, MPI_Start, MPI_Wait, MPI_Request_free of a
 * 512 KiB allreduce (MPI_DOUBLE sum, alternately in place), each result
 * checked.  After the first --warmup cycles (default 100) the process's
 * resident size (VmRSS) and mapped size (VmSize, and Rss of
 * /proc/self/smaps_rollup) may grow by at most --slack bytes (default
 * 1 MiB) over the remaining cycles; Open MPI 4.1.4's libnbc grows by
 * 516 KiB per cycle here.
 *
 * With --expect-bufpool, bufpool must have served every init
 * (coll_bufpool_allreduce_init_calls) and, in the measured cycles, mapped
 * no stack (coll_bufpool_nb_stacks_mapped) and taken no buffer from the
 * pool for more than one cycle's worth (coll_bufpool_scratch_requests:
 * the first start of a request takes its scratch, its later starts reuse
 * it, the free returns it).  Prints the growth per cycle in any case, so
 * that `--mca coll ^bufpool` shows libnbc's.
 */
#include "collcheck.h"
#include "pvar_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    long long rss, size, rollup_rss;
} mem_t;

static long long status_kib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long v = -1;
    size_t n = strlen(key);
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, key, n) == 0) {
            v = atoll(line + n);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return v;
}

static long long rollup_kib(const char *key)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long long v = -1;
    size_t n = strlen(key);
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, key, n) == 0) {
            v = atoll(line + n);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return v;
}

static mem_t mem_now(void)
{
    mem_t m = {status_kib("VmRSS:"), status_kib("VmSize:"), rollup_kib("Rss:")};
    return m;
}

static unsigned long long pvar(const char *name)
{
    unsigned long long v = 0;
    if (cc_opts.expect_bufpool && pvar_util_read(name, &v) != PVAR_OK) {
        cc_fail(NULL, "%s: cannot read it", name);
    }
    return v;
}

int main(int argc, char **argv)
{
    long cycles = 10000, warmup = 100;
    long long slack = 1 << 20;
    /* Our options first; the rest are collcheck's. */
    int kept = 1;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = cc_option_value(argv[i], "--cycles")) != NULL) {
            cycles = atol(v);
        } else if ((v = cc_option_value(argv[i], "--warmup")) != NULL) {
            warmup = atol(v);
        } else if ((v = cc_option_value(argv[i], "--slack")) != NULL) {
            slack = atoll(v);
        } else {
            argv[kept++] = argv[i];
        }
    }
    argc = kept;
    if (cc_init(&argc, &argv, MPI_THREAD_SINGLE,
                "  --cycles=N --warmup=N --slack=BYTES  (test_coll_persist_mem)\n") &&
        cycles > warmup && warmup > 0) {
        const int p = cc_world_size, me = cc_world_rank, n = (512 * 1024) / (int)sizeof(double);
        double *in = cc_xmalloc(sizeof(double) * (size_t)n),
               *out = cc_xmalloc(sizeof(double) * (size_t)n);
        cc_comm world;
        cc_comm_wrap(MPI_COMM_WORLD, "world", &world);
        cc_case c = {.coll = CC_ALLREDUCE,
                     .type = "MPI_DOUBLE",
                     .op = "MPI_SUM",
                     .count = (size_t)n,
                     .root = -1,
                     .comm = &world,
                     .thread = -1,
                     .form = CC_FORM_PERSISTENT};
        mem_t base = {0, 0, 0};
        unsigned long long stacks0 = 0, scratch0 = 0,
                           inits0 = pvar("coll_bufpool_allreduce_init_calls");
        long bad = 0;
        for (long k = 0; k < cycles; k++) {
            if (k == warmup) {
                base = mem_now();
                stacks0 = pvar("coll_bufpool_nb_stacks_mapped");
                scratch0 = pvar("coll_bufpool_scratch_requests");
            }
            const bool in_place = k % 2 == 1;
            for (int i = 0; i < n; i++) {
                (in_place ? out : in)[i] = (double)(me + i % 1000 + k % 7);
            }
            MPI_Request req;
            cc_check_mpi(&c,
                         PCOLL_INIT(Allreduce)(in_place ? MPI_IN_PLACE : in, out, n, MPI_DOUBLE,
                                               MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req),
                         "persistent allreduce init");
            cc_check_mpi(&c, MPI_Start(&req), "MPI_Start");
            cc_check_mpi(&c, MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
            cc_check_mpi(&c, MPI_Request_free(&req), "MPI_Request_free");
            for (int i = 0; i < n && bad < 5; i++) {
                const double expect = (double)p * (double)(i % 1000 + k % 7) + p * (p - 1) / 2.0;
                if (out[i] != expect) {
                    cc_fail(&c, "cycle %ld: element %d is %g, expected %g", k, i, out[i], expect);
                    bad++;
                    break;
                }
            }
        }
        cc_case_done();
        const mem_t end = mem_now();
        const long measured = cycles - warmup;
        const long long grow[3] = {(end.rss - base.rss) * 1024, (end.size - base.size) * 1024,
                                   (end.rollup_rss - base.rollup_rss) * 1024};
        const char *what[3] = {"VmRSS", "VmSize (mapped)", "smaps_rollup Rss"};
        for (int i = 0; i < 3; i++) {
            if (me == 0) {
                printf("%-18s %+lld bytes over %ld cycles (%+.1f bytes per cycle)\n", what[i],
                       grow[i], measured, (double)grow[i] / (double)measured);
            }
            if (grow[i] > slack) {
                cc_fail(&c,
                        "%s grew by %lld bytes over %ld init/start/wait/free cycles (%.0f "
                        "per cycle), more than the %lld allowed",
                        what[i], grow[i], measured, (double)grow[i] / (double)measured, slack);
            }
        }
        if (cc_opts.expect_bufpool && p > 1) {
            const unsigned long long inits = pvar("coll_bufpool_allreduce_init_calls") - inits0,
                                     stacks = pvar("coll_bufpool_nb_stacks_mapped") - stacks0,
                                     scratch = pvar("coll_bufpool_scratch_requests") - scratch0;
            if (inits != (unsigned long long)cycles) {
                cc_fail(&c,
                        "coll_bufpool_allreduce_init_calls grew by %llu, not %ld: bufpool "
                        "did not serve every init",
                        inits, cycles);
            }
            if (stacks != 0) {
                cc_fail(&c, "%llu stacks were mapped in the measured cycles (reuse expected)",
                        stacks);
            }
            if (scratch > (unsigned long long)measured * 4) {
                cc_fail(&c, "%llu scratch buffers taken in %ld cycles", scratch, measured);
            }
            if (me == 0) {
                printf("bufpool: %llu inits, %llu stacks mapped and %llu scratch buffers taken "
                       "in the measured cycles\n",
                       inits, stacks, scratch);
            }
        }
        free(in);
        free(out);
    }
    return cc_finish("test_coll_persist_mem");
}
