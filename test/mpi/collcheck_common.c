/*
 * Options, communicators, buffers, failure reports and the coll/bufpool pvar
 * checks shared by every collcheck program.
 */
#include "collcheck.h"
#include "pvar_util.h"
#include "regpar_size.h"
#include "sealed_pages.h"

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

cc_options cc_opts;
int cc_world_rank, cc_world_size;
MPI_Comm cc_world = MPI_COMM_NULL;
bool cc_session_only;

/* How the job's processes meet (--session): MPI_Init's MPI_COMM_WORLD; a
 * communicator from an MPI session alone (no MPI_Init at all); or one from
 * a session opened beside MPI_Init's world, so that two MPI instances live
 * in the process at once. */
enum cc_session_mode { CC_SESSION_NONE, CC_SESSION_ONLY, CC_SESSION_BESIDE_WORLD };
static enum cc_session_mode cc_session_mode;
#ifdef MPI_SESSION_NULL /* MPI 4 sessions (Open MPI 5 says MPI 3.1 but has them) */
static MPI_Session cc_session = MPI_SESSION_NULL;
#endif

static atomic_long cc_failures;
static atomic_long cc_reports;
static atomic_long cc_cases;
static atomic_bool cc_fault_done;
static bool cc_bad_command_line;

static void segv_report_install(void); /* with the buffers, below */

static const char *const coll_names[CC_NCOLLS] = {
    [CC_ALLREDUCE] = "allreduce",
    [CC_REDUCE] = "reduce",
    [CC_REDUCE_SCATTER] = "reduce_scatter",
    [CC_REDUCE_SCATTER_BLOCK] = "reduce_scatter_block",
    [CC_SCAN] = "scan",
    [CC_EXSCAN] = "exscan",
    [CC_BCAST] = "bcast",
    [CC_ALLGATHER] = "allgather",
    [CC_ALLTOALL] = "alltoall",
    [CC_GATHER] = "gather",
    [CC_SCATTER] = "scatter",
};

static const char *const coll_mpi_names[CC_NCOLLS] = {
    [CC_ALLREDUCE] = "MPI_Allreduce",
    [CC_REDUCE] = "MPI_Reduce",
    [CC_REDUCE_SCATTER] = "MPI_Reduce_scatter",
    [CC_REDUCE_SCATTER_BLOCK] = "MPI_Reduce_scatter_block",
    [CC_SCAN] = "MPI_Scan",
    [CC_EXSCAN] = "MPI_Exscan",
    [CC_BCAST] = "MPI_Bcast",
    [CC_ALLGATHER] = "MPI_Allgather",
    [CC_ALLTOALL] = "MPI_Alltoall",
    [CC_GATHER] = "MPI_Gather",
    [CC_SCATTER] = "MPI_Scatter",
};

static const char *const comm_kind_names[CC_NCOMMKINDS] = {
    [CC_COMM_WORLD] = "world",
    [CC_COMM_DUP] = "dup",
    [CC_COMM_HALVES] = "halves",
    [CC_COMM_REVERSED] = "reversed",
};

const char *cc_coll_name(cc_coll coll)
{
    return coll_names[coll];
}

const char *cc_coll_mpi_name(cc_coll coll)
{
    return coll_mpi_names[coll];
}

const char *cc_comm_kind_name(cc_comm_kind kind)
{
    return comm_kind_names[kind];
}

bool cc_coll_selected(cc_coll coll)
{
    return (cc_opts.coll_mask & (1u << coll)) != 0;
}

/* ------------------------------------------------------------------------ */
/* Command line. */

