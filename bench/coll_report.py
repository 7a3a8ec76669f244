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
import textwrap
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
CONFIG_ORDER = ["floor", "default", "bufpool", "tuned", "han", "han_nopersist", "acoll", "xhc",
                "adapt", "basic"]
# Open MPI's components measured beside bufpool (issue 21), and what each is.
PEERS = ["tuned", "han", "han_nopersist", "acoll", "xhc", "adapt", "basic"]
PEER_TEXT = {
    "default": "Open MPI's own selection without bufpool",
    "tuned": "coll/tuned first",
    "han": "coll/han first (its persistent buffers on, as by default on 6.0)",
    "han_nopersist": "coll/han first, coll_han_use_persist_buffers 0",
    "acoll": "coll/acoll first (coll_acoll_comm_size_thresh lowered to 2)",
    "xhc": "coll/xhc first (its reductions left out: they need XPMEM)",
    "adapt": "coll/adapt first",
    "basic": "basic, self and libnbc only",
}
# Issue 21's targets.  On several hosts bufpool against han with its
# persistent buffers, for the collectives both serve, from 4 KiB; on one
# host against the best of tuned (the default there), acoll and adapt.
HAN_TARGET_MIN_SIZE = 4 * 1024
HAN_TARGET_RATIO = 1.0
HAN_REDUCTIONS = {"allreduce", "reduce"}
HAN_REDUCTION_RATIO = 0.85
ONE_HOST_PEERS = ["default", "tuned", "acoll", "adapt"]
ONE_HOST_RATIO = 1.05
# A peer beats bufpool "beyond the noise" at a point when it is faster by
# more than this margin and every one of its rounds beats every one of
# bufpool's (with one round: by more than twice the margin).
WIN_MARGIN = 0.05
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


def load_failures(path):
    """failures.csv of the runner: points that crashed or hung, keyed like
    the summary."""
    failed = {}
    if not path or not os.path.exists(path):
        return failed
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            try:
                key = (int(r["np"]), r["collective"], r["config"], int(r["size"]))
            except (KeyError, ValueError):
                continue
            failed.setdefault(key, []).append(f"{r['kind']} (log: {r.get('log', '?')})")
    return failed


def summarize(rows, crashed=None):
    """One record per (np, collective, config, size): the median over every
    repetition and round, and the worst case of the counters that must be
    zero.  A point that computed wrongly in any round, or crashed or hung
    (crashed: from failures.csv), keeps its record but no latency: it is
    left out of every timing, ratio and plot."""
    crashed = crashed or {}
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
        lat_values = [v for v in (number(r[LAT]) for r in reps) if v is not None]
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
            "values": lat_values,
            "excluded": ("wrong" if failed else None) or ("failed" if key in crashed else None),
        }
        if summary[key]["excluded"] == "failed" and not failed:
            summary[key]["check"] = "FAILED"
        if summary[key]["excluded"]:
            for field in ("avg_us", "p50_us", "min_us", "max_us"):
                summary[key][field] = None
            summary[key]["values"] = []
    # Points that crashed before any round was written still get a record.
    for key, kinds in crashed.items():
        if key not in summary:
            summary[key] = {"reps": 0, "avg_us": None, "p50_us": None, "min_us": None,
                            "max_us": None, "check": "FAILED", "minflt": None,
                            "rss_growth_kib": None, "sys_allocs": None, "new_regs": None,
                            "scratch_peak": None, "served": "", "overlap_pct": None,
                            "values": [], "excluded": "failed"}
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
# At a glance: bufpool / default per collective and size band

# Size bands: latency-bound, middle, bandwidth-bound.
BANDS = [("small", "< 16 KiB", 0, 16 << 10), ("mid", "16 KiB - 1 MiB", 16 << 10, 1 << 20),
         ("large", ">= 1 MiB", 1 << 20, 1 << 62)]
GLANCE_MARGIN = 0.05  # never call a difference smaller than this faster or slower


