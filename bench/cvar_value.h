/*
 * The value of an MPI_T control variable as a number, for coll_latency and
 * coll_footprint: integer types as they are, a string as a size ("256M",
 * regpar_parse_size).  MPI_T must be initialized.  -1 where the variable is
 * missing, unreadable or of another type.
 */
#ifndef BENCH_CVAR_VALUE_H
#define BENCH_CVAR_VALUE_H

double cvar_value(const char *name);

#endif
