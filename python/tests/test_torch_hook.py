"""trainwatch.torch.watch on tiny CPU models: the statistics against a
reference, the activity fractions, the weights' update norms, steps, timing,
one host transfer per step, and the flight recorder."""

import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import warnings
from unittest import mock

import support
from support import FakeEndpoint

try:
    import numpy
    import torch
    from torch import nn
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

if torch is not None:
    import trainwatch
    import trainwatch._tensor_stats as tensor_stats
    import trainwatch.torch as tw_torch

TENSORS = "trainwatch/Tensors"


def reference_stats(array):
    """DEVICE_STATS of an array, with numpy in float64."""
    a = numpy.asarray(array, dtype=numpy.float64).reshape(-1)
    finite = a[numpy.isfinite(a)]
    return {
        "zeros": float((a == 0).sum()), "nan": float(numpy.isnan(a).sum()),
        "pos_inf": float((a == numpy.inf).sum()), "neg_inf": float((a == -numpy.inf).sum()),
        "min": finite.min(), "max": finite.max(), "mean": finite.mean(),
        "abs_mean": numpy.abs(finite).mean(), "variance": finite.var(),
        "l1": numpy.abs(finite).sum(), "l2": numpy.sqrt((finite ** 2).sum()),
    }


@unittest.skipIf(torch is None, "PyTorch is not installed: the hook's tests are skipped "
                                "(Debian: python3-torch)")
class HookTestCase(unittest.TestCase):
    def setUp(self):
        patcher = mock.patch.dict(os.environ, support.clean_environment(), clear=True)
        patcher.start()
        self.addCleanup(patcher.stop)
        support.forget_warnings()
        self.fake = FakeEndpoint(job_record={"name": "hooked"})
        self.addCleanup(self.fake.close)
        self.run = trainwatch.Run(job="hooked", endpoint=self.fake.url, batch_interval=0.05)
        self.addCleanup(self.run.close, 1.0)
        torch.manual_seed(0)

    def stat(self, tensor, collection, stat, **dims):
        return self.fake.values(stat, TENSORS, Tensor=tensor, Collection=collection, **dims)

    def train(self, model, optimizer, hook, steps, batch=None, loss_fn=None):
        batch = batch if batch is not None else torch.randn(4, model[0].in_features)
        for _ in range(steps):
            out = model(batch)
            loss = (loss_fn or (lambda o: o.pow(2).mean()))(out)
            hook.record_loss(loss)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        self.assertTrue(self.run.flush(10))