def round_spread(summary, np_):
    """Median over bufpool's and default's points of max/min over rounds
    (None with one round)."""
    spreads = sorted(max(rec["values"]) / min(rec["values"])
                     for (n, c, k, s), rec in summary.items()
                     if n == np_ and k in ("bufpool", "default") and len(rec["values"]) >= 2
                     and min(rec["values"]) > 0)
    return spreads[len(spreads) // 2] if spreads else None


def band_verdict(summary, np_, coll, lo, hi):
    """(geometric mean of bufpool / default over the band's sizes, word,
    whether bufpool ran any of the band's calls with its own algorithms), or
    None.  faster (slower): the mean beyond GLANCE_MARGIN and, at half the
    sizes at least, every round of bufpool faster (slower) than every round
    of default (with one round: the ratio beyond twice the margin); same:
    within the margin; unclear: beyond it, but the rounds overlap."""
    ratios, own, fast, slow = [], False, 0, 0
    for (n, c, cfg, size), rec in summary.items():
        if n != np_ or c != coll or cfg != "bufpool" or not lo <= size < hi:
            continue
        r = ratio(summary, np_, coll, size, "bufpool", "default")
        if r is None or r <= 0:
            continue
        ratios.append(r)
        own |= any(x in ("bufpool", "mixed") for x in rec["served"].split("/"))
        a, b = rec["values"], summary[(np_, coll, "default", size)]["values"]
        if len(a) >= 2 and len(b) >= 2:
            fast += max(a) < min(b)
            slow += min(a) > max(b)
        else:
            fast += r < 1 - 2 * GLANCE_MARGIN
            slow += r > 1 + 2 * GLANCE_MARGIN
    if not ratios:
        return None
    g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    if g < 1 - GLANCE_MARGIN and 2 * fast >= len(ratios):
        word = "faster"
    elif g > 1 + GLANCE_MARGIN and 2 * slow >= len(ratios):
        word = "slower"
    elif abs(g - 1) <= GLANCE_MARGIN:
        word = "same"
    else:
        word = "unclear"
    return g, word, own


def glance(summary, nps, collectives, meta):
    """The verdict at a glance: for each process count, collective and size
    band, bufpool / default and what it means (band_verdict).  Returns (text
    lines, Markdown lines), or empty lists when bufpool or default did not
    run."""
    cfgs = {k[2] for k in summary}
    if "bufpool" not in cfgs or "default" not in cfgs:
        return [], []
    cores = int(meta.get("cores", "0") or 0)
    hosts = int(meta.get("hosts", "1") or 1)
    head = ("bufpool / default: latency ratio per size band (geometric mean over the band's "
            f"sizes of the medians over rounds; {'p50' if LAT == 'p50_us' else 'OSU avg'}); "
            "below 1 bufpool is faster")
    legend = [f"faster, slower: beyond {100 * GLANCE_MARGIN:.0f} % and, at half the band's "
              "sizes at least, every round beats every round of the other (one round: beyond "
              f"{200 * GLANCE_MARGIN:.0f} %)",
              f"same: within {100 * GLANCE_MARGIN:.0f} %; unclear: beyond it, but the rounds "
              "overlap (noise)",
              "* bufpool ran none of these calls with its own algorithms (it handed them back "
              "to Open MPI's module, or was not selected): the difference is its toll and noise"]
    # glance.txt is plain ASCII (any terminal); results.md marks with a dagger
    text = [textwrap.fill(head, 100)]
    md = ["## At a glance", "", head + ".  " + ".  ".join(legend).replace("* ", "† ") + ".", ""]
    md += ["| np | collective | " + " | ".join(f"{b[0]} ({b[1]})" for b in BANDS) + " |",
           "|---|---|" + "---|" * len(BANDS)]
    faster, slower = [], []
    width = max(len(c) for c in collectives + ["collective"]) + 2
    for np_ in nps:
        spread = round_spread(summary, np_)
        over = hosts == 1 and cores and np_ > cores
        note = f"np={np_}"
        if over:
            note += f" (oversubscribed on {cores} cores: timings are mostly scheduling noise)"
        if spread:
            note += f"; rounds of one point differ by {100 * (spread - 1):.0f} % (median)"
        else:
            note += "; one round: the noise is not measured, read the verdicts loosely"
        text += ["", note,
                 (f"  {'collective':<{width}}" + "".join(f"{b[0] + ' ' + b[1]:<22}"
                                                        for b in BANDS)).rstrip()]
        for coll in collectives:
            cells = []
            for band, label, lo, hi in BANDS:
                v = band_verdict(summary, np_, coll, lo, hi)
                if v is None:
                    cells.append("-")
                    continue
                g, word, own = v
                cells.append(f"{g:.2f} {word}{'' if own else ' *'}")
                if word in ("faster", "slower"):
                    (faster if word == "faster" else slower).append((np_, coll, band, g, own, over))
            if all(c == "-" for c in cells):
                continue
            text.append((f"  {coll:<{width}}" + "".join(f"{c:<22}" for c in cells)).rstrip())
            md.append(f"| {np_} | {coll} | " + " | ".join("—" if c == "-" else c.replace(" *", " †")
                                                          for c in cells) + " |")
    text += [""] + [textwrap.fill(line, 100, initial_indent="  ", subsequent_indent="    ")
                    for line in legend]

    def listing(items):
        return ", ".join(f"{c} {b} at np={n} ({g:.2f}{'' if own else ' *'}"
                         f"{', oversubscribed' if ov else ''})"
                         for n, c, b, g, own, ov in items)

    own_faster = [f for f in faster if f[4]]
    if own_faster:
        verdict = "bufpool helps on this machine: faster for " + listing(own_faster)
    else:
        verdict = "bufpool is not clearly faster anywhere in this run"
    verdict += "; " + ("slower for " + listing(slower) if slower else
                       "nowhere clearly slower") + "."
    if slower and all(not f[4] for f in slower):
        verdict += "  Every slower band is one bufpool handed back (*): its toll, or noise."
    text += ["", textwrap.fill("Verdict: " + verdict, 100, subsequent_indent="  ")]
    md += ["", "**Verdict:** " + verdict.replace(" *)", " †)").replace("(*)", "(†)"), ""]
    if any(hosts == 1 and cores and n > cores for n in nps):
        md += ["Process counts above the core count run oversubscribed: their timings are "
               "mostly scheduling noise.", ""]
    return text, md


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
    peers = [p for p in PEERS if has[p]]
    for p in peers:
        label = p
        if p == "adapt" and base not in ADAPT_PROVIDES:
            label = "adapt¹"
        header += [f"{label} (us)", f"{p}/default"]
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
            if rec and rec.get("excluded"):
                return "**" + rec["excluded"].upper() + "**"
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
        for p in peers:
            cell = us(p)
            rec = get(p)
            if rec and "bufpool-inside" in rec.get("served", ""):
                cell += " (bufpool inside)"
            row += [cell, fmt_ratio(ratio(summary, np_, coll, size, p, "default"))]
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
        checks = [(cfg, summary[(np_, coll, cfg, size)]["check"]) for cfg in CONFIG_ORDER
                  if (np_, coll, cfg, size) in summary and cfg != "floor"]
        bad = [f"{cfg} {c}" for cfg, c in checks if c.startswith("FAIL")]
        row.append("**" + ", ".join(bad) + "**" if bad else
                   ("ok" if any(c == "ok" for _, c in checks) else "n/a"))
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    if has["adapt"] and base not in ADAPT_PROVIDES:
        lines += [f"¹ Open MPI 4.1.4's adapt has no {base}: tuned serves it in the adapt "
                  "configuration too, so that column measures tuned again.", ""]
    return lines


# ---------------------------------------------------------------------------
# Peers (issue 21): bufpool against each of Open MPI's components

def peer_wins(summary, np_, coll, size, peer):
    """Whether peer beats bufpool at this point beyond the noise, and the
    ratio bufpool / peer."""
    a = summary.get((np_, coll, "bufpool", size))
    b = summary.get((np_, coll, peer, size))
    if not a or not b or a[LAT] is None or not b[LAT]:
        return None, None
    r = a[LAT] / b[LAT]
    if len(a["values"]) >= 2 and len(b["values"]) >= 2:
        clear = r > 1 + WIN_MARGIN and max(b["values"]) < min(a["values"])
    else:
        clear = r > 1 + 2 * WIN_MARGIN
    return clear, r


def noise_lines(summary, nps):
    """How much the rounds of one point spread (max / min over rounds), per
    configuration: the scale against which the ratios below are read."""
    out = []
    for np_ in nps:
        cells = []
        for cfg in ["bufpool", "default"] + PEERS:
            spreads = sorted(max(rec["values"]) / min(rec["values"])
                             for (n, c, k, s), rec in summary.items()
                             if n == np_ and k == cfg and len(rec["values"]) >= 2
                             and min(rec["values"]) > 0)
            if spreads:
                med = spreads[len(spreads) // 2]
                p90 = spreads[min(len(spreads) - 1, int(len(spreads) * 0.9))]
                cells.append(f"{cfg} {med:.2f} / {p90:.2f}")
        if cells:
            out.append(f"- np={np_}: max/min over rounds, median / 90th percentile over points: "
                       + "; ".join(cells))
    return out


def peer_section(summary, nps, collectives, meta):
    peers_seen = [p for p in PEERS if any(k[2] == p for k in summary)]
    if "bufpool" not in {k[2] for k in summary} or not peers_seen:
        return []
    out = ["## bufpool and Open MPI's components", "",
           "Configurations: " + "; ".join(f"`{c}` = {PEER_TEXT[c]}" for c in
                                          ["default"] + peers_seen) + ".  "
           "Each is a communicator of the same job (in-job mode) or a job of its own (job "
           "mode); while another configuration's points run, bufpool takes no communicator, "
           "so that han's own sub-communicators leave it out as in a job without it "
           "(a point where bufpool served calls anyway is marked \"bufpool inside\").", ""]
    out += ["**Noise.**"] + noise_lines(summary, nps) + [""]
    hosts = int(meta.get("hosts", "1") or 1)
    # Issue 21's targets.
    out += ["### Targets (issue 21)", "", "| Target | " + " | ".join(f"np={n}" for n in nps) + " |",
            "|---|" + "---|" * len(nps)]

    def target_row(label, points):
        cells = []
        for np_ in nps:
            pts = [p for p in points(np_)]
            if not pts:
                cells.append("not measured")
                continue
            bad = [(r / lim, r, c, s) for c, s, r, lim in pts if r > lim]
            if not bad:
                worst = max(pts, key=lambda t: t[2] / t[3])
                cells.append(f"**met** {len(pts)}/{len(pts)}; worst {worst[2]:.2f}× "
                             f"({worst[0]} {human_size(worst[1])})")
            else:
                w = max(bad)
                cells.append(f"**not met** {len(pts) - len(bad)}/{len(pts)}; worst {w[1]:.2f}× "
                             f"({w[2]} {human_size(w[3])})")
        out.append(f"| {label} | " + " | ".join(cells) + " |")

    def han_points(np_):
        pts = []
        for (n, c, cfg, size), rec in summary.items():
            if n != np_ or cfg != "han" or size < HAN_TARGET_MIN_SIZE:
                continue
            _, r = peer_wins(summary, np_, c, size, "han")
            if r is None:
                continue
            lim = HAN_REDUCTION_RATIO if base_collective(c) in HAN_REDUCTIONS and \
                size >= REDUCTION_TARGET_MIN_SIZE else HAN_TARGET_RATIO
            pts.append((c, size, r, lim))
        return pts

    def one_host_points(np_):
        pts = []
        for (n, c, cfg, size), rec in summary.items():
            if n != np_ or cfg != "bufpool" or rec[LAT] is None:
                continue
            best = [summary[(n, c, p, size)][LAT] for p in ONE_HOST_PEERS
                    if (n, c, p, size) in summary and summary[(n, c, p, size)][LAT]]
            if best:
                pts.append((c, size, rec[LAT] / min(best), ONE_HOST_RATIO))
        return pts

    if "han" in peers_seen:
        target_row("bufpool ≤ 1.0× han (persistent buffers) from 4 KiB, ≤ 0.85× for "
                   "allreduce and reduce from 256 KiB", han_points)
    if hosts <= 1:
        target_row("bufpool ≤ 1.05× the best of tuned (default), acoll and adapt, every size",
                   one_host_points)
    out.append("")

    # Where a peer beats bufpool beyond the noise.
    out += ["### Where a component beats bufpool beyond the noise", "",
            f"bufpool / component > {1 + WIN_MARGIN:.2f} and every round of the component "
            "faster than every round of bufpool's (one round: > "
            f"{1 + 2 * WIN_MARGIN:.2f}).", ""]
    wins = []
    for np_ in nps:
        for coll in collectives:
            sizes = sorted({s for (n, c, k, s) in summary if n == np_ and c == coll})
            for size in sizes:
                for p in peers_seen:
                    clear, r = peer_wins(summary, np_, coll, size, p)
                    if clear:
                        served = summary[(np_, coll, "bufpool", size)]["served"]
                        wins.append(f"| {np_} | {coll} | {human_size(size)} | {p} | {r:.2f} | "
                                    f"{served} |")
    if wins:
        out += ["| np | collective | size | component | bufpool / component | bufpool served by |",
                "|---|---|---|---|---|---|"] + wins
    else:
        out.append("None.")
    out.append("")

    # Per collective: bufpool against the best component at each size.
    for np_ in nps:
        out += [f"### bufpool / best component, {np_} processes", "",
                "| collective | " + " | ".join(human_size(s) for s in sorted(
                    {s for (n, c, k, s) in summary if n == np_ and k == "bufpool"})) + " |"]
        sizes = sorted({s for (n, c, k, s) in summary if n == np_ and k == "bufpool"})
        out.append("|---|" + "---|" * len(sizes))
        for coll in collectives:
            cells = []
            for size in sizes:
                a = summary.get((np_, coll, "bufpool", size))
                best = None
                for p in ["default"] + peers_seen:
                    rec = summary.get((np_, coll, p, size))
                    if rec and rec[LAT] and (best is None or rec[LAT] < best[1]):
                        best = (p, rec[LAT])
                if not a or a[LAT] is None or best is None:
                    cells.append("—")
                else:
                    r = a[LAT] / best[1]
                    cells.append(f"{r:.2f} {best[0]}" if r > 1 else f"{r:.2f}")
            if any(c != "—" for c in cells):
                out.append(f"| {coll} | " + " | ".join(cells) + " |")
        out += ["", "(ratio ≤ 1: bufpool is the fastest; above 1 the fastest component is "
                "named)", ""]
    return out


def failure_lines(summary, crashed):
    """FAILED (crashed, hung) and WRONG (data check) lines, one per point."""
    lines = []
    for (np_, coll, cfg, size), kinds in sorted(crashed.items()):
        for kind in kinds:
            lines.append(f"- FAILED: np={np_} {cfg} {coll} {human_size(size)}: {kind}")
    for (np_, coll, cfg, size), rec in sorted(summary.items()):
        if rec.get("excluded") == "wrong":
            lines.append(f"- WRONG: np={np_} {cfg} {coll} {human_size(size)}: data check "
                         f"{rec['check']} (wrong elements, summed over ranks)")
    return lines


def write_markdown(path, summary, meta, configs, nps, collectives, failures, crashed=None,
                   notes=""):
    have_bufpool = any(cfg == "bufpool" for (_, _, cfg, _) in summary)
    out = ["# Side-by-side collective latency", ""]
    out.append(f"Mode `{meta.get('mode', '?')}`, preset `{meta.get('preset', '?')}`, "
               f"{meta.get('rounds', '?')} round(s) per point (median kept), sizes "
               + (f"{meta['min_size']} to {meta.get('max_size', '?')} by ×"
                  f"{meta.get('size_factor', '2')}" if "min_size" in meta else
                  f"up to {meta.get('max_size', '?')}") +
               f", configurations: {', '.join(configs)}; "
               f"wall time {int(meta.get('wall_seconds', 0)) // 60} min "
               f"{int(meta.get('wall_seconds', 0)) % 60} s"
               + (f" (build {meta['build_seconds']} s, measuring {meta['measure_seconds']} s)"
                  if "measure_seconds" in meta else "") + ", load average "
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
    out += glance(summary, nps, collectives, meta)[1]
    out.append("## Targets (bufpool / default)")
    out.append("")
    out += target_lines(summary, nps, collectives, meta, have_bufpool)
    points = failure_lines(summary, crashed or {})
    if points or failures:
        out += ["## Failures", "",
                "Every point listed here is left out of the timings, ratios and plots; the "
                "other configurations went on.", ""]
        out += points
        # the runner's own failures (a job that died before its first
        # point, ...); the points' are listed above from failures.csv
        others = [line for line in failures.strip().splitlines()
                  if line.strip() and " B: " not in line]
        if others:
            out += [""] + others
        out.append("")
    if notes.strip():
        out += ["## Not measured, and why", "",
                "\n".join("- " + line for line in notes.strip().splitlines()), ""]
    out += peer_section(summary, nps, collectives, meta)
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


# ---------------------------------------------------------------------------
# Footprint (run-side-by-side.sh --footprint)

def write_footprint(csv_path, meta, out_dir, failures, notes):
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    moments = []
    for r in rows:
        if r["at"] not in moments and r["at"] not in ("base",):
            moments.append(r["at"])
    by = defaultdict(dict)
    for r in rows:
        by[(int(r["np"]), r["config"])][r["at"]] = r
    out = ["# Memory kept by each configuration", ""]
    out.append(f"bench/coll_footprint, one job per configuration: a burst of "
               f"{meta.get('footprint_size', '?')} collectives (3 calls each of allreduce, "
               "allgather, bcast, reduce_scatter_block, alltoall, gather, scatter; every result "
               "checked), then idle with an MPI_Test every 100 ms.  MiB above each rank's "
               "baseline (after MPI_Init and its own buffers), the most of any rank: resident "
               "(RSS) and anonymous resident memory (smaps Anonymous; shared-memory files are "
               "in RSS only).  pool: mpool/regpar's bytes held at that moment / its cap "
               "(mpool_regpar_max_capacity), and bufpool's scratch high-water mark.  "
               f"Checkpoints: {', '.join(m for m in moments if m != 'burst')} after the burst.  "
               f"Load average {meta.get('load_before', '?')} before, "
               f"{meta.get('load_after', '?')} after; {meta.get('hosts', '1')} host(s).")
    out.append("")
    header = ["np", "configuration", "baseline RSS"]
    for m in moments:
        header += [f"RSS kept {m}", f"anon kept {m}"]
    header += ["pool held " + "/".join(moments) + " (cap)", "scratch peak", "check", "note"]
    out += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for (np_, cfg) in sorted(by, key=lambda k: (k[0], CONFIG_ORDER.index(k[1])
                                                if k[1] in CONFIG_ORDER else 99)):
        d = by[(np_, cfg)]
        base = d.get("base", {})
        row = [str(np_), cfg, base.get("rss_mib", "—")]
        for m in moments:
            rec = d.get(m, {})
            row += [rec.get("rss_mib", "—"), rec.get("anon_mib", "—")]
        held = [d.get(m, {}).get("pool_held_mib", "") for m in moments]
        cap = next((d[m].get("pool_cap_mib") for m in moments if m in d), "")
        if any(h not in ("", "-1.0") for h in held):
            row.append("/".join(held) + f" ({cap})")
            peak = d.get(moments[-1], {}).get("scratch_peak_mib", "")
            row.append(peak if peak != "-1.0" else "n/a")
        else:
            row += ["n/a", "n/a"]
        any_rec = next(iter(d.values()))
        row += [any_rec.get("check", "") or "—", any_rec.get("note", "")]
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    # The target: bufpool's pool at most its cap at every moment.
    verdicts = []
    for (np_, cfg), d in sorted(by.items()):
        if cfg != "bufpool":
            continue
        for m in moments:
            rec = d.get(m, {})
            held, cap = number(rec.get("pool_held_mib")), number(rec.get("pool_cap_mib"))
            if held is not None and cap is not None and cap > 0:
                verdicts.append((np_, m, held, cap))
    if verdicts:
        bad = [v for v in verdicts if v[2] > v[3]]
        out.append("Target (issue 21): bufpool's pool at most its cap after the burst and idle: "
                   + ("**met** at every moment (" if not bad else "**not met** (")
                   + "; ".join(f"np={n} {m}: {h:.1f} of {c:.0f} MiB" for n, m, h, c in verdicts)
                   + ").")
        out.append("")
    if failures.strip():
        out += ["## Failures", "", failures.strip(), ""]
    if notes.strip():
        out += ["## Not measured, and why", "",
                "\n".join("- " + line for line in notes.strip().splitlines()), ""]
    with open(os.path.join(out_dir, "footprint.md"), "w") as f:
        f.write("\n".join(out) + "\n")


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
    p.add_argument("--footprint", metavar="FOOTPRINT_CSV",
                   help="write footprint.md from run-side-by-side.sh --footprint's CSV")
    p.add_argument("--stat", choices=["avg", "p50"], default="avg",
                   help="latency statistic for tables, ratios and plots (default: OSU's avg)")
    args = p.parse_args()

    global LAT
    LAT = "p50_us" if args.stat == "p50" else "avg_us"
    if args.parse_osu:
        parse_osu(args.parse_osu, args.np, args.collective, args.config, args.tag)
        return 0
    if args.footprint:
        if not args.out:
            p.error("--footprint needs --out DIR")
        failures_path = os.path.join(args.out, "failures.txt")
        notes_path = os.path.join(args.out, "notes.txt")
        write_footprint(args.footprint, read_meta(args.meta), args.out,
                        open(failures_path).read() if os.path.exists(failures_path) else "",
                        open(notes_path).read() if os.path.exists(notes_path) else "")
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
    crashed = load_failures(os.path.join(args.out, "failures.csv"))
    summary = summarize(rows, crashed)
    meta = read_meta(args.meta)
    nps = sorted({r["np"] for r in rows})
    order = ALL_COLLECTIVES
    seen = {r["collective"] for r in rows}
    forms = ["{}", "i{}", "{}_init", "i{}_overlap", "osu_{}"]
    collectives = [f.format(c) for f in forms for c in order if f.format(c) in seen]
    configs = args.configs.split() or sorted({r["config"] for r in rows})
    failures_path = os.path.join(args.out, "failures.txt")
    failures = open(failures_path).read() if os.path.exists(failures_path) else ""
    notes_path = os.path.join(args.out, "notes.txt")
    notes = open(notes_path).read() if os.path.exists(notes_path) else ""

    write_summary_csv(os.path.join(args.out, "summary.csv"), summary)
    if args.plot_script:
        write_plots(args.out, summary, nps, collectives, args.plot_script)
    write_markdown(os.path.join(args.out, "results.md"), summary, meta, configs, nps,
                   collectives, failures, crashed, notes)
    text = glance(summary, nps, collectives, meta)[0]
    if text:
        with open(os.path.join(args.out, "glance.txt"), "w") as f:
            f.write("\n".join(text) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
