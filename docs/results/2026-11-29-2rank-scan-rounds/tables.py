#!/usr/bin/env python3
"""Ratios of run.sh's CSVs: for each job (form), collective and size, the
median over the rounds of bufpool's and bufpool+node's median call (p50_us,
or --stat avg_us) over Open MPI's own (default) in the same job, and
bufpool+node over bufpool.  Usage: tables.py DIR [--stat avg_us]"""
import csv
import glob
import os
import statistics
import sys

stat = "p50_us"
args = sys.argv[1:]
if "--stat" in args:
    stat = args[args.index("--stat") + 1]
    args.remove("--stat")
    args.remove(stat)
folder = args[0] if args else os.path.dirname(os.path.abspath(__file__))
for path in sorted(glob.glob(os.path.join(folder, "scan-rounds-run*.csv"))):
    times = {}
    for row in csv.DictReader(open(path)):
        if row["check"] != "ok":
            sys.exit(f"{path}: a wrong result: {row}")
        key = (row["tag"], row["collective"], int(row["size"]))
        times.setdefault(key, {}).setdefault(row["config"], []).append(float(row[stat]))
    print(f"## {os.path.basename(path)} ({stat})\n")
    print("| job | collective | size | bufpool / default | node / default | node / bufpool |")
    print("|---|---|---|---|---|---|")
    for (tag, coll, size), t in sorted(times.items()):
        med = {c: statistics.median(v) for c, v in t.items()}
        d, b, n = med.get("default"), med.get("bufpool"), med.get("bufpool+node")
        if None in (d, b, n):
            continue
        print(f"| {tag} | {coll} | {size} | {b / d:.2f} | {n / d:.2f} | {n / b:.2f} |")
    print()
