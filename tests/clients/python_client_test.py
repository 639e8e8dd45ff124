#!/usr/bin/python3
"""The Python client under a real `trainwatch run`, as a user's training
script uses it: `import trainwatch` without installing it, metrics through
the run's endpoint, the aliases, a Trial reading back exactly what was
logged, and the PyTorch hook on tiny CPU models whose troubles the model
rules find live (ExplodingTensor stopping the job, VanishingGradient,
DeadRelu, UnchangedTensor, Overfit, PoorWeightInitialization,
CheckInputImages, NLPSequenceRatio), with a healthy run finding nothing.

Usage: python_client_test.py --trainwatch PATH/trainwatch [unittest args]
Run with /usr/bin/python3 (Debian's, which has python3-torch); the hook's
tests are skipped with a notice where torch is missing.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

TRAINWATCH = None
SOURCE = None

try:
    import torch  # noqa: F401  (only whether the training scripts can import it)
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

# A tiny model and loop every torch script shares; STEPS, LR, MODEL and the
# loop body's extras come from each test.
TORCH_PRELUDE = r"""
import sys, time, torch
from torch import nn
import trainwatch, trainwatch.torch
torch.manual_seed(0)
x = torch.randn(64, 8)
y = x.sum(dim=1, keepdim=True)
"""


class Client(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tw-py-client-")
        self.data = os.path.join(self.dir, "data")
        self.env = dict(os.environ, TRAINWATCH_BIN=TRAINWATCH)
        # The package comes from the run (PYTHONPATH), not from this checkout.
        self.env.pop("PYTHONPATH", None)
        self.env.pop("TRAINWATCH_ENDPOINT", None)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_job(self, name, script, *flags):
        # A file, not -c: multiprocessing's spawn imports the script again.
        path = os.path.join(self.dir, name + ".py")
        with open(path, "w") as f:
            f.write(script)
        proc = subprocess.run(
            [TRAINWATCH, "run", "--data", self.data, "--name", name, "--profile-interval", "off",
             *flags, "--", "/usr/bin/python3", path],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env, timeout=300,
            cwd=self.dir)
        return proc

    def rules(self, name):
        out = subprocess.run([TRAINWATCH, "rules", name, "--data", self.data, "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
        return {s["configuration_name"]: s for s in json.loads(out.stdout)["rule_statuses"]}

    def trial(self, name):
        # Debian's interpreter reads the job back through the client itself.
        code = ("import json, sys, trainwatch\n"
                "t = trainwatch.Trial(sys.argv[1], data=sys.argv[2])\n"
                "print(json.dumps({'status': t.status(), 'final': t.final_metrics(),\n"
                "  'loss': sorted(t.metric('train:loss').by_step().items()), 'steps': t.steps(),\n"
                "  'math': {k: [v.name, v.values] for k, v in t.metric_data([\n"
                "    {'Id': 'top', 'metric': 'train:loss', 'stat': 'Maximum', 'ReturnData': False},\n"
                "    {'Id': 'n', 'metric': 'train:loss', 'stat': 'SampleCount'},\n"
                "    {'Id': 'twice', 'Expression': 'top * 2', 'Label': 'twice the top'}]).items()}}))\n"
                "t.close()\n")
        env = dict(self.env, PYTHONPATH=os.path.join(SOURCE, "python"))
        out = subprocess.run(["/usr/bin/python3", "-c", code, name, self.data], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    # --- metrics ------------------------------------------------------------------------

    def test_logged_metrics_reach_the_job_and_a_trial_reads_them_back_exactly(self):
        losses = [1.0 / (i + 1) + i * 1e-9 for i in range(50)]
        script = ("import trainwatch\nrun = trainwatch.Run()\n"
                  "for i, v in enumerate(%r):\n    run.log_metric('train:loss', v, step=i)\n"
                  "print('done')\n" % (losses,))
        proc = self.run_job("logged", script, "--no-rules")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("final metrics: step=49, train:loss=", proc.stderr)
        got = self.trial("logged")
        self.assertEqual(got["status"], "Completed")
        self.assertEqual(got["loss"], [[i, v] for i, v in enumerate(losses)])
        self.assertEqual(got["steps"], list(range(50)))
        self.assertEqual(got["final"]["train:loss"], losses[-1])
        # Metric math over the job's metrics, as CloudWatch's GetMetricData computes it.
        self.assertEqual(sum(got["math"]["n"][1]), 50.0)
        self.assertEqual(got["math"]["twice"], ["twice the top", [2.0 * max(losses)]])
        self.assertNotIn("top", got["math"], "ReturnData false")

    def test_each_alias_logs_into_the_job(self):
        script = r"""
