/*
 * bufpool-tune's lists (tune_args.h).
 */
#include "tune_args.h"

#include "coll_bufpool_rules.h"
#include "regpar_size.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tune_algorithm_count(bufpool_coll_id_t id)
{
    int n = 0;
    while (NULL != bufpool_algorithm_names[id][n + 1]) {
        n++;
    }
    return n;
}

static int coll_id(const char *name)
{
    for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
        if (0 == strcmp(name, bufpool_coll_names[id])) {
            return id;
        }
    }
    return -1;
}

static void known_colls(char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int id = 0; id < BUFPOOL_NCOLLS && used < len; id++) {
        used += (size_t)snprintf(out + used, len - used, "%s%s", id ? ", " : "",
                                 bufpool_coll_names[id]);
    }
}

int tune_parse_colls(const char *list, bool selected[BUFPOOL_NCOLLS], char *err, size_t errlen)
{
    for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
        selected[id] = false;
    }
    if (0 == strcmp(list, "all")) {
        for (int id = 0; id < BUFPOOL_NCOLLS; id++) {
            selected[id] = true;
        }
        return 0;
    }
    char *copy = strdup(list);
    int rc = 0, any = 0;
    if (NULL == copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); NULL != tok;
         tok = strtok_r(NULL, ",", &save)) {
        int id = coll_id(tok);
        if (id < 0) {
            char known[256];
            known_colls(known, sizeof(known));
            snprintf(err, errlen, "unknown collective '%s' (known: %s, or all)", tok, known);
            rc = -1;
            break;
        }
        selected[id] = true;
        any = 1;
    }
    if (0 == rc && !any) {
        snprintf(err, errlen, "empty list of collectives");
        rc = -1;
    }
    free(copy);
    return rc;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* One value: a size with suffixes, or a plain number (sizes = false). */
static int parse_value(const char *text, bool sizes, uint64_t *out, char *err, size_t errlen)
{
    char why[128];
    if (sizes) {
        if (0 != regpar_parse_size(text, out, why, sizeof(why))) {
            snprintf(err, errlen, "%s (a size: e.g. 4, 64K, 16M)", why);
            return -1;
        }
        return 0;
    }
    long v;
    if (0 != regpar_parse_int(text, 0, INT32_MAX, &v, why, sizeof(why))) {
        snprintf(err, errlen, "%s (a number of ranks)", why);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

/* Comma list of values and MIN..MAX ranges (doubling), sorted and unique. */
static int parse_list(const char *list, bool sizes, uint64_t min_value, uint64_t max_value,
                      uint64_t *out, int max, char *err, size_t errlen)
{
    const char *what = sizes ? "size" : "communicator size";
    char *copy = strdup(list);
    int n = 0, rc = 0;
    if (NULL == copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); NULL != tok && 0 == rc;
         tok = strtok_r(NULL, ",", &save)) {
        char *dots = strstr(tok, "..");
        uint64_t lo, hi;
        if (NULL != dots) {
            *dots = '\0';
            if (0 != parse_value(tok, sizes, &lo, err, errlen) ||
                0 != parse_value(dots + 2, sizes, &hi, err, errlen)) {
                rc = -1;
                break;
            }
            if (hi < lo) {
                snprintf(err, errlen, "range %s..%s: the end is below the start", tok, dots + 2);
                rc = -1;
                break;
            }
        } else {
            if (0 != parse_value(tok, sizes, &lo, err, errlen)) {
                rc = -1;
                break;
            }
            hi = lo;
        }
        if (lo < min_value || hi > max_value) {
            snprintf(err, errlen, "%s %s%s%s out of range (%llu to %llu)", what, tok,
                     NULL != dots ? ".." : "", NULL != dots ? dots + 2 : "",
                     (unsigned long long)min_value, (unsigned long long)max_value);
            rc = -1;
            break;
        }
        for (uint64_t v = lo;; v *= 2) {
            uint64_t value = v < hi ? v : hi;
            if (n == max) {
                snprintf(err, errlen, "more than %d %ss", max, what);
                rc = -1;
                break;
            }
            out[n++] = value;
            if (value == hi) {
                break;
            }
        }
    }
    free(copy);
    if (0 != rc) {
        return -1;
    }
    if (0 == n) {
        snprintf(err, errlen, "empty list of %ss", what);
        return -1;
    }
    qsort(out, (size_t)n, sizeof(*out), compare_u64);
    int u = 0;
    for (int i = 0; i < n; i++) {
        if (0 == u || out[u - 1] != out[i]) {
            out[u++] = out[i];
        }
    }
    return u;
}

int tune_parse_sizes(const char *list, size_t max_value, size_t *out, int max, char *err,
                     size_t errlen)
{
    uint64_t values[TUNE_MAX_SIZES];
    if (max > TUNE_MAX_SIZES) {
        max = TUNE_MAX_SIZES;
    }
    int n = parse_list(list, true, 1, max_value, values, max, err, errlen);
    for (int i = 0; i < n; i++) {
        out[i] = (size_t)values[i];
    }
    return n;
}

int tune_parse_ranks(const char *list, int *out, int max, char *err, size_t errlen)
{
    uint64_t values[TUNE_MAX_RANKS];
    if (max > TUNE_MAX_RANKS) {
        max = TUNE_MAX_RANKS;
    }
    int n = parse_list(list, false, 2, INT32_MAX, values, max, err, errlen);
    for (int i = 0; i < n; i++) {
        out[i] = (int)values[i];
    }
    return n;
}

int tune_parse_skips(const char *list, bool skip[BUFPOOL_NCOLLS][BUFPOOL_MAX_ALGORITHMS], char *err,
                     size_t errlen)
{
    char *copy = strdup(list);
    int rc = 0;
    if (NULL == copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); NULL != tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (NULL == colon) {
            snprintf(err, errlen, "'%s': write COLLECTIVE:ALGORITHM, e.g. allreduce:ring", tok);
            rc = -1;
            break;
        }
        *colon = '\0';
        int id = coll_id(tok);
        if (id < 0) {
            char known[256];
            known_colls(known, sizeof(known));
            snprintf(err, errlen, "unknown collective '%s' (known: %s)", tok, known);
            rc = -1;
            break;
        }
        int alg = bufpool_algorithm_index((bufpool_coll_id_t)id, colon + 1);
        if (alg < 1) {
            char known[256];
            size_t used = 0;
            known[0] = '\0';
            for (int a = 1; NULL != bufpool_algorithm_names[id][a] && used < sizeof(known); a++) {
                used += (size_t)snprintf(known + used, sizeof(known) - used, "%s%s",
                                         a > 1 ? ", " : "", bufpool_algorithm_names[id][a]);
            }
            snprintf(err, errlen, "'%s' is not an algorithm of %s (%s)", colon + 1, tok, known);
            rc = -1;
            break;
        }
        skip[id][alg] = true;
    }
    free(copy);
    return rc;
}

int tune_default_ranks(int np, int *out, int max)
{
    int n = 0;
    for (int p = 2; p <= np && n < max; p *= 2) {
        out[n++] = p;
    }
    if (n < max && (0 == n || out[n - 1] != np) && np >= 2) {
        out[n++] = np;
    }
    return n;
}
