#!/usr/bin/env python3
"""The PyTorch variant of train.py: the same two-moons data set and the same
output format (PyTorch MNIST example lines plus a tqdm-style '\\r' bar), with a
torch MLP and Adam. Needs Debian's python3-torch (use /usr/bin/python3).

    trainwatch run --definitions examples/definitions.json -- /usr/bin/python3 examples/train_torch.py

With --watch it also streams its tensor statistics and test-set predictions
through the Python client (docs/python.md), for the model rules:

    trainwatch run --definitions examples/definitions.json --rule VanishingGradient \
        --rule DeadRelu --rule UnchangedTensor --rule Confusion:min_diag=0.8 \
        --rule ExplodingTensor:action=StopTraining \
        -- /usr/bin/python3 examples/train_torch.py --watch
"""
import argparse
import math
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import make_moons, progress_bar  # noqa: E402  (same data, same bar)

try:
    import torch
    from torch import nn
except ImportError:
    sys.exit("train_torch.py needs PyTorch: apt-get install python3-torch, then run it with "
             "/usr/bin/python3 (or use examples/train.py, which needs nothing)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--step-delay", type=float, default=0.0)
    ap.add_argument("--fail-at-epoch", type=int, default=0)
    ap.add_argument("--watch", action="store_true",
                    help="send tensor statistics and predictions with trainwatch's Python client")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    data = make_moons(args.samples, rng)
    split = int(0.8 * len(data))
    xs = torch.tensor([d[0] for d in data], dtype=torch.float32)
    ys = torch.tensor([[float(d[1])] for d in data], dtype=torch.float32)
    x_train, y_train, x_test, y_test = xs[:split], ys[:split], xs[split:], ys[split:]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Sequential(nn.Linear(2, args.hidden), nn.Tanh(),
                          nn.Linear(args.hidden, args.hidden), nn.Tanh(),
                          nn.Linear(args.hidden, 1)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.BCEWithLogitsLoss()
    hook = run = None
    if args.watch:
        import trainwatch
        import trainwatch.torch
        run = trainwatch.Run()
        hook = trainwatch.torch.watch(model, opt, run=run)
    print("Training a torch MLP (%d hidden) on %d samples (%d held out), %d epochs, on %s" %
          (args.hidden, split, len(data) - split, args.epochs, device))

    n = x_train.shape[0]
    steps = math.ceil(n / args.batch_size)
    log_every = max(1, steps // 5)
    for epoch in range(1, args.epochs + 1):
        if epoch == args.fail_at_epoch:
            raise RuntimeError("simulated failure in epoch %d (--fail-at-epoch)" % epoch)
        model.train()
        perm = torch.randperm(n)
        start = time.monotonic()
        for step in range(steps):
            idx = perm[step * args.batch_size:(step + 1) * args.batch_size]
            xb, yb = x_train[idx].to(device), y_train[idx].to(device)
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            if hook:
                hook.record_loss(loss)
            loss.backward()
            opt.step()
            seen = min((step + 1) * args.batch_size, n)
            sys.stderr.write("\r" + progress_bar(epoch, step + 1, steps, loss.item(), start))
            sys.stderr.flush()
            if (step + 1) % log_every == 0:
                sys.stderr.write("\n")
                print("Train Epoch: %d [%d/%d (%.0f%%)]\tLoss: %.6f" %
                      (epoch, seen, n, 100.0 * seen / n, loss.item()), flush=True)
            if args.step_delay:
                time.sleep(args.step_delay)
        sys.stderr.write("\n")
        model.eval()
        with torch.no_grad():
            logits = model(x_test.to(device))
            test_loss = loss_fn(logits, y_test.to(device)).item()
            correct = int(((logits >= 0).float() == y_test.to(device)).sum().item())
        if run:
            run.log_predictions(y_test.long().reshape(-1), (logits >= 0).long().reshape(-1),
                                step=hook.current_step)
        total = x_test.shape[0]
        print("Test set: Average loss: %.4f, Accuracy: %d/%d (%.2f%%)" %
              (test_loss, correct, total, 100.0 * correct / total), flush=True)
    print("Done.")


if __name__ == "__main__":
    main()