import trainwatch as wandb
wandb.init(project="p")
for s in range(3):
    wandb.log({"wandb:loss": 1.0 / (s + 1)}, step=s)
wandb.finish()
import trainwatch.mlflow as mlflow
with mlflow.start_run():
    mlflow.log_metric("mlflow:acc", 0.5, step=3)
from trainwatch.tensorboard import SummaryWriter
writer = SummaryWriter()
writer.add_scalar("tb:lr", 0.001, global_step=4)
writer.close()
"""
        proc = self.run_job("aliases", script, "--no-rules")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for metric, value in (("wandb:loss", 1.0 / 3), ("mlflow:acc", 0.5), ("tb:lr", 0.001)):
            self.assertRegex(proc.stderr, r"%s=%s" % (re.escape(metric), re.escape("%g" % value)))

    def test_outside_a_job_the_client_does_nothing_and_says_so_once(self):
        env = dict(self.env, PYTHONPATH=os.path.join(SOURCE, "python"))
        out = subprocess.run(
            ["/usr/bin/python3", "-c",
             "import trainwatch\nrun = trainwatch.Run()\n"
             "for i in range(3): run.log_metric('x', i)\nprint('ok')"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, "ok\n")
        self.assertEqual(out.stderr.count("trainwatch:"), 1, out.stderr)

    # --- the hook and the model rules --------------------------------------------------

    def run_torch(self, name, body, *flags):
        if not HAVE_TORCH:
            self.skipTest("PyTorch is not installed for /usr/bin/python3 (Debian: python3-torch)")
        proc = self.run_job(name, TORCH_PRELUDE + body, *flags)
        return proc

    def test_an_exploding_loss_is_found_and_stops_the_job_within_two_steps(self):
        body = r"""
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
hook = trainwatch.torch.watch(model, optimizer)
for step in range(200):
    loss = nn.functional.mse_loss(model(x), y)
    hook.record_loss(loss)
    print("step %d loss %s" % (step, loss.item()), flush=True)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    time.sleep(0.5)
"""
        proc = self.run_torch("exploding", body, "--rule", "ExplodingTensor:action=StopTraining")
        steps = [(int(m.group(1)), float(m.group(2)))
                 for m in re.finditer(r"step (\d+) loss (\S+)", proc.stdout)]
        first_bad = next(s for s, v in steps if v != v or v in (float("inf"), float("-inf")))
        self.assertLessEqual(steps[-1][0], first_bad + 2,
                             "stopped within 2 steps of the first non-finite loss: %s" % steps)
        self.assertIn("Stopped", proc.stderr)
        status = self.rules("exploding")["ExplodingTensor"]
        self.assertEqual(status["status"], "IssuesFound")
        # The loss's own finding (at the first steps every statistic is computed, so its
        # gradients' NaN may be found at the same step).
        loss = [f for f in status["findings"] if f["subject"] == "loss"]
        self.assertTrue(loss, status["findings"])
        self.assertEqual(loss[0]["reason"], "nan" if "nan" in proc.stdout else "infinite")

    def test_a_rule_signal_makes_the_flight_recorder_write_the_steps_it_fired_on(self):
        body = r"""
import signal
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
hook = trainwatch.torch.watch(model, optimizer, flight_recorder_steps=3,
                              dump_signal=signal.SIGUSR1)
for step in range(30):
    loss = nn.functional.mse_loss(model(x), y)
    hook.record_loss(loss)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    time.sleep(0.3)
"""
        proc = self.run_torch("recorded", body, "--rule", "ExplodingTensor:action=signal:SIGUSR1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        dumps = [f for f in os.listdir(self.dir) if f.startswith("trainwatch-flight-recorded")]
        self.assertTrue(dumps, proc.stderr)
        self.assertIn("flight recorder: wrote the last 3 steps", proc.stderr)
        check = ("import sys, torch\nd = torch.load(sys.argv[1])\n"
                 "print(d['job'], len(d['steps']), sorted(d['tensors'][-1]))")
        out = subprocess.run(["/usr/bin/python3", "-c", check, os.path.join(self.dir, dumps[0])],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True)
        self.assertTrue(out.stdout.startswith("recorded 3 "), out.stdout)
        self.assertIn("'losses/loss'", out.stdout)

    def test_a_deep_sigmoid_network_has_vanishing_gradients(self):
        body = r"""
layers = []
for _ in range(24):
    layers += [nn.Linear(8, 8), nn.Sigmoid()]
