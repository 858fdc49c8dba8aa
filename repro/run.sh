#!/bin/sh
# Full-length runs of the published jobs (measurements.md §1, §2, §4, §5) with the release
# binary; prints fio's normal report per job. The shortened, asserted version with the
# published-vs-simulated tables is `cargo test -p blksim --test repro -- --nocapture`.
set -e
cd "$(dirname "$0")/.."
cargo build --release -p blksim
B=${CARGO_TARGET_DIR:-target}/release/blksim
r() { dev=$1; shift; echo "== $dev $*"; $B run --device="$dev" "$@" --output-format=normal | grep -E "^ *(read|write):|clat percentiles|99.99th|IOPS=" ; }
for rw in read randread write randwrite; do
  r emmc-hbg4a2 repro/s1-hbg4a2/$rw.fio
  r emmc-hbg4a2 repro/s1-hbg4a2/$rw.fio --set=host.queue=hsq
done
for f in repro/s2-ux500/*.fio; do r emmc-ux500 "$f"; done
for f in repro/s4-512k-2009/*.fio; do r emmc-512k-2009 "$f"; done
r emmc-allwinner repro/s5-allwinner/randread.fio
r emmc-allwinner repro/s5-allwinner/randread.fio --set=host.queue=hsq --set=host.hsq_next_tag=scan
r emmc-allwinner repro/s5-allwinner/randread.fio --set=host.queue=hsq --set=host.hsq_next_tag=fifo
for f in repro/s6-sd-pi4/*.fio; do r sd-a1-pi4 "$f"; done
r nvme-980pro-1tb repro/s7-nvme-980pro/randread.fio
for n in 3 4; do r sd-kingston-4g-bbb repro/s8-sd-kingston/open-au.fio --numjobs=$n; done
for f in repro/s6-sd-pi4/*.fio; do r sd-a2-pi4 "$f"; done
