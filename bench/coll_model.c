/*
 * coll_model: prints the cost model of ompi-mca-coll-bufpool/coll_bufpool_model.h
 * (no MPI needed).  For every collective, process count and message size:
 * the modeled time of each algorithm, the one bufpool's model picks, and
 * the one Open MPI's coll/tuned fixed rules pick, with its modeled time
 * and the ratio, and what coll/bufpool's auto really does for the call
 * (coll_bufpool_decide.c, default tuning, commutative 4-byte elements, out
 * of place): an algorithm, "previous" (handed to the module below), and
 * whether that came from the model or from a measured rule.
 *
 *   coll_model [--hosts H | --ppn N] [--inter tcp|ib|efa] [--links TEXT]
 *              [--links-file FILE] [--coll NAME] [--p "LIST"]
 *              [--min SIZE] [--max SIZE] [--step F] [--segment BYTES] [--all]
 *              [--why] [--raw] [--rules FILE] [--no-default-rules]
 *   coll_model --lint FILE [--verbose] [--strict]
 *   coll_model --compare OLD NEW
 *
 * --links takes the syntax of bufpool_model_links_parse (e.g.
 * "tcp:40,1.2,3;inter=tcp"); the environment variable BUFPOOL_MODEL_LINKS
 * is read first, then the file, then --links.  --all prints every
 * algorithm's time; by default only the picks.  --why adds the reason of
 * bufpool's decision.  --hosts H alone places ranks in blocks of
 * ceil(p / H); with --ppn N too, the fullest host has N ranks.  Sizes go
 * from --min to --max by a factor --step (4).  --raw prints, for scripts
 * (bench/model_vs_measured.py), one line per algorithm "alg COLL P HOSTS
 * PPN BYTES NAME BUFPOOL SECONDS" and one per call "pick COLL P HOSTS PPN
 * BYTES OMPI DECIDED model|rule" instead of the table.  --rules FILE
 * decides with a rules file's rows before the default rules (as
 * coll_bufpool_rules_file does), --no-default-rules without the default
 * rules (coll_bufpool_rules_default=off).
 *
 * --lint FILE checks a rules file's rows (docs/rules.md, "The lint"):
 * each finding as "FILE:LINE: KIND: ...", then a summary line.  Rows that
 * can never decide a call (shadowed by earlier rows, or fitting no
 * communicator) are errors, rows whose range of one condition crosses an
 * earlier row's with another choice are warnings, and first-match
 * exceptions (an earlier row nested in a later one) are listed with
 * --verbose.  Exit status: 0 clean (warnings allowed unless --strict),
 * 1 errors, 2 a file that does not parse.  --compare OLD NEW says whether
 * two rules files decide every call alike (see compare() below).
 */
#include "coll_bufpool_decide.h"
#include "coll_bufpool_model.h"
#include "coll_model_ompi.h"
#include "coll_bufpool_rules.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *msg, const char *arg)
{
    fprintf(stderr, "coll_model: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    exit(2);
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    double mult = 1;
    if (*end == 'K' || *end == 'k') {
        mult = 1024;
    } else if (*end == 'M' || *end == 'm') {
        mult = 1024 * 1024;
    } else if (*end != '\0') {
        die("bad size (use e.g. 4, 4K, 64M)", s);
    }
    if (end == s || v <= 0) {
        die("bad size", s);
    }
    return (size_t)(v * mult);
}

static void apply_links(struct bufpool_model_links *links, const char *text, const char *from)
{
    char err[256];
    if (text && bufpool_model_links_parse(links, text, err, sizeof(err)) != 0) {
        fprintf(stderr, "coll_model: %s: %s\n", from, err);
        exit(2);
    }
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        die("cannot open", path);
    }
    static char buf[BUFPOOL_RULES_MAX_TEXT + 1];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (NULL != len) {
        *len = n;
    }
    return buf;
}

/* The rows auto consults: --rules FILE's, then the default rules. */
static bufpool_rules_t rules;

static void add_rules(const char *text, size_t len, const char *name)
{
    char err[256];
    if (0 != bufpool_rules_parse(&rules, text, len, name, err, sizeof(err))) {
        fprintf(stderr, "coll_model: %s\n", err);
        exit(2);
    }
}