class StatisticsTest(HookTestCase):
    def test_the_exact_statistics_of_a_known_tensor_match_numpy(self):
        values = [0.0, 1.5, -2.0, 0.0, float("nan"), float("inf"), -float("inf"), 4.0, 3.25,
                  float("inf"), float("nan"), float("nan"), -0.0]
        for dtype in (torch.float32, torch.float64, torch.float16):
            with self.subTest(dtype=dtype):
                got = tensor_stats._statistics(torch.tensor(values, dtype=dtype))
                want = reference_stats(values)
                self.assertEqual(set(got), set(tensor_stats.DEVICE_STATS))
                for name, value in got.items():
                    self.assertAlmostEqual(value, want[name], places=5, msg=name)

    def test_the_fast_statistics_of_finite_tensors_match_numpy(self):
        for shape, scale, offset in (((7,), 1.0, 0.0), ((64, 33), 3.0, 100.0),
                                     ((3, 5, 4), 1e-3, -2.0)):
            x = torch.randn(*shape, dtype=torch.float64) * scale + offset
            x.view(-1)[::5] = 0.0
            flat = x.reshape(-1)
            raw = tensor_stats._fast_raw(flat, torch.empty_like(flat)).tolist()
            got, finite = tensor_stats._decode_fast(raw, x.numel())
            self.assertTrue(finite)
            want = reference_stats(x.numpy())
            for name, value in zip(tensor_stats.DEVICE_STATS, got):
                self.assertAlmostEqual(value / (abs(want[name]) or 1.0),
                                       want[name] / (abs(want[name]) or 1.0), places=9, msg=name)

    def test_the_cpu_statistics_match_numpy_whatever_the_signs(self):
        torch.manual_seed(1)
        base = torch.randn(1000, dtype=torch.float64)
        cases = {"mixed": base, "mixed with zeros": base * (base.abs() > 0.5),
                 "positive": base.abs() + 0.1, "relu": base.clamp(min=0),
                 "negative": -base.abs() - 0.1, "non-positive": base.clamp(max=0),
                 "mean dominates": base * 1e-3 + 100.0, "constant": torch.full((7,), 2.5,
                                                                               dtype=torch.float64),
                 "zeros": torch.zeros(5, dtype=torch.float64),
                 "non-finite": torch.tensor([1.0, float("nan"), -float("inf"), 0.0, 3.0],
                                            dtype=torch.float64)}
        for name, x in cases.items():
            with self.subTest(name):
                got = dict(zip(tensor_stats.DEVICE_STATS,
                               tensor_stats._host_stats(x, torch.empty_like(x))))
                want = reference_stats(x.numpy())
                for stat, value in got.items():
                    scale = abs(want[stat]) or 1.0
                    self.assertAlmostEqual(value / scale, want[stat] / scale, places=9,
                                           msg=stat)
        # float32: the one-pass variance within float32's rounding
        x = torch.randn(100_000) * 0.05
        got = dict(zip(tensor_stats.DEVICE_STATS, tensor_stats._host_stats(x, torch.empty_like(x))))
        self.assertAlmostEqual(got["variance"] / x.double().var(unbiased=False).item(), 1.0,
                               places=5)

    def test_the_fast_statistics_say_when_an_element_is_not_finite(self):
        x = torch.tensor([1.0, float("nan"), -float("inf"), float("inf"), float("inf"), 0.0])
        got, finite = tensor_stats._decode_fast(tensor_stats._fast_raw(x, torch.empty(8)[:6]).tolist(), 6)
        self.assertFalse(finite)
        # Counted (a tensor gone by the end of the step): the counts, no moments.
        got, finite = tensor_stats._decode_fast(
            tensor_stats._fast_raw(x, torch.empty_like(x), count_non_finite=True).tolist(), 6)
        got = dict(zip(tensor_stats.DEVICE_STATS, got))
        self.assertEqual([got[s] for s in ("zeros", "nan", "pos_inf", "neg_inf")],
                         [1.0, 1.0, 2.0, 1.0])
        for name in ("min", "max", "mean", "abs_mean", "variance", "l1", "l2"):
            self.assertFalse(math.isfinite(got[name]), name)

    def test_an_all_non_finite_tensor_has_counts_and_no_moments(self):
        got = tensor_stats._statistics(torch.tensor([float("nan"), float("inf")]))
        self.assertEqual((got["nan"], got["pos_inf"], got["zeros"]), (1.0, 1.0, 0.0))
        for name in ("min", "max", "mean", "abs_mean", "variance", "l1", "l2"):
            self.assertFalse(math.isfinite(got[name]), name)

    def test_integer_tensors_are_measured_too(self):
        got = tensor_stats._statistics(torch.tensor([1, 0, 3]))
        self.assertEqual((got["zeros"], got["max"], got["l1"]), (1.0, 3.0, 4.0))

    def test_the_weights_and_gradients_sent_are_those_of_the_model(self):
        model = nn.Sequential(nn.Linear(3, 2))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        hook = tw_torch.watch(model, optimizer, run=self.run)
        self.train(model, optimizer, hook, 1)
        weight = model[0].weight.detach().numpy()  # after the step: what the hook saw
        for stat, want in reference_stats(weight).items():
            [got] = self.stat("0.weight", "weights", stat)
            self.assertAlmostEqual(got, want, places=6, msg=stat)
        self.assertEqual(self.stat("0.weight", "weights", "count"), [6.0])
        self.assertEqual(self.stat("0.bias", "biases", "count"), [2.0])
        self.assertEqual(len(self.stat("0.weight", "gradients", "abs_mean")), 1)
        # A statistic that is not finite is left out (min of an empty set).
        self.assertEqual(self.fake.find("update_norm", TENSORS, Tensor="missing"), [])

    def test_the_device_path_sends_the_same_statistics(self):
        # CPU_READS=False computes as on a GPU (no value read before the
        # step's one transfer): the same figures.
        sent = {}
        for cpu_reads in (True, False):
            with mock.patch.object(tw_torch, "CPU_READS", cpu_reads):
                torch.manual_seed(0)
                model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                run = trainwatch.Run(job="path-%s" % cpu_reads, endpoint=self.fake.url)
                hook = tw_torch.watch(model, optimizer, run=run)
                self.train(model, optimizer, hook, 1, batch=torch.randn(5, 3))
                run.close(5)
                sent[cpu_reads] = {
                    (dict(key[2])["Tensor"], dict(key[2])["Collection"], key[1]): values[0]
                    for key, (_, values) in self.fake.series().items()
                    if key[0] == TENSORS and dict(key[2])["TrainingJobName"] == run.job}
        self.assertEqual(sent[True].keys(), sent[False].keys())
        self.assertGreater(len(sent[True]), 100)
        for key, value in sent[True].items():
            self.assertAlmostEqual(value, sent[False][key], places=5, msg=key)

    def test_non_finite_gradients_are_counted_and_left_out_of_the_moments(self):
        model = nn.Sequential(nn.Linear(2, 1, bias=False))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        tw_torch.watch(model, optimizer, run=self.run, collections=["gradients"])
        model(torch.ones(1, 2)).sum().backward()
        model[0].weight.grad[0, 0] = float("nan")
        optimizer.step()
        self.run.flush(10)
        self.assertEqual(self.stat("0.weight", "gradients", "nan"), [1.0])
        self.assertEqual(self.stat("0.weight", "gradients", "mean"), [1.0])  # the finite one


    def test_a_non_finite_gradient_between_full_steps_is_counted_at_its_own_step(self):
        model = nn.Sequential(nn.Linear(2, 1, bias=False))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        tw_torch.watch(model, optimizer, run=self.run, collections=["gradients"],
                       initial_steps=0)
        for step in range(3):  # step 0 is a full one; 1 and 2 send only the l2
            optimizer.zero_grad()
            model(torch.ones(1, 2)).sum().backward()
            if step == 2:
                model[0].weight.grad[0, 1] = float("inf")
            optimizer.step()
        self.run.flush(10)
        self.assertEqual(self.stat("0.weight", "gradients", "pos_inf"), [0.0, 1.0])
        self.assertEqual(len(self.stat("0.weight", "gradients", "l2")), 3,
                         "step 2's l2 is that of its finite elements (its full statistics)")


    def test_a_weight_gone_non_finite_between_full_steps_is_counted_at_its_own_step(self):
        model = nn.Sequential(nn.Linear(2, 2))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        tw_torch.watch(model, optimizer, run=self.run, collections=["weights"],
                       initial_steps=0)
        for step in range(2):
            if step == 1:
                with torch.no_grad():
                    model[0].weight[1, 1] = float("nan")
                    model[0].weight[0, 0] = -float("inf")
            model(torch.ones(1, 2)).sum().backward()
            optimizer.step()
        self.run.flush(10)
        self.assertEqual(self.stat("0.weight", "weights", "nan"), [0.0, 1.0])
        self.assertEqual(self.stat("0.weight", "weights", "neg_inf"), [0.0, 1.0])
        self.assertEqual(len(self.stat("0.weight", "weights", "mean")), 2)  # of the finite ones
        self.assertEqual(len(self.stat("0.weight", "weights", "norm")), 1)

    def test_a_loss_of_many_elements_and_non_finite_losses(self):
        model = nn.Sequential(nn.Linear(2, 1))
        hook = tw_torch.watch(model, run=self.run, collections=["losses"])
        values = torch.arange(1000, dtype=torch.float32)
        values[3] = float("nan")
        hook.record_loss(values, name="per_sample")
        hook.record_loss(torch.tensor([1.0, float("inf"), -float("inf"), 3.0]), name="few")
        hook.step()
        self.run.flush(10)
        self.assertEqual(self.stat("per_sample", "losses", "count"), [1000.0])
        self.assertEqual(self.stat("per_sample", "losses", "nan"), [1.0])
        self.assertEqual(self.stat("per_sample", "losses", "max"), [999.0])
        self.assertAlmostEqual(self.stat("per_sample", "losses", "mean")[0], (499500 - 3) / 999)
        self.assertEqual([self.stat("few", "losses", s)[0] for s in
                          ("pos_inf", "neg_inf", "min", "max", "mean")], [1.0, 1.0, 1.0, 3.0, 2.0])


