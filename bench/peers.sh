#!/usr/bin/env bash
# trainwatch's side of the side-by-side benchmarks (../shared/bench/targets/README.md).
#
#   bash ../shared/bench/run_all.sh mtail log_baselines bench/peers.sh
#   bash ../shared/bench/run_all.sh victoria_metrics prometheus bench/peers.sh
#
# Runs every case script in bench/trainwatch/ (each emits results under the system
# name "trainwatch" with the peers' case names and units). Select cases with
# TW_BENCH_CASES="log_extract store" (default: all).
#
# Prerequisites: a release build (cmake --preset release && cmake --build --preset
# release) or TW_BIN pointing at a trainwatch binary; the shared bench folder beside
# the project (or SHARED=...). This script installs nothing.
set -euo pipefail
TW_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$TW_ROOT/../shared}
[ -f "$SHARED/bench/lib/common.sh" ] || { echo "peers.sh: no shared bench folder at $SHARED (set SHARED=...)" >&2; exit 1; }
export TW_ROOT SHARED
export TW_BIN=${TW_BIN:-$TW_ROOT/build/release/trainwatch}
cases=${TW_BENCH_CASES:-}
if [ -z "$cases" ]; then
  for f in "$TW_ROOT"/bench/trainwatch/*.sh; do
    [ -e "$f" ] && cases+=" $(basename "$f" .sh)"
  done
fi
for c in $cases; do
  script="$TW_ROOT/bench/trainwatch/$c.sh"
  [ -f "$script" ] || { echo "peers.sh: no case script $script" >&2; exit 1; }
  bash "$script"
done
