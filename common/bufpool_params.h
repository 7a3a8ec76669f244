/*
 * The MCA parameter library of both components (mpool/regpar and
 * coll/bufpool): registration and checking of the values users type.
 *
 * Values are typed as text and parsed here (regpar_size.h: strict sizes
 * and durations with suffixes, integers, switches), because Open MPI 4.1's
 * own integer parser turns "abc" into 0 and "-1" into 2^64-1 without a
 * word.  Names from a fixed set (algorithms) are text too: registered as
 * MCA enumerations, Open MPI 4.1 reports a bad name with its own
 * show_help topic, which mpirun shows once per job however many
 * parameters are wrong (aggregation keys on file and topic), so a second
 * bad name would go unreported.
 *
 * A bad value is reported once per job: by the first process only, unless
 * the component's verbosity is 1 or more (then by every process), always in
 * the same form:
 *   <component>_<param>: invalid value "<value>" (<why>); expected
 *   <expected>. Using <fallback> instead (pid <pid>).
 */
#ifndef BUFPOOL_PARAMS_H
#define BUFPOOL_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opal/mca/base/mca_base_var.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The mca_base_component_t block both components open their structure
 * with: one version for the project, the life-cycle functions given.
 * base_version is the framework's (BUFPOOL_MPOOL_BASE_VERSION,
 * BUFPOOL_COLL_BASE_VERSION from compat/bufpool_ompi_compat.h).
 */
/* clang-format off */
#define BUFPOOL_COMPONENT_VERSION(base_version, name, open_fn, close_fn, register_fn) \
    {                                                                                  \
        base_version,                                                                  \
        .mca_component_name = name,                                                    \
        MCA_BASE_MAKE_VERSION(component, 0, 1, 0),                                     \
        .mca_open_component = open_fn,                                                 \
        .mca_close_component = close_fn,                                               \
        .mca_register_component_params = register_fn,                                  \
    }
/* clang-format on */

/* One component's parameters. */
typedef struct bufpool_params {
    const mca_base_component_t *component;
    const char *prefix;    /* "mpool_regpar", "coll_bufpool": messages name <prefix>_<param> */
    const int *verbose;    /* the component's verbosity, once parsed (>= 1: every rank speaks) */
    const char *help_file; /* "help-coll-bufpool.txt": its messages for opal_show_help */
} bufpool_params_t;

/* Find the component's help file and add its directory to Open MPI's help
 * path (opal_show_help_add_dir): next to the component as loaded (where
 * `make install` puts it), else where it was installed or the source
 * tree's common/ (a build tree).  Returns whether it was found; if not,
 * bufpool_params_show falls back to opal_output with the same text.  Call
 * once, at register. */
bool bufpool_params_help_init(const bufpool_params_t *pp);

/* A message for users: the help file's topic rendered with the arguments
 * (opal_show_help_vstring), or fallback_fmt when the help file is missing,
 * printed with opal_output (see bufpool_params.c for why not
 * opal_show_help itself). */
void bufpool_params_show(const bufpool_params_t *pp, const char *topic, const char *fallback_fmt,
                         ...) __attribute__((format(printf, 3, 4)));

/* Whether this process reports for the job (rank 0, or every rank when
 * verbose). */
bool bufpool_params_speaks(const bufpool_params_t *pp);

/* The one bad-value reporter (see above). */
void bufpool_params_bad(const bufpool_params_t *pp, const char *param, const char *value,
                        const char *why, const char *expected, const char *fallback);

/* Register a text parameter whose default is dflt (storage points at it). */
void bufpool_params_register_text(const bufpool_params_t *pp, const char *name, const char *help,
                                  const char *dflt, mca_base_var_info_lvl_t level,
                                  mca_base_var_scope_t scope, char **storage);

/* Parse text, or report it and parse dflt (which must be valid). */
uint64_t bufpool_params_size(const bufpool_params_t *pp, const char *param, const char *text,
                             const char *dflt, uint64_t lo, uint64_t hi, const char *expected);
long bufpool_params_int(const bufpool_params_t *pp, const char *param, const char *text, long lo,
                        long hi, const char *dflt);
bool bufpool_params_bool(const bufpool_params_t *pp, const char *param, const char *text,
                         bool dflt);
uint64_t bufpool_params_duration(const bufpool_params_t *pp, const char *param, const char *text,
                                 const char *dflt, const char *expected);
/* The index of text in names (NULL-terminated, case-insensitive), or -1
 * after reporting it (expected: "one of a, b, c"). */
int bufpool_params_name(const bufpool_params_t *pp, const char *param, const char *text,
                        const char *const *names, const char *fallback);

#ifdef __cplusplus
}
#endif

#endif /* BUFPOOL_PARAMS_H */