static const char usage_text[] =
    "Options:\n"
    "  --level=smoke|quick|full  how much of the matrix to run (default quick;\n"
    "                            BUFPOOL_TEST_FULL=1 in the environment selects full)\n"
    "  --smoke, --quick, --full  same as --level=...\n"
    "  --segment-size=BYTES      counts around BYTES/extent are tested (default 128K)\n"
    "  --comms=LIST              world,dup,halves,reversed or all (default all)\n"
    "  --colls=LIST              collective names (allreduce, reduce, reduce_scatter,\n"
    "                            reduce_scatter_block, scan, exscan, bcast, allgather,\n"
    "                            alltoall, gather, scatter), all or none (default all)\n"
    "  --form=blocking|nonblocking|persistent  call MPI_<Coll>, MPI_I<coll> (completed\n"
    "                            by MPI_Wait, an MPI_Test loop, MPI_Waitany or MPI_Waitall\n"
    "                            by turns) or MPI_<Coll>_init (started twice, the second\n"
    "                            run's bytes equal to the first's) (default blocking)\n"
    "  --expect-bufpool[=none]   fail unless coll_bufpool_<coll>_calls (per form:\n"
    "                            i<coll>_calls, <coll>_init_calls) grows for every\n"
    "                            collective run; =none: unless it stays\n"
    "  --expect-node[=fallback]  fail unless the node algorithms ran over a shared\n"
    "                            segment (coll_bufpool_node_calls > 0) and never fell\n"
    "                            back to point-to-point (coll_bufpool_node_fallbacks 0);\n"
    "                            =fallback: the reverse (no segment could be had);\n"
    "                            =both: some calls of each kind\n"
    "  --expect-single-copy[=none]  fail unless some bcast/allgather node calls read\n"
    "                            their blocks straight from the owners' buffers\n"
    "                            (coll_bufpool_node_single_copy_calls > 0) on every\n"
    "                            rank; =none: unless none did on any rank\n"
    "  --expect-node-tree[=none]  fail unless some node allreduce, reduce, bcast or\n"
    "                            barrier calls ran in groups (two levels:\n"
    "                            coll_bufpool_node_tree_calls > 0) on every rank;\n"
    "                            =none: unless none did on any rank\n"
    "  --seal-bcast-root         keep bcast's root buffer read-only during the call, as\n"
    "                            every send buffer is (MPI_Bcast's is INOUT, and Open\n"
    "                            MPI 5's scatter_allgather_ring writes the root's back:\n"
    "                            for runs that bufpool serves)\n"
    "  --expect-requests-peak=N  fail if coll_bufpool_requests_peak (requests one\n"
    "                            request set held at once) ends above N\n"
    "  --expect-scratch-bound=BYTES  first run a 64 MiB MPI_Allreduce, then fail if\n"
    "                            coll_bufpool_scratch_bytes_peak exceeds BYTES\n"
    "  --threads=N, --iterations=N   (test_coll_threads, test_coll_comms)\n"
    "  --max-reports=N           failure messages printed per rank (default 10)\n"
    "  --inject-fault=value|gap|guard  corrupt one result on the last rank, to\n"
    "                            prove that the checks fire (the run must fail)\n"
    "  --session[=beside-world]  run on a communicator made from an MPI session's\n"
    "                            mpi://WORLD process set (MPI 4), without MPI_Init at\n"
    "                            all, or (beside-world) beside MPI_Init's world\n"
    "  --verbose                 progress on rank 0\n"
    "Sizes accept K, M and G suffixes (powers of 1024).\n";

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void usage_error(const char *fmt, ...)
{
    if (cc_world_rank == 0 && !cc_bad_command_line) {
        va_list ap;
        va_start(ap, fmt);
        fputs("collcheck: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputs("\n", stderr);
        fputs(usage_text, stderr);
        va_end(ap);
    }
    cc_bad_command_line = true;
}

/* Sizes and counts go through the components' strict parser. */
static bool parse_size(const char *text, unsigned long long *out)
{
    uint64_t v;
    if (0 != regpar_parse_size(text, &v, NULL, 0)) {
        return false;
    }
    *out = v;
    return true;
}

/* An --expect-... limit: set *have and *out, or report what it needs. */
static void parse_limit(const char *text, const char *option, const char *what, bool *have,
                        unsigned long long *out)
{
    if (!parse_size(text, out)) {
        usage_error("%s needs %s, not '%s'", option, what, text);
    } else {
        *have = true;
    }
}

static bool parse_positive_int(const char *text, int *out)
{
    long v;
    if (0 != regpar_parse_int(text, 1, 1024, &v, NULL, 0)) {
        return false;
    }
    *out = (int)v;
    return true;
}

static bool parse_list(const char *text, const char *const *names, int n, unsigned *mask)
{
    *mask = 0;
    if (strcmp(text, "all") == 0) {
        *mask = (1u << n) - 1;
        return true;
    }
    if (strcmp(text, "none") == 0) {
        return true;
    }
    char *copy = strdup(text), *save = NULL;
    bool ok = copy != NULL;
    for (char *tok = ok ? strtok_r(copy, ",", &save) : NULL; tok != NULL && ok;
         tok = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int i = 0; i < n; i++) {
            if (strcmp(tok, names[i]) == 0) {
                found = i;
            }
        }
        if (found < 0) {
            usage_error("unknown name '%s' in '%s'", tok, text);
            ok = false;
        } else {
            *mask |= 1u << found;
        }
    }
    free(copy);
    return ok;
}

const char *cc_option_value(const char *arg, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(arg, name, n) == 0 && arg[n] == '=') {
        return arg + n + 1;
    }
    return NULL;
}