/* --lint FILE: the lint's findings on FILE's rows alone (docs/rules.md).
 * Shadowed and unreachable rows are errors; overlaps (two rows whose
 * ranges of one condition cross) are warnings; exceptions (an earlier row
 * nested in a later one, the normal first-match refinement) are listed
 * with --verbose only.  Exit status 0: no error (no warning either with
 * --strict), 1: errors (or, with --strict, warnings), 2: the file does
 * not parse. */
typedef struct lint_out {
    int verbose;
} lint_out_t;

static void lint_print(const bufpool_lint_finding_t *f, void *arg)
{
    const lint_out_t *o = arg;
    if (BUFPOOL_LINT_EXCEPTION != f->kind || o->verbose) {
        printf("%s\n", f->text);
    }
}

static int lint(const char *path, int verbose, int strict)
{
    size_t len, counts[BUFPOOL_LINT_KINDS];
    const char *text = read_file(path, &len);
    add_rules(text, len, path);
    lint_out_t out = {.verbose = verbose};
    if (0 != bufpool_rules_lint(&rules, lint_print, &out, counts)) {
        die("out of memory", NULL);
    }
    const size_t errors = counts[BUFPOOL_LINT_SHADOWED] + counts[BUFPOOL_LINT_UNREACHABLE];
    printf("%s: %zu rows: %zu shadowed, %zu unreachable, %zu overlaps, %zu unchecked; "
           "%zu first-match exceptions%s\n",
           path, rules.n, counts[BUFPOOL_LINT_SHADOWED], counts[BUFPOOL_LINT_UNREACHABLE],
           counts[BUFPOOL_LINT_OVERLAP], counts[BUFPOOL_LINT_UNCHECKED],
           counts[BUFPOOL_LINT_EXCEPTION], verbose ? "" : " (--verbose lists them)");
    const size_t warnings = counts[BUFPOOL_LINT_OVERLAP] + counts[BUFPOOL_LINT_UNCHECKED];
    return errors > 0 || (strict && warnings > 0) ? 1 : 0;
}

/* --compare OLD NEW: whether two rules files decide every call alike (an
 * edit meant to change no decision: rows reordered, a dead row removed,
 * provenance moved into @source).  Rows are compared by what they decide,
 * not by line: at every critical value of ranks, hosts and ppn (the lower
 * end of every range where the rows of either file may answer
 * differently), every call class and form, the size maps of the two
 * files must give the same algorithm, segment, depth and measured text
 * for every byte count.  That covers every call the matcher can see, not
 * a sample.  Exit status 0: alike, 1: a difference (the first ten
 * printed), 2: a file does not parse. */
static void parse_alone(bufpool_rules_t *r, const char *path)
{
    size_t len;
    char err[256];
    const char *text = read_file(path, &len);
    bufpool_rules_init(r);
    if (0 != bufpool_rules_parse(r, text, len, path, err, sizeof(err))) {
        fprintf(stderr, "coll_model: %s\n", err);
        exit(2);
    }
}

/* The reason of a choice less its "auto, rules FILE:LINE". */
static const char *measured_text(const bufpool_choice_t *c)
{
    if (NULL == c->rule) {
        return "";
    }
    const char *p = c->rule->why + strlen("auto, rules ") + strlen(c->rule->file) + 1;
    while (*p >= '0' && *p <= '9') {
        p++;
    }
    return p;
}

static int alike(const bufpool_choice_t *a, const bufpool_choice_t *b)
{
    return a->alg == b->alg && a->source == b->source && a->seg_bytes == b->seg_bytes &&
           a->depth == b->depth && 0 == strcmp(measured_text(a), measured_text(b));
}

static int cmp_int(const void *a, const void *b)
{
    const int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* The sorted distinct lower ends of the ranges of one condition. */
static size_t critical(const bufpool_rules_t *a, const bufpool_rules_t *b, int which, int *out)
{
    size_t n = 0;
    out[n++] = 0 == which ? 2 : 1 == which ? 1 : 0; /* ranks, hosts, ppn (0: unknown) */
    if (2 == which) {
        out[n++] = 1;
    }
    for (int f = 0; f < 2; f++) {
        const bufpool_rules_t *r = f ? b : a;
        for (size_t i = 0; i < r->n; i++) {
            const bufpool_rule_t *w = &r->rows[i];
            const int lo = 0 == which ? w->ranks_min : 1 == which ? w->hosts_min : w->ppn_min;
            const int hi = 0 == which ? w->ranks_max : 1 == which ? w->hosts_max : w->ppn_max;
            out[n++] = lo;
            if (hi < INT_MAX) {
                out[n++] = hi + 1;
            }
        }
    }
    qsort(out, n, sizeof(*out), cmp_int);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (0 == m || out[i] != out[m - 1]) {
            out[m++] = out[i];
        }
    }
    return m;
}

