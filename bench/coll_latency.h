/*
 * coll_latency: what its pieces share.  coll_latency.c says what the
 * benchmark measures and how; each piece has one job:
 *   coll_latency.c          the driver: sizes, buffers, the loop over points, main
 *   coll_latency_options.c  the command line
 *   coll_latency_colls.c    the per-collective table: calls, counts, buffer sizes,
 *                           data patterns and their independent checks, copy floor
 *   coll_latency_mpit.c     MPI_T: pool and bufpool counters, control variables,
 *                           the loaded coll components
 *   coll_latency_configs.c  configurations: communicators with a coll preference
 *   coll_latency_measure.c  one point: timed calls, counters, data check, and the
 *                           statistics over ranks and repetitions
 *   coll_latency_report.c   tables and CSV (their format is parsed by
 *                           run-side-by-side.sh and coll_report.py)
 */
#ifndef COLL_LATENCY_H
#define COLL_LATENCY_H

#include "pcoll.h"
#include <stddef.h>
#include <stdio.h>

#define MAX_REPEAT          99
#define COLL_PREFERENCE_KEY "ompi_comm_coll_preference"
#define NUM_COLLECTIVES     12 /* entries of bench_collectives[] (checked where it is defined) */

/* Everything rank 0 prints goes through here; the other ranks stay quiet. */
void root_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ------------------------------------------------------------------------ */
/* Options (coll_latency_options.c)                                          */

/* How each collective is called (-F): MPI_<Coll>; MPI_I<coll> + MPI_Wait;
 * MPI_Start + MPI_Wait of a persistent request made before the point's
 * warm-up and freed after its check; or OSU's overlap measure, MPI_I<coll>,
 * computation for the pure communication time, MPI_Wait. */
typedef enum { FORM_BLOCKING, FORM_NONBLOCKING, FORM_PERSISTENT, FORM_OVERLAP } bench_form;

/* The collective's name in the tables and CSV for a form: allreduce,
 * iallreduce, allreduce_init, iallreduce_overlap. */
const char *form_coll_name(bench_form form, const char *coll, char *buf, size_t len);

typedef struct {
    const char *collectives; /* comma list or "all" */
    const char *configs;     /* comma list */
    size_t min_size, max_size;
    size_t size_factor; /* each size is this many times the one before (default 2) */
    long iterations, warmup, iterations_large, warmup_large;
    size_t large_budget; /* bytes; 0 keeps OSU's fixed large counts */
    int repeat;
    size_t mem_limit;
    const char *csv_path;
    const char *tag;        /* free text copied into every CSV row (e.g. job round) */
    const char *world_name; /* label of the "world" configuration in the output */
    bench_form form;
    int test_calls;            /* overlap: MPI_Test calls spread over the computation */
    int user_op;               /* reductions with a user-defined sum (MPI_Op_create) */
    const char *progress_path; /* rank 0 rewrites the point in progress here */
    const char *skip;          /* config:collective:size[+] entries not to measure */
    int point_timeout;         /* seconds one point may take (0: no limit) */
    const char *inject;        /* testing: crash|wrong|hang:config:collective:size */
    int list_configs;          /* print the available configurations and stop */
    int list_points;           /* print the points a run would measure and stop */
} bench_options;

/* Whether --skip names this point (SIZE+ names that size and larger ones). */
int options_skips(const bench_options *opt, const char *config, const char *coll, size_t size);
/* --inject's kind for this point (crash, hang, wrong), or NULL. */
const char *options_injected(const bench_options *opt, const char *config, const char *coll,
                             size_t size);

/* Returns 0 to run, 1 to stop quietly (help), 2 on a bad option. */
int options_parse(int argc, char **argv, bench_options *opt);

/* Timed and warm-up calls for one message size. */
void options_iterations_for(const bench_options *opt, size_t size, long *iters, long *warmup);

/* ------------------------------------------------------------------------ */
/* Collectives (coll_latency_colls.c)                                        */

typedef struct {
    size_t size;  /* OSU message size in bytes */
    int count;    /* elements per call argument (per block where blocks apply) */
    int *rcounts; /* reduce_scatter: elements each rank receives */
    int *displs;  /* reduce_scatter: where each rank's block starts */
    MPI_Op op;    /* the reductions' operation: MPI_SUM, or a user-defined sum (--op user) */
    char *sendbuf, *recvbuf;
    int rank, nprocs;
} coll_args;

typedef struct coll_desc coll_desc;
struct coll_desc {
    const char *name;
    int reduction; /* MPI_FLOAT with MPI_SUM; otherwise MPI_CHAR */
    int (*call)(const coll_args *a, MPI_Comm comm);
    /* Elements per argument for an OSU size; 0 skips the size, as OSU does. */
    int (*count)(size_t size, int nprocs);
    /* Bytes of each buffer a rank needs for an OSU size. */
    size_t (*send_bytes)(size_t size, int nprocs, int rank);
    size_t (*recv_bytes)(size_t size, int nprocs, int rank);
    void (*fill)(const coll_args *a, unsigned seed);
    long (*verify)(const coll_args *a, unsigned seed); /* returns wrong elements */
    /* Bytes per rank a bandwidth-optimal algorithm moves (see floor_bytes). */
    double beta_factor, gamma_factor, beta_blocks;
    /* MPI_I<coll>, or (persistent) MPI_<Coll>_init (MPIX_ on Open MPI 4.1). */
    int (*start)(const coll_args *a, MPI_Comm comm, int persistent, MPI_Request *req);
};

extern const coll_desc bench_collectives[]; /* NUM_COLLECTIVES of them */

