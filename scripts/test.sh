#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what the tests need (the real
# blkparse/btt from Debian's `blktrace` package, which the trace tests run), then runs every
# test of the workspace. CI runs this through .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then
  # shellcheck disable=SC1091
  . "$HOME/.cargo/env"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "scripts/test.sh: cargo not found; install Rust (rustup; stable >= 1.87)" >&2
  exit 1
fi

if ! command -v blkparse >/dev/null 2>&1 || ! command -v btt >/dev/null 2>&1; then
  echo "scripts/test.sh: installing blktrace (blkparse, btt) for the trace tests" >&2
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq blktrace >/dev/null
fi

cargo test --workspace --locked "$@"