static void print_choice(const bufpool_choice_t *c, bufpool_coll_id_t coll)
{
    if (NULL == c->rule) {
        printf("no row");
        return;
    }
    printf("%s:%d alg=%s", c->rule->file, c->rule->line,
           c->alg < 1 ? "previous" : bufpool_algorithm_names[coll][c->alg]);
    if (c->seg_bytes) {
        printf(" seg=%zu", c->seg_bytes);
    }
    if (c->depth) {
        printf(" depth=%d", c->depth);
    }
    printf("%s", measured_text(c));
}

static int compare(const char *old_path, const char *new_path)
{
    static const char *const forms[BUFPOOL_NFORMS] = {"blocking", "nonblocking", "persistent"};
    bufpool_rules_t a, b;
    parse_alone(&a, old_path);
    parse_alone(&b, new_path);
    const size_t nrows = a.n > b.n ? a.n : b.n;
    int *values = malloc((2 * (a.n + b.n) + 2) * 3 * sizeof(*values));
    bufpool_range_t *ma = malloc(BUFPOOL_MAP_RANGES(nrows) * sizeof(*ma));
    bufpool_range_t *mb = malloc(BUFPOOL_MAP_RANGES(nrows) * sizeof(*mb));
    if (NULL == values || NULL == ma || NULL == mb) {
        die("out of memory", NULL);
    }
    int *ranks = values, *hosts = values + 2 * (a.n + b.n) + 2, *ppn = hosts + 2 * (a.n + b.n) + 2;
    const size_t nranks = critical(&a, &b, 0, ranks), nhosts = critical(&a, &b, 1, hosts),
                 nppn = critical(&a, &b, 2, ppn);
    unsigned long shapes = 0, diffs = 0;
    for (int coll = 0; coll < BUFPOOL_NCOLLS; coll++) {
        for (size_t r = 0; r < nranks; r++) {
            for (size_t h = 0; h < nhosts; h++) {
                for (size_t q = 0; q < nppn; q++) {
                    for (int cls = 0; cls < 4; cls++) {
                        for (int form = 0; form < BUFPOOL_NFORMS; form++) {
                            const bufpool_shape_t s = {.ranks = ranks[r],
                                                       .hosts = hosts[h],
                                                       .ppn = ppn[q],
                                                       .commutative = cls & 1,
                                                       .in_place = cls & 2,
                                                       .form = form};
                            bufpool_sizemap_build(&a, coll, &s, 0, BUFPOOL_ALG_AUTO, NULL, ma);
                            bufpool_sizemap_build(&b, coll, &s, 0, BUFPOOL_ALG_AUTO, NULL, mb);
                            shapes++;
                            size_t lo = 0, i = 0, j = 0;
                            for (;;) {
                                const size_t hi = ma[i].bytes_max < mb[j].bytes_max
                                                      ? ma[i].bytes_max
                                                      : mb[j].bytes_max;
                                if (!alike(&ma[i].choice, &mb[j].choice) && diffs++ < 10) {
                                    printf("%s ranks=%d hosts=%d ppn=%d op=%s inplace=%s "
                                           "form=%s bytes=%zu..%zu:\n  ",
                                           bufpool_coll_names[coll], s.ranks, s.hosts, s.ppn,
                                           s.commutative ? "commutative" : "noncommutative",
                                           s.in_place ? "yes" : "no", forms[form], lo, hi);
                                    print_choice(&ma[i].choice, coll);
                                    printf("\n  ");
                                    print_choice(&mb[j].choice, coll);
                                    printf("\n");
                                }
                                if (SIZE_MAX == hi) {
                                    break;
                                }
                                lo = hi + 1;
                                i += ma[i].bytes_max == hi;
                                j += mb[j].bytes_max == hi;
                            }
                        }
                    }
                }
            }
        }
    }
    printf("%s and %s (%zu and %zu rows): %lu communicator shapes x call classes x forms, "
           "every byte count: %lu difference(s)\n",
           old_path, new_path, a.n, b.n, shapes, diffs);
    free(values);
    free(ma);
    free(mb);
    bufpool_rules_free(&a);
    bufpool_rules_free(&b);
    return diffs > 0;
}

