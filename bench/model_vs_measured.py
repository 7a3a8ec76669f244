#!/usr/bin/env python3
"""Model against measurement, and the fit of the model's link classes.

For side-by-side runs (bench/run-side-by-side.sh, their summary.csv), per
collective: measured / modeled for bufpool (the algorithm its auto decides,
as bench/coll_model --raw reports it from coll_bufpool_decide.c) and for Open
MPI's default (the algorithm coll/tuned's fixed rules pick, as the model
encodes them): median and range over the sizes, and how often the model
orders the two as the measurement does.

  model_vs_measured.py [--tool bench/coll_model] [--links TEXT] [--fit]
                       [--fit-min BYTES] [--run-links TEXT] [--min BYTES] DATA...

DATA is DIR_OR_CSV:HOSTS:PPN[:fit] (PPN: ranks per host); the data sets
marked ":fit" feed --fit.  --fit: a least-squares fit of the link classes to
the default's measured medians of the marked sets (a nonnegative linear
least squares of the relative error, refined by Gauss-Newton on the log of
the ratio so that 0.5 x and 2 x weigh alike; sizes from --fit-min; latency
and bandwidth of shm and tcp and one reduction rate for both); prints the parameters in the syntax of
coll_bufpool_model_links and validates with them.  The fit uses only Open
MPI's default (tuned's algorithms are known from its fixed rules and do not
depend on this project's decisions); bufpool's points are out of sample.
Pure Python, no numpy.
"""
import argparse
import csv
import os
import statistics
import subprocess

# Collectives the model times under the benchmark's size convention.
COLLS = ("allreduce", "reduce", "bcast", "allgather", "reduce_scatter", "alltoall")
ZERO = "shm:0,1e12,1e12;tcp:0,1e12,1e12"
# Parameters of the fit: (name, the link text that sets it to one unit).
# Units: latency us, inverse bandwidth and inverse reduction rate ns/byte.
BASIS = (
    ("shm_latency_us", ZERO + ";shm:1,1e12,1e12"),
    ("shm_ns_per_byte", ZERO + ";shm:0,1,1e12"),
    ("tcp_latency_us", ZERO + ";tcp:1,1e12,1e12"),
    ("tcp_ns_per_byte", ZERO + ";tcp:0,1,1e12"),
    ("reduce_ns_per_byte", ZERO + ";shm:0,1e12,1;tcp:0,1e12,1"),
)


def parse_data(spec):
    parts = spec.split(":")
    path = parts[0]
    if os.path.isdir(path):
        path = os.path.join(path, "summary.csv")
    return {"path": path, "label": os.path.basename(os.path.dirname(path)),
            "hosts": int(parts[1]), "ppn": int(parts[2]),
            "fit": len(parts) > 3 and parts[3] == "fit"}


def measured(d):
    meas, served = {}, {}
    for r in csv.DictReader(open(d["path"])):
        if r["config"] in ("bufpool", "default") and r["p50_us"] and r["collective"] in COLLS:
            key = (r["collective"], int(r["np"]), int(r["size"]), r["config"])
            meas[key] = float(r["p50_us"])
            served[key] = r["served"]
    return meas, served


def run_model(tool, d, nps, max_size, links):
    """{(coll, p, bytes): {"algs": {name: us}, "ompi": name, "decided": name, "how": ...}}"""
    out = {}
    for np_ in nps:
        cmd = [tool, "--raw", "--p", str(np_), "--hosts", str(d["hosts"]), "--ppn",
               str(d["ppn"]), "--min", "1", "--max", str(max_size), "--step", "2"]
        if links:
            cmd += ["--links", links]
        text = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        for line in text.splitlines():
            f = line.split()
            if not f or f[0] not in ("alg", "pick"):
                continue
            key = (f[1], int(f[2]), int(f[5]))
            e = out.setdefault(key, {"algs": {}})
            if f[0] == "alg":
                e["algs"][f[6]] = float(f[8]) * 1e6  # the last of a name: tuned's
                e.setdefault("bufpool_algs", {})
                if f[7] == "1":
                    e["bufpool_algs"][f[6]] = float(f[8]) * 1e6
            else:
                e["ompi"], e["decided"], e["how"] = f[6], f[7], f[8]
    return out


