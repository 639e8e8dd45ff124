#!/usr/bin/env python3
"""A small, real training run for trying trainwatch: a one-hidden-layer MLP
trained with mini-batch SGD on a generated two-moons data set, in plain
Python (standard library only, so it runs anywhere python3 does).

It prints what the PyTorch MNIST example prints (the format many SageMaker
metric definitions are written for), plus a tqdm-style progress bar redrawn
in place with '\\r':

    Train Epoch: 1 [640/1600 (40%)]	Loss: 0.683211
    Test set: Average loss: 0.6512, Accuracy: 251/400 (62.75%)

Run it under trainwatch with the definitions beside it:

    trainwatch run --definitions examples/definitions.json -- python3 examples/train.py

Options: --epochs N, --hidden N, --lr X, --batch-size N, --samples N, --seed N,
--step-delay SECONDS (slow it down to watch it live), --fail-at-epoch N (raise
an error in that epoch, to see a failed job).
"""
import argparse
import math
import random
import sys
import time


def make_moons(n, rng, noise=0.2):
    """n points on two interleaving half circles ("two moons"); label 0 or 1."""
    data = []
    for i in range(n):
        label = i % 2
        t = rng.uniform(0.0, math.pi)
        if label == 0:
            x, y = math.cos(t), math.sin(t)
        else:
            x, y = 1.0 - math.cos(t), 0.5 - math.sin(t)
        # Centre the data so tanh units start in their linear range.
        data.append(((x - 0.5 + rng.gauss(0.0, noise), y - 0.25 + rng.gauss(0.0, noise)), label))
    rng.shuffle(data)
    return data


class MLP:
    """2 inputs -> tanh hidden layer -> sigmoid output, binary cross-entropy."""

    def __init__(self, hidden, rng):
        scale = 1.0 / math.sqrt(2.0)
        self.w1 = [[rng.gauss(0.0, scale) for _ in range(2)] for _ in range(hidden)]
        self.b1 = [0.0] * hidden
        self.w2 = [rng.gauss(0.0, 1.0 / math.sqrt(hidden)) for _ in range(hidden)]
        self.b2 = 0.0

    def forward(self, x):
        h = [math.tanh(w[0] * x[0] + w[1] * x[1] + b) for w, b in zip(self.w1, self.b1)]
        z = sum(wi * hi for wi, hi in zip(self.w2, h)) + self.b2
        z = max(-30.0, min(30.0, z))
        return h, 1.0 / (1.0 + math.exp(-z))

    @staticmethod
    def loss(p, y):
        p = min(max(p, 1e-12), 1.0 - 1e-12)
        return -(y * math.log(p) + (1 - y) * math.log(1.0 - p))

    def sgd_step(self, batch, lr):
        hidden = len(self.w2)
        gw1 = [[0.0, 0.0] for _ in range(hidden)]
        gb1 = [0.0] * hidden
        gw2 = [0.0] * hidden
        gb2 = 0.0
        total = 0.0
        for x, y in batch:
            h, p = self.forward(x)
            total += self.loss(p, y)
            dz = p - y
            gb2 += dz
            for j in range(hidden):
                gw2[j] += dz * h[j]
                dh = dz * self.w2[j] * (1.0 - h[j] * h[j])
                gb1[j] += dh
                gw1[j][0] += dh * x[0]
                gw1[j][1] += dh * x[1]
        n = float(len(batch))
        for j in range(hidden):
            self.w2[j] -= lr * gw2[j] / n
            self.b1[j] -= lr * gb1[j] / n
            self.w1[j][0] -= lr * gw1[j][0] / n
            self.w1[j][1] -= lr * gw1[j][1] / n
        self.b2 -= lr * gb2 / n
        return total / n


def progress_bar(epoch, done, total, loss, start):
    width = 20
    filled = int(width * done / total)
    bar = "\u2588" * filled + " " * (width - filled)
    elapsed = time.monotonic() - start
    rate = done / elapsed if elapsed > 0 else 0.0
    return "Epoch %d: %3d%%|%s| %d/%d [%.1fit/s, loss=%.4f]" % (
        epoch, 100 * done // total, bar, done, total, rate, loss)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--step-delay", type=float, default=0.0)
    ap.add_argument("--fail-at-epoch", type=int, default=0)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    data = make_moons(args.samples, rng)
    split = int(0.8 * len(data))
    train, test = data[:split], data[split:]
    model = MLP(args.hidden, rng)
    print("Training a %d-unit MLP on %d samples (%d held out), %d epochs, lr=%g" %
          (args.hidden, len(train), len(test), args.epochs, args.lr))

    steps_per_epoch = (len(train) + args.batch_size - 1) // args.batch_size
    log_every = max(1, steps_per_epoch // 5)
    for epoch in range(1, args.epochs + 1):
        if epoch == args.fail_at_epoch:
            raise RuntimeError("simulated failure in epoch %d (--fail-at-epoch)" % epoch)
        rng.shuffle(train)
        start = time.monotonic()
        loss = 0.0
        for step in range(steps_per_epoch):
            batch = train[step * args.batch_size:(step + 1) * args.batch_size]
            loss = model.sgd_step(batch, args.lr)
            seen = min((step + 1) * args.batch_size, len(train))
            sys.stderr.write("\r" + progress_bar(epoch, step + 1, steps_per_epoch, loss, start))
            sys.stderr.flush()
            if (step + 1) % log_every == 0:
                sys.stderr.write("\n")
                print("Train Epoch: %d [%d/%d (%.0f%%)]\tLoss: %.6f" %
                      (epoch, seen, len(train), 100.0 * seen / len(train), loss), flush=True)
            if args.step_delay:
                time.sleep(args.step_delay)
        sys.stderr.write("\n")
        test_loss = 0.0
        correct = 0
        for x, y in test:
            _, p = model.forward(x)
            test_loss += model.loss(p, y)
            correct += int((p >= 0.5) == (y == 1))
        test_loss /= len(test)
        print("Test set: Average loss: %.4f, Accuracy: %d/%d (%.2f%%)" %
              (test_loss, correct, len(test), 100.0 * correct / len(test)), flush=True)
    print("Done.")


if __name__ == "__main__":
    main()
