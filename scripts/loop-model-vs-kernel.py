#!/usr/bin/env python3
"""Compare blksim's loop-2cpu profile with the real kernel's recorded runs.

  scripts/loop-model-vs-kernel.py [--blksim PATH] [--runtime 200ms] [--set KEY=VALUE ...]

Reads crates/blksim/tests/data/kernel-loop-schedulers.tsv (scripts/kernel-loop-schedulers.sh),
runs the same jobs on the simulated loop device and prints, per row, the real IOPS (mean of
the rounds) and the simulated ones: the `fit` rows (none only) are what the profile's costs
were calibrated on; the `compare` rows give each scheduler's IOPS ratio to mq-deadline, real
and predicted.
"""
import argparse, json, os, subprocess, sys
from collections import defaultdict

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser()
ap.add_argument("--blksim", default=os.path.join(root, "target/release/blksim"))
ap.add_argument("--runtime", default="200ms")
ap.add_argument("--set", action="append", default=[])
ap.add_argument("--only", default="")
a = ap.parse_args()

real = defaultdict(list)
for line in open(os.path.join(root, "crates/blksim/tests/data/kernel-loop-schedulers.tsv")):
    if line.startswith("#") or not line.strip():
        continue
    f = line.rstrip("\n").split("\t")
    key = (f[0], f[1], f[2], int(f[3]), int(f[4]))
    real[key].append(float(f[7]))

def sim(rw, sched, jobs, depth):
    cmd = [a.blksim, "run", "--device=loop-2cpu", f"--set=queue.scheduler={sched}",
           "--name=j", f"--rw={rw}", "--bs=4k", "--ioengine=libaio", f"--iodepth={depth}",
           f"--numjobs={jobs}", "--group_reporting", "--time_based", f"--runtime={a.runtime}",
           "--ramp_time=10ms", "--norandommap", "--output-format=json"] + [f"--set={s}" for s in a.set]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: {out.stderr}")
    j = json.loads(out.stdout)["jobs"][0]
    return j["read" if rw == "randread" else "write"]["iops"]

res = {}
for key in sorted(real, key=lambda k: (k[0] != "fit", k)):
    if a.only and a.only not in key[0]:
        continue
    s, rw, sched, jobs, depth = key
    r = sum(real[key]) / len(real[key])
    m = sim(rw, sched, jobs, depth)
    res[key] = (r, m)
    print(f"{s:8} {rw:10} {sched:12} {jobs}j qd{depth:<3} real {r:9.0f}  sim {m:9.0f}  {100*(m/r-1):+6.1f}%")
for rw in ["randread", "randwrite"]:
    base = res.get(("compare", rw, "mq-deadline", 2, 32))
    if not base:
        continue
    for sched in ["none", "kyber", "bfq"]:
        k = ("compare", rw, sched, 2, 32)
        if k in res:
            rr, mr = res[k][0] / base[0], res[k][1] / base[1]
            print(f"ratio {rw:10} {sched:6}/mq-deadline  real {rr:.3f}  predicted {mr:.3f}  {100*(mr/rr-1):+6.1f}%")
