/*
 * coll/bufpool rules: which algorithm serves a call of a given collective,
 * communicator shape and message size, as data.
 *
 * A rules file (docs/rules.md) is a list of rows (and @source / @from
 * directives saying once where rows were measured); the first row that
 * matches a call decides it: an algorithm of bufpool's, or "previous" (the
 * module selected before bufpool).  Where no row matches, the collective's
 * own default in coll_bufpool_decide.c chooses.  The rows measured on this
 * project's machines ship as rules/default.rules, compiled into the
 * component; coll_bufpool_rules_file puts a user's rows (bufpool-tune
 * writes them) before those, or in their place.
 *
 * At communicator creation the rows are resolved once into a size map per
 * collective and call class (commutative operation or not, in place or
 * not): a few byte ranges, each with its choice, so that a call's entry
 * needs only its byte count to know whether bufpool serves it.
 *
 * No Open MPI types here: parsed, unit tested and fuzzed on its own.
 */
#ifndef MCA_COLL_BUFPOOL_RULES_H
#define MCA_COLL_BUFPOOL_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "coll_bufpool_decide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The first line of every rules file, and the only version so far. */
#define BUFPOOL_RULES_MAGIC   "bufpool-rules"
#define BUFPOOL_RULES_VERSION 1
/* Bounds that keep a bad file from exhausting memory or the maps. */
#define BUFPOOL_RULES_MAX_ROWS     4096
#define BUFPOOL_RULES_MAX_LINE     4096
#define BUFPOOL_RULES_MAX_TEXT     ((size_t)1 << 20)
#define BUFPOOL_RULES_MAX_MEASURED 512
/* @source directives per file, and the length of their names. */
#define BUFPOOL_RULES_MAX_SOURCES 256
#define BUFPOOL_RULES_MAX_NAME    32

/* A row's operation and placement conditions. */
enum { BUFPOOL_RULE_ANY = 0, BUFPOOL_RULE_YES = 1, BUFPOOL_RULE_NO = 2 };

/* The form of a call a row applies to (form=): blocking, nonblocking
 * (MPI_I<coll>) or persistent (MPI_<coll>_init); any by default. */
enum {
    BUFPOOL_FORM_BLOCKING = 0,
    BUFPOOL_FORM_NONBLOCKING = 1,
    BUFPOOL_FORM_PERSISTENT = 2,
    BUFPOOL_NFORMS = 3
};
#define BUFPOOL_FORM_ANY 0xff

typedef struct bufpool_rule {
    bufpool_coll_id_t coll;
    int ranks_min, ranks_max;    /* communicator size, inclusive       */
    int hosts_min, hosts_max;    /* hosts it spans (1: one host)       */
    int ppn_min, ppn_max;        /* most of its ranks on one host; a
                                    row with a ppn range never matches
                                    a communicator whose ppn is unknown */
    size_t bytes_min, bytes_max; /* message bytes, inclusive           */
    unsigned char commutative;   /* BUFPOOL_RULE_ANY / _YES / _NO      */
    unsigned char in_place;      /* BUFPOOL_RULE_ANY / _YES / _NO      */
    unsigned char form;          /* a BUFPOOL_FORM_*, or _ANY          */
    bool ppn_any;
    int alg;          /* an algorithm (>= 1) or BUFPOOL_ALG_PREVIOUS */
    size_t seg_bytes; /* segment size for this row; 0: the tuning's     */
    int depth;        /* pipeline depth for this row; 0: the tuning's   */
    const char *file; /* where the row is (owned by the rules)          */
    int line;
    char *why; /* "auto, rules FILE:LINE (SOURCE: MEASURED)": the reason
                  shown at coll_bufpool_verbose 2, built once at parse
                  time (SOURCE: the row's @source text, if any)         */
} bufpool_rule_t;

/* Rows in the order they are consulted. */
typedef struct bufpool_rules {
    bufpool_rule_t *rows;
    size_t n, cap;
    char **files; /* the file names rows point to */
    size_t nfiles;
} bufpool_rules_t;

void bufpool_rules_init(bufpool_rules_t *rules);
void bufpool_rules_free(bufpool_rules_t *rules);

/* Append the rows of text (a whole rules file) named file (for messages
 * and the explanation).  All or nothing: on a malformed file returns -1
 * with "file:line: what is wrong" in err and rules unchanged; -2 when out
 * of memory; 0 on success. */
