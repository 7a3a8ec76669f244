/*
 * bufpool-tune's decisions, without MPI: the measurements of the MPI job
 * (its "bpt" lines) are read into points, one per collective, communicator
 * size and message size; each point's verdict says whether one of
 * bufpool's algorithms takes it (measured faster than the previous module
 * by more than the noise measured there, and than a minimum margin) or
 * the previous module keeps it; adjacent points with the same verdict
 * become one row of a rules file (docs/rules.md), which is checked by
 * parsing it back before it is written.  docs/tuning.md describes all
 * of it; test/unit/test_tune_decide.c checks it.
 */
#ifndef BUFPOOL_TUNE_DECIDE_H
#define BUFPOOL_TUNE_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "coll_bufpool_decide.h"
#include "tune_args.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The configurations of one point: the previous module, its A/A copy, and
 * every algorithm of the collective. */
#define TUNE_MAX_CFGS    (2 + BUFPOOL_MAX_ALGORITHMS)
#define TUNE_CFG_PREV    "previous"
#define TUNE_CFG_AA      "previous/aa"
#define TUNE_NAME_LEN    32
#define TUNE_RAW_VERSION 1

typedef struct tune_cfg {
    char name[TUNE_NAME_LEN]; /* TUNE_CFG_PREV, TUNE_CFG_AA or an algorithm */
    int alg;                  /* the algorithm; BUFPOOL_ALG_PREVIOUS for both previous */
    double t[TUNE_MAX_REPS];  /* microseconds per call of each repetition; NAN: none */
    bool wrong;               /* a data check failed, or an MPI call returned an error */
    bool handed_back;         /* bufpool handed calls to the previous module */
} tune_cfg_t;

typedef enum {
    TUNE_FASTER = 0,     /* bufpool takes it                                  */
    TUNE_WITHIN_NOISE,   /* bufpool measured faster, not by the margin        */
    TUNE_SLOWER,         /* no bufpool algorithm measured faster              */
    TUNE_NONE_SERVED,    /* every algorithm handed back, failed or was left out */
    TUNE_PREVIOUS_WRONG, /* the previous module failed its data check         */
    TUNE_NO_REFERENCE    /* the previous module has no measurement            */
} tune_reason_t;

typedef struct tune_verdict {
    int alg;          /* BUFPOOL_ALG_PREVIOUS, or the algorithm that takes the point */
    int best;         /* cfg index of the fastest usable algorithm (the chosen one when
                       bufpool takes the point), -1 when none */
    double ratio;     /* its median ratio over the previous module, NAN without one */
    double noise;     /* the noise it had to beat: max(|A/A - 1|, A/A spread, its spread) */
    double margin;    /* max(minimum margin, noise) */
    double aa;        /* median A/A ratio (previous/aa over previous), NAN without one */
    double aa_spread; /* half the interquartile range of the A/A ratios */
    double prev_us;   /* median time per call of the previous module */
    int reps;         /* repetitions behind the ratio */
    tune_reason_t why;
} tune_verdict_t;

typedef struct tune_point {
    bufpool_coll_id_t coll;
    int ranks, hosts, ppn;
    size_t size;  /* the size asked (OSU's meaning, as coll_latency) */
    size_t bytes; /* bytes per process as the rules count them */
    int ncfg, nreps;
    tune_cfg_t cfg[TUNE_MAX_CFGS];
    tune_verdict_t v;
} tune_point_t;

/* One row of the rules file: points first..last (indices into the sorted
 * points) of one collective and communicator size, with one verdict. */
typedef struct tune_row {
    bufpool_coll_id_t coll;
    int ranks_min, ranks_max; /* ranks_max 0: no upper bound */
    int hosts, ppn;
    size_t bytes_min, bytes_max; /* bytes_max SIZE_MAX: no upper bound */
    int alg;
    size_t first, last;
} tune_row_t;

