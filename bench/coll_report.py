#!/usr/bin/env python3
"""Reports for run-side-by-side.sh: per-point medians, a Markdown table with
ratios against Open MPI's default selection and the issue's targets, and one
log-log plot per collective (through plot.gp).  Also turns OSU micro-benchmark
output into the runner's CSV rows.  See docs/benchmarks.md."""

import argparse
import csv
import math
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict

# Issue 5's targets.  The 0.85 list is the issue's own (exscan is not on it).
REDUCTION_TARGET_COLLECTIVES = {"allreduce", "reduce", "reduce_scatter", "reduce_scatter_block", "scan"}
REDUCTION_TARGET_RATIO = 0.85
REDUCTION_TARGET_MIN_SIZE = 256 * 1024
MOVER_COLLECTIVES = {"bcast", "allgather", "alltoall"}
EVERY_POINT_RATIO = 1.05
# Open MPI 4.1.4 coll/adapt implements only these blocking collectives
# (ompi/mca/coll/adapt/coll_adapt_module.c); the others fall to tuned.
ADAPT_PROVIDES = {"bcast", "reduce"}

CSV_FIELDS = ["tag", "np", "collective", "config", "size", "rep", "avg_us", "min_us", "max_us",
              "iterations", "check", "minflt", "rss_growth_kib", "sys_allocs", "new_regs",
              "scratch_peak", "own_calls", "fallbacks", "served"]
CONFIG_ORDER = ["floor", "default", "bufpool", "adapt", "basic"]
# The latency statistic of tables, ratios and plots: OSU's mean ("avg_us",
# the convention) or the median call ("p50_us", for busy machines).
LAT = "avg_us"


def base_collective(name):
    """allreduce for allreduce, osu_allreduce and coll_latency -F's forms:
    iallreduce, allreduce_init, iallreduce_overlap."""
    if name.startswith("osu_"):
        return name[4:]
    if name.endswith("_overlap"):
        name = name[:-len("_overlap")]
    if name.endswith("_init"):
        return name[:-len("_init")]
    if name.startswith("i") and name[1:] in ALL_COLLECTIVES:
        return name[1:]
    return name


ALL_COLLECTIVES = ("allreduce reduce bcast allgather reduce_scatter reduce_scatter_block "
                   "alltoall gather scatter scan exscan").split()


def target_ratio(collective, size):
    coll = base_collective(collective)
    if coll in REDUCTION_TARGET_COLLECTIVES and size >= REDUCTION_TARGET_MIN_SIZE:
        return REDUCTION_TARGET_RATIO
    return EVERY_POINT_RATIO


def number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def human_size(size):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def fmt_us(value):
    if value is None:
        return "—"
    return f"{value:.2f}" if value < 1000 else f"{value:.0f}"


def fmt_count(value):
    return "n/a" if value is None else f"{value:.0f}"


def fmt_ratio(value):
    return "—" if value is None else f"{value:.2f}"


# ---------------------------------------------------------------------------
# Aggregation

def load_rows(path):
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("np") and r["np"] != "np"]
    for r in rows:
        r["np"] = int(r["np"])
        r["size"] = int(r["size"])
    return rows


def summarize(rows):
    """One record per (np, collective, config, size): the median over every
    repetition and round, and the worst case of the counters that must be
    zero."""
    groups = defaultdict(list)
    for r in rows:
        groups[(r["np"], r["collective"], r["config"], r["size"])].append(r)
    summary = {}
    for key, reps in groups.items():
        def med(field):
            values = [v for v in (number(r[field]) for r in reps) if v is not None]
            return statistics.median(values) if values else None

        def worst(field):
            values = [v for v in (number(r[field]) for r in reps) if v is not None]
            return max(values) if values else None

        checks = {r["check"] for r in reps}
        failed = sorted(c for c in checks if c.startswith("FAIL"))
        summary[key] = {
            "reps": len(reps),
            "avg_us": med("avg_us"),
            "p50_us": med("p50_us"),
            "min_us": med("min_us"),
            "max_us": med("max_us"),
            "check": failed[0] if failed else ("ok" if "ok" in checks else "-"),
            "minflt": med("minflt"),
            "rss_growth_kib": med("rss_growth_kib"),
            "sys_allocs": worst("sys_allocs"),
            "new_regs": worst("new_regs"),
            "scratch_peak": worst("scratch_peak"),
            "served": "/".join(sorted({r["served"] for r in reps})),
            "overlap_pct": med("overlap_pct") if "overlap_pct" in reps[0] else None,
        }
    return summary


