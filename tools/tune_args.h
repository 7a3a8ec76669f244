/*
 * bufpool-tune: the lists its command line takes (collectives, message
 * sizes, communicator sizes, algorithms to leave out), parsed alike by the
 * measuring MPI program and by the decider, so that bad input is refused
 * before a job starts.  No MPI.
 */
#ifndef BUFPOOL_TUNE_ARGS_H
#define BUFPOOL_TUNE_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include "coll_bufpool_decide.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TUNE_MAX_SIZES 64 /* message sizes of one run */
#define TUNE_MAX_RANKS 64 /* communicator sizes of one run */
#define TUNE_MAX_REPS  99

/* What is measured by default (bufpool-tune --quick asks for less). */
#define TUNE_DEFAULT_COLLS "all"
#define TUNE_DEFAULT_SIZES "4..16M"

/* "all" or a comma list of collective names: selected[id] set for each.
 * Returns 0, or -1 with a message in err. */
int tune_parse_colls(const char *list, bool selected[BUFPOOL_NCOLLS], char *err, size_t errlen);

/* A comma list of sizes (suffixes K, M, G) and ranges MIN..MAX (MIN, then
 * doubling while at most MAX, then MAX itself), at least 1 and at most
 * max_value each: out[] sorted, without repeats.  Returns how many, or -1
 * with a message in err. */
int tune_parse_sizes(const char *list, size_t max_value, size_t *out, int max, char *err,
                     size_t errlen);

/* The same for communicator sizes (plain numbers, at least 2). */
int tune_parse_ranks(const char *list, int *out, int max, char *err, size_t errlen);

/* A comma list COLL:ALG of algorithms to leave out: skip[id][alg] set. */
int tune_parse_skips(const char *list, bool skip[BUFPOOL_NCOLLS][BUFPOOL_MAX_ALGORITHMS], char *err,
                     size_t errlen);

/* The default communicator sizes of a job of np ranks: powers of two from 2
 * up to np, and np.  Returns how many. */
int tune_default_ranks(int np, int *out, int max);

/* Number of algorithms of a collective, "auto" not counted. */
int tune_algorithm_count(bufpool_coll_id_t id);

#ifdef __cplusplus
}
#endif

#endif /* BUFPOOL_TUNE_ARGS_H */
