#!/usr/bin/env python3
"""Overlap and exposed time per point from run-side-by-side.sh --form
overlap raw CSVs: overlap_pct as coll_latency measures it (OSU's), and
the exposed time comm_us x (1 - overlap_pct / 100), what a rank waits
beyond its computation; medians over the rounds, bufpool against default
(libnbc).  Usage: exposed.py RAW.csv [RAW.csv ...]"""
import collections
import csv
import statistics
import sys

for path in sys.argv[1:]:
    points = collections.defaultdict(list)
    for r in csv.DictReader(open(path)):
        if r['config'] in ('bufpool', 'default') and r.get('overlap_pct') not in (None, '', 'n/a'):
            comm, ov = float(r['comm_us']), float(r['overlap_pct'])
            points[(r['collective'], int(r['size']), r['config'])].append((ov, comm * (1 - ov / 100)))
    print(f"{path}\n| collective | bytes | overlap bufpool / libnbc | exposed us bufpool / libnbc |\n|---|---|---|---|")
    for coll, size in sorted({(c, s) for c, s, _ in points}):
        b, d = points[(coll, size, 'bufpool')], points[(coll, size, 'default')]
        med = lambda xs, i: statistics.median(x[i] for x in xs)
        print(f"| {coll.replace('_overlap', '')} | {size} | {med(b, 0):.0f} % / {med(d, 0):.0f} % "
              f"| {med(b, 1):.1f} / {med(d, 1):.1f} |")