static void fmt_time(char *out, size_t len, double t)
{
    if (t < 1e-3) {
        snprintf(out, len, "%.1fus", t * 1e6);
    } else if (t < 1) {
        snprintf(out, len, "%.2fms", t * 1e3);
    } else {
        snprintf(out, len, "%.2fs", t);
    }
}

/* What coll/bufpool's auto does with the call: the algorithm's name, or
 * "previous"; *why: the decision's reason. */
static const char *decided(enum bufpool_model_coll c, const struct bufpool_model_links *links,
                           int p, int hosts, int ppn, size_t segment, size_t bytes,
                           const char **why)
{
    static const bufpool_coll_id_t id[BUFPOOL_MODEL_COLLS] = {
        [BUFPOOL_MODEL_ALLREDUCE] = BUFPOOL_COLL_allreduce,
        [BUFPOOL_MODEL_REDUCE] = BUFPOOL_COLL_reduce,
        [BUFPOOL_MODEL_BCAST] = BUFPOOL_COLL_bcast,
        [BUFPOOL_MODEL_ALLGATHER] = BUFPOOL_COLL_allgather,
        [BUFPOOL_MODEL_REDUCE_SCATTER] = BUFPOOL_COLL_reduce_scatter,
        [BUFPOOL_MODEL_ALLTOALL] = BUFPOOL_COLL_alltoall,
        [BUFPOOL_MODEL_GATHER] = BUFPOOL_COLL_gather,
        [BUFPOOL_MODEL_SCATTER] = BUFPOOL_COLL_scatter,
        [BUFPOOL_MODEL_SCAN] = BUFPOOL_COLL_scan};
    const bufpool_tuning_t tuning = {.segment_size = segment,
                                     .pipeline_depth = 4,
                                     .min_size = 0,
                                     .small_size = 16 * 1024 < segment ? 16 * 1024 : segment,
                                     .links = links,
                                     .max_requests = BUFPOOL_MAX_REQUESTS_DEFAULT,
                                     .rules = &rules};
    const bool reduction = BUFPOOL_MODEL_ALLREDUCE == c || BUFPOOL_MODEL_REDUCE == c ||
                           BUFPOOL_MODEL_REDUCE_SCATTER == c || BUFPOOL_MODEL_SCAN == c;
    const bufpool_call_t call = {.comm_size = p,
                                 .hosts = hosts,
                                 .max_ppn = ppn,
                                 .count = reduction ? bytes / 4 : 0,
                                 .bytes = bytes,
                                 .commute = true,
                                 .in_place = false};
    bufpool_plan_t plan;
    bufpool_decide[id[c]](&call, &tuning, BUFPOOL_ALG_AUTO, &plan);
    *why = plan.why;
    /* The decision's own names: the model lists only the algorithms it
     * costs (not the node-level ones, which rows name). */
    return plan.alg < 1 ? "previous" : bufpool_algorithm_names[id[c]][plan.alg];
}

static void fmt_size(char *out, size_t len, size_t b)
{
    if (b >= 1024 * 1024) {
        snprintf(out, len, "%zuM", b >> 20);
    } else if (b >= 1024) {
        snprintf(out, len, "%zuK", b >> 10);
    } else {
        snprintf(out, len, "%zu", b);
    }
}

static void print_raw(enum bufpool_model_coll c, const struct bufpool_model_links *links,
                      const struct bufpool_model_topo *t, size_t b)
{
    const struct bufpool_model_alg *algs = coll_model_all_algs(c);
    const char *name = bufpool_model_coll_name(c);
    for (int i = 0; algs[i].name; i++) {
        printf("alg %s %d %d %d %zu %s %d %.9g\n", name, t->p, t->hosts, t->ppn, b, algs[i].name,
               algs[i].bufpool, algs[i].time(links, t, b));
    }
    const char *om = coll_model_ompi_choice(c, t->p, b), *why;
    const char *d = decided(c, links, t->p, t->hosts, t->ppn, (size_t)t->segment, b, &why);
    printf("pick %s %d %d %d %zu %s %s %s\n", name, t->p, t->hosts, t->ppn, b, om ? om : "-", d,
           strstr(why, "cost model") ? "model" : "rule");
}

/* What the command line asks for. */
typedef struct model_options {
    struct bufpool_model_links links;
    int hosts, ppn, all, only, why, raw, step, default_rules, verbose, strict;
    const char *lint_file;
    const char *plist;
    size_t min, max, segment;
} model_options_t;

