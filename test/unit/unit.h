/*
 * Minimal assertion helpers for the unit tests: a failed check prints the
 * file, line, expression and values, and the test exits non-zero at the end
 * (so that one run reports every failure, not only the first).
 */
#ifndef BUFPOOL_UNIT_H
#define BUFPOOL_UNIT_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static int unit_failures;

#define UNIT_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            unit_failures++;                                                                       \
        }                                                                                          \
    } while (0)

#define UNIT_CHECK_EQ_U64(a, b)                                                                    \
    do {                                                                                           \
        uint64_t unit_a_ = (uint64_t)(a), unit_b_ = (uint64_t)(b);                                 \
        if (unit_a_ != unit_b_) {                                                                  \
            fprintf(stderr, "%s:%d: %s == %s failed: %" PRIu64 " != %" PRIu64 "\n", __FILE__,      \
                    __LINE__, #a, #b, unit_a_, unit_b_);                                           \
            unit_failures++;                                                                       \
        }                                                                                          \
    } while (0)

/* Abort the test at once (the rest would only crash). */
#define UNIT_REQUIRE(cond)                                                                         \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: requirement failed: %s\n", __FILE__, __LINE__, #cond);         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static inline int unit_finish(const char *name)
{
    if (unit_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, unit_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

#endif /* BUFPOOL_UNIT_H */
