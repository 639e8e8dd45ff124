#!/usr/bin/env bash
# trainwatch side of the log-extraction benchmark: the 10 SageMaker-style
# metric definitions of gen_logs.py applied to the generated training log by
#   trainwatch extract --definitions metric_definitions.json --input train.log --format jsonl
# (every datapoint printed as a JSON line into a file, in log order), the
# same work as peers/mtail.sh and peers/log_baselines.sh do.
#
# Prerequisites (this script installs nothing):
#   a release build: cmake --preset release && cmake --build --preset release --target trainwatch
#   (or TW_BIN=path/to/trainwatch); Debian packages time, python3 (curl for lib/common.sh).
#
# Each of $BENCH_RUNS runs is timed as a whole process (wall time) under GNU
# time. Reports lines/s and MB/s (1 MB = 10^6 bytes) over the process wall
# time, peak RSS, and the CPU cores used ((user + sys) / wall). The last run's
# output is checked against mtail's one-shot output ($BENCH_WORK/mtail-oneshot.json,
# written by peers/mtail.sh) or else Python re's ($BENCH_WORK/python-re.json,
# peers/log_baselines.sh): the same datapoint count, sum and last value per
# metric, or the script fails.
#
# Usage (from the project root; bench/peers.sh exports SHARED, TW_ROOT, TW_BIN):
#   TW_BENCH_CASES=log_extract bash ../shared/bench/run_all.sh mtail log_baselines bench/peers.sh
# Env: see lib/common.sh; TW_EXTRACT_THREADS (default: trainwatch's own, one per core).
# shellcheck source=/dev/null
. "$SHARED/bench/lib/common.sh"

# shellcheck source=SCRIPTDIR/../trainwatch_common.sh
. "$TW_ROOT/bench/trainwatch_common.sh"
ensure_logs
LOGF="$BENCH_DATA/train.log"
DEFS="$BENCH_DATA/metric_definitions.json"
LINES=$(wc -l < "$LOGF")
BYTES=$(stat -c %s "$LOGF")
SCALE="${LINES}lines"
THREADS=()
[ -n "${TW_EXTRACT_THREADS:-}" ] && THREADS=(--threads "$TW_EXTRACT_THREADS")

LPS=(); MBS=(); RSS=(); CORES=()
keep=""
for run in $(seq 1 "$BENCH_RUNS"); do
  tmp=$(mktemp -d "$BENCH_WORK/tw.XXXXXX")
  t0=$(now_ns)
  "$TIMEV" -v -o "$tmp/time.txt" "$TW_BIN" extract --definitions "$DEFS" --input "$LOGF" \
    --format jsonl "${THREADS[@]}" > "$tmp/out.jsonl" 2> "$tmp/err.txt" \
    || { tail -5 "$tmp/err.txt" >&2; die "trainwatch extract failed"; }
  secs=$(secs_since "$t0")
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$tmp/time.txt")
  LPS+=("$("$PY" -c "print($LINES / $secs)")")
  MBS+=("$("$PY" -c "print($BYTES / $secs / 1e6)")")
  RSS+=("$("$PY" -c "print($(peak_rss_kb "$tmp/time.txt") / 1024)")")
  CORES+=("$("$PY" -c "print($cpu / $secs)")")
  log "$SYS run $run: ${secs}s for $LINES lines, ${cpu}s CPU (${CORES[-1]} cores)"
  [ -n "$keep" ] && rm -rf "$keep"
  keep=$tmp
done

# The same datapoints as the peers: count, sum and last value per metric.
REF=""
if [ -s "$BENCH_WORK/mtail-oneshot.json" ]; then REF="$BENCH_WORK/mtail-oneshot.json"
elif [ -s "$BENCH_WORK/python-re.json" ]; then REF="$BENCH_WORK/python-re.json"
else
  log "no mtail or python-re output to compare with; running tools/regex_baseline.py once"
  "$PY" "$BENCH_DIR/tools/regex_baseline.py" --defs "$DEFS" --log "$LOGF" > "$keep/python-re.json"
  REF="$keep/python-re.json"
fi
"$PY" - "$keep/out.jsonl" "$REF" "$DEFS" <<'PYEOF' || die "trainwatch's datapoints differ from $REF"
import json, math, sys
out, ref, defs = sys.argv[1:4]
names = [d["Name"] for d in json.load(open(defs))]
cnt = dict.fromkeys(names, 0); tot = dict.fromkeys(names, 0.0); last = dict.fromkeys(names)
with open(out) as f:
    for line in f:
        p = json.loads(line)
        n = p["metric"]; v = float(p["value"])
        cnt[n] += 1; tot[n] += v; last[n] = v
r = json.load(open(ref))
if "tw_matches_total" in r:  # mtail --one_shot_format json
    def vals(name):
        return {lv["Labels"][0]: lv["Value"]["Value"] for lv in r[name][0]["LabelValues"]}
    rc, rt, rl, who = vals("tw_matches_total"), vals("tw_sum"), vals("tw_last"), "mtail"
else:  # tools/regex_baseline.py
    rc, rt, rl, who = r["matches"], r["sum"], r["last"], "python re"
bad = []
for n in names:
    if cnt[n] != rc.get(n, 0):
        bad.append("%s: count trainwatch %d %s %s" % (n, cnt[n], who, rc.get(n)))
    elif cnt[n] and not math.isclose(tot[n], rt[n], rel_tol=1e-9):
        bad.append("%s: sum trainwatch %r %s %r" % (n, tot[n], who, rt[n]))
    elif cnt[n] and last[n] != rl[n]:
        bad.append("%s: last trainwatch %r %s %r" % (n, last[n], who, rl[n]))
if bad:
    sys.exit("trainwatch and %s disagree:\n  %s" % (who, "\n  ".join(bad)))
print("check: trainwatch and %s extracted the same counts, sums and last values (%d datapoints)"
      % (who, sum(cnt.values())), file=sys.stderr)
PYEOF
rm -rf "$keep"

CMD="trainwatch extract --definitions metric_definitions.json --input train.log --format jsonl${THREADS:+ ${THREADS[*]}} > out.jsonl"
emit "$SYS" "$VER" log_extract_lines_per_s "$SCALE" lines/s higher "$CMD" "${LPS[@]}"
emit "$SYS" "$VER" log_extract_mb_per_s "$SCALE" MB/s higher "$CMD" "${MBS[@]}"
emit "$SYS" "$VER" log_extract_rss "$SCALE" MiB lower "GNU time -v max RSS of: $CMD" "${RSS[@]}"
emit "$SYS" "$VER" log_extract_cpu_cores "$SCALE" cores lower "(user + sys CPU) / wall of: $CMD" "${CORES[@]}"
