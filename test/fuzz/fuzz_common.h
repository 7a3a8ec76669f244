/*
 * Shared by the libFuzzer targets and their replay driver: a failed check
 * prints what went wrong and aborts, which libFuzzer records as a crash
 * (with the input that caused it) and the replay driver reports as a
 * failed regression.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK_MSG(cond, ...)                                                                  \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define FUZZ_CHECK(cond) FUZZ_CHECK_MSG(cond, "%s", "")

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* FUZZ_COMMON_H */
