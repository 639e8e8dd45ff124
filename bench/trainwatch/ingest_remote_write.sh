#!/usr/bin/env bash
# HTTP ingest into `trainwatch server`, side by side with VictoriaMetrics'
# Prometheus remote write (peers/victoria_metrics.sh, case ingest_remote_write):
# the same data, 2 keep-alive connections, 2000 samples per request, time order
# (native_ingest.py beside this script mirrors tools/remote_write.py), sent to
# the native batch API POST /api/v1/samples. Also PutMetricData's own rate
# (AWS JSON 1.0, 1000 values per request, the API's limit): case
# ingest_put_metric_data, which no peer has.
#
# Prerequisites (installs nothing): a release build with trainwatch and
# tw_query_bench (cmake --build --preset release --target trainwatch
# tw_query_bench); GNU time, python3, curl, and Debian's python3-snappy and
# python3-protobuf: the shared helper looks for an interpreter with both (the
# peer's encoder needs both), and without one our bodies go uncompressed and
# are sent by the first python3 on PATH (on a fresh machine: 0.85 M samples/s
# for `big` against 1.43 M). Run through bench/peers.sh.
#
# Each run: a fresh data folder, `trainwatch server` on a free port (it takes
# the folder as writer), the requests, then every sample is counted back.
# Acknowledged means durable (write-ahead log), so no flush step is needed.
# shellcheck disable=SC1091
. "$SHARED/bench/lib/common.sh"

# shellcheck source=SCRIPTDIR/../trainwatch_common.sh
. "$TW_ROOT/bench/trainwatch_common.sh"
need_query_bench
ENC="$TW_ROOT/bench/trainwatch/native_ingest.py"

# The native bodies are snappy-compressed, as remote write's are, when an
# interpreter with python3-snappy is found (the one the peer's encoder uses);
# otherwise they go uncompressed and the log says so.
find_rw_python
NATIVE_ENCODING=identity
# The requests are sent by the interpreter that sends the peer's
# (peers/victoria_metrics.sh runs tools/remote_write.py under RW_PYTHON). On
# 2 cores the sender's CPU is taken from the server, and interpreters differ:
# a python3 built without optimizations (pyenv's default) took a quarter more CPU
# than Debian's for the same requests, and the measured rate fell by 15 %.
SEND_PY=$PY
if [ -n "$RW_PYTHON" ]; then
  NATIVE_ENCODING=snappy
  SEND_PY=$RW_PYTHON
else
  log "no python3 with python3-snappy and python3-protobuf found: the native bodies go uncompressed"
fi

# encode SCALE PROTOCOL: the request files, re-made when older than an hour
# or encoded otherwise. Their newest sample is a minute old when they are
# made, and the count after each run must find every sample in the raw tier:
# the namespace keeps raw chunks 3 hours (compaction drops older ones), and
# `small` spans 3 hours.
encode() {
  local scale=$1 protocol=$2 prefix="$BENCH_WORK/tw-$2.$1" encoding=identity py=$PY
  local args=()
  if [ "$protocol" = native ] && [ "$NATIVE_ENCODING" = snappy ]; then
    encoding=snappy py=$RW_PYTHON args=(--compress snappy)
  fi
  if [ ! -s "$prefix.json" ] || ! "$PY" -c 'import json,sys,time; m=json.load(open(sys.argv[1])); sys.exit(0 if time.time()*1000 - m["encoded_at_ms"] < 3600000 and m.get("content_encoding", "identity") == sys.argv[2] else 1)' "$prefix.json" "$encoding"; then
    log "encoding $protocol requests for $scale (Content-Encoding: $encoding)"
    # In $(encode ...) set -e does not stop the script: fail it here.
    "$py" "$ENC" encode --vmimport "$BENCH_DATA/$scale.vmimport" \
      --manifest "$BENCH_DATA/$scale.manifest.json" --out-prefix "$prefix" --protocol "$protocol" \
      ${args[@]+"${args[@]}"} || die "encoding the $protocol requests for $scale failed"
  fi
  echo "$prefix"
}

for scale in $BENCH_SCALES; do
  ensure_metrics "$scale" vmimport
  MAN="$BENCH_DATA/$scale.manifest.json"
  SAMPLES=$(manifest_get "$MAN" samples)
  for protocol in native putmetricdata; do
    prefix=$(encode "$scale" "$protocol")
    RATE=(); RSS=()
    runs=$BENCH_RUNS
    [ "$protocol" = putmetricdata ] && runs=1  # for the record; no peer to compare with
    for run in $(seq 1 "$runs"); do
      tmp=$(mktemp -d "$BENCH_WORK/tw.XXXXXX")
      port=$(free_port)
      start_server trainwatch-server "$tmp/time.txt" "$tmp/server.log" \
        "$TW_BIN" server --data "$tmp/data" --listen "127.0.0.1:$port"
      wait_http "http://127.0.0.1:$port/api/v1/health" || die "trainwatch server did not answer (see $tmp/server.log)"
      t0=$(now_ns)
      "$SEND_PY" "$ENC" send --port "$port" --in-prefix "$prefix" > "$tmp/send.json" \
        || die "sending failed: $(cat "$tmp/send.json")"
      secs=$(secs_since "$t0")
      got=$("$TW_QUERY_BENCH" --data "$tmp/data" --count-only --manifest "$MAN")
      [ "$got" = "$SAMPLES" ] || die "trainwatch holds $got samples after $protocol ingest, expected $SAMPLES"
      stop_server
      RATE+=("$("$PY" -c "print($SAMPLES / $secs)")")
      RSS+=("$("$PY" -c "print($(peak_rss_kb "$tmp/time.txt") / 1024)")")
      log "$SYS $scale $protocol run $run: ${secs}s, RSS ${RSS[-1]} MiB"
      rm -rf "$tmp"
    done
    if [ "$protocol" = native ]; then
      emit "$SYS" "$VER" ingest_remote_write "$scale" samples/s higher \
        "native_ingest.py send (2 connections, 2000 samples/request, time order) to POST /api/v1/samples, Content-Encoding: $("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("content_encoding", "identity"))' "$prefix.json"); durable on answer" "${RATE[@]}"
      emit "$SYS" "$VER" rss_remote_write_run "$scale" MiB lower \
        "GNU time -v max RSS of trainwatch server during HTTP ingest" "${RSS[@]}"
    else
      emit "$SYS" "$VER" ingest_put_metric_data "$scale" samples/s higher \
        "native_ingest.py send: CloudWatch PutMetricData, AWS JSON 1.0, 1000 values/request, 2 connections" "${RATE[@]}"
    fi
  done
done
