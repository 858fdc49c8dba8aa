#!/bin/sh
# Regenerate docs/html-report.png, the README's picture of the HTML report: a short hsq run on
# the default device with its slowest I/Os explained, rendered by headless Chromium (Debian's
# `chromium`, which scripts/test.sh installs).
set -e
cd "$(dirname "$0")/.."
cargo build --release -p blksim
B=${CARGO_TARGET_DIR:-target}/release/blksim
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
BLKSIM_FAKE_TIME=1795310737 "$B" run --name=a --rw=randread --size=16m --runtime=200ms \
    --ioengine=libaio --iodepth=8 --set=host.queue=hsq --explain=3 \
    --output-format=html --output="$T/report.html" 2>/dev/null
mkdir -p docs
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --force-device-scale-factor=0.75 --window-size=1000,3000 \
    --screenshot="$PWD/docs/html-report.png" "file://$T/report.html"