def solve(a, b):
    """Gaussian elimination with partial pivoting; None if singular."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        piv = max(range(c, n), key=lambda r: abs(m[r][c]))
        if abs(m[piv][c]) < 1e-30:
            return None
        m[c], m[piv] = m[piv], m[c]
        for r in range(n):
            if r != c:
                k = m[r][c] / m[c][c]
                for j in range(c, n + 1):
                    m[r][j] -= k * m[c][j]
    return [m[i][n] / m[i][i] for i in range(n)]


def nnls_relative(rows):
    """min sum (coef . theta / meas - 1)^2 over theta >= 0 (active set)."""
    n = len(BASIS)
    free = [i for i in range(n) if any(r[0][i] for r in rows)]
    while True:
        ata = [[sum(r[0][i] * r[0][j] / r[1] ** 2 for r in rows) for j in free] for i in free]
        atb = [sum(r[0][i] / r[1] for r in rows) for i in free]
        x = solve(ata, atb)
        if x is None:
            raise SystemExit("fit: singular system (too few kinds of points)")
        neg = [free[k] for k, v in enumerate(x) if v < 0]
        if not neg:
            theta = [0.0] * n
            for k, i in enumerate(free):
                theta[i] = x[k]
            return theta
        free = [i for i in free if i not in neg]


def refine_log(rows, theta, rounds=50):
    """Gauss-Newton on sum log(coef . theta / meas)^2 from theta: the
    relative fit under-predicts (a ratio below 1 costs less than one above),
    the log fit treats 0.5 x and 2 x alike.  Parameters stay >= 0 (a step
    that would make one negative stops at a small positive value)."""
    import math
    n = len(theta)
    for _ in range(rounds):
        jac, res = [], []
        for c, m in rows:
            t = sum(ci * ti for ci, ti in zip(c, theta))
            jac.append([ci / t for ci in c])
            res.append(math.log(t / m))
        live = [i for i in range(n) if theta[i] > 0]
        jtj = [[sum(j[a] * j[b] for j in jac) for b in live] for a in live]
        jtr = [sum(j[a] * r for j, r in zip(jac, res)) for a in live]
        step = solve(jtj, jtr)
        if step is None:
            break
        new = theta[:]
        for k, i in enumerate(live):
            new[i] = max(theta[i] - step[k], theta[i] * 0.1)
        if max(abs(new[i] - theta[i]) / theta[i] for i in live) < 1e-6:
            theta = new
            break
        theta = new
    return theta


def fit(args, sets):
    rows = []
    for d in sets:
        if not d["fit"]:
            continue
        meas, _ = measured(d)
        nps = sorted({k[1] for k in meas})
        basis = [run_model(args.tool, d, nps, d["max"], links) for _, links in BASIS]
        for (c, p, b, cfg), m in meas.items():
            if cfg != "default" or b < args.fit_min:
                continue
            e0 = basis[0].get((c, p, b))
            if not e0 or e0["ompi"] == "-":
                continue
            coef = [bm[(c, p, b)]["algs"][e0["ompi"]] for bm in basis]
            rows.append((coef, m))
    theta = refine_log(rows, nnls_relative(rows))
    resid = [sum(ci * ti for ci, ti in zip(c, theta)) / m for c, m in rows]
    g = lambda v: "%.3g" % (1.0 / v) if v > 0 else "1e12"
    links = "shm:%.3g,%s,%s;tcp:%.3g,%s,%s" % (theta[0], g(theta[1]), g(theta[4]),
                                                theta[2], g(theta[3]), g(theta[4]))
    print("# fit on %d points of Open MPI's default (sizes >= %d B) of %s" %
          (len(rows), args.fit_min, ", ".join(d["label"] for d in sets if d["fit"])))
    for (name, _), v in zip(BASIS, theta):
        print("#   %-20s %.4g" % (name, v))
    print("#   model/measured on the fitted points: median %.2f, range %.2f-%.2f" %
          (statistics.median(resid), min(resid), max(resid)))
    print("# links: %s" % links)
    return links


def rng(v):
    if not v:
        return "-"
    return "%.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v))


def validate(args, d, links):
    meas, served = measured(d)
    nps = sorted({k[1] for k in meas})
    model = run_model(args.tool, d, nps, d["max"], links)
    # bufpool ran what its decision made of the link table in force then.
    ran = run_model(args.tool, d, nps, d["max"], args.run_links)
    print("\n%s (%d host(s), %d rank(s) per host), sizes %d B and up, measured / modeled:\n" %
          (d["label"], d["hosts"], d["ppn"], args.min))
    print("| collective | np | bufpool: median (range) | default: median (range) | "
          "ranking agrees | bufpool's algorithms (how chosen) | tuned's |")
    print("|---|---|---|---|---|---|---|")
    for c in COLLS:
        for np_ in nps:
            rb, rd, agree, n, picks, tuned = [], [], 0, 0, set(), set()
            for (mc, mp, b), e in sorted(model.items()):
                if mc != c or mp != np_ or b < args.min:
                    continue
                mb = meas.get((c, np_, b, "bufpool"))
                md = meas.get((c, np_, b, "default"))
                td = e["algs"].get(e["ompi"]) if e["ompi"] != "-" else None
                if md is not None and td:
                    rd.append(md / td)
                    tuned.add(e["ompi"])
                if mb is None or served.get((c, np_, b, "bufpool")) != "bufpool":
                    continue
                alg, how = ran[(c, np_, b)]["decided"], ran[(c, np_, b)]["how"]
                if alg == "previous":
                    continue
                tb = e["bufpool_algs"][alg]
                rb.append(mb / tb)
                picks.add("%s (%s)" % (alg, how))
                # Ranking: only where the model separates the two by 5 %.
                if md is not None and td and abs(tb - td) > 0.05 * min(tb, td):
                    n += 1
                    agree += (tb < td) == (mb < md)
            if not rb and not rd:
                continue
            print("| %s | %d | %s | %s | %s | %s | %s |" %
                  (c, np_, rng(rb), rng(rd), "%d of %d" % (agree, n) if n else "-",
                   ", ".join(sorted(picks)) or "-", ", ".join(sorted(tuned)) or "-"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tool", default="bench/coll_model")
    ap.add_argument("--links", default=None)
    ap.add_argument("--run-links", default=None,
                    help="the link table the component had when the data were measured "
                         "(it decided bufpool's algorithms); default: the model's defaults")
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--fit-min", type=int, default=4)
    ap.add_argument("--min", type=int, default=4096)
    ap.add_argument("data", nargs="+")
    args = ap.parse_args()
    sets = [parse_data(s) for s in args.data]
    for d in sets:
        d["max"] = max(int(r["size"]) for r in csv.DictReader(open(d["path"])))
    links = args.links
    if args.fit:
        links = fit(args, sets)
    print("# links: %s" % (links or "the model's defaults"))
    for d in sets:
        validate(args, d, links)


if __name__ == "__main__":
    main()
