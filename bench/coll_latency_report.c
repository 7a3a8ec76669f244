/*
 * coll_latency's output: the tables (their columns start exactly like
 * "osu_<coll> -f") and the CSV rows.  run-side-by-side.sh, coll_report.py
 * and model_vs_measured.py parse both: keep their format.
 */
#include "bufpool_config.h"

#include "coll_latency.h"

#include <math.h>
#include <stdarg.h>

#define FIELD_WIDTH     20 /* OSU column width and precision */
#define FLOAT_PRECISION 2

void root_printf(const char *fmt, ...)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (0 != rank) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
}

void print_preamble(const bench_options *opt, int nprocs)
{
    root_printf("# coll_latency: %d processes, sizes %zu..%zu, iterations %ld/%ld, warm-up "
                "%ld/%ld (small/large), large budget %zu bytes, %d repetition(s)\n",
                nprocs, opt->min_size, opt->max_size, opt->iterations, opt->iterations_large,
                opt->warmup, opt->warmup_large, opt->large_budget, opt->repeat);
    static const char *const forms[] = {
        "blocking (MPI_<Coll>)", "nonblocking (MPI_I<coll> + MPI_Wait)",
        "persistent (MPI_Start + MPI_Wait; the request made before the warm-up)",
        "overlap (MPI_I<coll>, computation as long as the pure communication, MPI_Wait)"};
    root_printf("# form: %s%s%s\n", forms[opt->form],
                FORM_OVERLAP == opt->form && opt->test_calls > 0 ? ", with MPI_Test calls" : "",
                opt->user_op ? "; reductions with a user-defined float sum (--op user)" : "");
    double depth = cvar_read_number("coll_bufpool_pipeline_depth");
    double segment = cvar_read_number("coll_bufpool_segment_size");
    if (depth > 0 && segment > 0) {
        root_printf("# bufpool scratch bound: pipeline_depth %.0f x segment_size %.0f = %.0f "
                    "bytes\n",
                    depth, segment, depth * segment);
    }
    root_printf("# Check: data verified after the timed loop.  MinFlt: minor page faults in the "
                "timed loop (all ranks).\n"
                "# RSSGrow: peak RSS growth in the timed loop (worst rank).  SysAllocs/NewRegs: "
                "pool slabs+direct\n"
                "# allocations and registrations in the timed loop (all ranks).  ScratchPeak: "
                "bufpool scratch\n"
                "# high-water since MPI_Init (worst rank).  Served: who handled the calls.\n"
                "# P50: each rank's median call time, averaged over ranks.\n");
}

static void format_number(char *out, size_t len, double v)
{
    if (isnan(v)) {
        snprintf(out, len, "n/a");
    } else {
        snprintf(out, len, "%.0f", v);
    }
}

static const char *check_text(const point_result *r, const bench_config *cfg, char *buf, size_t len)
{
    if (cfg->is_floor) {
        return "-";
    }
    if (0 == r->wrong) {
        return "ok";
    }
    snprintf(buf, len, "FAIL:%.0f", r->wrong);
    return buf;
}

/* Which module served the calls, as far as the counters can tell. */
static const char *served_by(const point_result *r, const bench_config *cfg)
{
    if (cfg->is_floor) {
        return "memcpy";
    }
    if (!cfg->uses_bufpool || isnan(r->own_calls)) {
        /* bufpool ran inside another configuration's calls: say so */
        return !isnan(r->bufpool_inside) && r->bufpool_inside > 0 ? "bufpool-inside" : cfg->name;
    }
    if (r->own_calls > 0 && r->fallbacks > 0) {
        return "mixed";
    }
    if (r->own_calls > 0) {
        return "bufpool";
    }
    /* neither counter moved: bufpool's module never saw the calls */
    return r->fallbacks > 0 ? "fallback" : "other";
}

const char *form_coll_name(bench_form form, const char *coll, char *buf, size_t len)
{
    static const char *const pattern[] = {"%s", "i%s", "%s_init", "i%s_overlap"};
    snprintf(buf, len, pattern[form], coll);
    return buf;
}