/* Parse the command line into o (rules given with --rules are added as
 * read).  --compare runs at once: its exit status, else -1. */
static int parse_options(int argc, char **argv, model_options_t *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        static const struct {
            const char *name;
            size_t offset;
        } flags[] = {{"--all", offsetof(model_options_t, all)},
                     {"--why", offsetof(model_options_t, why)},
                     {"--raw", offsetof(model_options_t, raw)},
                     {"--verbose", offsetof(model_options_t, verbose)},
                     {"--strict", offsetof(model_options_t, strict)}};
        bool flag = false;
        for (size_t f = 0; f < sizeof(flags) / sizeof(*flags); f++) {
            if (0 == strcmp(a, flags[f].name)) {
                *(int *)((char *)o + flags[f].offset) = 1;
                flag = true;
            }
        }
        if (0 == strcmp(a, "--no-default-rules")) {
            o->default_rules = 0;
            flag = true;
        }
        if (flag) {
            continue;
        }
        if (!v) {
            die("missing value after", a);
        }
        i++;
        if (0 == strcmp(a, "--hosts")) {
            o->hosts = atoi(v);
        } else if (0 == strcmp(a, "--ppn")) {
            o->ppn = atoi(v);
        } else if (0 == strcmp(a, "--inter")) {
            char t[32];
            snprintf(t, sizeof(t), "inter=%s", v);
            apply_links(&o->links, t, "--inter");
        } else if (0 == strcmp(a, "--links")) {
            apply_links(&o->links, v, "--links");
        } else if (0 == strcmp(a, "--links-file")) {
            apply_links(&o->links, read_file(v, NULL), v);
        } else if (0 == strcmp(a, "--rules")) {
            size_t len;
            const char *text = read_file(v, &len);
            add_rules(text, len, v);
        } else if (0 == strcmp(a, "--lint")) {
            o->lint_file = v;
        } else if (0 == strcmp(a, "--compare")) {
            if (i + 1 >= argc) {
                die("--compare takes two files", NULL);
            }
            return compare(v, argv[i + 1]);
        } else if (0 == strcmp(a, "--coll")) {
            for (int c = 0; c < BUFPOOL_MODEL_COLLS; c++) {
                if (0 == strcmp(v, bufpool_model_coll_name(c))) {
                    o->only = c;
                }
            }
            if (o->only < 0) {
                die("unknown collective", v);
            }
        } else if (0 == strcmp(a, "--p")) {
            o->plist = v;
        } else if (0 == strcmp(a, "--min")) {
            o->min = parse_size(v);
        } else if (0 == strcmp(a, "--max")) {
            o->max = parse_size(v);
        } else if (0 == strcmp(a, "--step")) {
            o->step = atoi(v);
            if (o->step < 2) {
                die("--step must be at least 2", v);
            }
        } else if (0 == strcmp(a, "--segment")) {
            o->segment = parse_size(v);
        } else {
            die("unknown option (see the comment at the top of bench/coll_model.c)", a);
        }
    }
    return -1;
}

static void print_header(const model_options_t *o)
{
    printf("# links:");
    for (int c = 0; c < BUFPOOL_LINK_CLASSES; c++) {
        printf(" %s=%.2fus,%.2fGB/s,red %.2fGB/s", bufpool_model_link_name(c),
               o->links.link[c].alpha * 1e6, 1e-9 / o->links.link[c].beta,
               1e-9 / o->links.link[c].gamma);
    }
    printf("; between hosts: %s; segment %zu\n", bufpool_model_link_name(o->links.inter),
           o->segment);
    printf("# placement: %s\n", o->hosts > 0 && 0 == o->ppn
                                    ? "--hosts: ranks in blocks of ceil(p/hosts)"
                                    : "ranks in blocks of --ppn per host");
    printf("# decided: coll/bufpool's auto (model: from the model; rule: a measured rule)\n");
    printf("%-14s %5s %5s %6s  %-20s %10s  %-20s %10s  %-20s %10s %6s  %s\n", "collective", "p",
           "hosts", "bytes", "best(any)", "time", "bufpool-auto", "time", "ompi-default", "time",
           "ompi/bp", "decided");
}

/* One line of the table: collective c at topo, b bytes (and with --all
 * every algorithm's time under it). */
