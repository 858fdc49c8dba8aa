#!/usr/bin/env bash
# A profile-guided release build of blksim: target/pgo/release/blksim.
#
# 1. builds blksim instrumented (-Cprofile-generate) in target/pgo-gen;
# 2. runs it on the training set in scripts/pgo-training.txt, jobs that cover every layer and
#    none of which is a `blksim bench` workload;
# 3. merges the profiles with the toolchain's own llvm-profdata (rustup's llvm-tools component,
#    added if missing: a profile must come from the LLVM that reads it);
# 4. builds blksim with -Cprofile-use into target/pgo.
#
# Same sources, same model: the binary's reports are byte-identical to the plain release
# build's (the last step compares a report of the optimised binary with the instrumented one's).
# Takes about 3 minutes on the 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi

sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ] && command -v rustup >/dev/null 2>&1; then
  echo "scripts/build-pgo.sh: adding rustup's llvm-tools component (llvm-profdata)" >&2
  rustup component add llvm-tools >&2 || true
fi
if [ ! -x "$profdata" ]; then
  echo "scripts/build-pgo.sh: no llvm-profdata at $profdata: install Rust with rustup, then \`rustup component add llvm-tools\` (the profile must come from the LLVM of this rustc, $(rustc -vV | sed -n 's/^LLVM version: //p'))" >&2
  exit 1
fi

root=$PWD
raw="$root/target/pgo-gen/profraw"
merged="$root/target/pgo-gen/merged.profdata"

echo "scripts/build-pgo.sh: instrumented build (target/pgo-gen)" >&2
RUSTFLAGS="-Cprofile-generate=$raw" cargo build --release -p blksim --target-dir target/pgo-gen
gen="$root/target/pgo-gen/release/blksim"
# Only the runs below count: not an earlier build's, nor the build scripts' of this one.
rm -rf "$raw"
mkdir -p "$raw"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The training set: one `blksim run` per line of scripts/pgo-training.txt.
n=0
while IFS= read -r line; do
  case "$line" in '' | '#'*) continue ;; esac
  n=$((n + 1))
  args=${line//\$OUT/$work}
  # shellcheck disable=SC2086
  if ! "$gen" run $args >"$work/run.out" 2>&1; then
    echo "scripts/build-pgo.sh: training run $n failed: blksim run $args" >&2
    tail -5 "$work/run.out" >&2
    exit 1
  fi
done <scripts/pgo-training.txt
echo "scripts/build-pgo.sh: $n training runs" >&2
"$profdata" merge -o "$merged" "$raw"

echo "scripts/build-pgo.sh: optimised build (target/pgo)" >&2
RUSTFLAGS="-Cprofile-use=$merged" \
  cargo build --release -p blksim --target-dir target/pgo
pgo="$root/target/pgo/release/blksim"
check=(repro/section3/section3.fio --device=null_blk-server --set=queue.scheduler=mq-deadline --runtime=5ms --output-format=normal,json+)
BLKSIM_FAKE_TIME=1795310737 "$gen" run "${check[@]}" >"$work/gen.out"
BLKSIM_FAKE_TIME=1795310737 "$pgo" run "${check[@]}" >"$work/pgo.out"
if ! cmp -s "$work/gen.out" "$work/pgo.out"; then
  echo "scripts/build-pgo.sh: the optimised build's report differs from the instrumented build's" >&2
  diff "$work/gen.out" "$work/pgo.out" | head -20 >&2
  exit 1
fi
echo "target/pgo/release/blksim"
