/*
 * Parsing of the values users type into MCA parameters: sizes with suffixes,
 * durations and on/off switches.  Strict on purpose: "64KB", "-1", "1.5M",
 * "12 M" or "0x" are rejected with a message instead of silently becoming
 * something else (Open MPI's own integer parser accepts "-1" as 2^64-1 and
 * ignores trailing text).  Independent of Open MPI; fuzzed.
 */
#ifndef REGPAR_SIZE_H
#define REGPAR_SIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A size: decimal digits, optionally followed by one suffix K, M, G or T
 * (case-insensitive, powers of 1024), with optional surrounding blanks.
 * Returns 0 and sets *out, or -1 with a reason in err ("empty", "not a
 * number", "negative", "unknown suffix 'Q'", "too large").
 */
int regpar_parse_size(const char *text, uint64_t *out, char *err, size_t errlen);

/* Format a size with the largest exact suffix ("64K", "2M", "1536K", "7"). */
int regpar_format_size(uint64_t value, char *buf, size_t len);

/*
 * A duration: a decimal number (fraction allowed) with an optional unit
 * ns, us, ms, s (default), m or h.  Returns 0 and sets *out_ns, or -1 with a
 * reason in err.
 */
int regpar_parse_duration(const char *text, uint64_t *out_ns, char *err, size_t errlen);

/*
 * A decimal integer, optionally negative, within [min, max].  Returns 0 and
 * sets *out, or -1 with a reason in err ("not an integer", "out of range").
 * (Open MPI's own parser turns "abc" into 0 without a word.)
 */
int regpar_parse_int(const char *text, long min, long max, long *out, char *err, size_t errlen);

/* A non-negative decimal number with an optional fraction ("2", "1.5"),
 * within [min, max].  No sign, exponent or hexadecimal. */
int regpar_parse_decimal(const char *text, double min, double max, double *out, char *err,
                         size_t errlen);

/* "on/off", "yes/no", "true/false", "1/0", "enable/disable" (any case).
 * Returns 0 and sets *out, or -1. */
int regpar_parse_bool(const char *text, bool *out);

#ifdef __cplusplus
}
#endif

#endif /* REGPAR_SIZE_H */