static void parse_options(int argc, char **argv)
{
    cc_opts.level = CC_LEVEL_QUICK;
    const char *full = getenv("BUFPOOL_TEST_FULL");
    if (full != NULL && full[0] != '\0' && strcmp(full, "0") != 0) {
        cc_opts.level = CC_LEVEL_FULL;
    }
    cc_opts.segment_bytes = 128 * 1024;
    cc_opts.comm_mask = (1u << CC_NCOMMKINDS) - 1;
    cc_opts.coll_mask = (1u << CC_NCOLLS) - 1;
    cc_opts.threads = 4;
    cc_opts.iterations = 0; /* program default */
    cc_opts.max_reports = 10;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        unsigned long long size;
        if (strcmp(a, "--smoke") == 0) {
            cc_opts.level = CC_LEVEL_SMOKE;
        } else if (strcmp(a, "--quick") == 0) {
            cc_opts.level = CC_LEVEL_QUICK;
        } else if (strcmp(a, "--full") == 0) {
            cc_opts.level = CC_LEVEL_FULL;
        } else if ((v = cc_option_value(a, "--level")) != NULL) {
            if (strcmp(v, "smoke") == 0) {
                cc_opts.level = CC_LEVEL_SMOKE;
            } else if (strcmp(v, "quick") == 0) {
                cc_opts.level = CC_LEVEL_QUICK;
            } else if (strcmp(v, "full") == 0) {
                cc_opts.level = CC_LEVEL_FULL;
            } else {
                usage_error("--level must be smoke, quick or full, not '%s'", v);
            }
        } else if ((v = cc_option_value(a, "--segment-size")) != NULL) {
            if (!parse_size(v, &size) || size == 0 || size > (1ull << 30)) {
                usage_error("--segment-size needs a size between 1 and 1G, not '%s'", v);
            } else {
                cc_opts.segment_bytes = (size_t)size;
            }
        } else if ((v = cc_option_value(a, "--comms")) != NULL) {
            parse_list(v, comm_kind_names, CC_NCOMMKINDS, &cc_opts.comm_mask);
        } else if ((v = cc_option_value(a, "--colls")) != NULL) {
            parse_list(v, coll_names, CC_NCOLLS, &cc_opts.coll_mask);
        } else if ((v = cc_option_value(a, "--form")) != NULL) {
            int found = -1;
            for (int f = 0; f < CC_NFORMS; f++) {
                if (strcmp(v, cc_form_name((cc_form)f)) == 0) {
                    found = f;
                }
            }
            if (found < 0) {
                usage_error("--form must be blocking, nonblocking or persistent, not '%s'", v);
            } else {
                cc_opts.form = (cc_form)found;
            }
        } else if (strcmp(a, "--expect-bufpool") == 0) {
            cc_opts.expect_bufpool = 1;
        } else if (strcmp(a, "--expect-bufpool=none") == 0) {
            cc_opts.expect_bufpool = 2;
        } else if (strcmp(a, "--expect-node") == 0) {
            cc_opts.expect_node = 1;
        } else if (strcmp(a, "--expect-node=fallback") == 0) {
            cc_opts.expect_node = 2;
        } else if (strcmp(a, "--expect-node=both") == 0) {
            cc_opts.expect_node = 3;
        } else if (strcmp(a, "--expect-single-copy") == 0) {
            cc_opts.expect_single_copy = 1;
        } else if (strcmp(a, "--expect-single-copy=none") == 0) {
            cc_opts.expect_single_copy = 2;
        } else if (strcmp(a, "--expect-node-tree") == 0) {
            cc_opts.expect_node_tree = 1;
        } else if (strcmp(a, "--expect-node-tree=none") == 0) {
            cc_opts.expect_node_tree = 2;
        } else if (strcmp(a, "--seal-bcast-root") == 0) {
            cc_opts.seal_bcast_root = true;
        } else if ((v = cc_option_value(a, "--expect-requests-peak")) != NULL) {
            parse_limit(v, "--expect-requests-peak", "a count", &cc_opts.have_requests_peak,
                        &cc_opts.requests_peak);
        } else if ((v = cc_option_value(a, "--expect-scratch-bound")) != NULL) {
            parse_limit(v, "--expect-scratch-bound", "a byte count", &cc_opts.have_scratch_bound,
                        &cc_opts.scratch_bound);
        } else if ((v = cc_option_value(a, "--threads")) != NULL) {
            if (!parse_positive_int(v, &cc_opts.threads)) {
                usage_error("--threads needs an integer in [1, 1024], not '%s'", v);
            }
        } else if ((v = cc_option_value(a, "--iterations")) != NULL) {
            if (!parse_positive_int(v, &cc_opts.iterations)) {
                usage_error("--iterations needs an integer in [1, 1024], not '%s'", v);
            }
        } else if ((v = cc_option_value(a, "--max-reports")) != NULL) {
            if (!parse_positive_int(v, &cc_opts.max_reports)) {
                usage_error("--max-reports needs an integer in [1, 1024], not '%s'", v);
            }
        } else if ((v = cc_option_value(a, "--inject-fault")) != NULL) {
            if (strcmp(v, "value") == 0) {
                cc_opts.fault = CC_FAULT_VALUE;
            } else if (strcmp(v, "gap") == 0) {
                cc_opts.fault = CC_FAULT_GAP;
            } else if (strcmp(v, "guard") == 0) {
                cc_opts.fault = CC_FAULT_GUARD;
            } else {
                usage_error("--inject-fault must be value, gap or guard, not '%s'", v);
            }
        } else if (strcmp(a, "--session") == 0 || strcmp(a, "--session=beside-world") == 0) {
            /* Read before MPI was initialized (session_mode_of). */
        } else if (strncmp(a, "--session=", 10) == 0) {
            usage_error("--session takes no value or beside-world, not '%s'", a + 10);
        } else if (strcmp(a, "--verbose") == 0) {
            cc_opts.verbose = true;
        } else if (strcmp(a, "--help") == 0) {
            usage_error("usage: %s [options]", argv[0]);
        } else {
            usage_error("unknown option '%s'", a);
        }
    }
}

/* --session's value, read from the command line before MPI exists (a
 * malformed one is left to parse_options, which says so). */
static enum cc_session_mode session_mode_of(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--session") == 0) {
            return CC_SESSION_ONLY;
        }
        if (strcmp(argv[i], "--session=beside-world") == 0) {
            return CC_SESSION_BESIDE_WORLD;
        }
    }
    return CC_SESSION_NONE;
}

#ifdef MPI_SESSION_NULL
static const char *const thread_level_names[] = {
    [MPI_THREAD_SINGLE] = "MPI_THREAD_SINGLE",
    [MPI_THREAD_FUNNELED] = "MPI_THREAD_FUNNELED",
    [MPI_THREAD_SERIALIZED] = "MPI_THREAD_SERIALIZED",
    [MPI_THREAD_MULTIPLE] = "MPI_THREAD_MULTIPLE",
};

/* A session asking for thread_level, and cc_world from its mpi://WORLD
 * process set; *provided: the level the session's info reports. */
static int world_from_session(int thread_level, int *provided)
{
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "thread_level", thread_level_names[thread_level]);
    int rc = MPI_Session_init(info, MPI_ERRORS_RETURN, &cc_session);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    *provided = MPI_THREAD_SINGLE;
    MPI_Info got;
    if (MPI_Session_get_info(cc_session, &got) == MPI_SUCCESS) {
        char value[64];
        int length = (int)sizeof(value), flag = 0;
        if (MPI_Info_get_string(got, "thread_level", &length, value, &flag) == MPI_SUCCESS &&
            flag) {
            for (int level = MPI_THREAD_SINGLE; level <= MPI_THREAD_MULTIPLE; level++) {
                if (strcmp(value, thread_level_names[level]) == 0) {
                    *provided = level;
                }
            }
        }
        MPI_Info_free(&got);
    }
    MPI_Group group;
    rc = MPI_Group_from_session_pset(cc_session, "mpi://WORLD", &group);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Comm_create_from_group(group, "org.ompi-bufpool.collcheck", MPI_INFO_NULL,
                                        MPI_ERRORS_RETURN, &cc_world);
        MPI_Group_free(&group);
    }
    return rc;
}
#endif

/* The job's communicator (cc_world) as --session says; *provided: the
 * thread level MPI gives. */
static void world_init(int *argc, char ***argv, int thread_level, int *provided)
{
    cc_session_mode = session_mode_of(*argc, *argv);
    cc_session_only = cc_session_mode == CC_SESSION_ONLY;
    if (cc_session_mode != CC_SESSION_ONLY) {
        MPI_Init_thread(argc, argv, thread_level, provided);
        cc_world = MPI_COMM_WORLD;
    }
    if (cc_session_mode == CC_SESSION_NONE) {
        return;
    }
#ifdef MPI_SESSION_NULL
    const int rc = world_from_session(thread_level, provided);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "collcheck: --session: no communicator from mpi://WORLD: %s\n", msg);
        exit(2);
    }
