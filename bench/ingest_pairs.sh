#!/usr/bin/env bash
# HTTP ingest and the disk writes it causes, trainwatch beside VictoriaMetrics,
# in alternating pairs: each pair runs VictoriaMetrics (Prometheus remote
# write, tools/remote_write.py) and then trainwatch (native batches,
# bench/trainwatch/native_ingest.py, or with TW_PROTOCOL=remote-write the same
# remote-write requests, below) on the same data, a few seconds apart,
# so that a change of the machine's speed between minutes moves both sides of
# a pair. The ratio is judged by the median over the pairs (at least 7), with
# its min and max.
#
# Per run: samples/s of the send (VictoriaMetrics: send + force_flush), and
# the bytes the server process wrote to the disk over its whole life, start
# to stop included (GNU time's "File system outputs", 512-byte units: what
# storing the data cost, VictoriaMetrics' flush of its in-memory parts at
# shutdown included; every acknowledged sample is durable on trainwatch's side
# when it is acknowledged).
#
#   bash bench/ingest_pairs.sh [PAIRS] [SCALE]      (defaults: 7 big)
#
# TW_PROTOCOL=remote-write sends trainwatch the peer's own remote-write
# requests (POST /api/v1/write: the same protobuf + snappy bodies, the same
# shards and connections), their timestamps moved to end a minute ago so that
# they stay in trainwatch's raw tier while they are counted back; the default
# (native) sends trainwatch's native batches of the same samples.
# PROMETHEUS=1 adds Debian's prometheus (--web.enable-remote-write-receiver)
# to each pair, on the peer's requests, after VictoriaMetrics.
#
# Prerequisites (installs nothing; scripts/install-deps --bench has them): a
# release build (cmake --build --preset release --target trainwatch
# tw_query_bench), victoria-metrics, python3-snappy and python3-protobuf, GNU
# time, curl; the shared bench folder beside the project (or SHARED=...).
# Prints one line per pair and a summary; appends nothing to the results file.
set -euo pipefail
TW_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$TW_ROOT/../shared}
[ -f "$SHARED/bench/lib/common.sh" ] || { echo "ingest_pairs.sh: no shared bench folder at $SHARED (set SHARED=...)" >&2; exit 1; }
PAIRS=${1:-7}
SCALE=${2:-big}
case "$PAIRS" in ''|*[!0-9]*) echo "ingest_pairs.sh: PAIRS must be a number, got '$PAIRS'" >&2; exit 2 ;; esac
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
# trainwatch's requests are re-made for every invocation: their newest sample
# must be recent enough to stay in the raw tier while they are counted back.
TW_PROTOCOL=${TW_PROTOCOL:-native}
if [ "$TW_PROTOCOL" = remote-write ]; then
  TWP="$BENCH_WORK/pairs-rw.$SCALE"
  duration_s=$(manifest_get "$MAN" duration_s)
  log "encoding remote-write requests for $SCALE, ending a minute ago"
  "$RW_PYTHON" "$BENCH_DIR/tools/remote_write.py" encode --scale "$SCALE" --out-prefix "$TWP" \
    --start "$(( $(date +%s) - duration_s - 60 ))" || die "encoding the remote-write requests failed"
elif [ "$TW_PROTOCOL" = native ]; then
  TWP="$BENCH_WORK/pairs-native.$SCALE"
  log "encoding native requests for $SCALE"
  "$RW_PYTHON" "$TW_ROOT/bench/trainwatch/native_ingest.py" encode --vmimport "$BENCH_DATA/$SCALE.vmimport" \
    --manifest "$MAN" --out-prefix "$TWP" --protocol native --compress snappy \
    || die "encoding the native requests failed"
else
  die "TW_PROTOCOL must be native or remote-write, got '$TW_PROTOCOL'"
fi
[ "${PROMETHEUS:-0}" = 1 ] && need prometheus "Debian package prometheus"

fs_output_bytes() { awk -F': ' '/File system outputs/ {print $2 * 512}' "$1"; }

run_vm() {  # prints "samples/s bytes"
  local tmp port t0 secs wrote
  tmp=$(mktemp -d "$BENCH_WORK/pairs-vm.XXXXXX")
  port=$(free_port)
  start_server victoria-metrics "$tmp/time.txt" "$tmp/vm.log" victoria-metrics \
    -storageDataPath="$tmp/storage" -httpListenAddr="127.0.0.1:$port" -retentionPeriod=100y \
    -search.disableCache
  wait_http "http://127.0.0.1:$port/health" 60 || die "victoria-metrics did not become healthy"
  t0=$(now_ns)
  "$RW_PYTHON" "$BENCH_DIR/tools/remote_write.py" send --port "$port" --path /api/v1/write \
    --in-prefix "$RWP" > "$tmp/send.json"
  curl -fsS "http://127.0.0.1:$port/internal/force_flush" >/dev/null
  secs=$(secs_since "$t0")
  local got; got=$("$PY" "$BENCH_DIR/tools/query_bench.py" --port "$port" --manifest "$MAN" --count-only)
  [ "$got" = "$SAMPLES" ] || die "victoria-metrics holds $got samples, expected $SAMPLES"
  stop_server
  wrote=$(fs_output_bytes "$tmp/time.txt")
  rm -rf "$tmp"
  echo "$("$PY" -c "print($SAMPLES / $secs)") $wrote"
}

