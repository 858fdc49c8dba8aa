#!/bin/sh
# Live check of `blksim probe` on this machine's disk: probe a 1 GiB file (reads only), then
# run the validation jobs (crates/blksim/tests/data/probe-vda/jobs/*.fio) on the same file
# with the real fio. The results are what crates/blksim/tests/probe_live.rs calibrates on and
# compares with; re-run this to record another machine.
#   PROBE_FILE   the file to probe (default /var/tmp/blksim-probe.dat; created, then removed)
#   OUT          where to write (default crates/blksim/tests/data/probe-vda)
set -eu
cd "$(dirname "$0")/.."
command -v fio >/dev/null || { apt-get update -qq && apt-get install -y -qq fio; }
cargo build --release -q -p blksim
B=${CARGO_TARGET_DIR:-target}/release/blksim
F=${PROBE_FILE:-/var/tmp/blksim-probe.dat}
OUT=${OUT:-crates/blksim/tests/data/probe-vda}
rm -f "$F"
rm -rf "$OUT/probe" "$OUT/fio"
mkdir -p "$OUT/fio"
"$B" probe "$F" --size=1g --time=30 --results="$OUT/probe" --no-calibrate > "$OUT/probe.txt"
for j in "$OUT"/jobs/*.fio; do
  PROBE_FILE=$F fio --output-format=json "$j" > "$OUT/fio/$(basename "$j" .fio).json"
done
{
  echo "recorded: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "kernel: $(uname -r)"
  echo "fio: $(fio --version)"
  echo "file: $F on $(df --output=source "$(dirname "$F")" | tail -1)"
  lsblk -d -o NAME,ROTA,SIZE,MODEL 2>/dev/null || true
  nproc | sed 's/^/cpus: /'
} > "$OUT/machine.txt"
rm -f "$F"
echo "recorded in $OUT"