int bufpool_rules_parse(bufpool_rules_t *rules, const char *text, size_t len, const char *file,
                        char *err, size_t errlen);

/* Append every row of src (after rows already in dst). */
int bufpool_rules_append(bufpool_rules_t *dst, const bufpool_rules_t *src);

/* Storage the parser shares: room for want rows (-2: out of memory), and
 * the one copy of a file name the rows point to (NULL: out of memory). */
int bufpool_rules_grow(bufpool_rules_t *rules, size_t want);
const char *bufpool_rules_keep_file(bufpool_rules_t *rules, const char *file);

/* The algorithm index of name for coll ("previous" gives
 * BUFPOOL_ALG_PREVIOUS, "auto" BUFPOOL_ALG_AUTO), or -2 when unknown. */
int bufpool_algorithm_index(bufpool_coll_id_t coll, const char *name);

/* One info key for every collective's algorithm on one communicator:
 * "COLL:ALG[,COLL:ALG...]" (ALG an algorithm of COLL, auto or previous).
 * coll_bufpool_<coll>_algorithm serves as an info key too, but for
 * reduce_scatter (37 characters) and reduce_scatter_block (43) it is
 * longer than Open MPI's MPI_MAX_INFO_KEY (36), and MPI_Info_set refuses
 * it. */
#define BUFPOOL_ALGORITHM_INFO_KEY "coll_bufpool_algorithm"

/* Parses such a list into forced[coll] (all or nothing): returns 0, or -1
 * with the reason in err and forced unchanged. */
int bufpool_algorithm_list_parse(const char *text, int forced[BUFPOOL_NCOLLS], char *err,
                                 size_t errlen);

/* What a communicator and a call class look like to the rules. */
typedef struct bufpool_shape {
    int ranks;
    int hosts; /* 0 or 1: one host */
    int ppn;   /* 0: not known     */
    bool commutative;
    bool in_place;
    int form; /* BUFPOOL_FORM_* */
} bufpool_shape_t;

/* The first row of rules for a call of coll with this shape and bytes, or
 * NULL. */
const bufpool_rule_t *bufpool_rules_match(const bufpool_rules_t *rules, bufpool_coll_id_t coll,
                                          const bufpool_shape_t *shape, size_t bytes);

/* ---------------------------------------------------------------------- */
/* Choices and size maps. */

/* Where a choice comes from. */
typedef enum {
    BUFPOOL_SOURCE_DEFAULT = 0, /* no row: the collective's own default   */
    BUFPOOL_SOURCE_ROW,         /* a rules row                           */
    BUFPOOL_SOURCE_FORCED,      /* coll_bufpool_<coll>_algorithm or the
                                   communicator's info key              */
    BUFPOOL_SOURCE_MIN_SIZE,    /* below coll_bufpool_min_size           */
    BUFPOOL_SOURCE_GUARD        /* served where the previous module may
                                   compute wrongly (the choice's note says
                                   why, bufpool_sizemap_serve_upto)      */
} bufpool_source_t;

/* What the size alone decides for a call (the first stage of a decision;
 * the collective's plan function finishes it with the call's own
 * constraints). */
typedef struct bufpool_choice {
    int alg; /* BUFPOOL_ALG_PREVIOUS, an algorithm, or BUFPOOL_ALG_AUTO
                (source DEFAULT: the collective's own default decides) */
    bufpool_source_t source;
    size_t seg_bytes;           /* a row's segment size; 0: the tuning's */
    int depth;                  /* a row's depth; 0: the tuning's        */
    const bufpool_rule_t *rule; /* source ROW: the row                    */
    const char *note;           /* why a forced algorithm did not apply
                                   here (bufpool_forced_for), or NULL      */
    bool guarded;               /* the previous module may compute these
                                   calls wrongly: whatever serves them,
                                   never hand them back (the guards of the
                                   size maps, bufpool_sizemap_guard)     */
} bufpool_choice_t;

/* Whether two choices are the same (field by field). */
bool bufpool_choice_equal(const bufpool_choice_t *a, const bufpool_choice_t *b);

/* The choice for a call without min_size: a forced algorithm (not
 * BUFPOOL_ALG_AUTO) wins, else the first matching row, else DEFAULT; note
 * (or NULL) goes with it (see bufpool_forced_for). */
bufpool_choice_t bufpool_rules_choose(const bufpool_rules_t *rules, bufpool_coll_id_t coll,
                                      const bufpool_shape_t *shape, size_t bytes, int forced,
                                      const char *note);

