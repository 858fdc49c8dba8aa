#!/usr/bin/env bash
# Two costs of this machine that profiles/loop-2cpu.toml takes as measured, not fitted:
#   - a cache line moving between CPU 0 and CPU 1 (lock hand-off: lock_handoff_ns,
#     elv_handoff_ns, elv_cold_line_ns), from two pinned threads passing an atomic;
#   - a 4 KiB copy from a random page of a 1 GiB buffer (loop's copy through the page cache:
#     copy_ns_per_kib).
# Needs gcc and at least 2 CPUs; run on an otherwise idle machine.
set -euo pipefail
cd "$(dirname "$0")/machine"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -O2 -pthread cacheline-pingpong.c -o "$tmp/pingpong"
gcc -O2 page-copy.c -o "$tmp/page-copy"
"$tmp/pingpong"
"$tmp/page-copy"
