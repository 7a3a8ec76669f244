/*
 * coll/bufpool rules: the rows' storage, the matching of rows and the size
 * maps resolved from them (see coll_bufpool_rules.h and docs/rules.md for
 * the format); the parser is coll_bufpool_rules_parse.c, the lint
 * coll_bufpool_rules_lint.c.
 */
#include "coll_bufpool_rules.h"

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regpar_size.h"

void bufpool_rules_init(bufpool_rules_t *rules)
{
    memset(rules, 0, sizeof(*rules));
}

void bufpool_rules_free(bufpool_rules_t *rules)
{
    for (size_t i = 0; i < rules->n; i++) {
        free(rules->rows[i].why);
    }
    for (size_t i = 0; i < rules->nfiles; i++) {
        free(rules->files[i]);
    }
    free(rules->rows);
    free(rules->files);
    bufpool_rules_init(rules);
}

int bufpool_rules_grow(bufpool_rules_t *rules, size_t want)
{
    if (want <= rules->cap) {
        return 0;
    }
    size_t cap = rules->cap ? rules->cap : 16;
    while (cap < want) {
        cap *= 2;
    }
    bufpool_rule_t *rows = realloc(rules->rows, cap * sizeof(*rows));
    if (NULL == rows) {
        return -2;
    }
    rules->rows = rows;
    rules->cap = cap;
    return 0;
}

const char *bufpool_rules_keep_file(bufpool_rules_t *rules, const char *file)
{
    for (size_t i = 0; i < rules->nfiles; i++) {
        if (0 == strcmp(rules->files[i], file)) {
            return rules->files[i];
        }
    }
    char **files = realloc(rules->files, (rules->nfiles + 1) * sizeof(*files));
    if (NULL == files) {
        return NULL;
    }
    rules->files = files;
    char *copy = strdup(file);
    if (NULL != copy) {
        rules->files[rules->nfiles++] = copy;
    }
    return copy;
}

int bufpool_rules_append(bufpool_rules_t *dst, const bufpool_rules_t *src)
{
    if (0 != bufpool_rules_grow(dst, dst->n + src->n)) {
        return -2;
    }
    for (size_t i = 0; i < src->n; i++) {
        bufpool_rule_t r = src->rows[i];
        r.file = bufpool_rules_keep_file(dst, src->rows[i].file);
        r.why = strdup(src->rows[i].why);
        if (NULL == r.file || NULL == r.why) {
            free(r.why);
            return -2;
        }
        dst->rows[dst->n++] = r;
    }
    return 0;
}

int bufpool_algorithm_index(bufpool_coll_id_t coll, const char *name)
{
    if (0 == strcmp(name, "previous")) {
        return BUFPOOL_ALG_PREVIOUS;
    }
    const char *const *names = bufpool_algorithm_names[coll];
    for (int i = 0; NULL != names[i]; i++) {
        if (0 == strcmp(name, names[i])) {
            return i;
        }
    }
    return -2;
}