def ratio(summary, np_, coll, size, num, den):
    a = summary.get((np_, coll, num, size))
    b = summary.get((np_, coll, den, size))
    if not a or not b or a[LAT] is None or not b[LAT]:
        return None
    return a[LAT] / b[LAT]


def read_meta(path):
    meta = {}
    if not path or not os.path.exists(path):
        return meta
    with open(path) as f:
        for line in f:
            for key, value in re.findall(r"(\w+)=(\S+)", line):
                meta[key] = value
            m = re.search(r"pipeline_depth (\d+) x segment_size (\d+) = (\d+)", line)
            if m:
                meta["scratch_bound"] = int(m.group(3))
                meta["scratch_bound_text"] = f"pipeline_depth {m.group(1)} × segment_size {m.group(2)}"
            m = re.search(r"nps=(.*?) configs=(.*)$", line)
            if m:
                meta["nps_list"] = m.group(1).split()
    return meta


# ---------------------------------------------------------------------------
# Targets

def target_lines(summary, nps, collectives, meta, have_bufpool):
    if not have_bufpool:
        return ["Targets not measured: the bufpool configuration did not run "
                "(component not built or not loaded).", ""]
    lines = ["| Target | " + " | ".join(f"np={n}" for n in nps) + " |",
             "|---|" + "---|" * len(nps)]

    def ratio_target(label, predicate, limit_of):
        cells = []
        for np_ in nps:
            met = total = 0
            worst = None
            for coll in collectives:
                for (n, c, cfg, size), rec in summary.items():
                    if n != np_ or c != coll or cfg != "bufpool" or not predicate(coll, size):
                        continue
                    r = ratio(summary, np_, coll, size, "bufpool", "default")
                    if r is None:
                        continue
                    total += 1
                    limit = limit_of(coll, size)
                    met += r <= limit
                    excess = r / limit
                    if worst is None or excess > worst[0]:
                        worst = (excess, r, coll, size)
            if total == 0:
                cells.append("not measured")
            else:
                verdict = "**met**" if met == total else "**not met**"
                cells.append(f"{verdict} {met}/{total}; worst {worst[1]:.2f}× "
                             f"({worst[2]} {human_size(worst[3])})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    ratio_target("reductions ≤ 0.85× default at ≥ 256 KiB",
                 lambda c, s: base_collective(c) in REDUCTION_TARGET_COLLECTIVES
                 and s >= REDUCTION_TARGET_MIN_SIZE,
                 lambda c, s: REDUCTION_TARGET_RATIO)
    ratio_target("bcast, allgather, alltoall ≤ 1.05× default",
                 lambda c, s: base_collective(c) in MOVER_COLLECTIVES,
                 lambda c, s: EVERY_POINT_RATIO)
    ratio_target("every collective, every size ≤ 1.05× default",
                 lambda c, s: True, lambda c, s: EVERY_POINT_RATIO)

    bound = meta.get("scratch_bound")
    cells = []
    for np_ in nps:
        peaks = [rec["scratch_peak"] for (n, c, cfg, size), rec in summary.items()
                 if n == np_ and base_collective(c) == "allreduce" and cfg == "bufpool"
                 and size == 64 << 20
                 and rec["scratch_peak"] is not None]
        if not peaks:
            cells.append("not measured (no 64 MiB bufpool allreduce point with the pvar)")
        elif bound is None:
            cells.append(f"peak {max(peaks):.0f} B; bound unknown (cvars not readable)")
        else:
            peak = max(peaks)
            if peak <= bound:
                cells.append(f"**met**: peak {peak:.0f} B ≤ {bound} B")
            else:
                cells.append(f"**not met**: peak {peak:.0f} B > {bound} B")
    label = "peak scratch, 64 MiB allreduce ≤ " + meta.get("scratch_bound_text", "depth × segment")
    lines.append(f"| {label} | " + " | ".join(cells) + " |")

    cells = []
    for np_ in nps:
        points = [(c, size, rec) for (n, c, cfg, size), rec in summary.items()
                  if n == np_ and cfg == "bufpool"]
        measured = [(c, s, r) for c, s, r in points
                    if r["sys_allocs"] is not None or r["new_regs"] is not None]
        bad = [(c, s) for c, s, r in measured
               if (r["sys_allocs"] or 0) > 0 or (r["new_regs"] or 0) > 0]
        if not measured:
            cells.append("not measured (pool pvars absent)")
        elif not bad:
            cells.append(f"**met** at all {len(measured)} points")
        else:
            first = ", ".join(f"{c} {human_size(s)}" for c, s in sorted(bad)[:3])
            cells.append(f"**not met** at {len(bad)}/{len(measured)} points (e.g. {first})")
    lines.append("| zero new system allocations and registrations in the timed loop | "
                 + " | ".join(cells) + " |")

    # coll_latency -F overlap: OSU's overlap percentage, bufpool against
    # the default (libnbc) from 64 KiB (issue 20's target).
    cells = []
    for np_ in nps:
        pairs = []
        for (n, c, cfg, size), rec in summary.items():
            if n != np_ or cfg != "bufpool" or not c.endswith("_overlap") or size < 64 << 10:
                continue
            other = summary.get((n, c, "default", size))
            if rec.get("overlap_pct") is not None and other and \
                    other.get("overlap_pct") is not None:
                pairs.append((c, size, rec["overlap_pct"], other["overlap_pct"]))
        if not pairs:
            cells.append("not measured")
            continue
        short = [(c, sz, a_, b_) for c, sz, a_, b_ in pairs if a_ < b_]
        if not short:
            cells.append(f"**met** at all {len(pairs)} points")
        else:
            c, sz, a_, b_ = min(short, key=lambda t: t[2] - t[3])
            cells.append(f"**not met** at {len(short)}/{len(pairs)} points; worst {a_:.0f} % "
                         f"against {b_:.0f} % ({c} {human_size(sz)})")
    lines.append("| overlap ≥ default's from 64 KiB (-F overlap) | " + " | ".join(cells) + " |")

    cells = []
    for np_ in nps:
        # served: bufpool (own algorithm), mixed, fallback (handed to the
        # previous module), other (bufpool's module never saw the calls)
        fallback = sorted({(c, s) for (n, c, cfg, s), rec in summary.items()
                           if n == np_ and cfg == "bufpool" and rec["served"] != "bufpool"})
        cells.append("all calls served by bufpool's own algorithms" if not fallback else
                     f"{len(fallback)} points not (only) served by bufpool (e.g. "
                     + ", ".join(f"{c} {human_size(s)}" for c, s in fallback[:3]) + ")")
    lines.append("| (context) who served the bufpool configuration | " + " | ".join(cells) + " |")
    return lines + [""]


