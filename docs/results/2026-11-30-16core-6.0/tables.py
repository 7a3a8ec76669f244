#!/usr/bin/env python3
"""Tables of the 2026-11-30 runs on 16 cores, Open MPI 6.0.x: for every
collective and size, the median (over the interleaved repetitions) of each
configuration's p50 latency, bufpool over Open MPI's default (tuned, or
libnbc in the nonblocking form) and over the best of Open MPI's components
measured in the same job (default, acoll, xhc), and over the copy floor.
Usage: tables.py FILE.csv [...]  (prints Markdown)."""
import csv
import statistics
import sys
from collections import defaultdict


def human(n):
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def table(path):
    pts = defaultdict(list)
    bad = 0
    for row in csv.DictReader(open(path)):
        if row["check"] not in ("ok", "-"):
            bad += 1
        key = (row["tag"], row["collective"], int(row["size"]), row["config"])
        pts[key].append(float(row["p50_us"]))
    med = {k: statistics.median(v) for k, v in pts.items()}
    print(f"\n## {path}\n")
    print(f"checks not ok: {bad}\n")
    print("| tag | collective | size | bufpool µs | default µs | best peer | bufpool/default | bufpool/best | floor µs |")
    print("|---|---|---|---|---|---|---|---|---|")
    keys = sorted({k[:3] for k in med}, key=lambda k: (k[0], k[1], k[2]))
    worse = []
    for tag, coll, size in keys:
        b = med.get((tag, coll, size, "bufpool"))
        d = med.get((tag, coll, size, "default"))
        if b is None or d is None:
            continue
        peers = {c: med[(tag, coll, size, c)] for c in ("default", "acoll", "xhc")
                 if (tag, coll, size, c) in med}
        best = min(peers, key=peers.get)
        fl = med.get((tag, coll, size, "floor"))
        r = b / peers[best]
        if r > 1.05:
            worse.append((tag, coll, size, r, best))
        print(f"| {tag} | {coll} | {human(size)} | {b:.2f} | {d:.2f} | {best} {peers[best]:.2f} | "
              f"{b / d:.2f} | {r:.2f} | {'' if fl is None else f'{fl:.2f}'} |")
    print(f"\nabove 1.05 x the best: {len(worse)} of {len(keys)}")
    for w in worse:
        print(f"- {w[0]} {w[1]} {human(w[2])}: {w[3]:.2f} x {w[4]}")


for p in sys.argv[1:]:
    table(p)
