#!/usr/bin/env bash
# The archive's size per sample (docs/format/archive.md) beside the store's on
# the same data: the bench data's jobs imported into a fresh data folder,
# compacted (the store's smallest size, as in BENCHMARKS.md's bytes/sample
# row), then archived to a folder with `trainwatch archive`. Sizes are
# deterministic: one run.
#
#   bash bench/archive_size.sh [SCALE]      (default small)
#
# Prerequisites (installs nothing): a release build of trainwatch (or TW_BIN),
# python3, the shared bench folder beside the project (or SHARED=...). Prints
# one line per figure; appends nothing to the results file.
set -euo pipefail
TW_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$TW_ROOT/../shared}
[ -f "$SHARED/bench/lib/common.sh" ] || { echo "archive_size.sh: no shared bench folder at $SHARED (set SHARED=...)" >&2; exit 1; }
SCALE=${1:-small}
# shellcheck disable=SC1091
. "$SHARED/bench/lib/common.sh"
# shellcheck source=SCRIPTDIR/trainwatch_common.sh
. "$TW_ROOT/bench/trainwatch_common.sh"

ensure_metrics "$SCALE" vmimport
MAN="$BENCH_DATA/$SCALE.manifest.json"
SAMPLES=$(manifest_get "$MAN" samples)
JOBS=$(manifest_get "$MAN" jobs)
tmp=$(mktemp -d "$BENCH_WORK/archive-size.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
data="$tmp/data"
# The data's jobs (job-0000, ...) as job records, without profiling: the
# archive takes a job's series by its TrainingJobName.
for i in $(seq 0 $((JOBS - 1))); do
  "$TW_BIN" run --data "$data" --name "$(printf 'job-%04d' "$i")" --profile-interval off -- true \
    > /dev/null 2>&1 || die "trainwatch run failed"
done
"$TW_BIN" import --data "$data" --keep forever --quiet "$BENCH_DATA/$SCALE.vmimport" > /dev/null \
  || die "trainwatch import failed"
"$TW_BIN" admin compact --data "$data" --json > "$tmp/compact.json" || die "compaction failed"
store=$(dir_bytes "$data/db")
index=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["sst_bytes"]["index"])' "$tmp/compact.json")
"$TW_BIN" archive --data "$data" --to "$tmp/archive" --quiet > "$tmp/archive.txt" \
  || die "trainwatch archive failed"
"$PY" - "$tmp/archive" "$SAMPLES" "$store" "$index" <<'PY'
import json, os, sys
root, expected, store, index = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
samples = total = sample_bytes = 0
for dirpath, _, files in os.walk(root):
    for f in files:
        size = os.path.getsize(os.path.join(dirpath, f))
        total += size
        if f == "samples.csv.gz":
            sample_bytes += size
        if f == "manifest.json":
            m = json.load(open(os.path.join(dirpath, f)))
            samples += m["objects"]["samples.csv.gz"]["rows"]
# The jobs' own records and empty logs aside, every imported sample is archived.
if samples < expected:
    sys.exit("archive_size.sh: the archive holds %d samples, expected %d" % (samples, expected))
print("samples                      %d" % samples)
print("archive, bytes/sample        %.2f (samples.csv.gz alone %.2f)" % (total / samples, sample_bytes / samples))
print("store, bytes/sample          %.2f (without the series index %.2f)" % (store / expected, (store - index) / expected))
print("archive / store              %.2fx" % (total / samples / (store / expected)))
PY