class ActivityTest(HookTestCase):
    def test_relu_units_that_never_fire_are_dead(self):
        linear = nn.Linear(2, 4)
        with torch.no_grad():
            linear.weight.zero_()
            linear.bias.copy_(torch.tensor([-1.0, -1.0, -1.0, 1.0]))  # 3 of 4 never positive
        model = nn.Sequential(linear, nn.ReLU())
        hook = tw_torch.watch(model, run=self.run)
        for _ in range(2):
            model(torch.randn(8, 2))  # two forwards in the step: both must miss
        hook.step()
        self.run.flush(10)
        self.assertEqual(self.stat("1:output", "activations", "dead_fraction"), [0.75])

    def test_all_negative_relu_inputs_make_every_unit_dead(self):
        model = nn.Sequential(nn.Linear(3, 5), nn.ReLU())
        with torch.no_grad():
            model[0].weight.zero_()
            model[0].bias.fill_(-100.0)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        hook = tw_torch.watch(model, optimizer, run=self.run)
        self.train(model, optimizer, hook, 1)
        self.assertEqual(self.stat("1:output", "activations", "dead_fraction"), [1.0])
        self.assertEqual(self.stat("1:input", "activations", "max"), [-100.0])

    def test_tanh_inputs_beyond_the_bounds_are_saturated(self):
        linear = nn.Linear(1, 2, bias=False)
        with torch.no_grad():
            linear.weight.copy_(torch.tensor([[100.0], [0.001]]))  # unit 0 saturates
        model = nn.Sequential(linear, nn.Tanh())
        hook = tw_torch.watch(model, run=self.run)
        model(torch.tensor([[1.0], [-2.0], [3.0]]))
        hook.step()
        self.run.flush(10)
        self.assertEqual(self.stat("1:input", "activations", "saturated_fraction"), [0.5])

    def test_an_in_place_relu_has_its_input_measured_before_it_changes(self):
        model = nn.Sequential(nn.Linear(2, 3), nn.ReLU(inplace=True))
        with torch.no_grad():
            model[0].weight.zero_()
            model[0].bias.fill_(-1.0)
        hook = tw_torch.watch(model, run=self.run)
        model(torch.randn(2, 2))
        hook.step()
        self.run.flush(10)
        self.assertEqual(self.stat("1:input", "activations", "min"), [-1.0])
        self.assertEqual(self.stat("1:output", "activations", "max"), [0.0])

    def test_non_finite_activations_are_counted(self):
        # On the CPU the statistics are exact (the tensor is measured again
        # while the forward has it); on a device the counts come without the
        # moments (CPU_READS=False: as on a GPU).
        for cpu_reads, mean in ((True, [0.0]), (False, [])):
            with self.subTest(cpu_reads=cpu_reads), \
                    mock.patch.object(tw_torch, "CPU_READS", cpu_reads):
                self.fake.accepted.clear()
                model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
                with torch.no_grad():
                    model[0].weight.fill_(1.0)
                    model[0].bias.zero_()
                hook = tw_torch.watch(model, run=self.run, collections=["activations"])
                model(torch.tensor([[float("nan"), 1.0], [float("inf"), 1.0], [2.0, -2.0]]))
                hook.step()
                hook.close()
                self.run.flush(10)
                self.assertEqual(self.stat("1:input", "activations", "nan"), [3.0])
                self.assertEqual(self.stat("1:input", "activations", "pos_inf"), [3.0])
                self.assertEqual(self.stat("1:input", "activations", "zeros"), [3.0])
                self.assertEqual(self.stat("1:input", "activations", "count"), [9.0])
                self.assertEqual([v for _, _, values in self.fake.find(
                    "mean", TENSORS, Tensor="1:input") for v in values], mean)

    def test_model_inputs_and_outputs_and_regex_selected_layers(self):
        model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
        hook = tw_torch.watch(model, run=self.run, collections=["inputs", "outputs"])
        x = torch.tensor([[1.0, 2.0]])
        out = model(x)
        hook.step()
        self.run.flush(10)
        self.assertEqual(self.stat("model:input", "inputs", "l1"), [3.0])
        self.assertAlmostEqual(self.stat("model:output", "outputs", "mean")[0], out.item())
        other = trainwatch.Run(job="regex", endpoint=self.fake.url, batch_interval=0.05)
        hook = tw_torch.watch(model, run=other, collections=["outputs"], include_regex=r"^0$")
        model(x)
        hook.step()
        other.close(5)
        names = {dict(k[2])["Tensor"] for k, _, _ in self.fake.find("mean", TENSORS,
                                                                   TrainingJobName="regex")}
        self.assertEqual(names, {"0:output"})

    def test_eval_mode_forwards_are_not_recorded(self):
        model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        hook = tw_torch.watch(model, run=self.run, collections=["activations"])
        model.eval()
        model(torch.randn(3, 2))
        hook.step()
        self.run.flush(10)
        self.assertEqual(self.fake.find("dead_fraction"), [])


