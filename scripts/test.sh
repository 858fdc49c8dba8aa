#!/usr/bin/env bash
# The whole test suite, on a fresh machine: checks that the repository needs nothing beside
# it, installs what the tests need (the real blkparse/btt from Debian's `blktrace` package,
# which the trace tests run, Debian's `fio` 3.33 with fio_jsonplus_clat2csv, which the live
# comparisons run, and Debian's python3 with numpy and pandas, which fio's
# fiologparser_hist.py needs to read blksim's histogram logs; Debian's chromium, which loads the
# HTML report headless; pyarrow and matplotlib in a virtualenv for the sweep tests), then runs every test of the workspace. CI runs this
# through .ci/run.
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

# A clone of the repository alone must pass: no tracked file may point into a folder beside
# it (a sibling folder of reference material, say). This script is left out because it names
# the pattern.
pattern='(\.\./)+shared|shared/reference'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  outside=$(git grep -n -E -e "$pattern" -- ':!scripts/test.sh' || true)
else
  outside=$(grep -rnIE --exclude-dir=target --exclude-dir=.git --exclude=test.sh -e "$pattern" . || true)
fi
if [ -n "$outside" ]; then
  echo "scripts/test.sh: these lines refer to files outside the repository:" >&2
  echo "$outside" >&2
  exit 1
fi

missing=()
if ! command -v blkparse >/dev/null 2>&1 || ! command -v btt >/dev/null 2>&1; then
  missing+=(blktrace)
fi
if ! command -v fio >/dev/null 2>&1 || ! command -v fio_jsonplus_clat2csv >/dev/null 2>&1; then
  missing+=(fio)
fi
if ! /usr/bin/python3 -c 'import numpy, pandas' >/dev/null 2>&1; then
  missing+=(python3-numpy python3-pandas)
fi
if ! /usr/bin/python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  missing+=(python3-venv)
fi
if ! command -v chromium >/dev/null 2>&1; then
  missing+=(chromium)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "scripts/test.sh: installing ${missing[*]} (blktrace: blkparse and btt for the trace tests; fio: the live comparisons with fio; numpy, pandas: fio's fiologparser_hist.py)" >&2
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Python for the sweep and Python-package tests, in a virtualenv of Debian's python3 under
# target/: pyarrow reads the Parquet files `blksim sweep` writes (an independent reader),
# matplotlib draws examples/plot_sweep.py, pandas takes blksim.to_frame, Ray runs the sweep
# on a local cluster the test starts. The blksim package itself is built from this checkout
# (maturin) on every run, so it is never stale.
PYENV=target/pyenv
if ! "$PYENV/bin/python" -c 'import pyarrow, matplotlib, pandas, ray' >/dev/null 2>&1; then
  echo "scripts/test.sh: installing pyarrow, matplotlib, pandas and ray in $PYENV" >&2
  rm -rf "$PYENV"
  /usr/bin/python3 -m venv "$PYENV"
  "$PYENV/bin/pip" install -q --disable-pip-version-check pyarrow==26.0.1 matplotlib==3.11.2 \
    pandas==3.1.1 ray==2.60.0
fi
echo "scripts/test.sh: building the blksim Python package into $PYENV" >&2
"$PYENV/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps ./crates/blksim-py
export BLKSIM_PYTHON="$PWD/$PYENV/bin/python"

cargo test --workspace --locked "$@"
