#!/usr/bin/env bash
# Measure the running kernel's I/O schedulers on a loop device: the live oracle of blksim's
# `loop` driver model and its CPU costs. A loop device over a file in /dev/shm (no disk below:
# what is measured is the CPU time of fio, blk-mq, the elevator and loop's worker copying
# from the page cache) is driven by Debian's fio, 4 KiB random reads and writes, libaio.
#
#   scripts/kernel-loop-schedulers.sh [runtime_s] [rounds] > crates/blksim/tests/data/kernel-loop-schedulers.tsv
#   scripts/kernel-loop-schedulers.sh 8 5 wide > crates/blksim/tests/data/kernel-loop-4jobs.tsv
#
# Sets of jobs (the third argument picks them; default "fit compare"):
#   fit      `none` only, at several depths and job counts: what the loop profile's costs
#            are fitted on;
#   compare  none, mq-deadline, kyber and bfq at iodepth 32 with 2 jobs: the ratios to
#            mq-deadline that the model must predict;
#   wide     the same four with 4 jobs, twice the vCPUs: none is a prediction there too.
# Rounds visit every configuration once in turn, so slow drift of the machine spreads over
# all of them. Needs root (losetup) and fio; detaches the loop device it attaches. Run it on
# an otherwise idle machine.
set -euo pipefail
runtime=${1:-8}
rounds=${2:-3}
sets=" ${3:-fit compare} "
. "$(dirname "$0")/shm-loop.sh"
q=/sys/block/$n/queue
echo "# $n over a ${size_mib} MiB file in /dev/shm: nr_hw_queues=$(ls /sys/block/$n/mq | wc -l) hw depth=$(cat /sys/block/$n/mq/0/nr_tags 2>/dev/null || echo ?) dio=$(cat /sys/block/$n/loop/dio) rotational=$(cat $q/rotational) write_cache=$(cat $q/write_cache)"
echo "# fio --filename=$dev --direct=1 --bs=4k --ioengine=libaio --time_based --runtime=$runtime --ramp_time=1 --group_reporting, plus the args below; $rounds rounds"
echo "# set	rw	scheduler	numjobs	iodepth	round	nr_requests	iops	clat_mean_ns	usr_cpu_pct	sys_cpu_pct	ctx"
configs=()
for rw in randread randwrite; do
  if [[ $sets == *" fit "* ]]; then
    for jd in "1 1" "1 32" "2 1" "2 32"; do
      configs+=("fit $rw none $jd")
    done
  fi
  if [[ $sets == *" compare "* ]]; then
    for s in none mq-deadline kyber bfq; do
      configs+=("compare $rw $s 2 32")
    done
  fi
  if [[ $sets == *" wide "* ]]; then
    for s in none mq-deadline kyber bfq; do
      configs+=("compare $rw $s 4 32")
    done
  fi
done
for r in $(seq 1 "$rounds"); do
  for c in "${configs[@]}"; do
    read -r set rw sched jobs depth <<<"$c"
    echo "$sched" > $q/scheduler
    nr=$(cat $q/nr_requests)
    fio --name=j --filename="$dev" --direct=1 --bs=4k --ioengine=libaio --rw="$rw" \
      --iodepth="$depth" --numjobs="$jobs" --group_reporting --time_based \
      --runtime="$runtime" --ramp_time=1 --norandommap --randrepeat=0 \
      --output-format=json > "$out"
    python3 - "$out" "$rw" <<'PY' | while read -r stats; do printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$set" "$rw" "$sched" "$jobs" "$depth" "$r" "$nr" "$stats"; done
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
d = j["read" if sys.argv[2] == "randread" else "write"]
print("%.0f\t%.0f\t%.2f\t%.2f\t%d" % (d["iops"], d["clat_ns"]["mean"], j["usr_cpu"], j["sys_cpu"], j["ctx"]))
PY
  done
done
echo none > $q/scheduler