model = nn.Sequential(*layers, nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
hook = trainwatch.torch.watch(model, optimizer)
for step in range(3):
    nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad()
"""
        proc = self.run_torch("vanishing", body, "--rule", "VanishingGradient")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        status = self.rules("vanishing")["VanishingGradient"]
        self.assertEqual(status["status"], "IssuesFound", status)
        self.assertEqual(status["findings"][0]["subject"], "0.weight", "the first layer's")

    def test_all_negative_relu_inputs_are_dead_relus(self):
        body = r"""
first = nn.Linear(8, 16)
with torch.no_grad():
    first.bias.fill_(-100.0)
model = nn.Sequential(first, nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
hook = trainwatch.torch.watch(model, optimizer)
for step in range(2):
    nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad()
"""
        proc = self.run_torch("dead", body, "--rule", "DeadRelu")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        status = self.rules("dead")["DeadRelu"]
        self.assertEqual(status["status"], "IssuesFound", status)
        self.assertEqual(status["findings"][0]["subject"], "1:output")

    def test_a_frozen_layer_is_an_unchanged_tensor(self):
        body = r"""
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
model[0].weight.requires_grad_(False)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
hook = trainwatch.torch.watch(model, optimizer)
for step in range(22):  # updates at the full steps, 0 and 20: two unchanged
    nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad()
"""
        proc = self.run_torch("frozen", body, "--rule", "UnchangedTensor")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        status = self.rules("frozen")["UnchangedTensor"]
        self.assertEqual(status["status"], "IssuesFound", status)
        self.assertEqual({f["subject"] for f in status["findings"]}, {"0.weight"})

    def test_a_large_model_on_a_tiny_data_set_overfits(self):
        body = r"""
xv, yv = torch.randn(64, 8), torch.randn(64, 1)
model = nn.Sequential(nn.Linear(8, 256), nn.ReLU(), nn.Linear(256, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
run = trainwatch.Run()
xt, yt = x[:4], torch.randn(4, 1)
for step in range(60):
    loss = nn.functional.mse_loss(model(xt), yt)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    run.log_metric("train:loss", loss.item(), step=step)
    if step % 10 == 9:
        with torch.no_grad():
            run.log_metric("validation:loss", nn.functional.mse_loss(model(xv), yv).item(),
                           step=step)
"""
        proc = self.run_torch("overfit", body, "--rule", "Overfit")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(self.rules("overfit")["Overfit"]["status"], "IssuesFound")

    def test_a_layer_initialised_far_too_large_is_a_poor_weight_initialization(self):
        body = r"""
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
with torch.no_grad():
    model[2].weight.mul_(100.0)
optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
hook = trainwatch.torch.watch(model, optimizer)
for step in range(3):
    loss = nn.functional.mse_loss(model(x), y)
    hook.record_loss(loss)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""
        proc = self.run_torch("poorinit", body, "--rule", "PoorWeightInitialization")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        status = self.rules("poorinit")["PoorWeightInitialization"]
        self.assertEqual(status["status"], "IssuesFound", status)
        finding = status["findings"][0]
        self.assertEqual(finding["reason"], "activation_variance_ratio")
        self.assertEqual(finding["subject"], "3:input", "the input of the ReLU after the layer")

    def test_images_that_are_not_normalised_are_found(self):
        body = r"""
model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 14 * 14, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
hook = trainwatch.torch.watch(model, optimizer)
for step in range(10):  # 640 images, at the first steps (every statistic)
    images = torch.rand(64, 3, 16, 16) * 255  # raw pixel values
    images[:, 1] = torch.randn(64, 16, 16)    # channel 1 normalised
    model(images).mean().backward()
    optimizer.step()
    optimizer.zero_grad()
"""
        proc = self.run_torch("images", body, "--rule", "CheckInputImages")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        status = self.rules("images")["CheckInputImages"]
        self.assertEqual(status["status"], "IssuesFound", status)
        self.assertEqual({f["subject"] for f in status["findings"]},
                         {"model:input channel 0", "model:input channel 2"})

    def test_sequences_mostly_padding_are_found(self):
        body = r"""
model = nn.Sequential(nn.Embedding(100, 8), nn.Flatten(), nn.Linear(8 * 12, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
hook = trainwatch.torch.watch(model, optimizer)
for step in range(3):
    tokens = torch.randint(1, 100, (16, 12))
    tokens[:, 4:] = 0                         # two thirds padding
    model(tokens).mean().backward()
    optimizer.step()
    optimizer.zero_grad()
"""
        proc = self.run_torch("padding", body, "--rule", "NLPSequenceRatio")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        status = self.rules("padding")["NLPSequenceRatio"]
        self.assertEqual(status["status"], "IssuesFound", status)
        self.assertEqual(status["findings"][0]["subject"], "0:input token 0")
        self.assertAlmostEqual(status["findings"][0]["observed"], 100 * 8 / 12, places=3)

    def test_similar_across_runs_compares_two_jobs_step_by_step(self):
        body = r"""
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=float(sys.argv[1]))
hook = trainwatch.torch.watch(model, optimizer)
for step in range(4):
    nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
    optimizer.zero_grad()
"""
        def run(name, lr, *flags):
            path = os.path.join(self.dir, name + ".py")
            with open(path, "w") as f:
                f.write(TORCH_PRELUDE + body)
            return subprocess.run(
                [TRAINWATCH, "run", "--data", self.data, "--name", name, "--profile-interval",
                 "off", *flags, "--", "/usr/bin/python3", path, str(lr)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env,
                timeout=300, cwd=self.dir)

        if not HAVE_TORCH:
            self.skipTest("PyTorch is not installed for /usr/bin/python3 (Debian: python3-torch)")
        self.assertEqual(run("first", 0.01, "--no-rules").returncode, 0)
        rule = "SimilarAcrossRuns:other_trials=first"
        self.assertEqual(run("same", 0.01, "--rule", rule).returncode, 0)
        self.assertEqual(run("other", 0.05, "--rule", rule).returncode, 0)
        same = self.rules("same")["SimilarAcrossRuns"]
        self.assertEqual(same["status"], "NoIssuesFound", same)
        self.assertEqual(same["findings"], [], "it compared statistics")
        other = self.rules("other")["SimilarAcrossRuns"]
        self.assertEqual(other["status"], "IssuesFound", other)
        self.assertEqual({f["reason"] for f in other["findings"]}, {"differs"})
        # The same weights and data at step 0 give the same gradients; the larger
        # learning rate makes the weights differ from its first update on.
        gradients = [f for f in other["findings"] if "gradients" in f["message"]]
        self.assertTrue(gradients and min(f["step"] for f in gradients) == 1, other["findings"])

    def test_each_rank_of_a_distributed_job_sends_its_own_statistics(self):
        script = r"""
import os, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch import nn
import trainwatch, trainwatch.torch

def worker(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 8), nn.ReLU(),
                                                              nn.Linear(8, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    hook = trainwatch.torch.watch(model, optimizer, save_interval=1)
    for step in range(3):
        nn.functional.mse_loss(model(torch.randn(16, 4)), torch.randn(16, 1)).backward()
        optimizer.step()
        optimizer.zero_grad()
    hook.run.flush(10)
    dist.destroy_process_group()

if __name__ == "__main__":
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(29500 + os.getpid() % 1000))
    mp.spawn(worker, args=(2,), nprocs=2)
"""
        if not HAVE_TORCH:
            self.skipTest("PyTorch is not installed for /usr/bin/python3 (Debian: python3-torch)")
        proc = self.run_job("ddp", script, "--no-rules")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        code = ("import sys, trainwatch\nt = trainwatch.Trial('ddp', data=sys.argv[1])\n"
                "print(t.workers(), sorted(t.tensor('module.0.weight', 'gradients', rank='1')"
                ".values('l2')), t.steps())\nt.close()\n")
        env = dict(self.env, PYTHONPATH=os.path.join(SOURCE, "python"))
        out = subprocess.run(["/usr/bin/python3", "-c", code, self.data], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "['0', '1'] [0, 1, 2] [0, 1, 2]")

    def test_a_healthy_run_finds_nothing(self):
        body = r"""
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
hook = trainwatch.torch.watch(model, optimizer)
for step in range(25):
    loss = nn.functional.mse_loss(model(x), y)
    hook.record_loss(loss)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""
        rules = ["ExplodingTensor", "VanishingGradient", "DeadRelu", "UnchangedTensor",
                 "WeightUpdateRatio", "TensorVariance:max_threshold=1e6",
                 "PoorWeightInitialization"]
        flags = [a for r in rules for a in ("--rule", r)]
        proc = self.run_torch("healthy", body, *flags)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        statuses = self.rules("healthy")
        for name in ("ExplodingTensor", "VanishingGradient", "DeadRelu", "UnchangedTensor",
                     "WeightUpdateRatio", "TensorVariance", "PoorWeightInitialization"):
            self.assertEqual(statuses[name]["status"], "NoIssuesFound", statuses[name])
            self.assertEqual(statuses[name]["findings"], [], "each saw its tensors")


if __name__ == "__main__":
    if "--trainwatch" not in sys.argv:
        sys.exit("usage: python_client_test.py --trainwatch PATH/trainwatch [unittest args]")
    i = sys.argv.index("--trainwatch")
    TRAINWATCH = os.path.abspath(sys.argv[i + 1])
    del sys.argv[i:i + 2]
    SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    unittest.main()