run_tw() {  # prints "samples/s bytes"
  local tmp port t0 secs wrote
  tmp=$(mktemp -d "$BENCH_WORK/pairs-tw.XXXXXX")
  port=$(free_port)
  start_server trainwatch-server "$tmp/time.txt" "$tmp/server.log" \
    "$TW_BIN" server --data "$tmp/data" --listen "127.0.0.1:$port"
  wait_http "http://127.0.0.1:$port/api/v1/health" || die "trainwatch server did not answer (see $tmp/server.log)"
  t0=$(now_ns)
  if [ "$TW_PROTOCOL" = remote-write ]; then
    "$RW_PYTHON" "$BENCH_DIR/tools/remote_write.py" send --port "$port" --path /api/v1/write \
      --in-prefix "$TWP" > "$tmp/send.json" || die "sending failed: $(cat "$tmp/send.json")"
  else
    "$RW_PYTHON" "$TW_ROOT/bench/trainwatch/native_ingest.py" send --port "$port" --in-prefix "$TWP" \
      > "$tmp/send.json" || die "sending failed: $(cat "$tmp/send.json")"
  fi
  secs=$(secs_since "$t0")
  stop_server
  wrote=$(fs_output_bytes "$tmp/time.txt")
  local got; got=$("$TW_QUERY_BENCH" --data "$tmp/data" --count-only --manifest "$MAN")
  [ "$got" = "$SAMPLES" ] || die "trainwatch holds $got samples, expected $SAMPLES"
  rm -rf "$tmp"
  echo "$("$PY" -c "print($SAMPLES / $secs)") $wrote"
}

run_prom() {  # prints "samples/s"
  local tmp port t0 secs
  tmp=$(mktemp -d "$BENCH_WORK/pairs-prom.XXXXXX")
  port=$(free_port)
  printf 'global:\n  scrape_interval: 1m\nscrape_configs: []\n' > "$tmp/prometheus.yml"
  start_server prometheus "$tmp/time.txt" "$tmp/prometheus.log" prometheus \
    --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
    --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$port" \
    --web.enable-remote-write-receiver
  wait_http "http://127.0.0.1:$port/-/ready" 120 || die "prometheus did not become ready (see $tmp/prometheus.log)"
  t0=$(now_ns)
  "$RW_PYTHON" "$BENCH_DIR/tools/remote_write.py" send --port "$port" --path /api/v1/write \
    --in-prefix "$RWP" > "$tmp/send.json" || die "remote write to prometheus failed"
  secs=$(secs_since "$t0")
  local got; got=$("$PY" "$BENCH_DIR/tools/query_bench.py" --port "$port" --manifest "$MAN" --count-only)
  [ "$got" = "$SAMPLES" ] || die "prometheus holds $got samples, expected $SAMPLES"
  stop_server
  rm -rf "$tmp"
  "$PY" -c "print($SAMPLES / $secs)"
}

RESULTS=()
PROM_RATES=()
for pair in $(seq 1 "$PAIRS"); do
  read -r vm_rate vm_bytes < <(run_vm)
  if [ "${PROMETHEUS:-0}" = 1 ]; then
    prom_rate=$(run_prom) && [ -n "$prom_rate" ] || die "the prometheus run failed (see above)"
    PROM_RATES+=("$prom_rate")
  fi
  read -r tw_rate tw_bytes < <(run_tw)
  line=$("$PY" -c "
s=$SAMPLES; vr=$vm_rate; tr=$tw_rate; vb=$vm_bytes; tb=$tw_bytes
print('pair %d: samples/s %.0f vs %.0f = %.2fx; disk bytes/sample %.2f vs %.2f = %.2fx' % (
    $pair, tr, vr, tr / vr, tb / s, vb / s, (tb / vb) if vb else float('inf')))")
  echo "$line"
  if [ "${PROMETHEUS:-0}" = 1 ]; then
    "$PY" -c "print('        samples/s vs prometheus %.0f = %.2fx' % ($prom_rate, $tw_rate / $prom_rate))"
  fi
  RESULTS+=("$tw_rate $vm_rate $tw_bytes $vm_bytes ${prom_rate:-0}")
done
echo "trainwatch received: $TW_PROTOCOL"
printf '%s\n' "${RESULTS[@]}" | "$PY" -c "
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
s = $SAMPLES
rate = [r[0] / r[1] for r in rows]
disk = [r[2] / r[3] for r in rows if r[3]]
print('$SCALE, %d pairs, %d samples a run' % (len(rows), s))
print('ingest rate trainwatch/VictoriaMetrics: median %.2fx [%.2f-%.2f]' % (statistics.median(rate), min(rate), max(rate)))
print('  trainwatch %.0f samples/s, VictoriaMetrics %.0f (medians)' % (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)))
if disk:
    print('disk bytes written trainwatch/VictoriaMetrics: median %.1fx [%.1f-%.1f]' % (statistics.median(disk), min(disk), max(disk)))
print('  bytes/sample: trainwatch %.2f, VictoriaMetrics %.2f (medians)' % (statistics.median(r[2] / s for r in rows), statistics.median(r[3] / s for r in rows)))
if all(r[4] for r in rows):
    prom = [r[0] / r[4] for r in rows]
    print('ingest rate trainwatch/prometheus: median %.2fx [%.2f-%.2f]; prometheus %.0f samples/s (median)' % (statistics.median(prom), min(prom), max(prom), statistics.median(r[4] for r in rows)))
"
