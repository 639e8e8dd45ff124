# shellcheck shell=bash
# What the case scripts in bench/trainwatch/ share (kept outside that folder:
# bench/peers.sh runs every script in it as a case). Source it after the shared
# lib/common.sh. Sets SYS, TW_BIN (default: the release build) and VER
# ("<version>+<commit>"), and fails with the build command when the binary is
# missing.
# shellcheck disable=SC2034  # SYS and VER are for the scripts that source this
SYS=trainwatch
TW_BIN=${TW_BIN:-$TW_ROOT/build/release/trainwatch}
[ -x "$TW_BIN" ] || die "no trainwatch binary at $TW_BIN (cmake --preset release && cmake --build --preset release --target trainwatch, or set TW_BIN)"
VER=$("$TW_BIN" version | awk 'NR == 1 {print $2}')
VER="${VER:-unknown}+$(git -C "$TW_ROOT" rev-parse --short HEAD 2>/dev/null || echo nogit)"

# need_query_bench: sets TW_QUERY_BENCH (beside TW_BIN), which counts samples back.
need_query_bench() {
  TW_QUERY_BENCH=${TW_QUERY_BENCH:-$(dirname "$TW_BIN")/tw_query_bench}
  [ -x "$TW_QUERY_BENCH" ] || die "no tw_query_bench at $TW_QUERY_BENCH (cmake --build --preset release --target tw_query_bench)"
}