# ---------------------------------------------------------------------------
# Tables

def collective_table(summary, np_, coll, configs):
    sizes = sorted({s for (n, c, cfg, s) in summary if n == np_ and c == coll})
    if not sizes:
        return []
    has = {cfg: any((np_, coll, cfg, s) in summary for s in sizes) for cfg in CONFIG_ORDER}
    base = base_collective(coll)
    header = ["Size"]
    if has["floor"]:
        header.append("floor (us)")
    header.append("default (us)")
    bufpool = has["bufpool"] and "bufpool" in configs
    if bufpool:
        header += ["bufpool (us)", "bufpool/default", "target", "met"]
    if has["adapt"]:
        header += ["adapt (us)" if base in ADAPT_PROVIDES else "adapt¹ (us)", "adapt/default"]
    if has["basic"]:
        header += ["basic (us)", "basic/default"]
    if has["floor"]:
        header.append("default/floor")
        if bufpool:
            header.append("bufpool/floor")
    if bufpool:
        header += ["bufpool new allocs", "bufpool new regs", "bufpool scratch peak (B)"]
    header += ["default minflt", "default RSS growth (KiB)", "check"]

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for size in sizes:
        def get(cfg):
            return summary.get((np_, coll, cfg, size))

        def us(cfg):
            rec = get(cfg)
            return fmt_us(rec[LAT] if rec else None)

        row = [human_size(size)]
        if has["floor"]:
            row.append(us("floor"))
        row.append(us("default"))
        if bufpool:
            r = ratio(summary, np_, coll, size, "bufpool", "default")
            limit = target_ratio(coll, size)
            served = get("bufpool")["served"] if get("bufpool") else ""
            met = "—" if r is None else ("yes" if r <= limit else "**NO**")
            if served and served != "bufpool":
                met += f" ({served})"
            row += [us("bufpool"), fmt_ratio(r), f"≤ {limit:.2f}", met]
        if has["adapt"]:
            row += [us("adapt"), fmt_ratio(ratio(summary, np_, coll, size, "adapt", "default"))]
        if has["basic"]:
            row += [us("basic"), fmt_ratio(ratio(summary, np_, coll, size, "basic", "default"))]
        if has["floor"]:
            row.append(fmt_ratio(ratio(summary, np_, coll, size, "default", "floor")))
            if bufpool:
                row.append(fmt_ratio(ratio(summary, np_, coll, size, "bufpool", "floor")))
        if bufpool:
            rec = get("bufpool") or {}
            row += [fmt_count(rec.get("sys_allocs")), fmt_count(rec.get("new_regs")),
                    fmt_count(rec.get("scratch_peak"))]
        rec = get("default") or {}
        row += [fmt_count(rec.get("minflt")), fmt_count(rec.get("rss_growth_kib"))]
        checks = [summary[(np_, coll, cfg, size)]["check"] for cfg in CONFIG_ORDER
                  if (np_, coll, cfg, size) in summary and cfg != "floor"]
        bad = [c for c in checks if c.startswith("FAIL")]
        row.append("**" + bad[0] + "**" if bad else ("ok" if "ok" in checks else "n/a"))
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    if has["adapt"] and base not in ADAPT_PROVIDES:
        lines += [f"¹ Open MPI 4.1.4's adapt has no {base}: tuned serves it in the adapt "
                  "configuration too, so that column measures tuned again.", ""]
    return lines


