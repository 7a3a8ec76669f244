/*
 * The parser of rules files (coll_bufpool_rules.h, docs/rules.md): rows,
 * the @source and @from directives, strict values with the file and line
 * of every error.
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

/* The keys of a row, in the order of row_keys. */
typedef enum row_key {
    KEY_RANKS,
    KEY_HOSTS,
    KEY_PPN,
    KEY_BYTES,
    KEY_OP,
    KEY_INPLACE,
    KEY_FORM,
    KEY_ALG,
    KEY_SEG,
    KEY_DEPTH,
    KEY_MEASURED,
    KEY_FROM,
    KEY_COUNT
} row_key_t;

static const char *const row_keys[KEY_COUNT] = {"ranks", "hosts",   "ppn",      "bytes",
                                                "op",    "inplace", "form",     "alg",
                                                "seg",   "depth",   "measured", "from"};

/* What a row gives besides its rule's fields. */
typedef struct row_extra {
    char measured[BUFPOOL_RULES_MAX_MEASURED + 1];
    int source; /* index into ctx->sources, -1 for none */
} row_extra_t;

/* The rule of a row naming collective name, before its keys: every key's
 * "anything". */
static int row_start(parse_ctx_t *ctx, const char *name, bufpool_rule_t *r)
{
    int coll = -1;
    for (int c = 0; c < BUFPOOL_NCOLLS; c++) {
        if (0 == strcmp(name, bufpool_coll_names[c])) {
            coll = c;
        }
    }
    if (coll < 0) {
        return fail(ctx,
                    "'%s' is not a collective bufpool serves (allreduce, reduce, bcast, "
                    "allgather, reduce_scatter, reduce_scatter_block, alltoall, gather, "
                    "scatter, scan, exscan)",
                    name);
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
    return 0;
}

/* alg=VAL of the row's collective; the list of its algorithms otherwise. */
static int row_alg(parse_ctx_t *ctx, const char *val, bufpool_rule_t *r)
{
    r->alg = bufpool_algorithm_index(r->coll, val);
    if (r->alg >= BUFPOOL_ALG_PREVIOUS && BUFPOOL_ALG_AUTO != r->alg) {
        return 0;
    }
    char list[256] = "";
    size_t used = 0;
    for (const char *const *n = bufpool_algorithm_names[r->coll] + 1; NULL != *n; n++) {
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s, ", *n);
    }
    return fail(ctx, "alg=%s: not an algorithm of %s (%sor previous)", val,
                bufpool_coll_names[r->coll], list);
}

/* One key=value of a row. */
static int row_key(parse_ctx_t *ctx, row_key_t k, const char *val, bufpool_rule_t *r,
                   row_extra_t *extra)
{
    const char *key = row_keys[k];
    size_t lo, hi;
    long v;
    char why[64];
    int rc = 0;
    switch (k) {
        case KEY_RANKS:
            return parse_int_range(ctx, key, val, 2, &r->ranks_min, &r->ranks_max);
        case KEY_HOSTS:
            return parse_int_range(ctx, key, val, 1, &r->hosts_min, &r->hosts_max);
        case KEY_PPN:
            r->ppn_any = 0 == strcmp(val, "*");
            return parse_int_range(ctx, key, val, 1, &r->ppn_min, &r->ppn_max);
        case KEY_BYTES:
            return parse_range(ctx, key, val, parse_bytes, 0, SIZE_MAX, &r->bytes_min,
                               &r->bytes_max);
        case KEY_OP:
            return parse_tristate(ctx, key, val, "commutative", "noncommutative", &r->commutative);
        case KEY_INPLACE:
            return parse_tristate(ctx, key, val, "yes", "no", &r->in_place);
        case KEY_FORM:
            return parse_form(ctx, val, &r->form);
        case KEY_ALG:
            return row_alg(ctx, val, r);
        case KEY_SEG:
            rc = parse_range(ctx, key, val, parse_bytes, BUFPOOL_SEGMENT_MIN, BUFPOOL_SEGMENT_MAX,
                             &lo, &hi);
            if (0 == rc && lo != hi) {
                rc = fail(ctx, "seg=%s: one size, not a range", val);
            }
            r->seg_bytes = lo;
            return rc;
        case KEY_DEPTH:
            if (0 != regpar_parse_int(val, 1, BUFPOOL_MAX_DEPTH, &v, why, sizeof(why))) {
                return fail(ctx, "depth=%s: %s (1 to %d)", val, why, BUFPOOL_MAX_DEPTH);
            }
            r->depth = (int)v;
            return 0;
        case KEY_MEASURED:
            if (strlen(val) > BUFPOOL_RULES_MAX_MEASURED) {
                return fail(ctx, "measured: longer than %d characters", BUFPOOL_RULES_MAX_MEASURED);
            }
            snprintf(extra->measured, sizeof(extra->measured), "%s", val);
            return 0;
        case KEY_FROM:
        default:
            extra->source = find_source(ctx, "from=", val);
            return extra->source < -1 ? -1 : 0;
    }
}

/* The rule's why: "auto, rules FILE:LINE (SOURCE: MEASURED)", where it
 * was measured from the row's source (from=, else the @from block's) and
 * its own measured text.  -2: out of memory. */
static int row_why(const parse_ctx_t *ctx, const row_extra_t *extra, bufpool_rule_t *r)
{
    const char *prov = extra->source >= 0 ? ctx->sources[extra->source].text : "";
    const char *measured = extra->measured;
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

/* Parse one row (line already known not to be blank or a comment). */
static int parse_row(parse_ctx_t *ctx, const char *line, bufpool_rule_t *r)
{
    char tok[BUFPOOL_RULES_MAX_LINE];
    row_extra_t extra = {.measured = "", .source = ctx->block};
    unsigned seen = 0;
    const char *p = line;
    int rc = next_token(ctx, &p, tok, sizeof(tok));
    if (rc < 0 || 0 != row_start(ctx, tok, r)) {
        return -1;
    }
    while ((rc = next_token(ctx, &p, tok, sizeof(tok))) > 0) {
        char *eq = strchr(tok, '=');
        if (NULL == eq || eq == tok) {
            return fail(ctx, "'%s' is not key=value", tok);
        }
        *eq = '\0';
        const char *key = tok, *val = eq + 1;
        int k = 0;
        while (k < KEY_COUNT && 0 != strcmp(key, row_keys[k])) {
            k++;
        }
        if (KEY_COUNT == k) {
            return fail(ctx,
                        "unknown key '%s' (ranks, hosts, ppn, bytes, op, inplace, form, alg, "
                        "seg, depth, measured, from)",
                        key);
        }
        if (seen & (1u << k)) {
            return fail(ctx, "'%s' is given twice", key);
        }
        seen |= 1u << k;
        if ('\0' == val[0] && KEY_MEASURED != k) {
            return fail(ctx, "%s: an empty value", key);
        }
        if (0 != row_key(ctx, (row_key_t)k, val, r, &extra)) {
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
    return row_why(ctx, &extra, r);
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
    ctx.file = bufpool_rules_keep_file(rules, file);
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
        rc = bufpool_rules_grow(rules, rules->n + 1);
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