#else
    fprintf(stderr, "collcheck: --session needs MPI 4 sessions, which this MPI (%d.%d) lacks\n",
            MPI_VERSION, MPI_SUBVERSION);
    exit(77);
#endif
}

static void world_finalize(void)
{
#ifdef MPI_SESSION_NULL
    if (cc_session_mode != CC_SESSION_NONE) {
        MPI_Comm_free(&cc_world);
        MPI_Session_finalize(&cc_session);
    }
#endif
    if (cc_session_mode != CC_SESSION_ONLY) {
        MPI_Finalize();
    }
}

bool cc_init(int *argc, char ***argv, int thread_level, const char *usage_extra)
{
    int provided;
    world_init(argc, argv, thread_level, &provided);
    MPI_Comm_rank(cc_world, &cc_world_rank);
    MPI_Comm_size(cc_world, &cc_world_size);
    /* Errors come back as codes so that the message names the case. */
    MPI_Comm_set_errhandler(cc_world, MPI_ERRORS_RETURN);
    setvbuf(stdout, NULL, _IOLBF, 0);

    parse_options(*argc, *argv);
    segv_report_install();
    if (cc_bad_command_line) {
        if (cc_world_rank == 0 && usage_extra != NULL) {
            fputs(usage_extra, stderr);
        }
        return false;
    }
    if (provided < thread_level) {
        if (cc_world_rank == 0) {
            fprintf(stderr,
                    "collcheck: MPI provides thread level %d, this test needs %d "
                    "(MPI_THREAD_MULTIPLE = %d): build Open MPI with thread support\n",
                    provided, thread_level, MPI_THREAD_MULTIPLE);
        }
        cc_bad_command_line = true;
        return false;
    }
    if (cc_opts.expect_node != 0) {
        /* Open MPI's counters read as what they counted since their handle
         * was made: make them now, before any collective. */
        unsigned long long ignored;
        (void)pvar_util_read("coll_bufpool_node_calls", &ignored);
        (void)pvar_util_read("coll_bufpool_node_fallbacks", &ignored);
    }
    if (cc_opts.expect_single_copy != 0) {
        unsigned long long ignored;
        (void)pvar_util_read("coll_bufpool_node_single_copy_calls", &ignored);
    }
    if (cc_opts.expect_node_tree != 0) {
        unsigned long long ignored;
        (void)pvar_util_read("coll_bufpool_node_tree_calls", &ignored);
    }
    if (!cc_types_create()) {
        cc_fail(NULL, "the datatype table does not match this MPI library");
        return false;
    }
    /* First, so that the peak it reads covers that one allreduce only. */
    cc_check_scratch_bound();
    return true;
}

/* The summary travels by point-to-point messages: it must not depend on
 * the collectives under test. */
int cc_finish(const char *program)
{
    if (!cc_bad_command_line) {
        cc_types_free();
        cc_check_requests_peak();
        cc_check_node();
        cc_check_single_copy();
        cc_check_node_tree();
    }
    pvar_util_finalize();
    if (!cc_bad_command_line && atomic_load(&cc_cases) == 0) {
        cc_fail(NULL, "no case was checked on this rank: --colls/--comms selected nothing");
    }
    long mine[2] = {atomic_load(&cc_failures), atomic_load(&cc_cases)};
    if (cc_world_rank == 0) {
        long total[2] = {mine[0], mine[1]};
        for (int r = 1; r < cc_world_size; r++) {
            long theirs[2];
            MPI_Recv(theirs, 2, MPI_LONG, r, 7007, cc_world, MPI_STATUS_IGNORE);
            total[0] += theirs[0];
            total[1] += theirs[1];
        }
        if (cc_bad_command_line) {
            printf("%s: bad command line or MPI setup, nothing run\n", program);
        } else {
            printf("%s: %s: %ld case checks on %d ranks, %ld failures\n", program,
                   total[0] == 0 ? "PASS" : "FAIL", total[1], cc_world_size, total[0]);
        }
    } else {
        MPI_Send(mine, 2, MPI_LONG, 0, 7007, cc_world);
    }
    fflush(stdout);
    fflush(stderr);
    world_finalize();
    if (cc_bad_command_line) {
        return 2;
    }
    return mine[0] != 0 ? 1 : 0;
}

/* ------------------------------------------------------------------------ */
/* Communicators. */

void cc_comm_wrap(MPI_Comm comm, const char *name, cc_comm *out)
{
    out->kind = CC_COMM_WORLD;
    out->name = name;
    out->comm = comm;
    MPI_Comm_rank(comm, &out->rank);
    MPI_Comm_size(comm, &out->size);
}

