#!/usr/bin/env bash
# Remote write out: `trainwatch server --remote-write` feeding VictoriaMetrics,
# beside VictoriaMetrics taking the same samples over remote write directly,
# in alternating pairs (the ratio is judged by the median of at least 7, with
# its min and max).
#
# Per pair, on the same data (SCALE, default big: 2,000 series x 1 h):
#   direct   a fresh VictoriaMetrics takes the peer's own remote-write
#            requests (tools/remote_write.py, 2 connections, 2,000 samples a
#            request), then force_flush: samples/s.
#   through  a fresh VictoriaMetrics is the receiver of a fresh trainwatch
#            server (--remote-write); trainwatch takes the native requests of
#            the same samples (bench/trainwatch/native_ingest.py, as in
#            ingest_pairs.sh); the run ends when VictoriaMetrics holds every
#            sample (force_flush, counted back): samples/s from the first
#            request to then. Meanwhile bench/trainwatch/rw_out_probe.py puts a
#            probe sample into trainwatch every 100 ms (from before the first
#            request: its warm-up probe is queryable first) and looks for it in
#            VictoriaMetrics every 20 ms: the delay from ingest to queryable
#            there, p50 / p99 (VictoriaMetrics runs with
#            -search.latencyOffset=0s; its own time to make rows searchable,
#            about a second, is part of the delay). Under a flood faster than
#            the way out, a probe waits behind every sample queued before it.
#   steady   as through, but the native requests are paced at half the rate
#            direct measured in this pair (the target's "sustains at least
#            half the rate VictoriaMetrics accepts"): whether trainwatch keeps
#            up (samples/s until VictoriaMetrics holds them all, against the
#            rate) and the delay at that load, which the p99 <= 2 s target is
#            judged by.
#
# Then, without any load, the delay alone: a trainwatch server feeding a
# VictoriaMetrics takes only the probes for IDLE_PROBE_S seconds (default 30).
#
#   bash bench/remote_write_out_pairs.sh [PAIRS] [SCALE]     (defaults: 7 big)
#
# Prerequisites as ingest_pairs.sh's (a release build, victoria-metrics,
# python3-snappy and python3-protobuf, GNU time, curl, the shared bench folder).
set -euo pipefail
TW_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$TW_ROOT/../shared}
[ -f "$SHARED/bench/lib/common.sh" ] || { echo "remote_write_out_pairs.sh: no shared bench folder at $SHARED (set SHARED=...)" >&2; exit 1; }
PAIRS=${1:-7}
SCALE=${2:-big}
case "$PAIRS" in ''|*[!0-9]*) echo "remote_write_out_pairs.sh: PAIRS must be a number, got '$PAIRS'" >&2; exit 2 ;; esac
# shellcheck disable=SC1091
. "$SHARED/bench/lib/common.sh"
# shellcheck source=SCRIPTDIR/trainwatch_common.sh
. "$TW_ROOT/bench/trainwatch_common.sh"
need_query_bench
need victoria-metrics "Debian package victoria-metrics"
find_rw_python
[ -n "$RW_PYTHON" ] || die "no python3 with python3-snappy and python3-protobuf (scripts/install-deps --bench)"

ensure_metrics "$SCALE" vmimport
MAN="$BENCH_DATA/$SCALE.manifest.json"
SAMPLES=$(manifest_get "$MAN" samples)
RWP="$BENCH_DATA/$SCALE.rw"
if [ ! -s "$RWP.json" ]; then
  log "encoding remote-write requests for $SCALE"
  "$RW_PYTHON" "$BENCH_DIR/tools/remote_write.py" encode --scale "$SCALE" --out-prefix "$RWP"
fi
TWP="$BENCH_WORK/pairs-native.$SCALE"
# Re-made when older than 30 minutes (their newest sample is a minute old
# when made; VictoriaMetrics is asked for the last 3 hours).
if [ -z "$(find "$TWP.json" -mmin -30 2>/dev/null)" ]; then
  log "encoding native requests for $SCALE"
  "$RW_PYTHON" "$TW_ROOT/bench/trainwatch/native_ingest.py" encode --vmimport "$BENCH_DATA/$SCALE.vmimport" \
    --manifest "$MAN" --out-prefix "$TWP" --protocol native --compress snappy \
    || die "encoding the native requests failed"
