/*
 * libFuzzer target: the rules parser (coll_bufpool_rules.c).  Whatever the
 * text, parsing returns 0 or -1 (never crashes or leaks), a refused text
 * leaves the rows that were there before and says "file:line: ...", and a
 * size map built from accepted rows answers every probed byte count as the
 * rows read in place do.  The lint (bufpool_rules_lint) runs on the
 * accepted rows: every finding names a row and reads "FILE:LINE: ...",
 * and no row it calls shadowed decides any range of the maps.
 *
 * Input: the rules text; the shape of the communicator whose maps are
 * checked comes from the input's first bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll_bufpool_rules.h"
#include "fuzz_common.h"

static bufpool_choice_t expected(const bufpool_rules_t *r, bufpool_coll_id_t coll,
                                 const bufpool_shape_t *s, size_t bytes, size_t min_size)
{
    if (bytes < min_size) {
        return (bufpool_choice_t){.alg = BUFPOOL_ALG_PREVIOUS, .source = BUFPOOL_SOURCE_MIN_SIZE};
    }
    return bufpool_rules_choose(r, coll, s, bytes, BUFPOOL_ALG_AUTO, NULL);
}

typedef struct lint_marks {
    const bufpool_rules_t *rules;
    unsigned char *shadowed; /* per row */
} lint_marks_t;

static void lint_mark(const bufpool_lint_finding_t *f, void *arg)
{
    const lint_marks_t *m = arg;
    FUZZ_CHECK(f->row >= m->rules->rows && f->row < m->rules->rows + m->rules->n);
    FUZZ_CHECK(f->kind < BUFPOOL_LINT_KINDS);
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "%s:%d: ", f->row->file, f->row->line);
    FUZZ_CHECK_MSG(0 == strncmp(f->text, prefix, strlen(prefix)), "'%s'", f->text);
    if (BUFPOOL_LINT_SHADOWED == f->kind) {
        m->shadowed[f->row - m->rules->rows] = 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bufpool_rules_t rules;
    char err[256];
    bufpool_rules_init(&rules);
    FUZZ_CHECK(0 == bufpool_rules_parse(&rules, "bufpool-rules 1\ngather alg=linear\n", 34, "base",
                                        err, sizeof(err)));
    const size_t before = rules.n;
    const int rc = bufpool_rules_parse(&rules, (const char *)data, size, "fuzz", err, sizeof(err));
    FUZZ_CHECK_MSG(0 == rc || -1 == rc, "rc %d", rc);
    if (0 != rc) {
        FUZZ_CHECK_MSG(0 == strncmp(err, "fuzz:", 5), "message '%s'", err);
        FUZZ_CHECK(rules.n == before);
    }
    const unsigned char *b = data;
    const bufpool_shape_t shape = {.ranks = 2 + (size > 0 ? b[0] % 64 : 0),
                                   .hosts = size > 1 ? b[1] % 6 : 1,
                                   .ppn = size > 2 ? b[2] % 9 : 0,
                                   .commutative = size > 3 && (b[3] & 1),
                                   .in_place = size > 3 && (b[3] & 2),
                                   .form = size > 3 ? (b[3] >> 2) % BUFPOOL_NFORMS : 0};
    const size_t min_size = size > 4 ? (size_t)b[4] << (b[4] % 24) : 0;
    bufpool_range_t *map = malloc(BUFPOOL_MAP_RANGES(rules.n) * sizeof(*map));
    FUZZ_CHECK(NULL != map);
    size_t counts[BUFPOOL_LINT_KINDS];
    lint_marks_t marks = {.rules = &rules, .shadowed = calloc(rules.n, 1)};
    FUZZ_CHECK(NULL != marks.shadowed);
    FUZZ_CHECK(0 == bufpool_rules_lint(&rules, lint_mark, &marks, counts));
    for (int coll = 0; coll < BUFPOOL_NCOLLS; coll++) {
        const size_t n = bufpool_sizemap_build(&rules, (bufpool_coll_id_t)coll, &shape, min_size,
                                               BUFPOOL_ALG_AUTO, NULL, map);
        FUZZ_CHECK(n >= 1 && n <= BUFPOOL_MAP_RANGES(rules.n) && SIZE_MAX == map[n - 1].bytes_max);
        for (size_t i = 0; i < n; i++) {
            const bufpool_rule_t *row = map[i].choice.rule;
            FUZZ_CHECK_MSG(NULL == row || !marks.shadowed[row - rules.rows],
                           "shadowed row %d decides %s", row->line, bufpool_coll_names[coll]);
            const size_t probes[3] = {map[i].bytes_max, i > 0 ? map[i - 1].bytes_max + 1 : 0,
                                      map[i].bytes_max / 2 +
                                          (i > 0 ? map[i - 1].bytes_max / 2 : 0)};
            for (int p = 0; p < 3; p++) {
                const bufpool_choice_t *got = &bufpool_sizemap_find(map, probes[p])->choice;
                const bufpool_choice_t want =
                    expected(&rules, (bufpool_coll_id_t)coll, &shape, probes[p], min_size);
                FUZZ_CHECK_MSG(got->alg == want.alg && got->source == want.source &&
                                   got->rule == want.rule,
                               "%s at %zu", bufpool_coll_names[coll], probes[p]);
            }
        }
    }
    free(map);
    free(marks.shadowed);
    bufpool_rules_free(&rules);
    return 0;
}
