#!/usr/bin/env bash
# Measure what fio's io_uring options save the submitting thread on the running kernel: the
# live source of blksim's `platform.fget_ns`, `platform.iov_pin_ns` and
# `platform.iov_pin_page_ns`, and the check of its `sqthread_poll` model.
#
#   scripts/kernel-io_uring-options.sh [runtime_s] [rounds] > crates/blksim/tests/data/kernel-io_uring-options.tsv
#
# A loop device over a file in /dev/shm (no disk below), scheduler none, one fio job pinned to
# CPU 0, io_uring, random reads at iodepth 32, 4, 32 and 128 KiB, with each option on its own:
#   registerfiles   IOSQE_FIXED_FILE: no fget/fput of the file per I/O (io_file_get_normal);
#   fixedbufs       IORING_OP_READ_FIXED: the buffer's pages were pinned once at
#                   IORING_REGISTER_BUFFERS, none per I/O (io_import_fixed instead of
#                   pin_user_pages_fast in bio_iov_iter_get_pages, and no unpin at completion);
#   sqthread_poll   IORING_SETUP_SQPOLL with the SQ thread on CPU 1: fio makes no syscall, the
#                   kernel thread submits, fio spins on the completion ring.
# What differs between the rows is fio's own CPU time per I/O, (usr + sys) / IOPS. Rounds visit
# every configuration in turn, so slow drift of the machine spreads over all of them. Needs root
# (losetup) and fio; detaches the loop device it attaches. Run it on an otherwise idle machine.
set -euo pipefail
runtime=${1:-4}
rounds=${2:-3}
. "$(dirname "$0")/shm-loop.sh"
echo none > /sys/block/$n/queue/scheduler
echo "# $n over a ${size_mib} MiB file in /dev/shm, scheduler none"
echo "# fio --filename=$dev --direct=1 --ioengine=io_uring --rw=randread --iodepth=32 --cpus_allowed=0 --time_based --runtime=$runtime --ramp_time=1 --norandommap --randrepeat=0, plus the args below; $rounds rounds"
echo "# option	bs	round	iops	usr_cpu_pct	sys_cpu_pct	ctx	cpu_ns_per_io"
opts=("default:" "registerfiles:--registerfiles=1" "fixedbufs:--fixedbufs=1" "sqthread_poll:--sqthread_poll=1 --sqthread_poll_cpu=1")
for r in $(seq 1 "$rounds"); do
  for bs in 4k 32k 128k; do
    for o in "${opts[@]}"; do
      name=${o%%:*}
      args=${o#*:}
      # shellcheck disable=SC2086
      fio --name=j --filename="$dev" --direct=1 --bs="$bs" --ioengine=io_uring --rw=randread \
        --iodepth=32 --cpus_allowed=0 --time_based --runtime="$runtime" --ramp_time=1 \
        --norandommap --randrepeat=0 $args --output-format=json > "$out"
      python3 - "$out" "$name" "$bs" "$r" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
d = j["read"]
cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100.0
print("%s\t%s\t%s\t%.0f\t%.2f\t%.2f\t%d\t%.0f" % (sys.argv[2], sys.argv[3], sys.argv[4], d["iops"], j["usr_cpu"], j["sys_cpu"], j["ctx"], cpu / d["iops"] * 1e9))
PY
    done
  done
done