void cc_comm_made(int rc, const char *call)
{
    if (MPI_SUCCESS == rc) {
        return;
    }
    /* An error of the MPI (a resource it could not have, for example
     * memory: the fault sweep), reported as one; without the communicator
     * there is nothing left to check with. */
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    printf("FAIL [world rank %d] %s returned error %d: %s (no communicator to check with)\n",
           cc_world_rank, call, rc, msg);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

MPI_Comm cc_comm_make(cc_comm_kind kind)
{
    MPI_Comm c = cc_world;
    switch (kind) {
        case CC_COMM_WORLD:
            break;
        case CC_COMM_DUP:
            cc_comm_made(MPI_Comm_dup(cc_world, &c), "MPI_Comm_dup");
            break;
        case CC_COMM_HALVES:
            cc_comm_made(MPI_Comm_split(cc_world, cc_world_rank % 2, cc_world_rank, &c),
                         "MPI_Comm_split");
            break;
        case CC_COMM_REVERSED:
            cc_comm_made(MPI_Comm_split(cc_world, 0, -cc_world_rank, &c), "MPI_Comm_split");
            break;
        default:
            break;
    }
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    return c;
}

void cc_comm_create(cc_comm_kind kind, cc_comm *out)
{
    cc_comm_wrap(cc_comm_make(kind), comm_kind_names[kind], out);
    out->kind = kind;
}

void cc_comm_free(cc_comm *c)
{
    if (c->comm != cc_world && c->comm != MPI_COMM_WORLD && c->comm != MPI_COMM_SELF &&
        c->comm != MPI_COMM_NULL) {
        MPI_Comm_free(&c->comm);
    }
    c->comm = MPI_COMM_NULL;
}

void cc_run_family(const cc_coll *colls, size_t ncolls,
                   void (*matrix)(cc_coll coll, const cc_comm *comm))
{
    cc_comm comms[CC_NCOMMKINDS];
    for (int k = 0; k < CC_NCOMMKINDS; k++) {
        if (cc_opts.comm_mask & (1u << k)) {
            cc_comm_create((cc_comm_kind)k, &comms[k]);
        }
    }
    for (size_t i = 0; i < ncolls; i++) {
        if (!cc_coll_selected(colls[i])) {
            continue;
        }
        cc_bufpool_snapshot before;
        cc_bufpool_snapshot_take(&before);
        for (int k = 0; k < CC_NCOMMKINDS; k++) {
            if ((cc_opts.comm_mask & (1u << k)) == 0) {
                continue;
            }
            double t0 = MPI_Wtime();
            matrix(colls[i], &comms[k]);
            if (cc_opts.verbose && cc_world_rank == 0) {
                printf("%-22s on %-8s %7.2f s\n", coll_mpi_names[colls[i]], comm_kind_names[k],
                       MPI_Wtime() - t0);
            }
        }
        cc_bufpool_expect_growth(&before, 1u << colls[i]);
    }
    for (int k = 0; k < CC_NCOMMKINDS; k++) {
        if (cc_opts.comm_mask & (1u << k)) {
            cc_comm_free(&comms[k]);
        }
    }
}

cc_pending *cc_step_start(const cc_comm *comm, const cc_step_kind *k, size_t count, int root,
                          bool in_place, uint64_t salt, int thread, cc_form form)
{
    const cc_type *t = cc_type_by_name(k->type);
    if (k->coll <= CC_EXSCAN) {
        cc_reduce_case rc = {k->coll, t, k->op, count, root, in_place, salt, thread};
        return cc_reduce_start(comm, &rc, form);
    }
    cc_move_case mc = {k->coll, t,     count, t, count, root, in_place && k->coll != CC_BCAST,
                       salt,    thread};
    return cc_move_start(comm, &mc, form);
}

void cc_run_step(const cc_comm *comm, const cc_step_kind *k, size_t count, int root, bool in_place,
                 uint64_t salt, int thread)
{
    cc_pending_run(cc_step_start(comm, k, count, root, in_place, salt, thread, cc_opts.form), salt);
}

/* ------------------------------------------------------------------------ */
/* Buffers. */

void *cc_xmalloc(size_t bytes)
{
    void *p = malloc(bytes == 0 ? 1 : bytes);
    if (p == NULL) {
        fprintf(stderr, "collcheck: rank %d: out of memory allocating %zu bytes\n", cc_world_rank,
                bytes);
        MPI_Abort(cc_world, 5);
    }
    return p;
}

static struct sigaction cc_segv_previous;

static void segv_report(int sig, siginfo_t *info, void *ctx)
{
    (void)sig;
    (void)ctx;
    const bool sealed = sealed_pages_hold(info->si_addr);
    char msg[256];
    const int n = snprintf(msg, sizeof(msg), "collcheck: rank %d: SIGSEGV at %p%s\n", cc_world_rank,
                           info->si_addr,
                           sealed ? ": a write into a buffer the test keeps read-only during "
                                    "the call (a send buffer, or bcast's root buffer with "
                                    "--seal-bcast-root)"
                                  : "");
    if (n > 0) {
        ssize_t ignored =
            write(STDERR_FILENO, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
        (void)ignored;
    }
    /* The fault repeats with the handler before ours: Open MPI's, which
     * prints the backtrace, or the default action. */
    sigaction(SIGSEGV, &cc_segv_previous, NULL);
}

static void segv_report_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = segv_report;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &cc_segv_previous);
}

void cc_buffer_alloc(cc_buffer *b, size_t bytes, unsigned char fill)
{
    /* Pages of its own, so that cc_buffer_seal protects this buffer alone. */
    b->base = sealed_pages_map(bytes + 2 * CC_GUARD_BYTES, &b->mapped);
    memset(b->base, CC_RECV_SENTINEL, CC_GUARD_BYTES);
    memset(b->base + CC_GUARD_BYTES, fill, bytes);
    memset(b->base + CC_GUARD_BYTES + bytes, CC_RECV_SENTINEL, CC_GUARD_BYTES);
    b->data = b->base + CC_GUARD_BYTES;
    b->bytes = bytes;
}

void cc_buffer_seal(cc_buffer *b)
{
    sealed_pages_seal(b->base, b->mapped, true);
}

void cc_buffer_free(cc_buffer *b)
{
    sealed_pages_unmap(b->base, b->mapped);
    b->base = b->data = NULL;
    b->bytes = b->mapped = 0;
}

/* ------------------------------------------------------------------------ */
/* Reports. */

static void describe_case(const cc_case *c, char *out, size_t n)
{
    if (c == NULL) {
        snprintf(out, n, "(outside a collective)");
        return;
    }
    if (c->type == NULL) { /* not about one call: the collective is enough */
        snprintf(out, n, "%s", coll_mpi_names[c->coll]);
        return;
    }
    char root[16] = "-", thread[16] = "-", comm[64] = "-";
    if (c->root >= 0) {
        snprintf(root, sizeof(root), "%d", c->root);
    }
    if (c->thread >= 0) {
        snprintf(thread, sizeof(thread), "%d", c->thread);
    }
    if (c->comm != NULL) {
        snprintf(comm, sizeof(comm), "%s(rank %d of %d)", c->comm->name, c->comm->rank,
                 c->comm->size);
    }
    snprintf(out, n, "%s type=%s op=%s count=%zu%s%s root=%s comm=%s in_place=%s thread=%s%s%s",
             coll_mpi_names[c->coll], c->type, c->op ? c->op : "-", c->count, c->counts ? " " : "",
             c->counts ? c->counts : "", root, comm, c->in_place ? "yes" : "no", thread,
             c->form != CC_FORM_BLOCKING ? " form=" : "",
             c->form != CC_FORM_BLOCKING ? cc_form_name(c->form) : "");
}

