#!/usr/bin/env python3
"""Summary of run.sh: median over rounds of each point's p50 (each rank's
median call, averaged over ranks), ratios against a-below-han within this
run, who served the timed calls, and what bufpool's own report counted."""
import csv
import glob
import os
import re
import statistics
import sys
from collections import defaultdict


def num(text):
    """A CSV number; n/a (no bufpool counters in this configuration) is 0."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return 0.0


raw, logs = sys.argv[1], sys.argv[2]
cfgs = ["a-below-han", "b-above-han", "c-stock"]
sizes = [4096, 262144, 4194304]
p50 = defaultdict(list)
served = defaultdict(set)
own = defaultdict(list)
with open(raw) as f:
    for row in csv.DictReader(f):
        key = (row["collective"], row["config"], int(row["size"]))
        p50[key].append(float(row["p50_us"]))
        # Without bufpool counters coll_latency names the configuration
        # itself: the calls went to Open MPI's own selection.
        served[key].add("other" if row["served"] == row["config"] else row["served"])
        own[key].append(num(row["own_calls"]))

colls = ["allreduce", "bcast", "reduce", "allgather"]
print("| collective | size | a: bufpool 33, below han (us) | b: bufpool 40, above han (us) | c: stock 5.0.10 (us) | b/a | c/a | served a / b / c | rounds |")
print("|---|---|---|---|---|---|---|---|---|")
for c in colls:
    for s in sizes:
        m = {}
        for cfg in cfgs:
            v = p50.get((c, cfg, s))
            m[cfg] = statistics.median(v) if v else None
        if m["a-below-han"] is None:
            continue
        a = m["a-below-han"]
        def fmt(x):
            return "-" if x is None else "%.0f" % x
        def ratio(x):
            return "-" if x is None or not a else "%.2f" % (x / a)
        srv = " / ".join(",".join(sorted(served[(c, cfg, s)])) or "-" for cfg in cfgs)
        n = len(p50[(c, "a-below-han", s)])
        size = "%d KiB" % (s // 1024) if s < 1 << 20 else "%d MiB" % (s >> 20)
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %d |" % (
            c, size, fmt(m["a-below-han"]), fmt(m["b-above-han"]), fmt(m["c-stock"]),
            ratio(m["b-above-han"]), ratio(m["c-stock"]), srv, n))

# Timed calls bufpool served (own_calls column, all sizes 4K..4M, all ranks).
print()
print("| config | collective | bufpool calls in the timed loops, all sizes 4K-4M (median over rounds) |")
print("|---|---|---|")
for cfg in cfgs:
    for c in colls:
        per_round = defaultdict(float)
        with open(raw) as f:
            for row in csv.DictReader(f):
                if row["config"] == cfg and row["collective"] == c:
                    per_round[row["tag"]] += num(row["own_calls"])
        if per_round:
            print("| %s | %s | %.0f |" % (cfg, c, statistics.median(per_round.values())))

# bufpool's own report at finalize (coll_bufpool_verbose 1), per job, summed
# over ranks: every call bufpool served on any communicator, han's
# sub-communicators included.
print()
print("| config | bufpool report, calls served per job (all ranks, all communicators; median over rounds) |")
print("|---|---|")
pat = re.compile(r"^\[[^]]*\]\s+(\w+)\s+(\d+) calls\s+(\d+) fallbacks")
for cfg in cfgs:
    jobs = []
    for log in sorted(glob.glob(os.path.join(logs, cfg + "-r*.log"))):
        tot = defaultdict(int)
        with open(log) as f:
            for line in f:
                mm = pat.match(line.strip())
                if mm:
                    tot[mm.group(1)] += int(mm.group(2))
        jobs.append(tot)
    if not jobs:
        continue
    names = sorted(set(k for j in jobs for k in j))
    text = ", ".join("%s %d" % (k, statistics.median([j.get(k, 0) for j in jobs])) for k in names)
    print("| %s | %s |" % (cfg, text or "none"))
