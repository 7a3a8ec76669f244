/*
 * Minimal MPI_T performance-variable reader for tests: looks variables up by
 * full name and reads them as unsigned long long.  The bufpool and regpar
 * pvars are continuous, read-only and bound to no object.
 *
 * Each name gets one handle, allocated at its first read and kept until
 * pvar_util_finalize().  MPI_T defines what a handle reads: counters (class
 * COUNTER, AGGREGATE, TIMER) count from the handle's allocation, so compare
 * two reads of the same name; levels, sizes and watermarks read the
 * variable's own value.  Not thread safe: call from one thread.
 */
#ifndef PVAR_UTIL_H
#define PVAR_UTIL_H

#include <stdbool.h>

enum pvar_status {
    PVAR_OK = 0,
    PVAR_NOT_FOUND,   /* no variable of that name: component not loaded? */
    PVAR_UNSUPPORTED, /* found, but not a single integer bound to no object */
    PVAR_MPI_ERROR    /* an MPI_T call failed */
};

/* Safe to call more than once; MPI must be initialized. */
enum pvar_status pvar_util_init(void);
enum pvar_status pvar_util_read(const char *name, unsigned long long *value);
const char *pvar_util_status_string(enum pvar_status status);
/* The value of name, or (when it cannot be read) a message naming prog and
 * the variable and MPI_Abort: for tests whose counts must be there. */
unsigned long long pvar_util_value_or_abort(const char *prog, const char *name);
void pvar_util_finalize(void);

#endif
