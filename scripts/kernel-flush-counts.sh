#!/usr/bin/env bash
# Measure what the running kernel issues for fio's fsync/O_SYNC options on a device with a
# volatile write cache and no FUA (a loop device over a file in /dev/shm: loop declares
# BLK_FEAT_WRITE_CACHE because the backing file has ->fsync, and no BLK_FEAT_FUA). Prints one
# line per job: the fio arguments, then the change in /sys/block/loopN/stat of write I/Os
# (field 5) and flush I/Os (field 16), and fio's own write and sync counts.
#
# Needs root (losetup) and Debian's fio. The recorded output lives in
# crates/blksim/tests/data/kernel-flush-counts.tsv, which crates/blksim/tests/flush.rs
# compares with blksim's null_blk configured the same way (memory_backed, cache_size, fua=0).
set -euo pipefail
command -v fio >/dev/null || { echo "$0: needs fio (apt-get install fio)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "$0: needs root for losetup" >&2; exit 1; }
img=$(mktemp /dev/shm/blksim-flush.XXXXXX)
trap 'rm -f "$img" /tmp/blksim-flush.json' EXIT
echo "# kernel $(uname -r), $(fio --version), loop device over /dev/shm, write cache, no FUA"
echo "# args	write_ios	flush_ios	fio_writes	fio_syncs"
while read -r args; do
  [ -z "$args" ] && continue
  truncate -s 64M "$img"
  dev=$(losetup -f --show "$img")
  n=$(basename "$dev")
  wc=$(cat /sys/block/$n/queue/write_cache)
  fua=$(cat /sys/block/$n/queue/fua)
  [ "$wc" = "write back" ] && [ "$fua" = 0 ] || { losetup -d "$dev"; echo "$0: $n: write_cache=$wc fua=$fua" >&2; exit 1; }
  read -ra before < /sys/block/$n/stat
  # shellcheck disable=SC2086
  fio --name=f --filename="$dev" --bs=4k --direct=1 --size=16m $args --output-format=json > /tmp/blksim-flush.json
  read -ra after < /sys/block/$n/stat
  losetup -d "$dev"
  counts=$(python3 -c 'import json,sys; j=json.load(open("/tmp/blksim-flush.json"))["jobs"][0]; print(j["write"]["total_ios"], j["sync"]["total_ios"])')
  read -r fw fs <<< "$counts"
  printf '%s\t%d\t%d\t%d\t%d\n' "$args" $((after[4]-before[4])) $((after[15]-before[15])) "$fw" "$fs"
done <<'JOBS'
--rw=randwrite --number_ios=100 --fsync=1
--rw=randwrite --number_ios=100 --fdatasync=1
--rw=randwrite --number_ios=100 --sync=1
--rw=randwrite --number_ios=100 --sync=dsync
--rw=randwrite --number_ios=100 --end_fsync=1
--rw=randwrite --number_ios=100 --fsync=10 --ioengine=libaio --iodepth=8
--rw=randwrite --number_ios=100 --sync=1 --ioengine=libaio --iodepth=4
--rw=randwrite --number_ios=64 --fsync=4 --ioengine=io_uring --iodepth=4
--rw=write --number_ios=100 --fsync=1 --numjobs=4 --group_reporting
JOBS
