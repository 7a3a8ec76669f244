#!/usr/bin/env python3
"""Model against measurement: for every collective of a side-by-side
summary.csv (bench/run-side-by-side.sh), the measured median of bufpool and
of Open MPI's default next to bench/coll_model's time for bufpool's modeled
pick (and tuned's, where its rules are encoded), and the ratio
measured / modeled.

  model_vs_measured.py SUMMARY_CSV COLL_MODEL HOSTS [MIN_BYTES] [LINKS]
"""
import csv
import statistics
import subprocess
import sys

summary, tool, hosts = sys.argv[1], sys.argv[2], int(sys.argv[3])
min_bytes = int(sys.argv[4]) if len(sys.argv) > 4 else 4096
links = sys.argv[5] if len(sys.argv) > 5 else None
rows = list(csv.DictReader(open(summary)))
meas = {}
for r in rows:
    if r["config"] in ("bufpool", "default") and r["p50_us"]:
        meas[(r["collective"], int(r["np"]), int(r["size"]), r["config"])] = float(r["p50_us"])
nps = sorted({k[1] for k in meas})
model = {}
for np_ in nps:
    cmd = [tool, "--p", str(np_), "--hosts", str(hosts), "--min", str(min_bytes), "--max", "4M"]
    if links:
        cmd += ["--links", links]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if not f or f[0].startswith("#") or f[0] == "collective":
            continue
        size = f[3]
        b = int(size[:-1]) * (1024 if size.endswith("K") else 1048576) if size[-1] in "KM" else int(size)

        def us(t):
            if t == "-":
                return None
            for suf, m in (("us", 1), ("ms", 1e3), ("s", 1e6)):
                if t.endswith(suf):
                    return float(t[: -len(suf)]) * m
        model[(f[0], int(f[1]), b)] = (f[6], us(f[7]), f[8], us(f[9]))

print("| collective | np | sizes | bufpool measured/model: median (range) | default measured/model (tuned's pick) | model's bufpool picks |")
print("|---|---|---|---|---|---|")
colls = sorted({k[0] for k in meas})
for c in colls:
    for np_ in nps:
        rb, rd, picks, sizes = [], [], set(), []
        for (mc, mp, b), (pick, t, opick, ot) in sorted(model.items()):
            if mc != c or mp != np_:
                continue
            mb = meas.get((c, np_, b, "bufpool"))
            md = meas.get((c, np_, b, "default"))
            if mb is None:
                continue
            sizes.append(b)
            rb.append(mb / t)
            picks.add(pick)
            if md is not None and ot:
                rd.append(md / ot)
        if not rb:
            continue
        rng = lambda v: "%.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v)) if v else "-"
        print("| %s | %d | %s-%s | %s | %s | %s |" % (c, np_, sizes[0], sizes[-1], rng(rb), rng(rd), ", ".join(sorted(picks))))