void cc_fail(const cc_case *c, const char *fmt, ...)
{
    atomic_fetch_add(&cc_failures, 1);
    if (atomic_fetch_add(&cc_reports, 1) >= cc_opts.max_reports) {
        return;
    }
    char what[512], where[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    describe_case(c, where, sizeof(where));
    /* One fprintf per report: lines from threads and ranks stay whole. */
    fprintf(stderr, "FAIL [world rank %d] %s: %s\n", cc_world_rank, where, what);
}

void cc_check_mpi(const cc_case *c, int rc, const char *call)
{
    if (rc == MPI_SUCCESS) {
        return;
    }
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    cc_fail(c, "%s returned error %d: %s", call, rc, msg);
    fflush(stderr);
    /* The other ranks may be inside the collective: only an abort is safe. */
    MPI_Abort(cc_world, 3);
}

void cc_case_done(void)
{
    atomic_fetch_add(&cc_cases, 1);
}

long cc_failure_count(void)
{
    return atomic_load(&cc_failures);
}

bool cc_check_guards(const cc_case *c, const cc_buffer *b, const char *what)
{
    for (size_t i = 0; i < CC_GUARD_BYTES; i++) {
        if (b->base[i] != CC_RECV_SENTINEL) {
            cc_fail(c, "%s: written %zu bytes before its start", what, CC_GUARD_BYTES - i);
            return false;
        }
    }
    const unsigned char *after = b->data + b->bytes;
    for (size_t i = 0; i < CC_GUARD_BYTES; i++) {
        if (after[i] != CC_RECV_SENTINEL) {
            cc_fail(c, "%s: written past its end (%zu bytes), at byte %zu after it", what, b->bytes,
                    i);
            return false;
        }
    }
    return true;
}

bool cc_check_unchanged(const cc_case *c, const void *before, const void *after, size_t bytes,
                        const char *what)
{
    const unsigned char *a = before, *b = after;
    for (size_t i = 0; i < bytes; i++) {
        if (a[i] != b[i]) {
            cc_fail(c, "%s was modified: byte %zu of %zu changed from 0x%02x to 0x%02x", what, i,
                    bytes, a[i], b[i]);
            return false;
        }
    }
    return true;
}

void cc_inject_fault(const cc_type *t, cc_buffer *result, size_t count)
{
    if (cc_opts.fault == CC_FAULT_NONE || cc_world_rank != cc_world_size - 1 ||
        atomic_load(&cc_fault_done)) {
        return;
    }
    size_t gap = cc_first_gap(t);
    switch (cc_opts.fault) {
        case CC_FAULT_VALUE:
            if (count == 0 || atomic_exchange(&cc_fault_done, true)) {
                return;
            }
            result->data[(count / 2) * t->extent + t->segments[0].offset] ^= 0x01;
            break;
        case CC_FAULT_GAP:
            if (count == 0 || !t->gaps_must_stay || gap == t->extent ||
                atomic_exchange(&cc_fault_done, true)) {
                return;
            }
            result->data[(count / 2) * t->extent + gap] ^= 0x0F;
            break;
        case CC_FAULT_GUARD:
            if (atomic_exchange(&cc_fault_done, true)) {
                return;
            }
            result->data[result->bytes] ^= 0xFF;
            break;
        default:
            return;
    }
    fprintf(stderr, "collcheck: rank %d: injected a '%s' fault as asked by --inject-fault\n",
            cc_world_rank,
            cc_opts.fault == CC_FAULT_VALUE ? "value"
                                            : (cc_opts.fault == CC_FAULT_GAP ? "gap" : "guard"));
}

/* ------------------------------------------------------------------------ */
/* Counts. */

size_t cc_counts(unsigned sets, size_t extent, size_t out[CC_MAX_COUNTS])
{
    size_t candidates[CC_MAX_COUNTS + 4], n = 0;
    size_t per_segment = cc_opts.segment_bytes / extent;
    if (sets & CC_COUNTS_ZERO) {
        candidates[n++] = 0;
    }
    if (sets & CC_COUNTS_ONE) {
        candidates[n++] = 1;
    }
    if (sets & CC_COUNTS_SEVEN) {
        candidates[n++] = 7;
    }
    if (sets & CC_COUNTS_ODD) {
        candidates[n++] = CC_SMALL_COUNT_MAX;
    }
    if (sets & CC_COUNTS_BOUNDARY) {
        if (per_segment > 0) {
            candidates[n++] = per_segment - 1;
        }
        candidates[n++] = per_segment;
        candidates[n++] = per_segment + 1;
    } else if (sets & CC_COUNTS_EDGE) {
        candidates[n++] = per_segment + 1;
    }
    if (sets & CC_COUNTS_BIG) {
        candidates[n++] = CC_BIG_BYTES / extent + 3;
    }
    size_t m = 0;
    for (size_t i = 0; i < n && m < CC_MAX_COUNTS; i++) {
        bool dup = false;
        for (size_t j = 0; j < m; j++) {
            dup = dup || out[j] == candidates[i];
        }
        if (!dup) {
            out[m++] = candidates[i];
        }
    }
    return m;
}

unsigned cc_matrix_counts(cc_comm_kind kind, cc_tier tier)
{
    const bool world = kind == CC_COMM_WORLD;
    unsigned sets = 0;
    switch (cc_opts.level) {
        case CC_LEVEL_FULL:
            sets = CC_COUNTS_SMALL;
            if (tier >= CC_TIER_SEGMENT) {
                sets |= CC_COUNTS_BOUNDARY;
            }
            if (tier >= CC_TIER_BIG) {
                sets |= CC_COUNTS_BIG;
            }
            break;
        case CC_LEVEL_QUICK:
            if (tier == CC_TIER_OTHER) {
                sets = world ? CC_COUNTS_SEVEN : 0u;
                break;
            }
            sets = CC_COUNTS_SMALL;
            if (tier >= CC_TIER_SEGMENT) {
                sets |= world ? CC_COUNTS_BOUNDARY : CC_COUNTS_EDGE;
            }
            if (tier >= CC_TIER_BIG && world) {
                sets |= CC_COUNTS_BIG;
            }
            break;
        default:
            if (tier >= CC_TIER_REP) {
                sets = CC_COUNTS_ZERO | CC_COUNTS_ONE | CC_COUNTS_SEVEN;
            }
            if (tier >= CC_TIER_SEGMENT && world) {
                sets |= CC_COUNTS_EDGE;
            }
            break;
    }
    return sets;
}

bool cc_root_selected(int root, int nranks, size_t count, cc_tier tier, size_t pair_index)
{
    if (cc_opts.level == CC_LEVEL_FULL) {
        return true;
    }
    if (tier == CC_TIER_OTHER) {
        return (size_t)root == pair_index % (size_t)nranks;
    }
    return count <= CC_SMALL_COUNT_MAX || root == 0 || root == nranks - 1;
}

int cc_uneven_count(size_t count, int rank)
{
    if (count == 0) {
        return 0;
    }
    /* every third rank gets nothing, the others count + rank/3 */
    return ((size_t)rank + count) % 3 == 1 ? 0 : (int)(count + (size_t)rank / 3);
}

/* ------------------------------------------------------------------------ */
/* coll/bufpool pvars. */

void cc_bufpool_calls_pvar(cc_coll coll, char *name, size_t n)
{
    static const char *const pattern[CC_NFORMS] = {
        [CC_FORM_BLOCKING] = "coll_bufpool_%s_calls",
        [CC_FORM_NONBLOCKING] = "coll_bufpool_i%s_calls",
        [CC_FORM_PERSISTENT] = "coll_bufpool_%s_init_calls",
    };
    snprintf(name, n, pattern[cc_opts.form], coll_names[coll]);
}

void cc_bufpool_snapshot_take(cc_bufpool_snapshot *s)
{
    memset(s, 0, sizeof(*s));
    if (!cc_opts.expect_bufpool) {
        return;
    }
    for (int k = 0; k < CC_NCOLLS; k++) {
        char name[96];
        cc_bufpool_calls_pvar((cc_coll)k, name, sizeof(name));
        s->status[k] = pvar_util_read(name, &s->calls[k]);
    }
}

void cc_bufpool_expect_growth(const cc_bufpool_snapshot *before, unsigned coll_mask)
{
    if (!cc_opts.expect_bufpool) {
        return;
    }
    if (cc_world_size == 1) {
        /* A one-process collective is a local copy: no component has to
         * bring an algorithm for it. */
        static bool said;
        if (cc_world_rank == 0 && !said) {
            printf("--expect-bufpool: not checked on a single process\n");
        }
        said = true;
        return;
    }
    cc_bufpool_snapshot after;
    cc_bufpool_snapshot_take(&after);
    for (int k = 0; k < CC_NCOLLS; k++) {
        if ((coll_mask & (1u << k)) == 0) {
            continue;
        }
        cc_case c = {.coll = (cc_coll)k, .root = -1, .thread = -1, .form = cc_opts.form};
        char name[96];
        cc_bufpool_calls_pvar((cc_coll)k, name, sizeof(name));
        if (2 == cc_opts.expect_bufpool && before->status[k] == PVAR_NOT_FOUND &&
            after.status[k] == PVAR_NOT_FOUND) {
            continue; /* =none: a process without coll/bufpool serves nothing */
        }
        if (before->status[k] != PVAR_OK || after.status[k] != PVAR_OK) {
            int st = before->status[k] != PVAR_OK ? before->status[k] : after.status[k];
            cc_fail(&c, "--expect-bufpool: %s: %s", name,
                    pvar_util_status_string((enum pvar_status)st));
        } else if (2 == cc_opts.expect_bufpool) {
            if (after.calls[k] != before->calls[k]) {
                cc_fail(&c,
                        "--expect-bufpool=none: %s grew (%llu before, %llu after): "
                        "coll/bufpool handled %s (%s)",
                        name, before->calls[k], after.calls[k], coll_mpi_names[k],
                        cc_form_name(cc_opts.form));
            }
        } else if (after.calls[k] <= before->calls[k]) {
            cc_fail(&c,
                    "--expect-bufpool: %s did not grow (%llu before, %llu "
                    "after): coll/bufpool did not handle %s (%s)",
                    name, before->calls[k], after.calls[k], coll_mpi_names[k],
                    cc_form_name(cc_opts.form));
        } else if (cc_opts.verbose && cc_world_rank == 0) {
            printf("%s: %llu -> %llu\n", name, before->calls[k], after.calls[k]);
        }
    }
}

/* Reads the counter name into *value for the check of option: true, or
 * false after failing the case with why it could not be read. */
static bool cc_read_pvar(const char *option, const char *name, unsigned long long *value)
{
    const enum pvar_status st = pvar_util_read(name, value);
    if (st != PVAR_OK) {
        cc_fail(NULL, "%s: %s: %s", option, name, pvar_util_status_string(st));
        return false;
    }
    return true;
}

/* --expect-requests-peak: after every case, the most requests any one
 * request set of coll/bufpool held must not exceed the bound the run set
 * with coll_bufpool_max_requests (per process: each rank checks its own). */
void cc_check_requests_peak(void)
{
    if (!cc_opts.have_requests_peak) {
        return;
    }
    unsigned long long peak = 0;
    if (!cc_read_pvar("--expect-requests-peak", "coll_bufpool_requests_peak", &peak)) {
        return;
    }
    if (peak > cc_opts.requests_peak) {
        cc_fail(NULL,
                "--expect-requests-peak: coll_bufpool_requests_peak is %llu on rank %d, above "
                "%llu",
                peak, cc_world_rank, cc_opts.requests_peak);
    } else if (cc_opts.verbose) {
        printf("coll_bufpool_requests_peak on rank %d: %llu (bound %llu)\n", cc_world_rank, peak,
               cc_opts.requests_peak);
    }
}

/* --expect-node: on every rank, the node algorithms served over their
 * shared segment at least once and never ran point-to-point for want of
 * one; =fallback: never over a segment, at least once point-to-point;
 * =both: at least once each.  And the regpar pool counts the segments
 * mapped now against its capacity, where it is loaded. */
void cc_check_node(void)
{
    if (!cc_opts.expect_node) {
        return;
    }
    unsigned long long calls = 0, fallbacks = 0;
    enum pvar_status st = pvar_util_read("coll_bufpool_node_calls", &calls);
    if (st == PVAR_OK) {
        st = pvar_util_read("coll_bufpool_node_fallbacks", &fallbacks);
    }
    if (st != PVAR_OK) {
        cc_fail(NULL, "--expect-node: coll_bufpool_node_calls/_fallbacks: %s",
                pvar_util_status_string(st));
    } else if (cc_opts.expect_node == 1   ? calls == 0 || fallbacks != 0
               : cc_opts.expect_node == 2 ? calls != 0 || fallbacks == 0
                                          : calls == 0 || fallbacks == 0) {
        cc_fail(NULL,
                "--expect-node: rank %d: %llu node calls over a shared segment, %llu run "
                "point-to-point instead",
                cc_world_rank, calls, fallbacks);
    } else if (cc_opts.verbose) {
        printf("coll_bufpool_node_calls on rank %d: %llu\n", cc_world_rank, calls);
    }
    /* The segments mapped now count against the regpar pool's capacity,
     * byte for byte (where regpar is loaded: its pvar is there). */
    unsigned long long mapped = 0, outside = 0;
    if (cc_opts.expect_node != 2 &&
        PVAR_OK == pvar_util_read("mpool_regpar_bytes_outside", &outside)) {
        st = pvar_util_read("coll_bufpool_node_segment_bytes", &mapped);
        if (st != PVAR_OK || mapped != outside) {
            cc_fail(NULL,
                    "--expect-node: rank %d: coll_bufpool_node_segment_bytes %llu (%s), regpar "
                    "counts %llu bytes outside the pool",
                    cc_world_rank, mapped, pvar_util_status_string(st), outside);
        } else if (cc_opts.verbose) {
            printf("node segments on rank %d: %llu bytes, counted by regpar\n", cc_world_rank,
                   mapped);
        }
    }
}

/* OPTION (mode 1): the counter PVAR of some node calls grew on this rank;
 * OPTION=none (mode 2): it did not; 0: no check. */
static void check_some_calls(const char *option, const char *pvar, int mode, const char *what)
{
    if (!mode) {
        return;
    }
    unsigned long long calls = 0;
    if (!cc_read_pvar(option, pvar, &calls)) {
        return;
    }
    if (mode == 1 ? calls == 0 : calls != 0) {
        cc_fail(NULL, "%s%s: rank %d: %llu calls %s", option, mode == 2 ? "=none" : "",
                cc_world_rank, calls, what);
    } else if (cc_opts.verbose) {
        printf("%s on rank %d: %llu\n", pvar, cc_world_rank, calls);
    }
}

/* --expect-single-copy: bcast/allgather node calls read straight (CMA)
 * on this rank, or (=none) not one did. */
void cc_check_single_copy(void)
{
    check_some_calls("--expect-single-copy", "coll_bufpool_node_single_copy_calls",
                     cc_opts.expect_single_copy, "read straight");
}

/* --expect-node-tree: node calls ran in groups on this rank, or (=none)
 * not one did. */
void cc_check_node_tree(void)
{
    check_some_calls("--expect-node-tree", "coll_bufpool_node_tree_calls", cc_opts.expect_node_tree,
                     "ran in groups");
}

void cc_check_scratch_bound(void)
{
    if (!cc_opts.have_scratch_bound) {
        return;
    }
    cc_comm world;
    cc_comm_wrap(cc_world, "world", &world);
    const size_t bytes = (size_t)64 << 20;
    cc_reduce_case rc = {
        .coll = CC_ALLREDUCE,
        .type = cc_type_by_name("MPI_INT"),
        .op = CC_OP_SUM,
        .count = bytes / sizeof(int),
        .root = -1,
        .in_place = false,
        .salt = cc_hash(0x5c7a7c4, bytes),
        .thread = -1,
    };
    cc_run_reduce_case(&world, &rc);
    unsigned long long peak = 0;
    enum pvar_status st = pvar_util_read("coll_bufpool_scratch_bytes_peak", &peak);
    cc_case c = {.coll = CC_ALLREDUCE,
                 .type = "MPI_INT",
                 .op = "MPI_SUM",
                 .count = rc.count,
                 .root = -1,
                 .comm = &world,
                 .thread = -1};
    if (st != PVAR_OK) {
        cc_fail(&c, "--expect-scratch-bound: coll_bufpool_scratch_bytes_peak: %s",
                pvar_util_status_string(st));
    } else if (peak > cc_opts.scratch_bound) {
        cc_fail(&c,
                "--expect-scratch-bound: coll_bufpool_scratch_bytes_peak is %llu bytes after a "
                "64 MiB allreduce, above the bound of %llu bytes",
                peak, cc_opts.scratch_bound);
    } else if (cc_world_rank == 0) {
        printf("coll_bufpool_scratch_bytes_peak after a 64 MiB allreduce: %llu bytes (bound "
               "%llu)\n",
               peak, cc_opts.scratch_bound);
    }
}
