/*
 * coll/bufpool rules: the parser of rules files, the matching of rows and
 * the size maps resolved from them (see coll_bufpool_rules.h and
 * docs/rules.md for the format).
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
/* Parsing. */

/* A named provenance of one file (@source NAME "TEXT"). */
typedef struct parse_source {
    char name[BUFPOOL_RULES_MAX_NAME + 1];
    char *text;
    int line;
} parse_source_t;

typedef struct parse_ctx {
    const char *file;
    int line;
    char *err;
    size_t errlen;
    parse_source_t *sources; /* the file's @source directives so far      */
    size_t nsources;
    int block; /* the source of the rows under @from, or -1 (none) */
} parse_ctx_t;

static int fail(parse_ctx_t *ctx, const char *fmt, ...)
{
    int n = snprintf(ctx->err, ctx->errlen, "%s:%d: ", ctx->file, ctx->line);
    if (n >= 0 && (size_t)n < ctx->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->err + n, ctx->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* A byte count: a size with an optional suffix (K, M, G, T) and an
 * optional "+N" or "-N" of plain bytes ("16K+1", "4M-1"), so that the
 * inclusive bounds of measured ranges read as they were measured. */
static int parse_bytes(const char *text, size_t *out, char *why, size_t whylen)
{
    char head[64];
    const char *adj = NULL;
    for (const char *c = text + 1; *c; c++) {
        if ('+' == *c || '-' == *c) {
            adj = c;
            break;
        }
    }
    size_t head_len = NULL != adj ? (size_t)(adj - text) : strlen(text);
    if (0 == head_len || head_len >= sizeof(head)) {
        snprintf(why, whylen, "'%s' is not a size", text);
        return -1;
    }
    memcpy(head, text, head_len);
    head[head_len] = '\0';
    uint64_t value;
    char err[64];
    if (0 != regpar_parse_size(head, &value, err, sizeof(err))) {
        snprintf(why, whylen, "'%s' is not a size (%s)", text, err);
        return -1;
    }
    if (NULL != adj) {
        uint64_t delta;
        if (!isdigit((unsigned char)adj[1]) ||
            0 != regpar_parse_size(adj + 1, &delta, err, sizeof(err))) {
            snprintf(why, whylen, "'%s': after '%c' a number of bytes is expected", text, *adj);
            return -1;
        }
        if ('+' == *adj ? value > UINT64_MAX - delta : delta > value) {
            snprintf(why, whylen, "'%s' is out of range", text);
            return -1;
        }
        value = '+' == *adj ? value + delta : value - delta;
    }
    if (value > SIZE_MAX) {
        snprintf(why, whylen, "'%s' is out of range", text);
        return -1;
    }
    *out = (size_t)value;
    return 0;
}

static int parse_count(const char *text, size_t *out, char *why, size_t whylen)
{
    long v;
    char err[64];
    if (0 != regpar_parse_int(text, 0, INT_MAX, &v, err, sizeof(err))) {
        snprintf(why, whylen, "'%s' is not a count (%s)", text, err);
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

typedef int (*parse_bound_fn)(const char *text, size_t *out, char *why, size_t whylen);

/* A range: "A", "A..B", "A..", "..B" or "*" (inclusive; an open end is
 * [lo_limit, hi_limit]). */
static int parse_range(parse_ctx_t *ctx, const char *key, const char *text, parse_bound_fn bound,
                       size_t lo_limit, size_t hi_limit, size_t *lo, size_t *hi)
{
    char why[160];
    *lo = lo_limit;
    *hi = hi_limit;
    if (0 == strcmp(text, "*")) {
        return 0;
    }
    const char *dots = strstr(text, "..");
    char first[64];
    const char *second = NULL;
    if (NULL == dots) {
        snprintf(first, sizeof(first), "%s", text);
    } else {
        size_t len = (size_t)(dots - text);
        if (len >= sizeof(first)) {
            return fail(ctx, "%s=%s: the range's start is too long", key, text);
        }
        memcpy(first, text, len);
        first[len] = '\0';
        second = dots + 2;
    }
    if ('\0' != first[0] && 0 != bound(first, lo, why, sizeof(why))) {
        return fail(ctx, "%s: %s", key, why);
    }
    if (NULL == dots) {
        if ('\0' == first[0]) {
            return fail(ctx, "%s: an empty value (use * for any)", key);
        }
        *hi = *lo;
    } else if ('\0' != second[0] && 0 != bound(second, hi, why, sizeof(why))) {
        return fail(ctx, "%s: %s", key, why);
    }
    if (NULL != dots && '\0' == first[0] && '\0' == second[0]) {
        return fail(ctx, "%s: '..' needs at least one end (use * for any)", key);
    }
    if (*lo < lo_limit || *hi > hi_limit) {
        return fail(ctx, "%s=%s: out of range (%zu to %zu)", key, text, lo_limit, hi_limit);
    }
    if (*lo > *hi) {
        return fail(ctx, "%s=%s: the range is empty (start above end)", key, text);
    }
    return 0;
}

static int parse_int_range(parse_ctx_t *ctx, const char *key, const char *text, int lo_limit,
                           int *lo, int *hi)
{
    size_t l, h;
    if (0 != parse_range(ctx, key, text, parse_count, (size_t)lo_limit, INT_MAX, &l, &h)) {
        return -1;
    }
    *lo = (int)l;
    *hi = (int)h;
    return 0;
}

static int parse_tristate(parse_ctx_t *ctx, const char *key, const char *text, const char *yes,
                          const char *no, unsigned char *out)
{
    if (0 == strcmp(text, "any") || 0 == strcmp(text, "*")) {
        *out = BUFPOOL_RULE_ANY;
    } else if (0 == strcmp(text, yes)) {
        *out = BUFPOOL_RULE_YES;
    } else if (0 == strcmp(text, no)) {
        *out = BUFPOOL_RULE_NO;
    } else {
        return fail(ctx, "%s=%s: expected any, %s or %s", key, text, yes, no);
    }
    return 0;
}

static int parse_form(parse_ctx_t *ctx, const char *text, unsigned char *out)
{
    static const char *const names[BUFPOOL_NFORMS] = {"blocking", "nonblocking", "persistent"};
    if (0 == strcmp(text, "any") || 0 == strcmp(text, "*")) {
        *out = BUFPOOL_FORM_ANY;
        return 0;
    }
    for (int f = 0; f < BUFPOOL_NFORMS; f++) {
        if (0 == strcmp(text, names[f])) {
            *out = (unsigned char)f;
            return 0;
        }
    }
    return fail(ctx, "form=%s: expected any, blocking, nonblocking or persistent", text);
}

/* Next token of a row: a bare word, or key="quoted text" (\" and \\
 * escapes).  The token is copied, unquoted, into tok; *p advances.
 * Returns 1 for a token, 0 at the end of the row, -1 on an error. */
static int next_token(parse_ctx_t *ctx, const char **p, char *tok, size_t toklen)
{
    const char *s = *p;
    while (' ' == *s || '\t' == *s) {
        s++;
    }
    if ('\0' == *s || '#' == *s) {
        *p = s;
        return 0;
    }
    size_t n = 0;
    bool quoted = false;
    while ('\0' != *s && (quoted || (' ' != *s && '\t' != *s && '#' != *s))) {
        char c = *s++;
        if ('"' == c) {
            quoted = !quoted;
            continue;
        }
        if (quoted && '\\' == c && ('"' == *s || '\\' == *s)) {
            c = *s++;
        }
        if (n + 1 >= toklen) {
            return fail(ctx, "a value is longer than %zu characters", toklen - 1);
        }
        tok[n++] = c;
    }
    if (quoted) {
        return fail(ctx, "a quoted value is not closed (a missing \")");
    }
    tok[n] = '\0';
    *p = s;
    return 1;
}

/* The source of this file named name: its index, -1 for none, or -2
 * (reported, what and the name in the message) when no @source above
 * names it. */
static int find_source(parse_ctx_t *ctx, const char *what, const char *name)
{
    if (0 == strcmp(name, "none")) {
        return -1;
    }
    for (size_t i = 0; i < ctx->nsources; i++) {
        if (0 == strcmp(ctx->sources[i].name, name)) {
            return (int)i;
        }
    }
    fail(ctx, "%s%s: no '@source %s' above this line", what, name, name);
    return -2;
}

/* Parse one row (line already known not to be blank or a comment). */
static int parse_row(parse_ctx_t *ctx, const char *line, bufpool_rule_t *r)
{
    char tok[BUFPOOL_RULES_MAX_LINE];
    char measured[BUFPOOL_RULES_MAX_MEASURED + 1] = "";
    unsigned seen = 0;
    const char *p = line;
    int rc = next_token(ctx, &p, tok, sizeof(tok));
    if (rc < 0) {
        return -1;
    }
    int coll = -1;
    for (int c = 0; c < BUFPOOL_NCOLLS; c++) {
        if (0 == strcmp(tok, bufpool_coll_names[c])) {
            coll = c;
        }
    }
    if (coll < 0) {
        return fail(ctx,
                    "'%s' is not a collective bufpool serves (allreduce, reduce, bcast, "
                    "allgather, reduce_scatter, reduce_scatter_block, alltoall, gather, "
                    "scatter, scan, exscan)",
                    tok);
    }
    *r = (bufpool_rule_t){.coll = (bufpool_coll_id_t)coll,
                          .ranks_min = 2,
                          .ranks_max = INT_MAX,
                          .hosts_min = 1,
                          .hosts_max = INT_MAX,
                          .ppn_min = 1,
                          .ppn_max = INT_MAX,
                          .ppn_any = true,
                          .bytes_min = 0,
                          .bytes_max = SIZE_MAX,
                          .form = BUFPOOL_FORM_ANY,
                          .alg = -2};
    static const char *const keys[] = {"ranks", "hosts", "ppn", "bytes", "op",       "inplace",
                                       "form",  "alg",   "seg", "depth", "measured", "from"};
    int source = ctx->block;
    const size_t nkeys = sizeof(keys) / sizeof(*keys);
    while ((rc = next_token(ctx, &p, tok, sizeof(tok))) > 0) {
        char *eq = strchr(tok, '=');
        if (NULL == eq || eq == tok) {
            return fail(ctx, "'%s' is not key=value", tok);
        }
        *eq = '\0';
        const char *key = tok, *val = eq + 1;
        size_t k = 0;
        while (k < nkeys && 0 != strcmp(key, keys[k])) {
            k++;
        }
        if (k == nkeys) {
            return fail(ctx,
                        "unknown key '%s' (ranks, hosts, ppn, bytes, op, inplace, form, alg, "
                        "seg, depth, measured, from)",
                        key);
        }
        if (seen & (1u << k)) {
            return fail(ctx, "'%s' is given twice", key);
        }
        seen |= 1u << k;
        if ('\0' == val[0] && 0 != strcmp(key, "measured")) {
            return fail(ctx, "%s: an empty value", key);
        }
        size_t lo, hi;
        long v;
        char why[64];
        rc = 0;
        switch (k) {
            case 0:
                rc = parse_int_range(ctx, key, val, 2, &r->ranks_min, &r->ranks_max);
                break;
            case 1:
                rc = parse_int_range(ctx, key, val, 1, &r->hosts_min, &r->hosts_max);
                break;
            case 2:
                rc = parse_int_range(ctx, key, val, 1, &r->ppn_min, &r->ppn_max);
                r->ppn_any = 0 == strcmp(val, "*");
                break;
            case 3:
                rc = parse_range(ctx, key, val, parse_bytes, 0, SIZE_MAX, &r->bytes_min,
                                 &r->bytes_max);
                break;
            case 4:
                rc =
                    parse_tristate(ctx, key, val, "commutative", "noncommutative", &r->commutative);
                break;
            case 5:
                rc = parse_tristate(ctx, key, val, "yes", "no", &r->in_place);
                break;
            case 6:
                rc = parse_form(ctx, val, &r->form);
                break;
            case 7:
                r->alg = bufpool_algorithm_index(r->coll, val);
                if (r->alg < BUFPOOL_ALG_PREVIOUS || BUFPOOL_ALG_AUTO == r->alg) {
                    char list[256] = "";
                    size_t used = 0;
                    for (const char *const *n = bufpool_algorithm_names[r->coll] + 1; NULL != *n;
                         n++) {
                        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s, ", *n);
                    }
                    return fail(ctx, "alg=%s: not an algorithm of %s (%sor previous)", val,
                                bufpool_coll_names[r->coll], list);
                }
                break;
            case 8:
                rc = parse_range(ctx, key, val, parse_bytes, BUFPOOL_SEGMENT_MIN,
                                 BUFPOOL_SEGMENT_MAX, &lo, &hi);
                if (0 == rc && lo != hi) {
                    rc = fail(ctx, "seg=%s: one size, not a range", val);
                }
                r->seg_bytes = lo;
                break;
            case 9:
                if (0 != regpar_parse_int(val, 1, BUFPOOL_MAX_DEPTH, &v, why, sizeof(why))) {
                    return fail(ctx, "depth=%s: %s (1 to %d)", val, why, BUFPOOL_MAX_DEPTH);
                }
                r->depth = (int)v;
                break;
            case 10:
                if (strlen(val) > BUFPOOL_RULES_MAX_MEASURED) {
                    return fail(ctx, "measured: longer than %d characters",
                                BUFPOOL_RULES_MAX_MEASURED);
                }
                snprintf(measured, sizeof(measured), "%s", val);
                break;
            default:
                source = find_source(ctx, "from=", val);
                rc = source < -1 ? -1 : 0;
                break;
        }
        if (0 != rc) {
            return -1;
        }
    }
    if (rc < 0) {
        return -1;
    }
    if (r->alg < BUFPOOL_ALG_PREVIOUS) {
        return fail(ctx, "a row needs alg=<algorithm> or alg=previous");
    }
    if (BUFPOOL_ALG_PREVIOUS == r->alg && (r->seg_bytes || r->depth)) {
        return fail(ctx, "seg and depth apply to bufpool's algorithms, not to alg=previous");
    }
    r->line = ctx->line;
    r->file = ctx->file;
    /* Where it was measured: the row's source (from=, else the @from
     * block's), then its own measured text, as "SOURCE: MEASURED". */
    const char *prov = source >= 0 ? ctx->sources[source].text : "";
    const char *sep = '\0' != prov[0] && '\0' != measured[0] ? ": " : "";
    const bool any = '\0' != prov[0] || '\0' != measured[0];
    size_t whylen = strlen(ctx->file) + strlen(prov) + strlen(measured) + 48;
    r->why = malloc(whylen);
    if (NULL == r->why) {
        return -2;
    }
    snprintf(r->why, whylen, "auto, rules %s:%d%s%s%s%s%s", ctx->file, ctx->line, any ? " (" : "",
             prov, sep, measured, any ? ")" : "");
    return 0;
}

/* Whether nothing but blanks or a comment is left of a line. */
static bool at_end(const char *p)
{
    p += strspn(p, " \t");
    return '\0' == *p || '#' == *p;
}

/* A directive: @source NAME "TEXT" names where rows were measured;
 * @from NAME (or none) gives that source to the rows after it, until the
 * next @from. */
static int parse_directive(parse_ctx_t *ctx, const char *line)
{
    char tok[BUFPOOL_RULES_MAX_LINE], name[BUFPOOL_RULES_MAX_NAME + 1];
    const char *p = line;
    if (next_token(ctx, &p, tok, sizeof(tok)) < 0) {
        return -1;
    }
    const bool from = 0 == strcmp(tok, "@from");
    if (!from && 0 != strcmp(tok, "@source")) {
        return fail(ctx, "'%s' is not a directive (@source NAME \"TEXT\", @from NAME)", tok);
    }
    int rc = next_token(ctx, &p, tok, sizeof(tok));
    if (rc < 0) {
        return -1;
    }
    if (0 == rc) {
        tok[0] = '\0';
    }
    const size_t len = strlen(tok);
    if (len > BUFPOOL_RULES_MAX_NAME ||
        len != strspn(tok, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")) {
        return fail(ctx, "%s %s: a name is 1 to %d letters, digits, '.', '_' or '-'",
                    from ? "@from" : "@source", tok, BUFPOOL_RULES_MAX_NAME);
    }
    if (0 == len) {
        return fail(ctx, from ? "expected '@from NAME' (an @source above, or none)"
                              : "expected '@source NAME \"TEXT\"'");
    }
    memcpy(name, tok, len + 1);
    if (from) {
        if (!at_end(p)) {
            return fail(ctx, "expected '@from NAME' (an @source above, or none)");
        }
        const int source = find_source(ctx, "@from ", name);
        if (source < -1) {
            return -1;
        }
        ctx->block = source;
        return 0;
    }
    rc = next_token(ctx, &p, tok, sizeof(tok));
    if (rc < 0) {
        return -1;
    }
    if (0 == rc || !at_end(p)) {
        return fail(ctx, "expected '@source NAME \"TEXT\"'");
    }
    if (0 == strcmp(name, "none")) {
        return fail(ctx, "@source none: 'none' means no source");
    }
    for (size_t i = 0; i < ctx->nsources; i++) {
        if (0 == strcmp(ctx->sources[i].name, name)) {
            return fail(ctx, "@source %s: already defined at line %d", name, ctx->sources[i].line);
        }
    }
    if ('\0' == tok[0] || strlen(tok) > BUFPOOL_RULES_MAX_MEASURED) {
        return fail(ctx, "@source %s: the text must be 1 to %d characters", name,
                    BUFPOOL_RULES_MAX_MEASURED);
    }
    if (ctx->nsources >= BUFPOOL_RULES_MAX_SOURCES) {
        return fail(ctx, "more than %d @source directives", BUFPOOL_RULES_MAX_SOURCES);
    }
    parse_source_t *sources = realloc(ctx->sources, (ctx->nsources + 1) * sizeof(*sources));
    if (NULL == sources) {
        return -2;
    }
    ctx->sources = sources;
    parse_source_t *src = &sources[ctx->nsources];
    memcpy(src->name, name, len + 1);
    src->line = ctx->line;
    src->text = strdup(tok);
    if (NULL == src->text) {
        return -2;
    }
    ctx->nsources++;
    return 0;
}

/* The first line that is not blank or a comment: "bufpool-rules 1". */
static int parse_header(parse_ctx_t *ctx, const char *line)
{
    char magic[32], version[32], extra[32];
    const char *p = line;
    int rc = next_token(ctx, &p, magic, sizeof(magic));
    if (rc > 0 && 0 == strcmp(magic, BUFPOOL_RULES_MAGIC)) {
        rc = next_token(ctx, &p, version, sizeof(version));
        long v;
        char why[64];
        if (rc > 0 && 0 == regpar_parse_int(version, 0, INT_MAX, &v, why, sizeof(why)) &&
            0 == next_token(ctx, &p, extra, sizeof(extra))) {
            return BUFPOOL_RULES_VERSION == v
                       ? 0
                       : fail(ctx, "rules format %ld is not known (this bufpool reads format %d)",
                              v, BUFPOOL_RULES_VERSION);
        }
    }
    return fail(ctx, "not a bufpool rules file: the first line must be '%s %d'",
                BUFPOOL_RULES_MAGIC, BUFPOOL_RULES_VERSION);
}

static int grow_rows(bufpool_rules_t *rules, size_t want)
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

static const char *keep_file_name(bufpool_rules_t *rules, const char *file)
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

int bufpool_rules_parse(bufpool_rules_t *rules, const char *text, size_t len, const char *file,
                        char *err, size_t errlen)
{
    parse_ctx_t ctx = {.file = file, .line = 0, .err = err, .errlen = errlen, .block = -1};
    const size_t first_new = rules->n;
    char line[BUFPOOL_RULES_MAX_LINE + 1];
    bool header = false;
    int rc = 0;

    if (len > BUFPOOL_RULES_MAX_TEXT) {
        ctx.line = 1;
        return fail(&ctx, "longer than %zu bytes", BUFPOOL_RULES_MAX_TEXT);
    }
    ctx.file = keep_file_name(rules, file);
    if (NULL == ctx.file) {
        return -2;
    }
    for (size_t at = 0; at < len && 0 == rc;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = (NULL != nl ? (size_t)(nl - (text + at)) : len - at);
        ctx.line++;
        if (n > BUFPOOL_RULES_MAX_LINE) {
            rc = fail(&ctx, "a line longer than %d characters", BUFPOOL_RULES_MAX_LINE);
            break;
        }
        memcpy(line, text + at, n);
        line[n] = '\0';
        at += n + 1;
        if (strlen(line) != n) {
            rc = fail(&ctx, "a NUL byte: not a text file");
            break;
        }
        if (n > 0 && '\r' == line[n - 1]) {
            line[n - 1] = '\0'; /* a file written on Windows */
        }
        const char *s = line;
        while (' ' == *s || '\t' == *s) {
            s++;
        }
        if ('\0' == *s || '#' == *s) {
            continue;
        }
        if (!header) {
            rc = parse_header(&ctx, s);
            header = 0 == rc;
            continue;
        }
        if ('@' == *s) {
            rc = parse_directive(&ctx, s);
            continue;
        }
        if (rules->n - first_new >= BUFPOOL_RULES_MAX_ROWS) {
            rc = fail(&ctx, "more than %d rows", BUFPOOL_RULES_MAX_ROWS);
            break;
        }
        rc = grow_rows(rules, rules->n + 1);
        if (0 == rc) {
            rc = parse_row(&ctx, s, &rules->rows[rules->n]);
            rules->n += 0 == rc;
        }
    }
    if (0 == rc && !header) {
        ctx.line = ctx.line ? ctx.line : 1;
        rc = fail(&ctx, "not a bufpool rules file: no '%s %d' line", BUFPOOL_RULES_MAGIC,
                  BUFPOOL_RULES_VERSION);
    }
    for (size_t i = 0; i < ctx.nsources; i++) {
        free(ctx.sources[i].text);
    }
    free(ctx.sources);
    if (0 != rc) {
        /* All or nothing: a half-read file would decide differently from
         * what its author wrote. */
        for (size_t i = first_new; i < rules->n; i++) {
            free(rules->rows[i].why);
        }
        rules->n = first_new;
        if (-2 == rc) {
            snprintf(err, errlen, "%s: out of memory", file);
        }
    }
    return rc;
}

int bufpool_rules_append(bufpool_rules_t *dst, const bufpool_rules_t *src)
{
    if (0 != grow_rows(dst, dst->n + src->n)) {
        return -2;
    }
    for (size_t i = 0; i < src->n; i++) {
        bufpool_rule_t r = src->rows[i];
        r.file = keep_file_name(dst, src->rows[i].file);
        r.why = strdup(src->rows[i].why);
        if (NULL == r.file || NULL == r.why) {
            free(r.why);
            return -2;
        }
        dst->rows[dst->n++] = r;
    }
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

bufpool_choice_t bufpool_rules_choose(const bufpool_rules_t *rules, bufpool_coll_id_t coll,
                                      const bufpool_shape_t *shape, size_t bytes, int forced,
                                      const char *note)
{
    if (BUFPOOL_ALG_AUTO != forced) {
        return (bufpool_choice_t){.alg = forced, .source = BUFPOOL_SOURCE_FORCED};
    }
    const bufpool_rule_t *r = bufpool_rules_match(rules, coll, shape, bytes);
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

static int cmp_size(const void *a, const void *b)
{
    const size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

bool bufpool_choice_equal(const bufpool_choice_t *a, const bufpool_choice_t *b)
{
    return a->alg == b->alg && a->source == b->source && a->seg_bytes == b->seg_bytes &&
           a->depth == b->depth && a->rule == b->rule && a->note == b->note;
}

size_t bufpool_sizemap_build(const bufpool_rules_t *rules, bufpool_coll_id_t coll,
                             const bufpool_shape_t *shape, size_t min_size, int forced,
                             const char *note, bufpool_range_t *out)
{
    /* Every byte count where the answer may change starts a range: 0, each
     * matching row's start and the byte after its end, and min_size.  Within
     * one such range every byte count meets the same rows, so the choice at
     * its start is the choice of all of it. */
    const size_t nrows = NULL != rules ? rules->n : 0;
    size_t *starts = malloc((2 * nrows + 2) * sizeof(*starts));
    size_t n = 0, nstarts = 0;
    if (NULL == starts) {
        /* No memory to resolve the rows: every call to the previous module,
         * which is always correct. */
        out[0] = (bufpool_range_t){
            SIZE_MAX, {.alg = BUFPOOL_ALG_PREVIOUS, .source = BUFPOOL_SOURCE_MIN_SIZE}};
        return 1;
    }
    starts[nstarts++] = 0;
    if (min_size > 0) {
        starts[nstarts++] = min_size;
    }
    for (size_t i = 0; i < nrows && BUFPOOL_ALG_AUTO == forced; i++) {
        const bufpool_rule_t *r = &rules->rows[i];
        if (row_fits_shape(r, coll, shape)) {
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
                : bufpool_rules_choose(rules, coll, shape, at, forced, note);
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

/* ---------------------------------------------------------------------- */
/* The lint: rows that can never decide a call, and rows that share calls
 * with an earlier row choosing otherwise.
 *
 * A row matches a box of calls: one interval per condition (a tristate or
 * a form as an interval of 0/1 or of the forms; ppn as 0, unknown, to
 * INT_MAX).  The calls an earlier row matches are decided by it, so a
 * row's box less the boxes of the rows before it (of its collective) is
 * what it decides: empty, the row is shadowed. */

enum { LINT_RANKS, LINT_HOSTS, LINT_PPN, LINT_BYTES, LINT_OP, LINT_INPLACE, LINT_FORM, LINT_DIMS };

typedef struct lint_box {
    uint64_t lo[LINT_DIMS], hi[LINT_DIMS];
} lint_box_t;

/* Most boxes the remainder of one row may split into, and most boxes
 * compared for one row, before the lint gives up on that row (rows
 * crafted to split it into many pieces; real rules need a few dozen). */
#define LINT_MAX_BOXES 4096
#define LINT_MAX_WORK  ((size_t)1 << 20)

static void tristate_interval(unsigned char cond, uint64_t *lo, uint64_t *hi)
{
    *lo = BUFPOOL_RULE_YES == cond;
    *hi = BUFPOOL_RULE_NO != cond;
}

static lint_box_t row_box(const bufpool_rule_t *r)
{
    lint_box_t b = {.lo = {(uint64_t)r->ranks_min, (uint64_t)r->hosts_min,
                           r->ppn_any ? 0 : (uint64_t)r->ppn_min, r->bytes_min, 0, 0, 0},
                    .hi = {(uint64_t)r->ranks_max, (uint64_t)r->hosts_max,
                           r->ppn_any ? INT_MAX : (uint64_t)r->ppn_max, r->bytes_max, 1, 1,
                           BUFPOOL_NFORMS - 1}};
    tristate_interval(r->commutative, &b.lo[LINT_OP], &b.hi[LINT_OP]);
    tristate_interval(r->in_place, &b.lo[LINT_INPLACE], &b.hi[LINT_INPLACE]);
    if (BUFPOOL_FORM_ANY != r->form) {
        b.lo[LINT_FORM] = b.hi[LINT_FORM] = r->form;
    }
    return b;
}

static bool box_meet(const lint_box_t *a, const lint_box_t *b, lint_box_t *out)
{
    for (int d = 0; d < LINT_DIMS; d++) {
        out->lo[d] = a->lo[d] > b->lo[d] ? a->lo[d] : b->lo[d];
        out->hi[d] = a->hi[d] < b->hi[d] ? a->hi[d] : b->hi[d];
        if (out->lo[d] > out->hi[d]) {
            return false;
        }
    }
    return true;
}

/* a less b (which meets a): at most 2 x LINT_DIMS boxes appended to out. */
static size_t box_subtract(lint_box_t a, const lint_box_t *b, lint_box_t *out)
{
    size_t n = 0;
    for (int d = 0; d < LINT_DIMS; d++) {
        if (a.lo[d] < b->lo[d]) {
            out[n] = a;
            out[n++].hi[d] = b->lo[d] - 1;
            a.lo[d] = b->lo[d];
        }
        if (a.hi[d] > b->hi[d]) {
            out[n] = a;
            out[n++].lo[d] = b->hi[d] + 1;
            a.hi[d] = b->hi[d];
        }
    }
    return n;
}

static bool same_choice(const bufpool_rule_t *a, const bufpool_rule_t *b)
{
    return a->alg == b->alg && a->seg_bytes == b->seg_bytes && a->depth == b->depth;
}

/* A size as rules write it: 4K, 16K+1, 1M-1, 100. */
static void fmt_lint_size(char *out, size_t len, uint64_t v)
{
    static const char suffix[] = "KMGT";
    for (int k = 4; k >= 1; k--) {
        const uint64_t unit = (uint64_t)1 << (10 * k);
        if (v >= unit && 0 == v % unit) {
            snprintf(out, len, "%" PRIu64 "%c", v / unit, suffix[k - 1]);
            return;
        }
        if (v < UINT64_MAX && v + 1 >= unit && 0 == (v + 1) % unit) {
            snprintf(out, len, "%" PRIu64 "%c-1", (v + 1) / unit, suffix[k - 1]);
            return;
        }
        if (v > unit && 0 == (v - 1) % unit) {
            snprintf(out, len, "%" PRIu64 "%c+1", (v - 1) / unit, suffix[k - 1]);
            return;
        }
    }
    snprintf(out, len, "%" PRIu64, v);
}

/* Text appended to a buffer, truncated at its end. */
typedef struct lint_text {
    char *buf;
    size_t len, n;
} lint_text_t;

static void text_add(lint_text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(lint_text_t *t, const char *fmt, ...)
{
    if (t->n + 1 >= t->len) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(t->buf + t->n, t->len - t->n, fmt, ap);
    va_end(ap);
    if (k > 0) {
        t->n += (size_t)k < t->len - t->n ? (size_t)k : t->len - t->n - 1;
    }
}

/* One interval as rules write it (A, A..B, A.., ..B), the whole of
 * [lo_all, hi_all] as "*". */
static void add_interval(lint_text_t *t, uint64_t lo, uint64_t hi, uint64_t lo_all, uint64_t hi_all,
                         bool sizes)
{
    char a[32], b[32];
    if (sizes) {
        fmt_lint_size(a, sizeof(a), lo);
        fmt_lint_size(b, sizeof(b), hi);
    } else {
        snprintf(a, sizeof(a), "%" PRIu64, lo);
        snprintf(b, sizeof(b), "%" PRIu64, hi);
    }
    if (lo <= lo_all && hi >= hi_all) {
        text_add(t, "*");
    } else if (lo == hi) {
        text_add(t, "%s", a);
    } else if (hi >= hi_all) {
        text_add(t, "%s..", a);
    } else if (lo <= lo_all) {
        text_add(t, "..%s", b);
    } else {
        text_add(t, "%s..%s", a, b);
    }
}

static const char *const lint_dim_names[LINT_DIMS] = {"ranks", "hosts",   "ppn", "bytes",
                                                      "op",    "inplace", "form"};

/* Dimension d of a box as a condition of a row (" key=value"), nothing
 * when it is the whole of the dimension. */
static void add_dim(lint_text_t *t, const lint_box_t *b, int d)
{
    static const char *const forms[BUFPOOL_NFORMS] = {"blocking", "nonblocking", "persistent"};
    const uint64_t lo = b->lo[d], hi = b->hi[d];
    switch (d) {
        case LINT_RANKS:
        case LINT_HOSTS:
            if (lo > (LINT_RANKS == d ? 2u : 1u) || hi < INT_MAX) {
                text_add(t, " %s=", lint_dim_names[d]);
                add_interval(t, lo, hi, 0, INT_MAX, false); /* "2..3", not "..3" */
            }
            break;
        case LINT_PPN: /* 0: not known, met only by rows without ppn= */
            if (0 == lo && hi < INT_MAX) {
                text_add(t, " ppn=unknown");
                if (hi > 0) {
                    text_add(t, ",..%" PRIu64, hi);
                }
            } else if (lo > 0) {
                text_add(t, " ppn=");
                add_interval(t, lo, hi, 0, INT_MAX, false);
            }
            break;
        case LINT_BYTES:
            if (lo > 0 || hi < SIZE_MAX) {
                text_add(t, " bytes=");
                add_interval(t, lo, hi, 0, SIZE_MAX, true);
            }
            break;
        case LINT_OP:
            if (lo == hi) {
                text_add(t, " op=%scommutative", lo ? "" : "non");
            }
            break;
        case LINT_INPLACE:
            if (lo == hi) {
                text_add(t, " inplace=%s", lo ? "yes" : "no");
            }
            break;
        default:
            if (lo > 0 || hi < BUFPOOL_NFORMS - 1) {
                for (uint64_t f = lo; f <= hi; f++) {
                    text_add(t, "%s%s", f == lo ? " form=" : "|", forms[f]);
                }
            }
            break;
    }
}

static void add_box(lint_text_t *t, const lint_box_t *b)
{
    const size_t before = t->n;
    for (int d = 0; d < LINT_DIMS; d++) {
        add_dim(t, b, d);
    }
    if (t->n == before) {
        text_add(t, " (every call)");
    }
}

/* "allreduce hosts=1 bytes=..4K-1 alg=previous" for a row. */
static void add_row(lint_text_t *t, const bufpool_rule_t *r)
{
    const lint_box_t b = row_box(r);
    text_add(t, "%s", bufpool_coll_names[r->coll]);
    for (int d = 0; d < LINT_DIMS; d++) {
        add_dim(t, &b, d);
    }
    text_add(t, " alg=%s",
             BUFPOOL_ALG_PREVIOUS == r->alg ? "previous"
                                            : bufpool_algorithm_names[r->coll][r->alg]);
    if (r->seg_bytes > 0) {
        char seg[32];
        fmt_lint_size(seg, sizeof(seg), r->seg_bytes);
        text_add(t, " seg=%s", seg);
    }
    if (r->depth > 0) {
        text_add(t, " depth=%d", r->depth);
    }
}

/* Another row as this one's message names it: "line N", or "FILE:N" in
 * another file. */
static void add_ref(lint_text_t *t, const bufpool_rule_t *row, const bufpool_rule_t *other)
{
    if (0 == strcmp(row->file, other->file)) {
        text_add(t, "%d", other->line);
    } else {
        text_add(t, "%s:%d", other->file, other->line);
    }
}

/* Conditions of a row that fit no communicator: more hosts than ranks,
 * more ranks per host than ranks, or too few hosts and ranks per host for
 * the ranks. */
static const char *unreachable_why(const bufpool_rule_t *r)
{
    if (r->hosts_min > r->ranks_max) {
        return "more hosts than ranks";
    }
    if (r->ppn_any) {
        return NULL;
    }
    if (r->ppn_min > r->ranks_max) {
        return "more ranks per host than ranks";
    }
    if ((uint64_t)r->ppn_max * (uint64_t)r->hosts_max < (uint64_t)r->ranks_min) {
        return "fewer places (ppn x hosts) than ranks";
    }
    return NULL;
}

/* How an earlier row o that takes some of row r's calls with another
 * choice sits against r: -1 when o is narrower than r in some condition
 * (it holds a strict part of r's range there): an exception to r, the
 * normal first-match refinement, whatever its other ranges.  Otherwise o
 * is at least as wide as r in every condition where one holds the other,
 * and the first condition whose ranges cross (neither holds the other) is
 * returned: the two rows disagree on that edge, and the later, narrower
 * row loses part of what it was written for. */
static int crossing_dim(const lint_box_t *r, const lint_box_t *o)
{
    int cross = -1;
    for (int d = 0; d < LINT_DIMS; d++) {
        const bool o_in_r = o->lo[d] >= r->lo[d] && o->hi[d] <= r->hi[d];
        const bool r_in_o = r->lo[d] >= o->lo[d] && r->hi[d] <= o->hi[d];
        if (o_in_r && !r_in_o) {
            return -1;
        }
        if (!o_in_r && !r_in_o && cross < 0) {
            cross = d;
        }
    }
    return cross;
}

int bufpool_rules_lint(const bufpool_rules_t *rules, bufpool_lint_fn report, void *arg,
                       size_t counts[BUFPOOL_LINT_KINDS])
{
    const size_t cap = LINT_MAX_BOXES + 2 * LINT_DIMS;
    lint_box_t *cur = malloc(cap * sizeof(*cur)), *next = malloc(cap * sizeof(*next));
    size_t *deciders = malloc((rules->n + 1) * sizeof(*deciders));
    char buf[1024];
    int rc = 0;
    for (int k = 0; k < BUFPOOL_LINT_KINDS; k++) {
        counts[k] = 0;
    }
    if (NULL == cur || NULL == next || NULL == deciders) {
        rc = -2;
        goto out;
    }
    for (size_t i = 0; i < rules->n; i++) {
        const bufpool_rule_t *r = &rules->rows[i];
        const lint_box_t box = row_box(r);
        lint_text_t t = {buf, sizeof(buf), 0};
        bufpool_lint_finding_t f = {.row = r, .text = buf};
        text_add(&t, "%s:%d: ", r->file, r->line);
        const char *never = unreachable_why(r);
        if (NULL != never) {
            f.kind = BUFPOOL_LINT_UNREACHABLE;
            text_add(&t, "unreachable: ");
            add_row(&t, r);
            text_add(&t, " matches no communicator (%s)", never);
            counts[f.kind]++;
            report(&f, arg);
            continue;
        }
        /* What the row decides: its box less every earlier row's of its
         * collective; deciders: the earlier rows that take some of it. */
        size_t ncur = 1, ndec = 0, work = 0;
        bool overflow = false;
        cur[0] = box;
        for (size_t j = 0; j < i && ncur > 0 && !overflow; j++) {
            const bufpool_rule_t *o = &rules->rows[j];
            lint_box_t ob = row_box(o), meet;
            if (o->coll != r->coll || !box_meet(&box, &ob, &meet)) {
                continue;
            }
            size_t nnext = 0;
            bool touched = false;
            work += ncur;
            if (work > LINT_MAX_WORK) {
                overflow = true;
                break;
            }
            for (size_t k = 0; k < ncur; k++) {
                if (!box_meet(&cur[k], &ob, &meet)) {
                    next[nnext++] = cur[k];
                    continue;
                }
                touched = true;
                if (nnext + 2 * LINT_DIMS > LINT_MAX_BOXES) {
                    overflow = true;
                    break;
                }
                nnext += box_subtract(cur[k], &ob, next + nnext);
            }
            lint_box_t *swap = cur;
            cur = next;
            next = swap;
            ncur = nnext;
            if (touched) {
                deciders[ndec++] = j;
            }
        }
        if (overflow) {
            f.kind = BUFPOOL_LINT_UNCHECKED;
            text_add(&t, "unchecked: the rows before it split what ");
            add_row(&t, r);
            text_add(&t, " matches into too many pieces to tell");
            counts[f.kind]++;
            report(&f, arg);
            continue;
        }
        if (0 == ncur) {
            f.kind = BUFPOOL_LINT_SHADOWED;
            f.other = &rules->rows[deciders[ndec - 1]];
            text_add(&t, "shadowed: ");
            add_row(&t, r);
            text_add(&t, " never decides a call: the row%s at line%s ", ndec > 1 ? "s" : "",
                     ndec > 1 ? "s" : "");
            for (size_t k = 0; k < ndec; k++) {
                text_add(&t, "%s", 0 == k ? "" : k + 1 == ndec ? " and " : ", ");
                add_ref(&t, r, &rules->rows[deciders[k]]);
            }
            text_add(&t, " match%s every call it matches", ndec > 1 ? "" : "es");
            counts[f.kind]++;
            report(&f, arg);
            continue;
        }
        /* Earlier rows that take some of its calls with another choice:
         * within the row, a first-match exception to it; crossing it in
         * some condition, an overlap (the two disagree on an edge). */
        for (size_t k = 0; k < ndec; k++) {
            const bufpool_rule_t *o = &rules->rows[deciders[k]];
            if (same_choice(o, r)) {
                continue;
            }
            const lint_box_t ob = row_box(o);
            lint_box_t meet;
            box_meet(&box, &ob, &meet);
            const int d = crossing_dim(&box, &ob);
            t.n = 0;
            buf[0] = '\0';
            text_add(&t, "%s:%d: ", r->file, r->line);
            f.other = o;
            if (d < 0) {
                f.kind = BUFPOOL_LINT_EXCEPTION;
                text_add(&t, "exception: line ");
                add_ref(&t, r, o);
                text_add(&t, " (");
                add_row(&t, o);
                text_add(&t, ") takes");
                add_box(&t, &meet);
                text_add(&t, " from ");
                add_row(&t, r);
            } else {
                f.kind = BUFPOOL_LINT_OVERLAP;
                text_add(&t, "overlap: ");
                add_row(&t, r);
                text_add(&t, " and line ");
                add_ref(&t, r, o);
                text_add(&t, " (");
                add_row(&t, o);
                text_add(&t, ") cross on %s, and line ", lint_dim_names[d]);
                add_ref(&t, r, o);
                text_add(&t, " is nowhere narrower: it decides");
                add_box(&t, &meet);
            }
            counts[f.kind]++;
            report(&f, arg);
        }
    }
out:
    free(cur);
    free(next);
    free(deciders);
    return rc;
}