int bufpool_algorithm_list_parse(const char *text, int forced[BUFPOOL_NCOLLS], char *err,
                                 size_t errlen)
{
    int out[BUFPOOL_NCOLLS];
    memcpy(out, forced, sizeof(out));
    for (const char *p = text; '\0' != *p;) {
        const size_t len = strcspn(p, ",");
        const char *colon = memchr(p, ':', len);
        char coll[64], alg[64];
        if (NULL == colon || (size_t)(colon - p) >= sizeof(coll) ||
            len - (size_t)(colon - p) - 1 >= sizeof(alg)) {
            snprintf(err, errlen, "'%.*s' is not COLLECTIVE:ALGORITHM", (int)len, p);
            return -1;
        }
        snprintf(coll, sizeof(coll), "%.*s", (int)(colon - p), p);
        snprintf(alg, sizeof(alg), "%.*s", (int)(len - (size_t)(colon - p) - 1), colon + 1);
        int id = 0;
        while (id < BUFPOOL_NCOLLS && 0 != strcmp(coll, bufpool_coll_names[id])) {
            id++;
        }
        if (BUFPOOL_NCOLLS == id) {
            snprintf(err, errlen, "'%s' is not a collective of bufpool", coll);
            return -1;
        }
        const int a = bufpool_algorithm_index((bufpool_coll_id_t)id, alg);
        if (a < BUFPOOL_ALG_PREVIOUS) {
            snprintf(err, errlen, "'%s' is not auto, previous or an algorithm of %s", alg, coll);
            return -1;
        }
        out[id] = a;
        p += len;
        p += ',' == *p;
    }
    memcpy(forced, out, sizeof(out));
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Matching. */

static bool tristate_matches(unsigned char cond, bool value)
{
    return BUFPOOL_RULE_ANY == cond || (BUFPOOL_RULE_YES == cond) == value;
}

/* Everything of a row but its byte range. */
static bool row_fits_shape(const bufpool_rule_t *r, bufpool_coll_id_t coll,
                           const bufpool_shape_t *s)
{
    const int hosts = s->hosts > 1 ? s->hosts : 1;
    return r->coll == coll && s->ranks >= r->ranks_min && s->ranks <= r->ranks_max &&
           hosts >= r->hosts_min && hosts <= r->hosts_max &&
           (r->ppn_any || (s->ppn > 0 && s->ppn >= r->ppn_min && s->ppn <= r->ppn_max)) &&
           tristate_matches(r->commutative, s->commutative) &&
           tristate_matches(r->in_place, s->in_place) &&
           (BUFPOOL_FORM_ANY == r->form || r->form == s->form);
}

const bufpool_rule_t *bufpool_rules_match(const bufpool_rules_t *rules, bufpool_coll_id_t coll,
                                          const bufpool_shape_t *shape, size_t bytes)
{
    if (NULL == rules) {
        return NULL;
    }
    for (size_t i = 0; i < rules->n; i++) {
        const bufpool_rule_t *r = &rules->rows[i];
        if (bytes >= r->bytes_min && bytes <= r->bytes_max && row_fits_shape(r, coll, shape)) {
            return r;
        }
    }
    return NULL;
}

/* The choice of an algorithm the user forced. */
static bufpool_choice_t forced_choice(int forced)
{
    return (bufpool_choice_t){.alg = forced, .source = BUFPOOL_SOURCE_FORCED};
}

/* The choice of row r (NULL: none matched, the collective's default). */
static bufpool_choice_t choice_of_row(const bufpool_rule_t *r, const char *note)
{
    if (NULL == r) {
        return (bufpool_choice_t){
            .alg = BUFPOOL_ALG_AUTO, .source = BUFPOOL_SOURCE_DEFAULT, .note = note};
    }
    return (bufpool_choice_t){.alg = r->alg,
                              .source = BUFPOOL_SOURCE_ROW,
                              .seg_bytes = r->seg_bytes,
                              .depth = r->depth,
                              .rule = r,
                              .note = note};
}

bufpool_choice_t bufpool_rules_choose(const bufpool_rules_t *rules, bufpool_coll_id_t coll,
                                      const bufpool_shape_t *shape, size_t bytes, int forced,
                                      const char *note)
{
    if (BUFPOOL_ALG_AUTO != forced) {
        return forced_choice(forced);
    }
    return choice_of_row(bufpool_rules_match(rules, coll, shape, bytes), note);
}

static int cmp_size(const void *a, const void *b)
{
    const size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

bool bufpool_choice_equal(const bufpool_choice_t *a, const bufpool_choice_t *b)
{
    return a->alg == b->alg && a->source == b->source && a->seg_bytes == b->seg_bytes &&
           a->depth == b->depth && a->rule == b->rule && a->note == b->note &&
           a->guarded == b->guarded;
}

/* No memory to resolve the rows: one range, every call to the previous
 * module, which is always correct.  Its number of ranges. */
static size_t map_all_previous(bufpool_range_t *out)
{
    out[0] = (bufpool_range_t){SIZE_MAX,
                               {.alg = BUFPOOL_ALG_PREVIOUS, .source = BUFPOOL_SOURCE_MIN_SIZE}};
    return 1;
}

/* The first of rows[0..n) whose byte range holds bytes, or NULL. */
static const bufpool_rule_t *first_holding(const bufpool_rule_t *const *rows, size_t n,
                                           size_t bytes)
{
    for (size_t k = 0; k < n; k++) {
        if (bytes >= rows[k]->bytes_min && bytes <= rows[k]->bytes_max) {
            return rows[k];
        }
    }
    return NULL;
}

size_t bufpool_rules_of_coll(const bufpool_rules_t *rules, bufpool_coll_id_t coll,
                             const bufpool_rule_t **out)
{
    size_t n = 0;
    for (size_t i = 0; NULL != rules && i < rules->n; i++) {
        if (rules->rows[i].coll == coll) {
            out[n++] = &rules->rows[i];
        }
    }
    return n;
}

size_t bufpool_sizemap_build(const bufpool_rules_t *rules, bufpool_coll_id_t coll,
                             const bufpool_shape_t *shape, size_t min_size, int forced,
                             const char *note, bufpool_range_t *out)
{
    const size_t nrows = NULL != rules ? rules->n : 0;
    const bufpool_rule_t **rows = malloc((nrows ? nrows : 1) * sizeof(*rows));
    if (NULL == rows) {
        return map_all_previous(out);
    }
    const size_t n = bufpool_rules_of_coll(rules, coll, rows);
    const size_t ranges =
        bufpool_sizemap_build_rows(rows, n, coll, shape, min_size, forced, note, out);
    free(rows);
    return ranges;
}

size_t bufpool_sizemap_build_rows(const bufpool_rule_t *const *rows, size_t nrows,
                                  bufpool_coll_id_t coll, const bufpool_shape_t *shape,
                                  size_t min_size, int forced, const char *note,
                                  bufpool_range_t *out)
{
    /* Every byte count where the answer may change starts a range: 0, each
     * matching row's start and the byte after its end, and min_size.  Within
     * one such range every byte count meets the same rows, so the choice at
     * its start is the choice of all of it.  The rows that fit the shape are
     * picked out once, in order (the first of them that holds the bytes
     * decides, as bufpool_rules_match would), so that a map costs one pass
     * over the rows, not one per range. */
    if (BUFPOOL_ALG_AUTO != forced) {
        nrows = 0;
    }
    size_t *starts = malloc((2 * nrows + 2) * sizeof(*starts) + nrows * sizeof(bufpool_rule_t *));
    size_t n = 0, nstarts = 0, nfit = 0;
    if (NULL == starts) {
        return map_all_previous(out);
    }
    const bufpool_rule_t **fit = (const bufpool_rule_t **)(starts + 2 * nrows + 2);
    starts[nstarts++] = 0;
    if (min_size > 0) {
        starts[nstarts++] = min_size;
    }
    for (size_t i = 0; i < nrows; i++) {
        const bufpool_rule_t *r = rows[i];
        if (row_fits_shape(r, coll, shape)) {
            fit[nfit++] = r;
            starts[nstarts++] = r->bytes_min;
            if (r->bytes_max < SIZE_MAX) {
                starts[nstarts++] = r->bytes_max + 1;
            }
        }
    }
    qsort(starts, nstarts, sizeof(*starts), cmp_size);
    for (size_t i = 0; i < nstarts; i++) {
        if (i > 0 && starts[i] == starts[i - 1]) {
            continue;
        }
        const size_t at = starts[i];
        bufpool_choice_t c =
            at < min_size
                ? (bufpool_choice_t){.alg = BUFPOOL_ALG_PREVIOUS, .source = BUFPOOL_SOURCE_MIN_SIZE}
            : BUFPOOL_ALG_AUTO != forced ? forced_choice(forced)
                                         : choice_of_row(first_holding(fit, nfit, at), note);
        if (n > 0 && bufpool_choice_equal(&out[n - 1].choice, &c)) {
            continue; /* the previous range goes on */
        }
        if (n > 0) {
            out[n - 1].bytes_max = at - 1;
        }
        out[n++] = (bufpool_range_t){SIZE_MAX, c};
    }
    free(starts);
    return n;
}