/* What a job measured: its header lines, communicators and points. */
typedef struct tune_header {
    char key[32];
    char value[480];
} tune_header_t;

typedef struct tune_raw {
    tune_header_t *headers;
    size_t nheaders;
    tune_point_t *points;
    size_t npoints, cap;
    char **notes; /* wrong results, algorithms left out, ... ("bpt W/N" lines) */
    size_t nnotes;
    bool complete;      /* the job's end line was read */
    char last_run[256]; /* the last configuration the job started ("bpt R"), "" if none */
    bool last_run_done; /* and whether its measurement followed */
} tune_raw_t;

/* ------------------------------------------------------------------------ */
/* Statistics                                                                */

/* The quantile f (0..1) of n sorted values, interpolated. */
double tune_quantile(const double *sorted, int n, double f);

/* Ratios a[r] / b[r] over the repetitions where both are measured: their
 * median and spread (half the interquartile range); returns how many. */
int tune_ratio_stats(const double *a, const double *b, int n, double *median, double *spread);

/* The median of the measured values of t (NAN without any). */
double tune_median(const double *t, int n);

/* ------------------------------------------------------------------------ */
/* Decisions                                                                 */

/* The verdict of one point (pt->v), with a minimum margin (0.03 = 3 %). */
void tune_decide_point(tune_point_t *pt, double min_margin);

const char *tune_reason_text(tune_reason_t why);

/* Sorts points by collective, communicator size and bytes, and fills rows
 * (allocated; free() them): one per run of adjacent points of a collective
 * and communicator size with the same verdict.  Rows cover bytes from each
 * point's to just below the next one's; the smallest point from its own
 * bytes and the largest up to twice its bytes minus one; communicator
 * sizes from each measured size to just below the next, the largest alone.
 * open_ended extends the smallest down to 0 bytes (2 ranks) and the largest
 * without bound.  Returns the number of rows, or -1 (out of memory). */
long tune_build_rows(tune_point_t *points, size_t n, bool open_ended, tune_row_t **rows);

/* A size as the rules read it ("64K", "16K-1", "1M+1", "300"). */
void tune_format_size(size_t v, char *buf, size_t len);

/* A byte range as the rules read it ("4K..8K-1", "1M..", "..255", "*"). */
void tune_format_bytes_range(size_t lo, size_t hi, char *buf, size_t len);

/* One row as a rules line (no newline), measured text included. */
void tune_format_row(const tune_row_t *row, const tune_point_t *points, char *buf, size_t len);

/* Parses text (a rules file named name) and checks that every point is
 * decided by a row of it, with the point's verdict.  Returns 0, or -1 with
 * the reason in err. */
int tune_verify_rules(const char *text, size_t len, const char *name, const tune_point_t *points,
                      size_t n, char *err, size_t errlen);

/* ------------------------------------------------------------------------ */
/* The job's output                                                          */

void tune_raw_init(tune_raw_t *raw);
void tune_raw_free(tune_raw_t *raw);

/* Reads the "bpt" lines of f (other lines are skipped).  stat: "p50" (each
 * rank's median call of the batch, averaged over ranks) or "mean" (the
 * mean time per call of the batch, averaged over ranks).  Returns 0, or -1 with a message in err. */
int tune_raw_read(FILE *f, const char *stat, tune_raw_t *raw, char *err, size_t errlen);

/* The value of the first header line with this key, or NULL. */
const char *tune_raw_header(const tune_raw_t *raw, const char *key);

/* A point of the raw data (found or added); NULL when out of memory. */
tune_point_t *tune_raw_point(tune_raw_t *raw, bufpool_coll_id_t coll, int ranks, size_t size);

/* A configuration of a point (found or added); NULL when the point has
 * TUNE_MAX_CFGS already. */
tune_cfg_t *tune_point_cfg(tune_point_t *pt, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* BUFPOOL_TUNE_DECIDE_H */