def write_markdown(path, summary, meta, configs, nps, collectives, failures):
    have_bufpool = any(cfg == "bufpool" for (_, _, cfg, _) in summary)
    out = ["# Side-by-side collective latency", ""]
    out.append(f"Mode `{meta.get('mode', '?')}`, preset `{meta.get('preset', '?')}`, "
               f"{meta.get('rounds', '?')} round(s) per point (median kept), sizes up to "
               f"{meta.get('max_size', '?')}, configurations: {', '.join(configs)}; "
               f"wall time {int(meta.get('wall_seconds', 0)) // 60} min "
               f"{int(meta.get('wall_seconds', 0)) % 60} s, load average "
               f"{meta.get('load_before', '?')} before and {meta.get('load_after', '?')} after "
               f"on {meta.get('cores', '?')} cores.  Latencies are "
               + ("OSU's \"Avg Latency(us)\" (mean over ranks of each rank's mean call time).  "
                  if LAT == "avg_us" else
                  "medians of the calls (mean over ranks of each rank's median call time; "
                  "--stat p50).  ") +
               "Every point is the median over its rounds.  "
               "floor = memcpy of the bytes a bandwidth-optimal algorithm moves per rank, "
               "measured in the same job.  See docs/benchmarks.md.")
    out.append("")
    out.append("## Targets (bufpool / default)")
    out.append("")
    out += target_lines(summary, nps, collectives, meta, have_bufpool)
    if failures:
        out += ["## Failures", "", failures.strip(), ""]
    for np_ in nps:
        out += [f"## {np_} processes", ""]
        for coll in collectives:
            table = collective_table(summary, np_, coll, configs)
            if table:
                out += [f"### {coll} ({np_} processes)", "", f"![{coll}]({coll}.png)", ""]
                out += table
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def write_summary_csv(path, summary):
    fields = ["np", "collective", "config", "size", "reps", "avg_us", "p50_us", "min_us", "max_us",
              "check",
              "minflt", "rss_growth_kib", "sys_allocs", "new_regs", "scratch_peak", "served",
              "ratio_to_default", "ratio_to_floor", "target_ratio", "target_met"]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(fields)
        for key in sorted(summary, key=lambda k: (k[0], k[1], k[3], CONFIG_ORDER.index(k[2])
                                                   if k[2] in CONFIG_ORDER else 99)):
            np_, coll, cfg, size = key
            rec = summary[key]
            to_default = ratio(summary, np_, coll, size, cfg, "default")
            to_floor = ratio(summary, np_, coll, size, cfg, "floor")
            target = target_ratio(coll, size) if cfg == "bufpool" else None
            met = "" if target is None or to_default is None else (
                "yes" if to_default <= target else "no")
            w.writerow([np_, coll, cfg, size, rec["reps"]] +
                       ["" if rec[k] is None else (f"{rec[k]:.3f}" if isinstance(rec[k], float)
                                                   else rec[k])
                        for k in ("avg_us", "p50_us", "min_us", "max_us", "check", "minflt",
                                  "rss_growth_kib", "sys_allocs", "new_regs", "scratch_peak",
                                  "served")] +
                       ["" if to_default is None else f"{to_default:.3f}",
                        "" if to_floor is None else f"{to_floor:.3f}",
                        "" if target is None else target, met])


# ---------------------------------------------------------------------------
# Plots

