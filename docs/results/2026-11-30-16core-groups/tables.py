#!/usr/bin/env python3
"""The groups run of 2026-11-30 (16 cores, Open MPI 4.1.4, node algorithms
forced): for each form, collective and size, bufpool's median p50 over
tuned's (libnbc's in the nonblocking and persistent forms) in the same job,
read flat (coll_bufpool_node_flat_max 16: every rank reads every slot) and
in groups (flat_max 8: groups of 4 ranks, two levels).
Usage: tables.py groups.csv  (prints Markdown)."""
import csv
import statistics
import sys
from collections import defaultdict

pts = defaultdict(list)
for row in csv.DictReader(open(sys.argv[1])):
    assert row["check"] in ("ok", "-"), row
    pts[(row["tag"], row["collective"], int(row["size"]), row["config"])].append(
        float(row["p50_us"]))
med = {k: statistics.median(v) for k, v in pts.items()}
rows = defaultdict(dict)
for (tag, coll, size, cfg), v in med.items():
    fm, form = tag.split()
    rows[(form, coll, size)][(fm, cfg)] = v
print("| form | collective | size | flat µs | flat / Open MPI | groups µs | groups / Open MPI | groups / flat |")
print("|---|---|---|---|---|---|---|---|")
for (form, coll, size), d in sorted(rows.items()):
    f, fo = d[("flat_max=16", "bufpool")], d[("flat_max=16", "default")]
    g, go = d[("flat_max=8", "bufpool")], d[("flat_max=8", "default")]
    print(f"| {form} | {coll} | {size} | {f:.2f} | {f / fo:.2f} | {g:.2f} | {g / go:.2f} | {g / f:.2f} |")
