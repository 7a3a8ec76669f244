/*
 * The rules lint (coll_bufpool_rules.h; bench/coll_model --lint,
 * docs/rules.md): a tool, not part of the component (libbufpool_lint).
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

/* The boxes and rows bufpool_rules_lint works with, one row at a time. */
typedef struct lint_work {
    lint_box_t *cur, *next; /* what the row still decides; spare */
    size_t ncur;
    size_t *deciders; /* the earlier rows that take some of it */
    size_t ndec;
} lint_work_t;

/* What row i decides: its box less every earlier row's of its collective
 * (w->cur, w->ncur), and the earlier rows that take some of it.  false
 * when the rows before it split it into too many pieces to tell. */
static bool lint_remaining(const bufpool_rules_t *rules, size_t i, lint_work_t *w)
{
    const bufpool_rule_t *r = &rules->rows[i];
    const lint_box_t box = row_box(r);
    size_t work = 0;
    w->ncur = 1;
    w->ndec = 0;
    w->cur[0] = box;
    for (size_t j = 0; j < i && w->ncur > 0; j++) {
        const bufpool_rule_t *o = &rules->rows[j];
        lint_box_t ob = row_box(o), meet;
        if (o->coll != r->coll || !box_meet(&box, &ob, &meet)) {
            continue;
        }
        size_t nnext = 0;
        bool touched = false;
        work += w->ncur;
        if (work > LINT_MAX_WORK) {
            return false;
        }
        for (size_t k = 0; k < w->ncur; k++) {
            if (!box_meet(&w->cur[k], &ob, &meet)) {
                w->next[nnext++] = w->cur[k];
                continue;
            }
            touched = true;
            if (nnext + 2 * LINT_DIMS > LINT_MAX_BOXES) {
                return false;
            }
            nnext += box_subtract(w->cur[k], &ob, w->next + nnext);
        }
        lint_box_t *swap = w->cur;
        w->cur = w->next;
        w->next = swap;
        w->ncur = nnext;
        if (touched) {
            w->deciders[w->ndec++] = j;
        }
    }
    return true;
}

/* Row r, whose calls the deciders take all: which rows do. */
static void lint_shadowed(const bufpool_rules_t *rules, const bufpool_rule_t *r,
                          const lint_work_t *w, lint_text_t *t, bufpool_lint_finding_t *f)
{
    const size_t ndec = w->ndec;
    f->kind = BUFPOOL_LINT_SHADOWED;
    f->other = &rules->rows[w->deciders[ndec - 1]];
    text_add(t, "shadowed: ");
    add_row(t, r);
    text_add(t, " never decides a call: the row%s at line%s ", ndec > 1 ? "s" : "",
             ndec > 1 ? "s" : "");
    for (size_t k = 0; k < ndec; k++) {
        text_add(t, "%s", 0 == k ? "" : k + 1 == ndec ? " and " : ", ");
        add_ref(t, r, &rules->rows[w->deciders[k]]);
    }
    text_add(t, " match%s every call it matches", ndec > 1 ? "" : "es");
}

/* An earlier row o that takes some of r's calls with another choice:
 * within r, a first-match exception to it; crossing it in some condition,
 * an overlap (the two disagree on an edge). */
static void lint_disagreement(const bufpool_rule_t *r, const bufpool_rule_t *o, lint_text_t *t,
                              bufpool_lint_finding_t *f)
{
    const lint_box_t box = row_box(r), ob = row_box(o);
    lint_box_t meet;
    box_meet(&box, &ob, &meet);
    const int d = crossing_dim(&box, &ob);
    text_add(t, "%s:%d: ", r->file, r->line);
    f->other = o;
    if (d < 0) {
        f->kind = BUFPOOL_LINT_EXCEPTION;
        text_add(t, "exception: line ");
        add_ref(t, r, o);
        text_add(t, " (");
        add_row(t, o);
        text_add(t, ") takes");
        add_box(t, &meet);
        text_add(t, " from ");
        add_row(t, r);
    } else {
        f->kind = BUFPOOL_LINT_OVERLAP;
        text_add(t, "overlap: ");
        add_row(t, r);
        text_add(t, " and line ");
        add_ref(t, r, o);
        text_add(t, " (");
        add_row(t, o);
        text_add(t, ") cross on %s, and line ", lint_dim_names[d]);
        add_ref(t, r, o);
        text_add(t, " is nowhere narrower: it decides");
        add_box(t, &meet);
    }
}

int bufpool_rules_lint(const bufpool_rules_t *rules, bufpool_lint_fn report, void *arg,
                       size_t counts[BUFPOOL_LINT_KINDS])
{
    const size_t cap = LINT_MAX_BOXES + 2 * LINT_DIMS;
    lint_work_t w = {.cur = malloc(cap * sizeof(lint_box_t)),
                     .next = malloc(cap * sizeof(lint_box_t)),
                     .deciders = malloc((rules->n + 1) * sizeof(size_t))};
    char buf[1024];
    int rc = 0;
    for (int k = 0; k < BUFPOOL_LINT_KINDS; k++) {
        counts[k] = 0;
    }
    if (NULL == w.cur || NULL == w.next || NULL == w.deciders) {
        rc = -2;
        goto out;
    }
    for (size_t i = 0; i < rules->n; i++) {
        const bufpool_rule_t *r = &rules->rows[i];
        lint_text_t t = {buf, sizeof(buf), 0};
        bufpool_lint_finding_t f = {.row = r, .text = buf};
        text_add(&t, "%s:%d: ", r->file, r->line);
        const char *never = unreachable_why(r);
        if (NULL != never) {
            f.kind = BUFPOOL_LINT_UNREACHABLE;
            text_add(&t, "unreachable: ");
            add_row(&t, r);
            text_add(&t, " matches no communicator (%s)", never);
        } else if (!lint_remaining(rules, i, &w)) {
            f.kind = BUFPOOL_LINT_UNCHECKED;
            text_add(&t, "unchecked: the rows before it split what ");
            add_row(&t, r);
            text_add(&t, " matches into too many pieces to tell");
        } else if (0 == w.ncur) {
            lint_shadowed(rules, r, &w, &t, &f);
        } else {
            for (size_t k = 0; k < w.ndec; k++) {
                const bufpool_rule_t *o = &rules->rows[w.deciders[k]];
                if (!same_choice(o, r)) {
                    t.n = 0;
                    buf[0] = '\0';
                    lint_disagreement(r, o, &t, &f);
                    counts[f.kind]++;
                    report(&f, arg);
                }
            }
            continue;
        }
        counts[f.kind]++;
        report(&f, arg);
    }
out:
    free(w.cur);
    free(w.next);
    free(w.deciders);
    return rc;
}
