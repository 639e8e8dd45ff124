#!/usr/bin/env bash
# trainwatch's time-series store, side by side with peers/victoria_metrics.sh
# and peers/prometheus.sh (same data, same case names and units).
#
# Prerequisites (this script installs nothing): a release build with
# trainwatch and tw_query_bench (cmake --preset release && cmake --build
# --preset release --target trainwatch tw_query_bench), or TW_BIN and
# TW_QUERY_BENCH pointing at them; GNU time, python3, curl (common.sh).
# Run through bench/peers.sh, which sets SHARED, TW_ROOT and TW_BIN.
#
# For each scale in $BENCH_SCALES and each of $BENCH_RUNS runs, in a fresh
# temporary data folder:
#   1. trainwatch import SCALE.vmimport --keep forever (the very file
#      VictoriaMetrics imports; durable when the command returns)
#      -> ingest_bulk samples/s (wall time of the command)
#   2. tw_query_bench --count-only: every sample must be readable back
#   3. trainwatch admin compact (seal, flush, full compaction, zstd at the
#      bottom) -> disk_bytes_per_sample (du -sb of the RocksDB folder) and
#      disk_bytes_per_sample_data_only (without the series index)
#   4. trainwatch server on the folder, and query_http.py beside this script:
#      every sample counted through the server (GetMetricData SampleCount), as
#      the peers' scripts count through the server they then time, and the four
#      cases of tools/query_bench.py over HTTP (CloudWatch GetMetricData, AWS
#      JSON 1.0, one keep-alive connection)
#   5. GNU time's max RSS of each process -> rss_bulk_run (the largest of
#      import, compact and the server) and rss_query_server (the server)
# Medians over the runs are appended to $BENCH_RESULTS as system "trainwatch".
# shellcheck disable=SC1091
. "$SHARED/bench/lib/common.sh"

# shellcheck source=SCRIPTDIR/../trainwatch_common.sh
. "$TW_ROOT/bench/trainwatch_common.sh"
need_query_bench

rss_mib() { "$PY" -c "print($(peak_rss_kb "$1") / 1024)"; }

for scale in $BENCH_SCALES; do
  ensure_metrics "$scale" vmimport
  MAN="$BENCH_DATA/$scale.manifest.json"
  SAMPLES=$(manifest_get "$MAN" samples)
  INPUT="$BENCH_DATA/$scale.vmimport"
  ING=(); BPS=(); BPS_DATA=(); RSS=(); QRSS=(); Q1A=(); Q1M=(); QHA=(); QHM=()
  for run in $(seq 1 "$BENCH_RUNS"); do
    tmp=$(mktemp -d "$BENCH_WORK/tw.XXXXXX")
    data="$tmp/data"
    t0=$(now_ns)
    "$TIMEV" -v -o "$tmp/time_import.txt" "$TW_BIN" import --data "$data" --keep forever --quiet \
      "$INPUT" > "$tmp/import.txt" || die "trainwatch import failed (see $tmp)"
    secs=$(secs_since "$t0")
    got=$("$TW_QUERY_BENCH" --data "$data" --manifest "$MAN" --count-only)
    [ "$got" = "$SAMPLES" ] || die "trainwatch holds $got samples, expected $SAMPLES"
    ING+=("$("$PY" -c "print($SAMPLES / $secs)")")
    "$TIMEV" -v -o "$tmp/time_compact.txt" "$TW_BIN" admin compact --data "$data" --json \
      > "$tmp/compact.json" || die "trainwatch admin compact failed"
    bytes=$(dir_bytes "$data/db")
    index=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["sst_bytes"]["index"])' "$tmp/compact.json")
    BPS+=("$("$PY" -c "print($bytes / $SAMPLES)")")
    BPS_DATA+=("$("$PY" -c "print(($bytes - $index) / $SAMPLES)")")
    got=$("$TW_QUERY_BENCH" --data "$data" --manifest "$MAN" --count-only)
    [ "$got" = "$SAMPLES" ] || die "after compaction trainwatch holds $got samples, expected $SAMPLES"
    port=$(free_port)
    start_server trainwatch-server "$tmp/time_query.txt" "$tmp/server.log" \
      "$TW_BIN" server --data "$data" --listen "127.0.0.1:$port"
    wait_http "http://127.0.0.1:$port/api/v1/health" || die "trainwatch server did not answer (see $tmp/server.log)"
    "$PY" "$TW_ROOT/bench/trainwatch/query_http.py" --port "$port" --manifest "$MAN" \
      --n "$BENCH_QUERIES" --expect-samples "$SAMPLES" > "$tmp/query.json" || die "query_http.py failed"
    stop_server
    read -r a b c d < <("$PY" -c 'import json,sys; c=json.load(open(sys.argv[1]))["cases"]; print(*(c[k]["median_ms"] for k in ("one_avg","one_max","hundred_avg","hundred_max")))' "$tmp/query.json")
    Q1A+=("$a"); Q1M+=("$b"); QHA+=("$c"); QHM+=("$d")
    r_import=$(rss_mib "$tmp/time_import.txt")
    r_compact=$(rss_mib "$tmp/time_compact.txt")
    r_query=$(rss_mib "$tmp/time_query.txt")
    RSS+=("$("$PY" -c "print(max($r_import, $r_compact, $r_query))")")
    QRSS+=("$r_query")
    log "$SYS $scale run $run: ${secs}s import, $bytes bytes after compaction, RSS import $r_import compact $r_compact query $r_query MiB"
    rm -rf "$tmp"
  done
  emit "$SYS" "$VER" ingest_bulk "$scale" samples/s higher \
    "trainwatch import --keep forever $scale.vmimport (durable on exit)" "${ING[@]}"
  emit "$SYS" "$VER" disk_bytes_per_sample "$scale" bytes/sample lower \
    "after import: trainwatch admin compact; du -sb db/" "${BPS[@]}"
  emit "$SYS" "$VER" disk_bytes_per_sample_data_only "$scale" bytes/sample lower \
    "after import: trainwatch admin compact; du -sb db/ minus the series index's SST bytes" "${BPS_DATA[@]}"
  QCMD="HTTP, trainwatch server: CloudWatch GetMetricData (JSON 1.0) period 60s, median of $BENCH_QUERIES"
  emit "$SYS" "$VER" query_1_series_avg "$scale" ms lower "$QCMD, Average of 1 series" "${Q1A[@]}"
  emit "$SYS" "$VER" query_1_series_max "$scale" ms lower "$QCMD, Maximum of 1 series" "${Q1M[@]}"
  emit "$SYS" "$VER" query_100_series_avg "$scale" ms lower "$QCMD, Average of 100 series" "${QHA[@]}"
  emit "$SYS" "$VER" query_100_series_max "$scale" ms lower "$QCMD, Maximum of 100 series" "${QHM[@]}"
  emit "$SYS" "$VER" rss_bulk_run "$scale" MiB lower \
    "GNU time -v max RSS, largest of: import, admin compact, server answering the queries" "${RSS[@]}"
  emit "$SYS" "$VER" rss_query_server "$scale" MiB lower \
    "GNU time -v max RSS of trainwatch server over the 4 query cases" "${QRSS[@]}"
done
