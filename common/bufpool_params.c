/*
 * The MCA parameter library shared by both components (bufpool_params.h).
 */
#define _GNU_SOURCE /* dladdr, vasprintf */
#include "bufpool_params.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#include "bufpool_ompi_compat.h"
#include "regpar_size.h"

/* The help files found so far, and where.  Keyed by name: both components
 * link this library, and Open MPI may load them into one global namespace,
 * where one copy serves both. */
static struct {
    const char *file;
    char dir[PATH_MAX];
} help_files_found[4];

static const char *help_dir_of(const char *file)
{
    for (size_t i = 0; i < sizeof(help_files_found) / sizeof(*help_files_found); i++) {
        if (NULL != help_files_found[i].file && 0 == strcmp(help_files_found[i].file, file)) {
            return help_files_found[i].dir;
        }
    }
    return NULL;
}

static bool help_known(const char *file)
{
    return NULL != help_dir_of(file);
}

static void help_remember(const char *file, const char *dir)
{
    for (size_t i = 0; i < sizeof(help_files_found) / sizeof(*help_files_found); i++) {
        if (NULL == help_files_found[i].file) {
            snprintf(help_files_found[i].dir, sizeof(help_files_found[i].dir), "%s", dir);
            help_files_found[i].file = file;
            return;
        }
    }
}

static bool help_in(const char *dir, const char *file)
{
    char path[PATH_MAX];
    if (NULL == dir || (size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path)) {
        return false;
    }
    if (0 != access(path, R_OK)) {
        return false;
    }
    (void)opal_show_help_add_dir(dir);
    help_remember(file, dir);
    return true;
}

#if BUFPOOL_OMPI_SERIES >= 60
/*
 * Open MPI 6.0 compiles its own help texts into the library and no longer
 * reads help files: opal_show_help_add_dir is kept but nothing searches
 * the directories it adds, and opal_show_help_vstring prints "Sorry!  You
 * were supposed to get help about ..." for any other file.  Read the topic
 * from the file found at init instead, as Open MPI did: the lines after
 * "[topic]" up to the next "[", '#' lines left out, each ending in a
 * newline.  NULL when the file or the topic is not there.
 */
static char *help_topic_text(const char *file, const char *topic)
{
    const char *dir = help_dir_of(file);
    char path[PATH_MAX], line[4096], header[256];
    char *text = NULL;
    size_t len = 0;
    bool in_topic = false, found = false;
    FILE *f;

    if (NULL == dir || (size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path) ||
        (size_t)snprintf(header, sizeof(header), "[%s]", topic) >= sizeof(header) ||
        NULL == (f = fopen(path, "r"))) {
        return NULL;
    }
    while (NULL != fgets(line, sizeof(line), f)) {
        size_t n = strcspn(line, "\r\n");
        line[n] = '\0';
        if ('[' == line[0]) {
            if (in_topic) {
                break;
            }
            in_topic = found = 0 == strcmp(line, header);
            continue;
        }
        if (!in_topic || '#' == line[0]) {
            continue;
        }
        char *grown = realloc(text, len + n + 2);
        if (NULL == grown) {
            free(text);
            text = NULL;
            break;
        }
        text = grown;
        memcpy(text + len, line, n);
        len += n;
        text[len++] = '\n';
        text[len] = '\0';
    }
    fclose(f);
    if (!found && NULL != text) {
        free(text);
        text = NULL;
    }
    return text;
}
#endif

bool bufpool_params_help_init(const bufpool_params_t *pp)
{
    Dl_info info;
    char dir[PATH_MAX];
    bool help_found = help_known(pp->help_file);

    if (help_found) {
        return true;
    }
    /* Next to the component: the path it was loaded from, then the file
     * that path resolves to (a build tree links the .so elsewhere). */
    if (0 != dladdr((void *)&bufpool_params_help_init, &info) && NULL != info.dli_fname) {
        snprintf(dir, sizeof(dir), "%s", info.dli_fname);
        help_found = help_in(dirname(dir), pp->help_file);
        if (!help_found && NULL != realpath(info.dli_fname, dir)) {
            help_found = help_in(dirname(dir), pp->help_file);
        }
    }
#ifdef BUFPOOL_HELP_INSTDIR
    if (!help_found) {
        help_found = help_in(BUFPOOL_HELP_INSTDIR, pp->help_file);
    }
#endif
#ifdef BUFPOOL_HELP_SRCDIR
    if (!help_found) {
        help_found = help_in(BUFPOOL_HELP_SRCDIR, pp->help_file);
    }
#endif
    return help_found;
}

