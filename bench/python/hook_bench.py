#!/usr/bin/python3
"""The cost of trainwatch.torch.watch (issue 33), each measurement a real job:

  hook_bench.py [--trainwatch build/release/trainwatch] [--pairs 7]
                [--configs mlp-default,mlp-all,cnn-default,cnn-all]
                [--latency-runs 7] [--steps 200] [--warmup 20] [--json OUT]

Step time. For each configuration MODEL-HOOK (hook_loop.py says what the
models and hooks are), --pairs alternating pairs of jobs, the same loop
without the hook and with it (the first job of a pair alternates too),
each job started as

  trainwatch run --data TMP --name NAME --no-rules --profile-interval off \\
      -- /usr/bin/python3 hook_loop.py MODEL none|HOOK --steps N --warmup W

so the hook sends to a real runner, which stores everything, on the same
machine. A pair's ratio is the hooked job's step time over the plain one's;
the figures are the median of the pairs' ratios with their min and max, of
  mean      the mean step time: every step counts (the full-statistics steps
            of the default, every 10th, are in it);
  median    the median step time (for the default, a step with norms only);
  quiet     hook_loop.py's quiet(): the mean over the ten classes of steps
            (by number modulo 10) of each class's lower quartile, the mean
            step with most of the other work of a shared machine left out;
  cpu_mean  the process's CPU time a step (every thread), mean;
and, per pair, the quiet time the hook added to each part of a step: the
forward (its forward hooks, on full steps), the backward, optimizer.step()
(its statistics, computed at the end of it).
Bytes per step: request bodies the hook's client posted (run.bytes_sent)
over every step of the job, median of the pairs [min-max].

NaN latency. --latency-runs jobs of the MLP with the default hook whose
inputs are NaN from step 55 on (a step with norms only); the loop writes
time.time() just after the forward that made the loss NaN, and

  trainwatch run ... --rule ExplodingTensor:action=exec:ACTION -- ... --nan-at 55

runs ACTION (a shell script: `date +%s.%N` into a file of its own) at each
issue the rule records (docs/rules.md, Actions: one per tensor that went
NaN). Latency = the first ACTION's time - the NaN's time: it includes the
rest of that step (backward, optimizer.step and the hook's statistics, with
the NaN tensors measured again), the client's send, the runner's ingest and
rules, and starting the action. Median [min-max].

Every job runs with glibc's malloc thresholds fixed (MALLOC_ENV, both
loops alike; --default-malloc leaves them): otherwise page faults, not the
hook, decide the CNN's figures. Run it alone on the machine: it measures
time. Standard library only; the jobs' Python is Debian's (python3-torch).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LOOP = os.path.join(HERE, "hook_loop.py")
PYTHON = "/usr/bin/python3"
# Step-time figures of hook_loop.py, each a ratio hooked / plain per pair.
FIGURES = ("mean", "median", "quiet", "cpu_mean")
PHASES = ("forward", "backward", "optimizer")
NAN_STEP = 55  # a step with norms only, as 9 in 10 are by default


# glibc's malloc, left to itself, returns a freed activation's pages to the
# system and faults them in again at the next step: the plain CNN loop spent
# three quarters of its time so (38 ms a step against 8.7), and whatever else
# the process allocates moves that either way (a hooked loop was twice as fast
# as the plain one). Fixed thresholds keep freed memory in the heap, for both.
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(64 << 20), "MALLOC_TRIM_THRESHOLD_": str(256 << 20)}


def run_job(trainwatch, name, loop_args, rules=("--no-rules",), timeout=600, env=None):
    data = tempfile.mkdtemp(prefix="tw-hookbench-")
    try:
        command = [trainwatch, "run", "--data", data, "--name", name, "--quiet",
                   "--profile-interval", "off", *rules, "--", PYTHON, LOOP, *loop_args]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=timeout, env=env)
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not lines:
            sys.exit("hook_bench.py: job %s failed (exit %d)\n%s\n%s"
                     % (name, done.returncode, done.stdout[-2000:], done.stderr[-2000:]))
        return json.loads(lines[-1])
    finally:
        shutil.rmtree(data, ignore_errors=True)


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "values": values}


def step_pairs(args, config):
    model, hook = config.split("-", 1)
    steps = ["--steps", str(args.steps), "--warmup", str(args.warmup)]
    pairs = []
    for i in range(args.pairs):
        jobs = {}
        order = ("none", hook) if i % 2 == 0 else (hook, "none")
        for which in order:
            jobs[which] = run_job(args.trainwatch, "hookbench-%s-%s-%d" % (model, which, i),
                                  [model, which, *steps], env=args.env)
        plain, hooked = jobs["none"], jobs[hook]
        pair = {"plain": plain, "hooked": hooked}
        for figure in FIGURES:
            pair[figure + "_ratio"] = hooked[figure + "_ms"] / plain[figure + "_ms"]
        pairs.append(pair)
        print("  %s pair %d: plain / hooked ms: %s; %.0f bytes a step"
              % (config, i, ", ".join("%s %.2f / %.2f (x%.3f)" % (
                  figure, plain[figure + "_ms"], hooked[figure + "_ms"], pair[figure + "_ratio"])
                  for figure in FIGURES), hooked["bytes_per_step"]), flush=True)
    result = {"config": config, "pairs": pairs,
              "bytes_per_step": summary([p["hooked"]["bytes_per_step"] for p in pairs])}
    for phase in PHASES:  # where the time goes: hooked - plain, ms
        result["added_%s_ms" % phase] = summary(
            [p["hooked"]["quiet_%s_ms" % phase] - p["plain"]["quiet_%s_ms" % phase]
             for p in pairs])
    for figure in FIGURES:
        result[figure + "_ratio"] = summary([p[figure + "_ratio"] for p in pairs])
        result["plain_%s_ms" % figure] = summary([p["plain"][figure + "_ms"] for p in pairs])
        result["hooked_%s_ms" % figure] = summary([p["hooked"][figure + "_ms"] for p in pairs])
    return result


ACTION = """#!/bin/sh
# Run by the rule's exec action, once per finding: the time it ran, the finding.
t=$(date +%%s.%%N)
cat > '%(dir)s/'$$.json
echo "$t" > '%(dir)s/'$$.tmp
mv '%(dir)s/'$$.tmp '%(dir)s/'$$.time
"""


def latency_runs(args):
    results = []
    for i in range(args.latency_runs):
        work = tempfile.mkdtemp(prefix="tw-hookbench-nan-")
        try:
            nan_file = os.path.join(work, "nan")
            actions = os.path.join(work, "actions")
            os.mkdir(actions)
            script = os.path.join(work, "action.sh")
            with open(script, "w") as f:
                f.write(ACTION % {"dir": actions})
            os.chmod(script, 0o755)
            result = run_job(args.trainwatch, "hookbench-nan-%d" % i,
                             ["mlp", "default", "--steps", "200", "--warmup", "0",
                              "--nan-at", str(NAN_STEP), "--nan-file", nan_file,
                              "--action-dir", actions],
                             rules=("--rule", "ExplodingTensor:action=exec:" + script),
                             env=args.env)
            # The first action ran (the job ends on seeing it); read them all.
            times = {}
            for name in os.listdir(actions):
                if name.endswith(".time"):
                    with open(os.path.join(actions, name)) as f:
                        times[name[:-len(".time")]] = float(f.read())
            if not times:
                sys.exit("hook_bench.py: the ExplodingTensor action did not run in job %d" % i)
            first = min(times, key=times.get)
            with open(os.path.join(actions, first + ".json")) as f:
                finding = json.load(f).get("finding", {})
            with open(nan_file) as f:
                nan_t = float(f.read())
            latency_ms = (times[first] - nan_t) * 1000.0
            results.append({"latency_ms": latency_ms, "finding": finding,
                            "actions": len(times), "steps_run": result["steps"]})
            print("  NaN run %d: %.1f ms to the first of %d actions (%s)"
                  % (i, latency_ms, len(times), finding.get("message", finding)), flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return {"runs": results, "latency_ms": summary([r["latency_ms"] for r in results])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trainwatch", default=os.path.join(ROOT, "build/release/trainwatch"))
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--configs", default="mlp-default,mlp-all,cnn-default,cnn-all")
    parser.add_argument("--latency-runs", type=int, default=7)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--json", help="write every job's figures here")
    parser.add_argument("--default-malloc", action="store_true",
                        help="leave glibc's malloc thresholds as they are (see MALLOC_ENV)")
    args = parser.parse_args()
    args.env = dict(os.environ) if args.default_malloc else dict(os.environ, **MALLOC_ENV)
    args.trainwatch = os.path.abspath(args.trainwatch)
    if not os.access(args.trainwatch, os.X_OK):
        sys.exit("hook_bench.py: no trainwatch at %s (--trainwatch)" % args.trainwatch)

    started = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    report = {"started_utc": started, "load_before": os.getloadavg(), "configs": [],
              "malloc": "glibc default" if args.default_malloc else MALLOC_ENV}
    for config in [c for c in args.configs.split(",") if c]:
        print("%s: %d pairs" % (config, args.pairs), flush=True)
        report["configs"].append(step_pairs(args, config))
    if args.latency_runs:
        print("NaN to ExplodingTensor's action: %d runs" % args.latency_runs, flush=True)
        report["latency"] = latency_runs(args)
    report["load_after"] = os.getloadavg()
    report["finished_utc"] = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())

    print("\nstarted %s UTC, finished %s UTC; load average %.2f before, %.2f after"
          % (started, report["finished_utc"], report["load_before"][0], report["load_after"][0]))
    for c in report["configs"]:
        b = c["bytes_per_step"]
        print("%s: %.0f bytes a step [%.0f-%.0f]" % (c["config"], b["median"], b["min"], b["max"]))
        for figure in FIGURES:
            r = c[figure + "_ratio"]
            print("  %-8s x%.3f [%.3f-%.3f]  (plain %.2f ms, hooked %.2f ms: medians)"
                  % (figure, r["median"], r["min"], r["max"],
                     c["plain_%s_ms" % figure]["median"], c["hooked_%s_ms" % figure]["median"]))
        print("  added by the hook, quiet ms a step (median [min-max]): " + "; ".join(
            "%s %+.2f [%+.2f, %+.2f]" % (phase, a["median"], a["min"], a["max"])
            for phase in PHASES for a in [c["added_%s_ms" % phase]]))
    if "latency" in report:
        lat = report["latency"]["latency_ms"]
        print("NaN -> ExplodingTensor action: %.1f ms [%.1f-%.1f]"
              % (lat["median"], lat["min"], lat["max"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