class WeightUpdatesTest(HookTestCase):
    def test_a_frozen_layer_has_no_update_and_a_trained_one_its_step(self):
        model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 2))
        for p in model[0].parameters():
            p.requires_grad_(False)
        optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
        tw_torch.watch(model, optimizer, run=self.run)
        before = model[1].weight.detach().clone()
        x = torch.randn(4, 3)
        loss = model(x).pow(2).mean()
        loss.backward()
        gradient = model[1].weight.grad.clone()
        optimizer.step()
        self.run.flush(10)
        self.assertEqual(self.stat("0.weight", "weights", "update_norm"), [0.0])
        self.assertEqual(self.stat("0.weight", "weights", "update_ratio"), [0.0])
        [update] = self.stat("1.weight", "weights", "update_norm")
        self.assertAlmostEqual(update, (0.5 * gradient).norm().item(), places=6)
        [ratio] = self.stat("1.weight", "weights", "update_ratio")
        self.assertAlmostEqual(ratio, update / before.norm().item(), places=6)
        [norm] = self.stat("1.weight", "weights", "norm")
        self.assertAlmostEqual(norm, model[1].weight.norm().item(), places=6)
        self.assertEqual(self.fake.find("l2", TENSORS, Tensor="0.weight", Collection="gradients"),
                         [])  # no gradient: nothing

    def test_updates_of_many_parameters_non_contiguous_and_moved_ones(self):
        model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2, bias=False))
        model[1].weight = nn.Parameter(torch.randn(2, 4).t().contiguous().t())
        self.assertFalse(model[1].weight.is_contiguous())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        tw_torch.watch(model, optimizer, run=self.run, collections=["weights", "biases"],
                       save_interval=1)
        x = torch.randn(5, 3)
        want = {name: [] for name, _ in model.named_parameters()}
        for step in range(4):
            before = {name: p.detach().clone() for name, p in model.named_parameters()}
            if step == 2:  # moved (as model.to() does): measured anew, no update this step
                model[0].weight.data = model[0].weight.data.clone()
            model(x).pow(2).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
            for name, p in model.named_parameters():
                if step != 2:
                    want[name].append(((p.detach() - before[name]).norm().item(),
                                       before[name].norm().item()))
        self.run.flush(10)
        for name, _ in model.named_parameters():
            kind = "biases" if name.endswith("bias") else "weights"
            updates = self.stat(name, kind, "update_norm")
            ratios = self.stat(name, kind, "update_ratio")
            self.assertEqual(len(updates), len(want[name]), name)
            for got, ratio, (update, norm) in zip(updates, ratios, want[name]):
                self.assertGreater(update, 0, name)
                self.assertAlmostEqual(got / update, 1.0, places=5, msg=name)
                self.assertAlmostEqual(ratio / (update / norm), 1.0, places=5, msg=name)

    def test_norms_every_step_and_everything_every_save_interval(self):
        model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        hook = tw_torch.watch(model, optimizer, run=self.run, save_interval=5, initial_steps=0)
        batch = torch.randn(4, 2)
        changes = []  # ||W_s - W_(s-1)|| and ||W_(s-1)|| of each step
        for _ in range(12):
            before = model[0].weight.detach().clone()
            self.train(model, optimizer, hook, 1, batch=batch)
            changes.append(((model[0].weight - before).norm().item(), before.norm().item()))
        self.assertEqual(len(self.stat("0.weight", "weights", "norm")), 12)
        self.assertEqual(len(self.stat("0.weight", "gradients", "l2")), 12)
        # The updates at the full steps, each the change that step made.
        for stat, want in (("update_norm", [changes[s][0] for s in (0, 5, 10)]),
                           ("update_ratio", [changes[s][0] / changes[s][1] for s in (0, 5, 10)])):
            got = self.stat("0.weight", "weights", stat)
            self.assertEqual(len(got), 3)
            for g, w in zip(got, want):
                self.assertAlmostEqual(g / w, 1.0, places=5, msg=stat)
        self.assertEqual(len(self.stat("0.weight", "weights", "variance")), 3)  # 0, 5, 10
        self.assertEqual(len(self.stat("0.weight", "gradients", "abs_mean")), 3)
        self.assertEqual(len(self.stat("1:output", "activations", "dead_fraction")), 3)
        self.assertEqual(len(self.stat("loss", "losses", "mean")), 12)
        trial = trainwatch.Trial("hooked", endpoint=self.fake.url)
        self.addCleanup(trial.close)
        self.assertEqual(sorted(trial.tensor("0.weight", "weights").values("variance")),
                         [0, 5, 10])
        self.assertEqual(sorted(trial.tensor("0.weight", "gradients").values("l2")),
                         list(range(12)))


    def test_norm_and_save_intervals_of_their_own(self):
        model = nn.Sequential(nn.Linear(2, 2))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        hook = tw_torch.watch(model, optimizer, run=self.run, save_interval=3, norm_interval=2,
                              initial_steps=0)
        batch = torch.randn(4, 2)
        changes = []
        for _ in range(7):
            before = model[0].weight.detach().clone()
            self.train(model, optimizer, hook, 1, batch=batch)
            changes.append(((model[0].weight - before).norm().item(), before.norm().item()))
        trial = trainwatch.Trial("hooked", endpoint=self.fake.url)
        self.addCleanup(trial.close)
        weights = trial.tensor("0.weight", "weights")
        self.assertEqual(sorted(weights.values("norm")), [0, 2, 4, 6])
        self.assertEqual(sorted(trial.tensor("0.weight", "gradients").values("l2")),
                         [0, 2, 3, 4, 6])
        ratios = weights.values("update_ratio")
        self.assertEqual(sorted(ratios), [0, 3, 6])
        for step, ratio in ratios.items():
            self.assertAlmostEqual(ratio / (changes[step][0] / changes[step][1]), 1.0, places=5)