fi

VM_PID=""
start_vm() {  # start_vm DIR PORT
  victoria-metrics -storageDataPath="$1/storage" -httpListenAddr="127.0.0.1:$2" -retentionPeriod=100y \
    -search.disableCache -search.latencyOffset=0s >"$1/vm.log" 2>&1 &
  VM_PID=$!
  wait_http "http://127.0.0.1:$2/health" 60 || die "victoria-metrics did not become healthy"
}
stop_vm() {
  [ -n "$VM_PID" ] || return 0
  kill -TERM "$VM_PID" 2>/dev/null || true
  wait "$VM_PID" 2>/dev/null || true
  VM_PID=""
}
trap 'stop_vm; stop_server' EXIT

vm_count() {  # vm_count PORT: samples held (after a flush), as the peer's own requests name them
  curl -fsS "http://127.0.0.1:$1/internal/force_flush" >/dev/null
  "$PY" "$BENCH_DIR/tools/query_bench.py" --port "$1" --manifest "$MAN" --count-only
}
# tw_count PORT: samples of the data's namespaces held, as trainwatch names
# them (docs/prometheus.md: a namespace label, the dimensions as labels).
tw_count() {
  curl -fsS "http://127.0.0.1:$1/internal/force_flush" >/dev/null
  curl -fsS "http://127.0.0.1:$1/api/v1/query" \
    --data-urlencode 'query=sum(count_over_time({namespace=~"trainwatch/.+"}[3h]))' |
    "$PY" -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(int(float(r[0]["value"][1])) if r else 0)'
}

run_direct() {  # prints samples/s
  local tmp port t0 secs got
  tmp=$(mktemp -d "$BENCH_WORK/rwout-vm.XXXXXX")
  port=$(free_port)
  start_vm "$tmp" "$port"
  t0=$(now_ns)
  "$RW_PYTHON" "$BENCH_DIR/tools/remote_write.py" send --port "$port" --path /api/v1/write \
    --in-prefix "$RWP" > "$tmp/send.json"
  curl -fsS "http://127.0.0.1:$port/internal/force_flush" >/dev/null
  secs=$(secs_since "$t0")
  got=$(vm_count "$port")
  [ "$got" = "$SAMPLES" ] || die "victoria-metrics holds $got samples, expected $SAMPLES"
  stop_vm
  rm -rf "$tmp"
  "$PY" -c "print($SAMPLES / $secs)"
}

run_through() {  # run_through [RATE]: prints "samples/s p50 p99 probes seen"
  local rate=${1:-0} tmp vport port t0 secs got probe
  tmp=$(mktemp -d "$BENCH_WORK/rwout-tw.XXXXXX")
  vport=$(free_port)
  start_vm "$tmp" "$vport"
  port=$(free_port)
  start_server trainwatch-server "$tmp/time.txt" "$tmp/server.log" \
    "$TW_BIN" server --data "$tmp/data" --listen "127.0.0.1:$port" \
    --remote-write "http://127.0.0.1:$vport/api/v1/write"
  wait_http "http://127.0.0.1:$port/api/v1/health" || die "trainwatch server did not answer (see $tmp/server.log)"
  "$PY" "$TW_ROOT/bench/trainwatch/rw_out_probe.py" --trainwatch "http://127.0.0.1:$port" \
    --victoria "http://127.0.0.1:$vport" --stop "$tmp/stop" --ready "$tmp/ready" > "$tmp/probe.json" &
  probe=$!
  # The load starts once the probe's series is in VictoriaMetrics' index.
  for _ in $(seq 1 600); do [ -e "$tmp/ready" ] && break; sleep 0.1; done
  [ -e "$tmp/ready" ] || die "the probe's warm-up sample did not reach victoria-metrics in 60 s"
  t0=$(now_ns)
  "$RW_PYTHON" "$TW_ROOT/bench/trainwatch/native_ingest.py" send --port "$port" --in-prefix "$TWP" \
    --rate "$rate" > "$tmp/send.json" || die "sending failed: $(cat "$tmp/send.json")"
  for _ in $(seq 1 1200); do
    got=$(tw_count "$vport")
    [ "$got" = "$SAMPLES" ] && break
    sleep 0.1
  done
  secs=$(secs_since "$t0")
  [ "$got" = "$SAMPLES" ] || die "victoria-metrics holds $got samples through trainwatch, expected $SAMPLES"
  touch "$tmp/stop"
  wait "$probe" || die "the probe failed"
  stop_server
  stop_vm
  "$PY" -c "
import json; p = json.load(open('$tmp/probe.json'))
print($SAMPLES / $secs, p.get('p50_s', -1), p.get('p99_s', -1), p['probes'], p['seen'])"
  rm -rf "$tmp"
}