/* One range of a size map: the choice for bytes up to bytes_max (from the
 * previous range's bytes_max + 1). */
typedef struct bufpool_range {
    size_t bytes_max;
    bufpool_choice_t choice;
} bufpool_range_t;

/* Most ranges one size map can need: every row may split a range in
 * three, and min_size once more. */
#define BUFPOOL_MAP_RANGES(nrows) (2 * (nrows) + 3)

/* Resolve the choice of every byte count for coll and shape into ranges
 * (at most BUFPOOL_MAP_RANGES(rules->n)): bytes below min_size go to the
 * previous module, then forced, rows and default as bufpool_rules_choose.
 * Adjacent ranges with the same choice are merged; the last range ends at
 * SIZE_MAX.  Returns the number of ranges written. */
size_t bufpool_sizemap_build(const bufpool_rules_t *rules, bufpool_coll_id_t coll,
                             const bufpool_shape_t *shape, size_t min_size, int forced,
                             const char *note, bufpool_range_t *out);

/* The same from some of the rows, in their order (pointers into a rules
 * table; those of other collectives are passed over): a caller that builds
 * many maps of one collective (a communicator's forms and classes) picks
 * that collective's rows once (bufpool_rules_of_coll) instead of every map
 * reading them all.  nrows bounds the ranges as rules->n does above. */
size_t bufpool_sizemap_build_rows(const bufpool_rule_t *const *rows, size_t nrows,
                                  bufpool_coll_id_t coll, const bufpool_shape_t *shape,
                                  size_t min_size, int forced, const char *note,
                                  bufpool_range_t *out);

/* The rows of coll, in order, into out (room for rules->n): their number. */
size_t bufpool_rules_of_coll(const bufpool_rules_t *rules, bufpool_coll_id_t coll,
                             const bufpool_rule_t **out);

/* The range that holds bytes (the map ends at SIZE_MAX, so one does). */
static inline const bufpool_range_t *bufpool_sizemap_find(const bufpool_range_t *map, size_t bytes)
{
    while (bytes > map->bytes_max) {
        map++;
    }
    return map;
}

/* ---------------------------------------------------------------------- */
/* The lint (bench/coll_model --lint, docs/rules.md). */

typedef enum {
    BUFPOOL_LINT_SHADOWED,    /* earlier rows match every call the row
                                 matches: it never decides one           */
    BUFPOOL_LINT_UNREACHABLE, /* its conditions fit no communicator (more
                                 hosts than ranks, ...)                  */
    BUFPOOL_LINT_OVERLAP,     /* an earlier row with another choice takes
                                 some of its calls and is nowhere
                                 narrower than it: their ranges of some
                                 condition cross (neither holds the
                                 other), they disagree on an edge        */
    BUFPOOL_LINT_EXCEPTION,   /* an earlier row with another choice takes
                                 some of its calls and is narrower than
                                 it in some condition: a first-match
                                 exception, normal                       */
    BUFPOOL_LINT_UNCHECKED,   /* too many pieces to tell (a crafted file) */
    BUFPOOL_LINT_KINDS
} bufpool_lint_kind_t;

typedef struct bufpool_lint_finding {
    bufpool_lint_kind_t kind;
    const bufpool_rule_t *row;   /* the row the finding is about          */
    const bufpool_rule_t *other; /* the earlier row it names, or NULL      */
    const char *text;            /* "FILE:LINE: KIND: ..." (one line)     */
} bufpool_lint_finding_t;

typedef void (*bufpool_lint_fn)(const bufpool_lint_finding_t *finding, void *arg);

/* Lint rules' rows in order (rows of every collective; a row is compared
 * with the rows before it of its collective, whatever their file): report
 * is called once per finding, counts[kind] counts them.  Returns 0, or -2
 * when out of memory. */
int bufpool_rules_lint(const bufpool_rules_t *rules, bufpool_lint_fn report, void *arg,
                       size_t counts[BUFPOOL_LINT_KINDS]);

/* The rows compiled into the component (rules/default.rules), and the
 * name they carry in messages. */
extern const char bufpool_default_rules_text[];
extern const size_t bufpool_default_rules_len;
#define BUFPOOL_DEFAULT_RULES_NAME "default.rules"

#ifdef __cplusplus
}
#endif

#endif /* MCA_COLL_BUFPOOL_RULES_H */
