#!/usr/bin/env python3
"""Calibrate profiles/loop-2cpu.toml on the real kernel's `none` runs only.

  scripts/fit-loop-2cpu.py [--blksim PATH]

Coordinate search over the loop worker's per-command cost, fio's per-I/O submission cost,
the context switch of a woken task and the worker's wake-up latency, minimising the squared
log error of the simulated IOPS against the `fit` rows of
crates/blksim/tests/data/kernel-loop-schedulers.tsv (none, 1 job at iodepth 1 and 32, 2 jobs
at iodepth 32; the 2-job iodepth-1 rows are printed but not fitted: see README). Prints the
best values; the schedulers' rows are never looked at.

fio's per-I/O cost S is split evenly between the submit syscall and the rest of the
submission, which the profile writes as platform.bio_alloc_ns plus the measured file
reference and buffer pinning of one 4 KiB I/O (fget_ns + iov_pin_ns + iov_pin_page_ns,
scripts/kernel-io_uring-options.sh): bio_alloc_ns = S - PINNED.
"""
import argparse, json, math, os, subprocess
from collections import defaultdict

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser()
ap.add_argument("--blksim", default=os.path.join(root, "target/release/blksim"))
a = ap.parse_args()

real = defaultdict(list)
for line in open(os.path.join(root, "crates/blksim/tests/data/kernel-loop-schedulers.tsv")):
    if line.startswith("#") or not line.strip():
        continue
    f = line.split("\t")
    if f[0] == "fit":
        real[(f[1], int(f[3]), int(f[4]))].append(float(f[7]))
rows = {k: sum(v) / len(v) for k, v in real.items() if not (k[1] == 2 and k[2] == 1)}

def sim(p, rw, jobs, depth):
    sets = [f"--set={k}={v}" for k, v in p.items()]
    cmd = [a.blksim, "run", "--device=loop-2cpu", "--set=queue.scheduler=none", "--name=j",
           f"--rw={rw}", "--bs=4k", "--ioengine=libaio", f"--iodepth={depth}", f"--numjobs={jobs}",
           "--group_reporting", "--time_based", "--runtime=100ms", "--ramp_time=10ms",
           "--norandommap", "--output-format=json"] + sets
    j = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)["jobs"][0]
    return j["read" if rw == "randread" else "write"]["iops"]

def err(p):
    return sum(math.log(sim(p, *k) / r) ** 2 for k, r in rows.items())

# fget_ns + iov_pin_ns + iov_pin_page_ns of profiles/loop-2cpu.toml (measured, not fitted).
PINNED = 30 + 266 + 86

p = {"worker_ns": 2240, "platform.syscall_ns": 1400, "platform.bio_alloc_ns": 1400 - PINNED,
     "platform.ctxsw_ns": 1500, "worker_wakeup_ns": 12000}
best = err(p)
step = {k: v * 0.25 for k, v in p.items()}
for it in range(6):
    for k in p:
        for sgn in (1, -1):
            q = dict(p)
            q[k] = max(0, int(p[k] + sgn * step[k]))
            if k == "platform.syscall_ns":
                q["platform.bio_alloc_ns"] = max(0, q[k] - PINNED)
            e = err(q)
            if e < best:
                best, p = e, q
                break
    step = {k: v * 0.6 for k, v in step.items()}
    print(f"round {it}: error {best:.4f} {p}")
for k, r in sorted(real.items()):
    m = sim(p, *k)
    rr = sum(r) / len(r)
    print(f"{k}: real {rr:.0f} sim {m:.0f} {100 * (m / rr - 1):+.1f}%")
