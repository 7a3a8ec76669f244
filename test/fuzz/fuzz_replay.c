/*
 * Replays inputs through a libFuzzer target without libFuzzer, so that the
 * committed corpus and every input that once crashed (regressions/) run in
 * make check with any compiler:
 *   fuzz_<target>_replay FILE|DIR...
 * Each file is one input; a failed check aborts with the file named.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 4096, n = 0, got;
    unsigned char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *bigger = realloc(buf, cap *= 2);
            if (!bigger) {
                free(buf);
            }
            buf = bigger;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path);
        return -1;
    }
    /* Named before running: a failed check aborts the process. */
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of a directory in name order, so that runs are reproducible. */
static int replay_dir(const char *path, int *count)
{
    DIR *d = opendir(path);
    if (!d) {
        perror(path);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') {
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **more = realloc(names, cap * sizeof(*names));
            if (!more) {
                break;
            }
            names = more;
        }
        names[n] = malloc(strlen(path) + strlen(e->d_name) + 2);
        if (names[n]) {
            sprintf(names[n], "%s/%s", path, e->d_name);
            n++;
        }
    }
    closedir(d);
    qsort(names, n, sizeof(*names), compare_names);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        rc |= replay_file(names[i]);
        (*count)++;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0, count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            rc = 1;
        } else if (S_ISDIR(st.st_mode)) {
            rc |= replay_dir(argv[i], &count) != 0;
        } else {
            rc |= replay_file(argv[i]) != 0;
            count++;
        }
    }
    printf("%s: %d input(s) replayed%s\n", argv[0], count, rc ? ", some could not be read" : "");
    return rc;
}