/* Sets the arguments of one message size: count, and reduce_scatter's
 * per-rank counts and displacements (a->rcounts, a->displs hold nprocs). */
void coll_args_set_size(const coll_desc *cd, coll_args *a, size_t size);

/* Bytes per rank the memcpy floor copies for one message size. */
double floor_bytes(const coll_desc *cd, size_t size, int nprocs);

/* ------------------------------------------------------------------------ */
/* MPI_T (coll_latency_mpit.c)                                               */

/* Opens MPI_T and one handle per pool and bufpool counter, for the whole
 * run; mpit_close ends it. */
void mpit_open(bench_form form);
void mpit_close(void);

/* An integer or size-string control variable; -1 if absent. */
double cvar_read_number(const char *name);
int cvar_exists(const char *name);
/* Writes a control variable through MPI_T (every rank, same value); the
 * first write of a string variable saves its value for cvar_restore.
 * 0 on success. */
int cvar_write_text(const char *name, const char *value);
int cvar_write_int(const char *name, int value);
void cvar_restore(const char *name);

/* Calls served or handed back by bufpool so far, every collective and form
 * (NaN without bufpool): what tells that bufpool ran inside another
 * configuration's calls (as han's sub-communicators may let it). */
double bufpool_calls_total(void);

/* Every loaded coll component (but base), from its priority variable. */
int list_coll_components(char names[][32], int max);

/* Whether bufpool's counters exist (the component is loaded). */
int probes_bufpool_present(void);

typedef struct {
    double minflt, maxrss_kib;
    double pool_sys_allocs, pool_regs, scratch_peak, own_calls, fallbacks;
} counters;

/* Process counters, and with_pool the pool's and bufpool's (NaN where a
 * variable does not exist). */
counters counters_sample(int coll_index, int with_pool);

/* ------------------------------------------------------------------------ */
/* Configurations (coll_latency_configs.c)                                   */

typedef struct {
    char name[32]; /* in tables and CSV */
    char kind[16]; /* what it is: its name, or in job mode the -n name of "world" */
    int is_floor;
    int uses_bufpool;  /* its rows get the pool columns */
    int hide_bufpool;  /* coll_bufpool_priority -1 while its points run */
    int han_nopersist; /* coll_han_use_persist_buffers 0 while its points run */
    MPI_Comm comm;
} bench_config;

/* Returns how many were made (skipped ones are reported), or -1 on a bad
 * list (reported). */
int configs_create(const char *list, const char *world_name, const char *collectives,
                   bench_config *configs, int max);
void configs_free(bench_config *configs, int n);
/* Hosts the job spans and the most ranks on one (set by configs_create). */
void configs_placement(int *hosts, int *ppn);
/* The largest size at which cfg measures coll in this form (SIZE_MAX: every
 * size, 0: none); where less, why. */
size_t config_max_size(const bench_config *cfg, const char *coll, bench_form form,
                       const char **why);
/* MPI_T settings of a configuration around its points (every rank). */
void config_enter(const bench_config *cfg);
void config_leave(const bench_config *cfg);

/* ------------------------------------------------------------------------ */
/* Measurement and statistics (coll_latency_measure.c)                      */

typedef struct {
    double avg_us, min_us, max_us;
    double p50_us; /* each rank's median call, averaged over ranks */
    long iterations;
    double wrong;        /* data-check failures, all ranks */
    double minflt;       /* minor page faults in the timed loop, all ranks */
    double rss_growth;   /* peak RSS growth in the timed loop, KiB, worst rank */
    double sys_allocs;   /* pool slabs mapped + direct allocations, all ranks */
    double regs;         /* pool registrations, all ranks */
    double scratch_peak; /* bufpool scratch high-water, worst rank */
    double own_calls, fallbacks;
    double bufpool_inside; /* other configurations: bufpool calls during the point */
    /* -F overlap, averaged over ranks: MPI_I<coll> + MPI_Wait alone, the
     * computation alone, and the overlap percentage 100 (1 - (overall -
     * compute) / comm); avg_us etc. are then the overall times. */
    double comm_us, compute_us, overlap_pct;
} point_result;

typedef struct {
    const coll_desc *cd;
    bench_form form;
    int test_calls;
    int coll_index;
    coll_args args;
    char *floor_src, *floor_dst;
    size_t floor_bytes;
    double *samples; /* one slot per timed call */
    MPI_Comm sync;   /* barriers and statistics, same for every configuration */
} point_setup;

/* Buffers for the largest point, touched now rather than in a timed loop.
 * Collective over ps->sync: returns 0 when every rank has all of them, -1
 * otherwise; either way point_setup_free releases what was allocated. */
int point_setup_alloc(point_setup *ps, size_t send_bytes, size_t recv_bytes, size_t floor_max,
                      long max_iters);
void point_setup_free(point_setup *ps);

point_result measure_point(const point_setup *ps, const bench_config *cfg, long iters, long warmup,
                           unsigned check_seed);

/* The repetition whose average latency is the median stands for the point. */
const point_result *median_rep(const point_result *reps, int n);

/* ------------------------------------------------------------------------ */
/* Output (coll_latency_report.c)                                            */

void print_preamble(const bench_options *opt, int nprocs);
void print_table_header(const coll_desc *cd, bench_form form, const bench_config *cfg, int nprocs);
void print_table_row(size_t size, const point_result *r, bench_form form, const bench_config *cfg);
void csv_header(FILE *csv);
void csv_row(FILE *csv, const char *tag, const coll_desc *cd, bench_form form,
             const bench_config *cfg, int nprocs, size_t size, int rep, const point_result *r);

#endif /* COLL_LATENCY_H */
