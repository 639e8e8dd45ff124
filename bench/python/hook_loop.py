"""One training job of hook_bench.py: a small CPU model on random data, timed
step by step, with or without trainwatch.torch.watch.

  hook_loop.py MODEL HOOK [--steps N] [--warmup N] [--nan-at STEP --nan-file F
                                                   --action-dir D]

MODEL is mlp (784-512-256-10, ReLU, batch 64) or cnn (two 3x3 convolutions
with ReLU and max-pooling, a linear layer: 3x32x32 images, batch 32); HOOK is
none, default (watch(model, optimizer) as documented), all (every
collection every step: save_interval=1) or everyN (save_interval=N). Both use SGD with momentum and
cross-entropy, one torch thread, and the same random batches.

Each step is timed with time.perf_counter() around the whole iteration
(batch, forward, loss, backward, optimizer.step() -- which ends the hook's
step and computes its statistics -- and zero_grad()), after --warmup steps.
The last line on stdout is JSON: the median and mean step time in ms over
the timed steps, wall-clock and the process's CPU time (every thread: the
client's sender too), a "quiet" step time (quiet(): the mean of lower
quartiles, for a machine shared with other work) and that of each of PHASES,
and, with a hook, the bytes the client posted to the run's
endpoint per step (request bodies, after a final flush, over every step).

--nan-at STEP makes that step's loss NaN (the batch's inputs are NaN) and
writes time.time() to --nan-file just after the forward that made it; the
loop then goes on (NaN steps) until a file NAME.time is in --action-dir or
10 s passed.
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch
from torch import nn


def mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10)), (64, 784)


def cnn():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 8 * 8, 10)), (32, 3, 32, 32)


# Parts of a step, timed apart: the forward and the loss (the hook's forward
# hooks measure activations there on its full steps), the backward, and
# optimizer.step() (the hook's statistics are computed at its end).
PHASES = ("forward", "backward", "optimizer")
CLASSES = 10  # the default save_interval: step s is a full-statistics step when s % 10 == 0


def quiet(times, first_step):
    """A step's time with the machine's noise left out as far as it can be:
    the steps split by their number modulo CLASSES (a class holds either full
    steps of the default or steps with norms only), the lower quartile of
    each class, and their mean. Another process taking the CPU for a while
    makes some steps slower, never faster."""
    classes = [[t for i, t in enumerate(times) if (first_step + i) % CLASSES == c]
               for c in range(CLASSES)]
    return statistics.fmean(statistics.quantiles(c, n=4)[0] for c in classes)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=("mlp", "cnn"))
    parser.add_argument("hook", help="none, default, all, or everyN (save_interval=N)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--nan-at", type=int)
    parser.add_argument("--nan-file")
    parser.add_argument("--action-dir")
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model, shape = (mlp if args.model == "mlp" else cnn)()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    batches = [(torch.randn(*shape), torch.randint(0, 10, (shape[0],))) for _ in range(8)]

    hook = None
    if args.hook != "none":
        import trainwatch.torch
        if args.hook == "all":
            options = {"save_interval": 1}
        elif args.hook.startswith("every"):
            options = {"save_interval": int(args.hook[len("every"):])}
        elif args.hook == "default":
            options = {}
        else:
            sys.exit("hook_loop.py: HOOK is none, default, all or everyN, not %r" % args.hook)
        hook = trainwatch.torch.watch(model, optimizer, **options)
        if not hook.run.active:
            sys.exit("hook_loop.py: not inside a trainwatch job (no TRAINWATCH_RUNNER_URL)")

    times = []     # wall time of each timed step, ms
    cpu_times = []  # CPU time of the process (every thread) in each timed step, ms
    phases = {name: [] for name in PHASES}  # wall time of each part of each timed step, ms
    total = args.warmup + args.steps
    step = 0
    deadline = None
    while step < total or deadline is not None:
        x, y = batches[step % len(batches)]
        if args.nan_at is not None and step >= args.nan_at:
            x = torch.full_like(x, float("nan"))
        c0 = time.process_time()
        t0 = time.perf_counter()
        loss = loss_fn(model(x), y)
        if args.nan_at is not None and step == args.nan_at:
            with open(args.nan_file, "w") as f:
                f.write(repr(time.time()))
            deadline = time.monotonic() + 10.0
        if hook is not None:
            hook.record_loss(loss)
        t_forward = time.perf_counter()
        loss.backward()
        t_backward = time.perf_counter()
        optimizer.step()
        t_optimizer = time.perf_counter()
        optimizer.zero_grad()
        t1 = time.perf_counter()
        c1 = time.process_time()
        if args.warmup <= step < total:
            times.append((t1 - t0) * 1000.0)
            cpu_times.append((c1 - c0) * 1000.0)
            for name, start, end in (("forward", t0, t_forward), ("backward", t_forward, t_backward),
                                     ("optimizer", t_backward, t_optimizer)):
                phases[name].append((end - start) * 1000.0)
        step += 1
        if deadline is not None and (time.monotonic() > deadline or any(
                name.endswith(".time") for name in os.listdir(args.action_dir))):
            break

    result = {"model": args.model, "hook": args.hook, "steps": len(times),
              "median_ms": statistics.median(times) if times else None,
              "mean_ms": statistics.fmean(times) if times else None,
              "quiet_ms": quiet(times, args.warmup) if len(times) >= 4 * CLASSES else None,
              "cpu_median_ms": statistics.median(cpu_times) if times else None,
              "cpu_mean_ms": statistics.fmean(cpu_times) if times else None}
    if len(times) >= 4 * CLASSES:
        for name, values in phases.items():
            result["quiet_%s_ms" % name] = quiet(values, args.warmup)
    if hook is not None:
        run = hook.run
        run.flush(30)
        result["bytes_per_step"] = run.bytes_sent / step
        result["requests"] = run.requests_sent
        result["dropped"] = run.dropped
        result["client"] = os.path.dirname(os.path.dirname(os.path.abspath(
            sys.modules["trainwatch"].__file__)))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
