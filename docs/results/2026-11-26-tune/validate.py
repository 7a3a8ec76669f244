#!/usr/bin/env python3
"""bufpool (auto) over the previous module, per collective and size: the
median over rounds of the per-round ratio of coll_latency's p50 columns,
from val-default.csv (the default rules) and val-tuned.csv (with
coll_bufpool_rules_file=bufpool-2x1.rules).  See docs/tuning.md."""
import collections
import csv
import statistics
import sys

res = {}
for name in ("default", "tuned"):
    d = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in csv.DictReader(open(f"val-{name}.csv")):
        d[(r["collective"], int(r["size"]))][r["config"]].append(float(r["p50_us"]))
    res[name] = {k: statistics.median(b / a for b, a in zip(v["bufpool"], v["default"]))
                 for k, v in d.items()}
print("%-10s %8s %14s %14s" % ("coll", "size", "default rules", "tuned rules"))
for k in sorted(res["default"]):
    print("%-10s %8d %14.2f %14.2f" % (k[0], k[1], res["default"][k], res["tuned"][k]))
for n, v in res.items():
    v = list(v.values())
    print(n, "points above 1.05:", sum(x > 1.05 for x in v), "of", len(v),
          "median %.2f, max %.2f" % (statistics.median(v), max(v)))
sys.exit(0)