def write_plots(out_dir, summary, nps, collectives, plot_script):
    data_dir = os.path.join(out_dir, "plotdata")
    os.makedirs(data_dir, exist_ok=True)
    made = []
    for coll in collectives:
        configs = [c for c in CONFIG_ORDER
                   if any(k[1] == coll and k[2] == c for k in summary)]
        if not configs:
            continue
        data = os.path.join(data_dir, f"{coll}.dat")
        with open(data, "w") as f:
            # Block (np i, configuration j) is gnuplot index i*len(configs)+j.
            for np_ in nps:
                for cfg in configs:
                    f.write(f"# np={np_} config={cfg}\n")
                    points = sorted((s, rec[LAT]) for (n, c, k, s), rec in summary.items()
                                    if n == np_ and c == coll and k == cfg and rec[LAT])
                    if not points:
                        f.write("NaN NaN\n")
                    for size, us in points:
                        f.write(f"{size} {us:.4f}\n")
                    f.write("\n\n")
        png = os.path.join(out_dir, f"{coll}.png")
        cmd = ["gnuplot", "-e",
               f"datafile='{data}'; outfile='{png}'; collective='{coll}'; "
               f"nps='{' '.join(str(n) for n in nps)}'; configs='{' '.join(configs)}'",
               plot_script]
        try:
            result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        except FileNotFoundError:
            print("coll_report: gnuplot not found (apt-get install gnuplot-nox); no plots",
                  file=sys.stderr)
            return made
        if result.returncode != 0 or not os.path.exists(png):
            print(f"coll_report: gnuplot failed for {coll}: {result.stderr.strip()}",
                  file=sys.stderr)
        else:
            made.append(png)
    return made


# ---------------------------------------------------------------------------
# OSU output

def parse_osu(path, np_, collective, config, tag):
    """Rows of 'osu_xxx -f' output: size, avg, min, max, iterations."""
    w = csv.writer(sys.stdout, lineterminator="\n")
    with open(path, errors="replace") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 2 or not re.fullmatch(r"\d+", fields[0]):
                continue
            try:
                values = [float(x) for x in fields[1:5]]
            except ValueError:
                continue
            avg = values[0]
            lo = values[1] if len(values) > 1 else avg
            hi = values[2] if len(values) > 2 else avg
            iters = int(values[3]) if len(values) > 3 else 0
            w.writerow([tag, np_, collective, config, fields[0], 0, f"{avg:.3f}", f"{lo:.3f}",
                        f"{hi:.3f}", iters, "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a",
                        "n/a", config, "n/a"])


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--report", metavar="RAW_CSV")
    p.add_argument("--meta")
    p.add_argument("--out")
    p.add_argument("--plot-script")
    p.add_argument("--configs", default="")
    p.add_argument("--parse-osu", metavar="LOG")
    p.add_argument("--np", type=int)
    p.add_argument("--collective")
    p.add_argument("--config")
    p.add_argument("--tag", default="osu")
    p.add_argument("--stat", choices=["avg", "p50"], default="avg",
                   help="latency statistic for tables, ratios and plots (default: OSU's avg)")
    args = p.parse_args()

    global LAT
    LAT = "p50_us" if args.stat == "p50" else "avg_us"
    if args.parse_osu:
        parse_osu(args.parse_osu, args.np, args.collective, args.config, args.tag)
        return 0
    if not args.report or not args.out:
        p.error("give --report RAW_CSV --out DIR (or --parse-osu LOG ...)")
    if not os.path.exists(args.report):
        print(f"coll_report: {args.report} does not exist: no job produced any point",
              file=sys.stderr)
        return 1
    rows = load_rows(args.report)
    if not rows:
        print(f"coll_report: {args.report} holds no points", file=sys.stderr)
        return 1
    summary = summarize(rows)
    meta = read_meta(args.meta)
    nps = sorted({r["np"] for r in rows})
    order = ALL_COLLECTIVES
    seen = {r["collective"] for r in rows}
    forms = ["{}", "i{}", "{}_init", "i{}_overlap", "osu_{}"]
    collectives = [f.format(c) for f in forms for c in order if f.format(c) in seen]
    configs = args.configs.split() or sorted({r["config"] for r in rows})
    failures_path = os.path.join(args.out, "failures.txt")
    failures = open(failures_path).read() if os.path.exists(failures_path) else ""

    write_summary_csv(os.path.join(args.out, "summary.csv"), summary)
    if args.plot_script:
        write_plots(args.out, summary, nps, collectives, args.plot_script)
    write_markdown(os.path.join(args.out, "results.md"), summary, meta, configs, nps,
                   collectives, failures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