void bufpool_params_show(const bufpool_params_t *pp, const char *topic, const char *fallback_fmt,
                         ...)
{
    va_list ap, ap2;
    va_start(ap, fallback_fmt);
    va_copy(ap2, ap);
    /* Rendered from the help file but printed here: mpirun's aggregation
     * of opal_show_help keys on the file and topic only, so a second bad
     * value in the same job would be swallowed as a repeat of the first.
     * Once per job is already this library's rule (rank 0 speaks). */
#if BUFPOOL_OMPI_SERIES >= 60
    char *text = NULL, *fmt = help_topic_text(pp->help_file, topic);
    if (NULL != fmt && 0 > vasprintf(&text, fmt, ap)) {
        text = NULL;
    }
    free(fmt);
#else
    char *text =
        help_known(pp->help_file) ? opal_show_help_vstring(pp->help_file, topic, false, ap) : NULL;
#endif
    if (NULL == text && 0 > vasprintf(&text, fallback_fmt, ap2)) {
        text = NULL;
    }
    if (NULL != text) {
        size_t len = strlen(text);
        while (len > 0 && '\n' == text[len - 1]) {
            text[--len] = '\0';
        }
        opal_output(0, "%s", text);
        free(text);
    }
    va_end(ap2);
    va_end(ap);
}

bool bufpool_params_speaks(const bufpool_params_t *pp)
{
    return 0 == OPAL_PROC_MY_NAME.vpid || (NULL != pp->verbose && *pp->verbose >= 1);
}

void bufpool_params_bad(const bufpool_params_t *pp, const char *param, const char *value,
                        const char *why, const char *expected, const char *fallback)
{
    if (!bufpool_params_speaks(pp)) {
        return;
    }
    bufpool_params_show(pp, "bad-value",
                        "%s_%s: invalid value \"%s\" (%s); expected %s. Using %s instead (pid %d).",
                        pp->prefix, param, NULL == value ? "" : value, why, expected, fallback,
                        (int)getpid());
}

void bufpool_params_register_text(const bufpool_params_t *pp, const char *name, const char *help,
                                  const char *dflt, mca_base_var_info_lvl_t level,
                                  mca_base_var_scope_t scope, char **storage)
{
    *storage = (char *)dflt;
    (void)mca_base_component_var_register(
        pp->component, name, help, MCA_BASE_VAR_TYPE_STRING, NULL, 0,
        MCA_BASE_VAR_SCOPE_ALL_EQ == scope ? MCA_BASE_VAR_FLAG_SETTABLE : 0, level, scope, storage);
}

uint64_t bufpool_params_size(const bufpool_params_t *pp, const char *param, const char *text,
                             const char *dflt, uint64_t lo, uint64_t hi, const char *expected)
{
    char why[128];
    uint64_t value, fallback;
    (void)regpar_parse_size(dflt, &fallback, why, sizeof(why));
    if (0 != regpar_parse_size(text, &value, why, sizeof(why))) {
        bufpool_params_bad(pp, param, text, why, expected, dflt);
        return fallback;
    }
    if (value < lo || value > hi) {
        bufpool_params_bad(pp, param, text, "out of range", expected, dflt);
        return fallback;
    }
    return value;
}

long bufpool_params_int(const bufpool_params_t *pp, const char *param, const char *text, long lo,
                        long hi, const char *dflt)
{
    char why[128], expected[96];
    long value;
    if (0 == regpar_parse_int(text, lo, hi, &value, why, sizeof(why))) {
        return value;
    }
    snprintf(expected, sizeof(expected), "an integer from %ld to %ld", lo, hi);
    bufpool_params_bad(pp, param, text, why, expected, dflt);
    (void)regpar_parse_int(dflt, lo, hi, &value, why, sizeof(why));
    return value;
}

bool bufpool_params_bool(const bufpool_params_t *pp, const char *param, const char *text, bool dflt)
{
    bool value;
    if (0 == regpar_parse_bool(text, &value)) {
        return value;
    }
    bufpool_params_bad(pp, param, text, "not a switch", "on or off", dflt ? "on" : "off");
    return dflt;
}

uint64_t bufpool_params_duration(const bufpool_params_t *pp, const char *param, const char *text,
                                 const char *dflt, const char *expected)
{
    char why[128];
    uint64_t ns;
    if (0 == regpar_parse_duration(text, &ns, why, sizeof(why))) {
        return ns;
    }
    bufpool_params_bad(pp, param, text, why, expected, dflt);
    (void)regpar_parse_duration(dflt, &ns, why, sizeof(why));
    return ns;
}

int bufpool_params_name(const bufpool_params_t *pp, const char *param, const char *text,
                        const char *const *names, const char *fallback)
{
    char expected[256] = "one of";
    for (int i = 0; NULL != names[i]; i++) {
        if (NULL != text && 0 == strcasecmp(text, names[i])) {
            return i;
        }
    }
    for (int i = 0; NULL != names[i]; i++) {
        strncat(expected, i ? ", " : " ", sizeof(expected) - strlen(expected) - 1);
        strncat(expected, names[i], sizeof(expected) - strlen(expected) - 1);
    }
    bufpool_params_bad(pp, param, text, "unknown algorithm", expected, fallback);
    return -1;
}
