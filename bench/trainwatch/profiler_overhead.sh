#!/usr/bin/env bash
# Case profiler_overhead: what system sampling costs, trainwatch's profiler at
# 100 ms beside prometheus-node-exporter scraped at 1 s, on the same machine
# for the same duration.
#
#   trainwatch: bench/profiler/profiler_overhead profiles a stand-in job (a root
#     and 4 worker processes, 8 sleeping threads each) at 100 ms into a counting
#     sink: CPU of the sampling thread, peak RSS of the process.
#   node_exporter: prometheus-node-exporter (default collectors) on 127.0.0.1,
#     scraped with curl once a second: its CPU (utime+stime from /proc/PID/stat,
#     counted from the first scrape on) and peak RSS (VmHWM). curl's own cost is
#     not counted.
#
# Emits, per system: profiler_cpu (% of one core, lower is better) and
# profiler_rss (MiB, lower is better), scale "machine".
#
# Prerequisites: a release build of the benchmark
#   cmake --preset release && cmake --build --preset release --target profiler_overhead
# (or PROFILER_OVERHEAD_BIN=...), prometheus-node-exporter (Debian package; see
# scripts/install-deps --bench), curl. PROFILER_BENCH_SECONDS (default 60) sets
# the duration of each half. Installs nothing.
set -euo pipefail
TW_ROOT=${TW_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
SHARED=${SHARED:-$TW_ROOT/../shared}
. "$SHARED/bench/lib/common.sh"

BIN=${PROFILER_OVERHEAD_BIN:-$TW_ROOT/build/release/bench/profiler/profiler_overhead}
[ -x "$BIN" ] || die "no $BIN: cmake --preset release && cmake --build --preset release --target profiler_overhead"
need prometheus-node-exporter "Debian package prometheus-node-exporter"
secs=${PROFILER_BENCH_SECONDS:-60}
version=$(git -C "$TW_ROOT" describe --always --dirty 2>/dev/null || echo unknown)
hz=$(getconf CLK_TCK)

value() { awk -F= -v k="$1" '$1 == k {print $2}'; }

# --- trainwatch ------------------------------------------------------------------
log "trainwatch profiler at 100 ms for ${secs} s"
out=$("$BIN" --seconds "$secs" --interval-ms 100)
printf '%s\n' "$out" >&2
cmd="profiler_overhead --seconds $secs --interval-ms 100"
emit trainwatch "$version" profiler_cpu machine "%core" lower "$cmd" \
  "$(printf '%s\n' "$out" | value percent_of_core)"
emit trainwatch "$version" profiler_rss machine MiB lower "$cmd" \
  "$(printf '%s\n' "$out" | value peak_rss_mib)"

# --- prometheus-node-exporter -------------------------------------------------------
port=$(free_port)
work=$(mktemp -d "$BENCH_WORK/node_exporter.XXXXXX")
start_server node_exporter "$work/time.txt" "$work/log.txt" \
  prometheus-node-exporter --web.listen-address="127.0.0.1:$port"
wait_http "http://127.0.0.1:$port/metrics" 30 || die "node_exporter did not answer (see $work/log.txt)"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$SRV_PID/stat"; }
t0_ticks=$(cpu_ticks)
t0=$(now_ns)
log "node_exporter scraped every 1 s for ${secs} s"
for i in $(seq 1 "$secs"); do
  curl -fsS -o /dev/null --max-time 5 "http://127.0.0.1:$port/metrics"
  # Next scrape on a 1 s grid from t0.
  left=$(awk -v t0="$t0" -v i="$i" -v now="$(now_ns)" 'BEGIN { d = (t0 + i * 1e9 - now) / 1e9; print (d > 0 ? d : 0) }')
  sleep "$left"
done
t1_ticks=$(cpu_ticks)
wall=$(secs_since "$t0")
ne_rss=$(awk '/^VmHWM:/ {printf "%.1f", $2 / 1024}' "/proc/$SRV_PID/status")
stop_server
ne_cpu=$(awk -v d="$((t1_ticks - t0_ticks))" -v hz="$hz" -v w="$wall" 'BEGIN { printf "%.3f", 100 * d / hz / w }')
log "node_exporter: ${ne_cpu} % of a core, peak RSS ${ne_rss} MiB"
ne_version=$(pkg_version prometheus-node-exporter prometheus-node-exporter)
emit node_exporter "$ne_version" profiler_cpu machine "%core" lower \
  "prometheus-node-exporter, curl /metrics every 1 s for $secs s" "$ne_cpu"
emit node_exporter "$ne_version" profiler_rss machine MiB lower \
  "prometheus-node-exporter, curl /metrics every 1 s for $secs s" "$ne_rss"
rm -rf "$work"