run_idle_delay() {  # prints "p50 p99 probes seen"
  local tmp vport port probe
  tmp=$(mktemp -d "$BENCH_WORK/rwout-idle.XXXXXX")
  vport=$(free_port)
  start_vm "$tmp" "$vport"
  port=$(free_port)
  start_server trainwatch-server "$tmp/time.txt" "$tmp/server.log" \
    "$TW_BIN" server --data "$tmp/data" --listen "127.0.0.1:$port" \
    --remote-write "http://127.0.0.1:$vport/api/v1/write"
  wait_http "http://127.0.0.1:$port/api/v1/health" || die "trainwatch server did not answer (see $tmp/server.log)"
  "$PY" "$TW_ROOT/bench/trainwatch/rw_out_probe.py" --trainwatch "http://127.0.0.1:$port" \
    --victoria "http://127.0.0.1:$vport" --stop "$tmp/stop" > "$tmp/probe.json" &
  probe=$!
  sleep "${IDLE_PROBE_S:-30}"
  touch "$tmp/stop"
  wait "$probe" || die "the probe failed"
  stop_server
  stop_vm
  "$PY" -c "
import json; p = json.load(open('$tmp/probe.json'))
print(p.get('p50_s', -1), p.get('p99_s', -1), p['probes'], p['seen'])"
  rm -rf "$tmp"
}

RESULTS=()
for pair in $(seq 1 "$PAIRS"); do
  direct=$(run_direct)
  read -r through p50 p99 probes seen < <(run_through)
  "$PY" -c "print('pair %d: through trainwatch %.0f samples/s vs direct %.0f = %.2fx; delay under the flood p50 %.2f s, p99 %.2f s (%d of %d probes seen)' % ($pair, $through, $direct, $through / $direct, $p50, $p99, $seen, $probes))"
  half=$("$PY" -c "print(round($direct / 2))")
  read -r kept sp50 sp99 sprobes sseen < <(run_through "$half")
  "$PY" -c "print('        steady at %d samples/s (half of direct): kept %.0f samples/s; delay p50 %.2f s, p99 %.2f s (%d of %d probes seen)' % ($half, $kept, $sp50, $sp99, $sseen, $sprobes))"
  RESULTS+=("$through $direct $p50 $p99 $half $kept $sp50 $sp99")
done
read -r ip50 ip99 iprobes iseen < <(run_idle_delay)
echo "without any load: delay ingest -> queryable p50 $ip50 s, p99 $ip99 s ($iseen of $iprobes probes seen)"
[ "$PAIRS" -gt 0 ] || exit 0
printf '%s\n' "${RESULTS[@]}" | "$PY" -c "
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
r = [x[0] / x[1] for x in rows]
print('$SCALE, %d pairs, $SAMPLES samples a run' % len(rows))
print('remote write out / VictoriaMetrics direct: median %.2fx [%.2f-%.2f] (target >= 0.5x)' % (statistics.median(r), min(r), max(r)))
print('  through trainwatch %.0f samples/s, direct %.0f (medians)' % (statistics.median(x[0] for x in rows), statistics.median(x[1] for x in rows)))
p99 = [x[3] for x in rows]
print('delay ingest -> queryable under the flood: p50 median %.2f s; p99 median %.2f s [%.2f-%.2f]' % (statistics.median(x[2] for x in rows), statistics.median(p99), min(p99), max(p99)))
kept = [x[5] / x[4] for x in rows]
sp99 = [x[7] for x in rows]
print('steady at half the direct rate: kept up %.2fx of it [%.2f-%.2f]; delay p50 median %.2f s; p99 median %.2f s [%.2f-%.2f] (target p99 <= 2 s)' % (statistics.median(kept), min(kept), max(kept), statistics.median(x[6] for x in rows), statistics.median(sp99), min(sp99), max(sp99)))
"
