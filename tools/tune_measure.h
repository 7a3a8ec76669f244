/*
 * bufpool-tune-measure's command line (tune_measure_options.c), apart from
 * the MPI job (tune_measure.c) so that it reads alone.  No MPI.
 */
#ifndef BUFPOOL_TUNE_MEASURE_H
#define BUFPOOL_TUNE_MEASURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "tune_args.h"

#define TUNE_DEFAULT_MEM ((size_t)1 << 30)
#define TUNE_MAX_SIZE    ((size_t)1 << 30)

typedef struct {
    bool colls[BUFPOOL_NCOLLS];
    size_t sizes[TUNE_MAX_SIZES];
    int nsizes;
    int ranks[TUNE_MAX_RANKS];
    int nranks; /* 0: the default for the job's size */
    int reps;
    double batch_ms;
    size_t mem_limit;
    bool skip[BUFPOOL_NCOLLS][BUFPOOL_MAX_ALGORITHMS];
    bool quiet;
} tune_options;

/* A message to errs (nothing when NULL), flushed. */
void tune_say(FILE *errs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse the command line into o: 0 run, 1 help (printed), 2 a bad option
 * (reported).  Messages go to errs (NULL: none, on every rank but 0). */
int tune_measure_options_parse(int argc, char **argv, tune_options *o, FILE *errs);

#endif /* BUFPOOL_TUNE_MEASURE_H */