static void print_point(const model_options_t *o, enum bufpool_model_coll c,
                        const struct bufpool_model_topo *topo, size_t b)
{
    const struct bufpool_model_links *links = &o->links;
    const struct bufpool_model_alg *algs = coll_model_all_algs(c);
    double tb, ta;
    int any = coll_model_best(c, links, topo, b, 0, &ta);
    int bp = bufpool_model_auto(c, links, topo, b, &tb);
    const char *om = coll_model_ompi_choice(c, topo->p, b);
    double to = NAN;
    for (int i = 0; om && algs[i].name; i++) {
        if (0 == strcmp(algs[i].name, om)) {
            to = algs[i].time(links, topo, b);
        }
    }
    char s[16], t1[16], t2[16], t3[16];
    fmt_size(s, sizeof(s), b);
    fmt_time(t1, sizeof(t1), ta);
    fmt_time(t2, sizeof(t2), tb);
    if (isnan(to)) {
        snprintf(t3, sizeof(t3), "-");
    } else {
        fmt_time(t3, sizeof(t3), to);
    }
    printf("%-14s %5d %5d %6s  %-20s %10s  %-20s %10s  %-20s %10s", bufpool_model_coll_name(c),
           topo->p, topo->hosts, s, algs[any].name, t1, algs[bp].name, t2,
           om ? om : "(not encoded)", t3);
    if (!isnan(to)) {
        printf(" %6.2f", to / tb);
    } else {
        printf(" %6s", "-");
    }
    const char *reason;
    const char *d = decided(c, links, topo->p, topo->hosts, o->ppn, o->segment, b, &reason);
    printf("  %s(%s)", d, strstr(reason, "cost model") ? "model" : "rule");
    if (o->why) {
        printf("  [%s]", reason);
    }
    printf("\n");
    if (o->all) {
        for (int i = 0; algs[i].name; i++) {
            char ti[16];
            fmt_time(ti, sizeof(ti), algs[i].time(links, topo, b));
            printf("    %-20s %10s%s\n", algs[i].name, ti,
                   algs[i].bufpool ? "" : "  (not in bufpool)");
        }
    }
}

int main(int argc, char **argv)
{
    model_options_t o = {.only = -1,
                         .step = 4,
                         .default_rules = 1,
                         .plist = "2 4 8 16 32 64 128 256 512 1024",
                         .min = 4,
                         .max = 64u << 20,
                         .segment = 128 * 1024};
    bufpool_model_links_default(&o.links);
    apply_links(&o.links, getenv("BUFPOOL_MODEL_LINKS"), "BUFPOOL_MODEL_LINKS");
    bufpool_rules_init(&rules);
    const int compared = parse_options(argc, argv, &o);
    if (compared >= 0) {
        return compared;
    }
    if (NULL != o.lint_file) {
        if (rules.n > 0) {
            die("--lint takes no --rules (it lints one file's rows alone)", NULL);
        }
        return lint(o.lint_file, o.verbose, o.strict);
    }
    if (o.default_rules) {
        add_rules(bufpool_default_rules_text, bufpool_default_rules_len,
                  BUFPOOL_DEFAULT_RULES_NAME);
    }
    if (o.ppn < 0 || (0 == o.ppn && 0 == o.hosts)) {
        o.ppn = 0 == o.hosts ? 1 : o.ppn;
    }
    if (o.ppn < 1 && 0 == o.hosts) {
        die("--ppn must be at least 1", NULL);
    }
    print_header(&o);
    for (int c = 0; c < BUFPOOL_MODEL_COLLS; c++) {
        if (o.only >= 0 && c != o.only) {
            continue;
        }
        char pl[256];
        snprintf(pl, sizeof(pl), "%s", o.plist);
        for (char *tok = strtok(pl, " ,"); tok; tok = strtok(NULL, " ,")) {
            int p = atoi(tok);
            if (p < 2 || p > 1024) {
                die("process counts must be 2..1024", tok);
            }
            int h = o.hosts > 0 ? (o.hosts < p ? o.hosts : p) : (p + o.ppn - 1) / o.ppn;
            struct bufpool_model_topo topo = {p, h, o.segment, o.ppn};
            for (size_t b = o.min; b <= o.max; b *= (size_t)o.step) {
                if (o.raw) {
                    print_raw(c, &o.links, &topo, b);
                } else {
                    print_point(&o, c, &topo, b);
                }
            }
        }
    }
    return 0;
}
