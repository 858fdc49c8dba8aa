#!/bin/sh
# §5 check against the one assumed platform parameter it depends on: the kblockd latency tail
# (platform.kblockd_tail_ppm, platform.kblockd_tail_ns; emmc-allwinner ships 1000 ppm and
# 200000 ns). Prints the scan's p99.99 over a grid of both, with FIFO and no hsq at the
# profile's value, at the published run length. The table is in repro/README.md, section 5.
set -e
cd "$(dirname "$0")/../.."
cargo build --release -q -p blksim
B=${CARGO_TARGET_DIR:-target}/release/blksim
J=repro/s5-allwinner/randread.fio
p9999() {
  "$B" run --device=emmc-allwinner "$J" --output-format=json "$@" |
    python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["read"]; print("%.1f" % (j["clat_ns"]["percentile"]["99.990000"]/1e6))'
}
echo "p99.99 in ms; 8 psync jobs x 64 MiB 4 KiB randread"
echo "no hsq: $(p9999)   hsq FIFO: $(p9999 --set=host.queue=hsq --set=host.hsq_next_tag=fifo)"
printf '| scan p99.99 (ms) | tail mean 100 us | 200 us | 400 us |\n|---|---|---|---|\n'
for ppm in 0 300 500 1000 2000 4000; do
  row="| $ppm ppm"
  for ns in 100000 200000 400000; do
    row="$row | $(p9999 --set=host.queue=hsq --set=host.hsq_next_tag=scan \
      --set=platform.kblockd_tail_ppm=$ppm --set=platform.kblockd_tail_ns=$ns)"
  done
  echo "$row |"
done