class StepsTest(HookTestCase):
    def test_steps_losses_and_timing(self):
        model = nn.Sequential(nn.Linear(2, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        hook = tw_torch.watch(model, optimizer, run=self.run, loss_metric="train:loss")
        losses = []
        for step in range(3):
            time.sleep(0.03)  # waiting for data
            loss = model(torch.ones(2, 2)).pow(2).mean()
            hook.record_loss(loss)
            losses.append(loss.item())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        self.run.flush(10)
        self.assertEqual(self.fake.values("step"), [0.0, 1.0, 2.0])
        for got, want in zip(self.stat("loss", "losses", "mean"), losses):
            self.assertAlmostEqual(got, want, places=6)
        self.assertEqual(self.fake.values("train:loss"), self.stat("loss", "losses", "mean"))
        self.assertEqual(len(self.fake.values("trainwatch:step_time_ms")), 3)
        waits = self.fake.values("trainwatch:dataloader_wait_ms")
        self.assertEqual(len(waits), 2)  # none before the first step
        self.assertTrue(all(25 <= w < 1000 for w in waits), waits)
        # The step's statistics share the step's time.
        [(_, step_t, _)] = self.fake.find("step")
        [(_, norm_t, _)] = self.fake.find("norm", TENSORS, Tensor="0.weight")
        self.assertEqual(step_t, norm_t)

    def test_several_losses_in_a_step_and_a_wrapped_loss_function(self):
        model = nn.Sequential(nn.Linear(2, 1))
        hook = tw_torch.watch(model, run=self.run, collections=["losses"])
        criterion = hook.wrap_loss(nn.MSELoss(), name="mse")
        criterion(torch.zeros(1), torch.ones(1))     # 1.0
        criterion(torch.zeros(1), torch.full((1,), 3.0))  # 9.0
        hook.record_loss(float("nan"), name="other")
        hook.step()
        self.run.flush(10)
        self.assertEqual(self.stat("mse", "losses", "mean"), [5.0])
        self.assertEqual(self.stat("mse", "losses", "max"), [9.0])
        self.assertEqual(self.stat("mse", "losses", "count"), [2.0])
        self.assertEqual(self.stat("other", "losses", "nan"), [1.0])
        self.assertEqual(self.fake.find("mean", TENSORS, Tensor="other"), [])

    def test_a_scheduler_wraps_the_wrapped_step_and_close_restores_it(self):
        model = nn.Sequential(nn.Linear(2, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
        hook = tw_torch.watch(model, optimizer, run=self.run)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        for _ in range(2):
            model(torch.ones(1, 2)).sum().backward()
            optimizer.step()
            scheduler.step()
        self.assertEqual(optimizer.param_groups[0]["lr"], 0.25)
        self.assertEqual(hook.current_step, 2)
        hook.close()  # the scheduler's wrapper stays, and calls through
        optimizer.step()
        self.assertEqual(hook.current_step, 2)
        self.assertEqual(optimizer._step_count, 3)

    def test_close_gives_the_optimizer_its_own_step_back(self):
        model = nn.Sequential(nn.Linear(2, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
        own_step = optimizer.step
        hook = tw_torch.watch(model, optimizer, run=self.run)
        self.assertNotEqual(optimizer.step, own_step)
        hook.close()
        self.assertEqual(optimizer.step, own_step)

    def test_ranks_of_a_distributed_job(self):
        model = nn.Sequential(nn.Linear(2, 1))
        hook = tw_torch.watch(model, run=self.run, collections=["weights"])
        with mock.patch.object(torch.distributed, "is_available", return_value=True), \
                mock.patch.object(torch.distributed, "is_initialized", return_value=True), \
                mock.patch.object(torch.distributed, "get_rank", return_value=1), \
                mock.patch.object(torch.distributed, "get_world_size", return_value=2):
            model(torch.ones(1, 2))
            hook.step()
        self.run.flush(10)
        self.assertEqual(len(self.stat("0.weight", "weights", "norm", Rank="1")), 1)
        # Only rank 0 reports the job's step; each rank numbers its own statistics.
        self.assertEqual(self.fake.find("step", "/aws/sagemaker/TrainingJobs"), [])
        self.assertEqual(self.fake.values("step", TENSORS, Rank="1"), [0.0])
        self.assertEqual(len(self.fake.values("trainwatch:step_time_ms", Rank="1")), 1)

    def test_outside_a_job_nothing_is_installed(self):
        with support.captured_stderr():
            inactive = trainwatch.Run(job="x")  # no endpoint anywhere
        model = nn.Sequential(nn.Linear(2, 1), nn.ReLU())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        own_step = optimizer.step
        hook = tw_torch.watch(model, optimizer, run=inactive)
        self.assertEqual(optimizer.step, own_step)
        self.assertEqual(len(model._forward_pre_hooks), 0)
        hook.record_loss(torch.ones(()))
        hook.step()


class OneTransferTest(HookTestCase):
    def test_one_host_transfer_a_step_and_nothing_else_waits(self):
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2), nn.Tanh())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        hook = tw_torch.watch(model, optimizer, run=self.run, save_interval=2)
        transfers = []
        real_to_host = tw_torch._to_host

        def counted(vector):
            transfers.append(vector.numel())
            return real_to_host(vector)

        syncing = {}
        originals = {name: getattr(torch.Tensor, name)
                     for name in ("item", "tolist", "cpu", "numpy", "__bool__", "__float__")}

        def counting(name):
            def call(self, *args, **kwargs):
                syncing[name] = syncing.get(name, 0) + 1
                return originals[name](self, *args, **kwargs)
            return call

        x = torch.randn(4, 4)
        # As on a GPU: on the CPU the hook reads values where that spares passes.
        with mock.patch.object(tw_torch, "_to_host", counted), \
                mock.patch.object(tw_torch, "CPU_READS", False):
            for name in originals:
                setattr(torch.Tensor, name, counting(name))
            try:
                for _ in range(4):
                    loss = model(x).pow(2).mean()
                    hook.record_loss(loss)
                    loss.backward()
                    optimizer.step()
                    optimizer.zero_grad()
            finally:
                for name, original in originals.items():
                    setattr(torch.Tensor, name, original)
        self.assertEqual(len(transfers), 4)
        # The one transfer is the .cpu().tolist() inside _to_host; nothing else
        # asked the device for a value.
        self.assertEqual(syncing, {"cpu": 4, "tolist": 4})
        self.assertGreater(transfers[0], transfers[1])  # a save step carries more


class FlightRecorderTest(HookTestCase):
    def test_the_last_steps_raw_tensors_are_dumped(self):
        model = nn.Sequential(nn.Linear(2, 2))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        hook = tw_torch.watch(model, optimizer, run=self.run, flight_recorder_steps=2,
                              flight_recorder_regex=r"^(weights|gradients)/0\.weight$")
        seen = []
        for _ in range(3):
            model(torch.randn(3, 2)).sum().backward()
            optimizer.step()
            seen.append((model[0].weight.detach().clone(), model[0].weight.grad.clone()))
            optimizer.zero_grad()
        with tempfile.TemporaryDirectory() as folder, support.captured_stderr() as err:
            path = hook.dump(os.path.join(folder, "dump.pt"))
            dumped = torch.load(path)
        self.assertIn(path, err.getvalue())
        self.assertEqual(dumped["steps"], [1, 2])
        self.assertEqual(dumped["job"], "hooked")
        for (weight, gradient), tensors in zip(seen[1:], dumped["tensors"]):
            self.assertEqual(sorted(tensors), ["gradients/0.weight", "weights/0.weight"])
            self.assertTrue(torch.equal(tensors["weights/0.weight"], weight))
            self.assertTrue(torch.equal(tensors["gradients/0.weight"], gradient))

    def test_dump_without_the_recorder_says_how_to_turn_it_on(self):
        hook = tw_torch.watch(nn.Sequential(nn.Linear(1, 1)), run=self.run)
        with self.assertRaisesRegex(RuntimeError, "flight_recorder_steps"):
            hook.dump()


@unittest.skipIf(torch is None, "PyTorch is not installed")
class InputsAndFirstStepsTest(HookTestCase):
    def test_image_channel_means_token_shares_and_gradient_quantiles(self):
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(10, 2)
                self.fc = nn.Linear(3 * 4 * 4 + 2 * 6, 1)

            def forward(self, images, tokens):
                return self.fc(torch.cat([images.flatten(1), self.embed(tokens).flatten(1)], 1))

        model = Model()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        hook = tw_torch.watch(model, optimizer, run=self.run, initial_steps=2, save_interval=100,
                              token_values=(0, 7))
        images = torch.rand(5, 3, 4, 4) * 255
        tokens = torch.tensor([[7, 7, 0, 0, 0, 1]] * 5)
        gradients = []
        for _ in range(3):
            model(images, tokens).pow(2).mean().backward()
            gradients.append(model.fc.weight.grad.detach().clone().reshape(-1))
            optimizer.step()
            optimizer.zero_grad()
        self.assertTrue(self.run.flush(10))
        for c in range(3):
            got = self.stat("model:input_0", "inputs", "channel_mean", Channel=str(c))
            self.assertEqual(len(got), 2, "steps 0 and 1 (full), not 2")
            self.assertAlmostEqual(got[0], images[:, c].mean().item(), places=3)
        self.assertEqual(self.stat("model:input_0", "inputs", "samples"), [5.0, 5.0])
        self.assertEqual(self.stat("embed:input", "inputs", "token_fraction", Token="0"),
                         [0.5, 0.5])
        self.assertAlmostEqual(
            self.stat("embed:input", "inputs", "token_fraction", Token="7")[0], 1 / 3)
        for stat, q in (("p5", 0.05), ("p95", 0.95)):
            got = self.stat("fc.weight", "gradients", stat)
            self.assertEqual(len(got), 2, stat)
            self.assertAlmostEqual(got[0], torch.quantile(gradients[0], q).item(), places=5)

    def test_bad_input_arguments_name_themselves(self):
        model = nn.Linear(1, 1)
        with self.assertRaisesRegex(ValueError, "token_values must be token ids"):
            tw_torch.watch(model, run=self.run, token_values=(0, -1))
        with self.assertRaisesRegex(ValueError, "initial_steps must be an int >= 0"):
            tw_torch.watch(model, run=self.run, initial_steps=-1)


@unittest.skipIf(torch is None, "PyTorch is not installed")
class ModelShapesTest(HookTestCase):
    """Models whose shape is not one tensor per module per step: none of them
    may raise into the training loop."""

    def test_a_relu_used_on_two_shapes_in_one_forward_counts_the_units_of_both(self):
        class Block(nn.Module):  # as torchvision's Bottleneck uses its one self.relu
            def __init__(self):
                super().__init__()
                self.a, self.b, self.relu = nn.Linear(4, 8), nn.Linear(8, 3), nn.ReLU()

            def forward(self, x):
                return self.relu(self.b(self.relu(self.a(x))))

        model = Block()
        with torch.no_grad():
            for layer, dead in ((model.a, 2), (model.b, 1)):
                layer.weight.zero_()
                layer.bias.fill_(1.0)
                layer.bias[:dead] = -1.0  # never positive
        optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
        hook = tw_torch.watch(model, optimizer, run=self.run)
        model(torch.randn(5, 4)).sum().backward()
        optimizer.step()
        self.run.flush(10)
        self.assertEqual(hook.current_step, 1)
        self.assertEqual(self.stat("relu:output", "activations", "dead_fraction"), [3 / 11])

    def test_micro_batches_of_two_lengths_in_one_step(self):
        model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        hook = tw_torch.watch(model, optimizer, run=self.run)
        for length in (5, 7):  # gradient accumulation, each batch padded to its own length
            model(torch.randn(2, length, 8)).sum().backward()
        optimizer.step()
        self.run.flush(10)
        self.assertEqual(hook.current_step, 1)
        self.assertEqual(len(self.stat("1:output", "activations", "dead_fraction")), 1)

    def test_a_sparse_gradient_is_measured_by_its_stored_values(self):
        # On the CPU's path and on the device's (CPU_READS=False, as on a GPU).
        for cpu_reads in (True, False):
            with mock.patch.object(tw_torch, "CPU_READS", cpu_reads):
                torch.manual_seed(0)
                model = nn.Sequential(nn.Embedding(10, 4, sparse=True))
                optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
                run = trainwatch.Run(job="sparse-%s" % cpu_reads, endpoint=self.fake.url)
                hook = tw_torch.watch(model, optimizer, run=run)
                for _ in range(2):  # a full step, then one of norms only
                    model(torch.tensor([[1, 2, 2]])).pow(2).sum().backward()
                    touched = model[0].weight.grad.coalesce().values().numpy().astype(numpy.float64)
                    if hook.current_step == 0:
                        first = reference_stats(touched)
                    optimizer.step()
                    optimizer.zero_grad()
                run.close(5)
                self.assertEqual(hook.current_step, 2)

                def stat(name):
                    return self.fake.values(name, TENSORS, Tensor="0.weight", Collection="gradients",
                                            TrainingJobName=run.job)
                self.assertEqual(stat("count"), [8.0, 8.0], cpu_reads)  # 2 rows of 4, 2 full steps
                for name in ("mean", "abs_mean", "variance", "zeros"):
                    self.assertAlmostEqual(stat(name)[0], first[name], places=5,
                                           msg="%s (CPU_READS=%s)" % (name, cpu_reads))
                self.assertAlmostEqual(stat("l2")[-1], float(numpy.sqrt((touched ** 2).sum())),
                                       places=5)

    def test_a_lazy_module_is_measured_once_its_first_forward_made_it(self):
        class TwoHeads(nn.Module):  # the second head runs from the second step on
            def __init__(self):
                super().__init__()
                self.a, self.b, self.use_b = nn.LazyLinear(3), nn.LazyLinear(2), False

            def forward(self, x):
                y = self.a(x)
                return self.b(y) if self.use_b else y

        with warnings.catch_warnings():  # "Lazy modules are a new feature"
            warnings.simplefilter("ignore", UserWarning)
            model = TwoHeads()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        hook = tw_torch.watch(model, optimizer, run=self.run)
        for step in range(3):
            model.use_b = step >= 1
            model(torch.randn(4, 5)).pow(2).mean().backward()
            optimizer.step()
            optimizer.zero_grad()
        self.run.flush(10)
        self.assertEqual(hook.current_step, 3)
        self.assertEqual(self.stat("a.weight", "weights", "count"), [15.0] * 3)
        self.assertEqual(len(self.stat("a.weight", "weights", "norm")), 3)
        self.assertEqual(self.stat("b.weight", "weights", "count"), [6.0] * 2)
        self.assertEqual(len(self.stat("b.weight", "weights", "norm")), 2)

    def test_validation_losses_and_losses_after_close_are_not_recorded(self):
        model = nn.Sequential(nn.Linear(2, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        hook = tw_torch.watch(model, optimizer, run=self.run)
        loss_fn = hook.wrap_loss(lambda out: out.mean())
        model.eval()
        with torch.no_grad():
            for _ in range(5):
                loss_fn(model(torch.ones(1, 2)) + 100)
        model.train()
        loss = loss_fn(model(torch.ones(1, 2)))
        loss.backward()
        optimizer.step()
        hook.close()
        for _ in range(3):
            hook.record_loss(torch.tensor(7.0))
        hook.step()
        self.run.flush(10)
        self.assertEqual(self.stat("loss", "losses", "count"), [1.0])
        self.assertAlmostEqual(self.stat("loss", "losses", "mean")[0], loss.item(), places=6)

    def test_close_closes_the_run_watch_made_and_gives_the_signal_back(self):
        before = signal.getsignal(signal.SIGUSR2)
        model = nn.Sequential(nn.Linear(2, 1))
        with mock.patch.dict(os.environ, {"TRAINWATCH_RUNNER_URL": self.fake.url,
                                          "TRAINWATCH_JOB": "hooked"}):
            hook = tw_torch.watch(model, flight_recorder_steps=1, dump_signal=signal.SIGUSR2)
        self.assertTrue(hook.run.active)
        self.assertIsNot(signal.getsignal(signal.SIGUSR2), before)
        hook.close()
        self.assertIs(signal.getsignal(signal.SIGUSR2), before)
        self.assertFalse(hook.run.active, "the run watch() made is closed")


class ArgumentsTest(unittest.TestCase):
    def test_bad_arguments_name_themselves(self):
        with support.captured_stderr():
            run = trainwatch.Run(job="x")
        model = nn.Linear(1, 1)
        with self.assertRaisesRegex(ValueError, "unknown tensors"):
            tw_torch.watch(model, run=run, collections=["tensors"])
        with self.assertRaisesRegex(ValueError, "save_interval"):
            tw_torch.watch(model, run=run, save_interval=0)
        with self.assertRaisesRegex(TypeError, "torch.nn.Module"):
            tw_torch.watch("model", run=run)


if __name__ == "__main__":
    unittest.main()


TRAINING_SCRIPT = """
import torch, trainwatch, trainwatch.torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
hook = trainwatch.torch.watch(model, optimizer, loss_metric="train:loss")
x, y = torch.randn(32, 4), torch.randn(32, 1)
for step in range(25):
    loss = nn.functional.mse_loss(model(x), y)
    hook.record_loss(loss)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
print("trained", flush=True)
"""


@unittest.skipIf(torch is None, "PyTorch is not installed")
class UnderTheRunnerTest(unittest.TestCase):
    """A training script started as `trainwatch run` starts it: the package on
    PYTHONPATH, the runner's endpoint, job and step metric in the environment."""

    def test_everything_arrives_under_the_jobs_step_metric(self):
        with FakeEndpoint(job_record={"name": "under-runner"}) as runner:
            env = dict(support.clean_environment(), TRAINWATCH_RUNNER_URL=runner.url,
                       TRAINWATCH_JOB="under-runner", TRAINWATCH_STEP_METRIC="global_step",
                       PYTHONPATH=support.PYTHON_DIR)
            done = subprocess.run([sys.executable, "-c", TRAINING_SCRIPT], env=env,
                                  capture_output=True, text=True, timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(done.stderr, "")
            self.assertEqual(runner.values("global_step"), [float(s) for s in range(25)])
            self.assertEqual(len(runner.values("train:loss")), 25)
            with trainwatch.Trial("under-runner", endpoint=runner.url) as trial:
                self.assertEqual(trial.steps(), list(range(25)))
                norms = trial.tensor("0.weight", "weights").values("update_ratio")
                full = list(range(10)) + [20]  # the first ten steps, then every 20th
                self.assertEqual(sorted(norms), full)  # at the full steps
                self.assertTrue(all(0 < r < 1 for r in norms.values()), norms)
                self.assertEqual(sorted(trial.tensor("1:output").values("dead_fraction")), full)
                quantiles = trial.tensor("0.weight", "gradients").values("p5")
                self.assertEqual(sorted(quantiles), list(range(10)), "p5 at the first steps only")