void print_table_header(const coll_desc *cd, bench_form form, const bench_config *cfg, int nprocs)
{
    char name[64];
    root_printf("\n# coll_latency MPI_%s latency, %d processes, configuration %s\n",
                form_coll_name(form, cd->name, name, sizeof(name)), nprocs, cfg->name);
    root_printf("%-*s", 10, "# Size");
    root_printf("%*s%*s%*s", FIELD_WIDTH, "Avg Latency(us)", FIELD_WIDTH, "Min Latency(us)",
                FIELD_WIDTH, "Max Latency(us)");
    root_printf("%*s", 12, "Iterations");
    root_printf("%*s", FIELD_WIDTH, "P50 Latency(us)");
    root_printf("%12s%10s%14s%12s%12s%14s %15s", "Check", "MinFlt", "RSSGrow(KiB)", "SysAllocs",
                "NewRegs", "ScratchPeak", "Served");
    if (FORM_OVERLAP == form) {
        root_printf("%*s%*s%*s", FIELD_WIDTH, "Pure Comm(us)", FIELD_WIDTH, "Compute(us)",
                    FIELD_WIDTH, "Overlap(%)");
    }
    root_printf("\n");
}

void print_table_row(size_t size, const point_result *r, bench_form form, const bench_config *cfg)
{
    char chk[32], flt[32], rss[32], sys[32], regs[32], peak[32];
    format_number(flt, sizeof(flt), r->minflt);
    format_number(rss, sizeof(rss), r->rss_growth);
    format_number(sys, sizeof(sys), r->sys_allocs);
    format_number(regs, sizeof(regs), r->regs);
    format_number(peak, sizeof(peak), r->scratch_peak);
    root_printf("%-*zu", 10, size);
    root_printf("%*.*f%*.*f%*.*f", FIELD_WIDTH, FLOAT_PRECISION, r->avg_us, FIELD_WIDTH,
                FLOAT_PRECISION, r->min_us, FIELD_WIDTH, FLOAT_PRECISION, r->max_us);
    root_printf("%*ld", 12, r->iterations);
    root_printf("%*.*f", FIELD_WIDTH, FLOAT_PRECISION, r->p50_us);
    root_printf("%12s%10s%14s%12s%12s%14s %15s", check_text(r, cfg, chk, sizeof(chk)), flt, rss,
                sys, regs, peak, served_by(r, cfg));
    if (FORM_OVERLAP == form) {
        root_printf("%*.*f%*.*f%*.*f", FIELD_WIDTH, FLOAT_PRECISION, r->comm_us, FIELD_WIDTH,
                    FLOAT_PRECISION, r->compute_us, FIELD_WIDTH, FLOAT_PRECISION, r->overlap_pct);
    }
    root_printf("\n");
}

void csv_header(FILE *csv)
{
    fprintf(csv, "tag,np,collective,config,size,rep,avg_us,min_us,max_us,iterations,check,"
                 "minflt,rss_growth_kib,sys_allocs,new_regs,scratch_peak,own_calls,fallbacks,"
                 "served,p50_us,comm_us,compute_us,overlap_pct\n");
}

void csv_row(FILE *csv, const char *tag, const coll_desc *cd, bench_form form,
             const bench_config *cfg, int nprocs, size_t size, int rep, const point_result *r)
{
    char name[64];
    char chk[32], v[6][32];
    format_number(v[0], sizeof(v[0]), r->minflt);
    format_number(v[1], sizeof(v[1]), r->rss_growth);
    format_number(v[2], sizeof(v[2]), r->sys_allocs);
    format_number(v[3], sizeof(v[3]), r->regs);
    format_number(v[4], sizeof(v[4]), r->scratch_peak);
    format_number(v[5], sizeof(v[5]), r->own_calls);
    char fb[32];
    format_number(fb, sizeof(fb), r->fallbacks);
    char ov[3][32];
    snprintf(ov[0], sizeof(ov[0]), isnan(r->comm_us) ? "n/a" : "%.3f", r->comm_us);
    snprintf(ov[1], sizeof(ov[1]), isnan(r->compute_us) ? "n/a" : "%.3f", r->compute_us);
    snprintf(ov[2], sizeof(ov[2]), isnan(r->overlap_pct) ? "n/a" : "%.1f", r->overlap_pct);
    fprintf(csv, "%s,%d,%s,%s,%zu,%d,%.3f,%.3f,%.3f,%ld,%s,%s,%s,%s,%s,%s,%s,%s,%s,%.3f,%s,%s,%s\n",
            tag, nprocs, form_coll_name(form, cd->name, name, sizeof(name)), cfg->name, size, rep,
            r->avg_us, r->min_us, r->max_us, r->iterations, check_text(r, cfg, chk, sizeof(chk)),
            v[0], v[1], v[2], v[3], v[4], v[5], fb, served_by(r, cfg), r->p50_us, ov[0], ov[1],
            ov[2]);
    fflush(csv);
}
