"""trainwatch.torch: per-step statistics of a PyTorch model's tensors.

    hook = trainwatch.torch.watch(model, optimizer)
    for x, y in loader:
        loss = loss_fn(model(x), y)
        hook.record_loss(loss)
        loss.backward()
        optimizer.step()          # a step ends here
        optimizer.zero_grad()

Statistics are computed with torch operations on each tensor's own device; at
the end of a step the step's statistics are concatenated into one vector and
fetched to the host in one transfer, then queued for the run's sender thread
(docs/python.md, "The PyTorch hook", says what is computed when, and its cost).
"""

import collections
import math
import os
import re
import signal
import time

import torch
from torch import nn

from . import _env
from ._run import TENSORS, Run

COLLECTIONS = ("gradients", "weights", "biases", "losses", "activations", "inputs", "outputs")
# Over finite elements; "count" (every element) is known on the host.
DEVICE_STATS = ("zeros", "nan", "pos_inf", "neg_inf", "min", "max", "mean", "abs_mean",
                "variance", "l1", "l2")
LOSS_STATS = ("nan", "pos_inf", "neg_inf", "min", "max", "mean")
NON_FINITE_STATS = ("nan", "pos_inf", "neg_inf")
# A rank's step numbers in a job of several processes (trainwatch/Tensors, with
# TrainingJobName and Rank, no Tensor): Trial numbers each rank's statistics by them.
RANK_STEP_METRIC = "step"
WEIGHT_NORM_STATS = ("norm", "update_norm", "update_ratio")
STEP_TIME_METRIC = "trainwatch:step_time_ms"
DATALOADER_WAIT_METRIC = "trainwatch:dataloader_wait_ms"

# Units of these modules' outputs are "dead" in a step when never positive.
DEAD_UNIT_MODULES = (nn.ReLU, nn.ReLU6)
# Inputs of these are saturated outside (low, high): where the derivative is
# below about 1e-7 (SageMaker's SaturatedActivation bounds).
SATURATION_BOUNDS = ((nn.Tanh, (-9.4999, 9.4999)), (nn.Sigmoid, (-23.0, 16.99999)))
ACTIVATION_MODULES = (
    nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.PReLU, nn.RReLU, nn.ELU, nn.SELU, nn.CELU, nn.GELU,
    nn.SiLU, nn.Mish, nn.Softplus, nn.Tanh, nn.Sigmoid, nn.Hardtanh, nn.Hardsigmoid,
    nn.Hardswish, nn.LogSigmoid, nn.Softsign)
MODEL_NAME = "model"  # the module path of the watched model itself


def _to_host(vector):
    """The one device-to-host transfer of a step."""
    return vector.cpu().tolist()


def _device_stats(tensor):
    """DEVICE_STATS of `tensor` as one float64 vector on its device, without
    waiting for the device. Non-finite elements are counted, and left out of
    min, max, mean, abs_mean, variance, l1 and l2. Computed in the tensor's
    own precision (at least float32; integers in float64): a float64 reduction
    of a float32 tensor costs several times as much, on the CPU about ten."""
    x = tensor.detach().reshape(-1)
    if not x.is_floating_point():
        x = x.double()
    elif x.dtype in (torch.float16, torch.bfloat16):
        x = x.float()
    # Counting a mask in int32 skips its conversion to int64 (several times the
    # cost of the count on the CPU); int64 only where int32 could overflow.
    count_type = torch.int32 if x.numel() < 2 ** 31 else torch.int64
    finite = torch.isfinite(x)
    finite_count = finite.sum(dtype=count_type)
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    inf = torch.full((), math.inf, dtype=x.dtype, device=x.device)
    xf = torch.where(finite, x, zero)
    l1 = torch.linalg.vector_norm(xf, ord=1)
    mean = xf.sum() / finite_count
    deviation = torch.where(finite, x - mean, zero)
    parts = [
        (x == 0).sum(dtype=count_type), torch.isnan(x).sum(dtype=count_type),
        (x == inf).sum(dtype=count_type), (x == -inf).sum(dtype=count_type),
        torch.where(finite, x, inf).min(), torch.where(finite, x, -inf).max(),
        mean, l1 / finite_count, torch.linalg.vector_norm(deviation).square() / finite_count,
        l1, torch.linalg.vector_norm(xf),
    ]
    return torch.stack([p.to(torch.float64) for p in parts])


def _units(tensor):
    """`tensor` as [batch, units]: a unit is one position over the non-batch axes."""
    return tensor.detach().reshape(tensor.shape[0], -1) if tensor.dim() > 1 \
        else tensor.detach().reshape(1, -1)


def _tensors_of(value, name):
    """(name, tensor) for each tensor in a module's input or output: "name" for a
    tensor, "name_i" for the i-th of a tuple or list, "name.key" of a dict."""
    if isinstance(value, torch.Tensor):
        return [(name, value)]
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            return _tensors_of(value[0], name)
        return [pair for i, item in enumerate(value) for pair in _tensors_of(item, "%s_%d" % (name, i))]
    if isinstance(value, dict):
        return [pair for key, item in value.items() for pair in _tensors_of(item, "%s.%s" % (name, key))]
    return []


def _parameter_kind(name):
    return "biases" if name.rsplit(".", 1)[-1].startswith("bias") else "weights"


class Hook:
    """Statistics of a model's tensors, step by step (made by watch())."""

    def __init__(self, model, optimizer=None, *, run=None, collections=COLLECTIONS,
                 include_regex=None, save_interval=10, norm_interval=1, report_steps=True,
                 loss_metric=None, flight_recorder_steps=0, flight_recorder_regex=None,
                 dump_signal=None):
        if not isinstance(model, nn.Module):
            raise TypeError("model must be a torch.nn.Module, got %s" % type(model).__name__)
        if optimizer is not None and not callable(getattr(optimizer, "step", None)):
            raise TypeError("optimizer must have a step() method, got %s" % type(optimizer).__name__)
        if isinstance(collections, str):
            collections = (collections,)
        unknown = sorted(set(collections) - set(COLLECTIONS))
        if unknown:
            raise ValueError("collections: unknown %s; choose from %s"
                             % (", ".join(unknown), ", ".join(COLLECTIONS)))
        for what, value in (("save_interval", save_interval), ("norm_interval", norm_interval)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError("%s must be an int >= 1, got %r" % (what, value))
        if isinstance(flight_recorder_steps, bool) or not isinstance(flight_recorder_steps, int) \
                or flight_recorder_steps < 0:
            raise ValueError("flight_recorder_steps must be an int >= 0, got %r"
                             % (flight_recorder_steps,))
        self.model = model
        self.optimizer = optimizer
        self.run = run if run is not None else Run()
        self.collections = frozenset(collections)
        self.save_interval = save_interval
        self.norm_interval = norm_interval
        self.report_steps = report_steps
        self.loss_metric = loss_metric
        self.current_step = 0  # the step in progress (0 first)
        patterns = [include_regex] if isinstance(include_regex, str) else list(include_regex or [])
        self._include = [re.compile(p) for p in patterns]
        self._handles = []
        self._closed = False
        self._original_step = None
        self._step_wrapper = None
        self._keys = {}
        self._rank = None      # (rank, world size) once torch.distributed is initialised
        self._parameters = [(name, p) for name, p in model.named_parameters()]
        self._previous = {}    # parameter name -> its value at the last norm step
        self._previous_norm = {}
        self._begin_step_state()
        self._last_end = None  # perf_counter() when the previous step ended
        self._device_timing = _DeviceTiming(self._parameters)
        self._recorder = None
        if flight_recorder_steps:
            self._recorder = _FlightRecorder(flight_recorder_steps, flight_recorder_regex)
        if dump_signal is not None:
            if self._recorder is None:
                raise ValueError("dump_signal needs the flight recorder: watch(..., "
                                 "flight_recorder_steps=N, dump_signal=signal.SIGUSR1)")
            # A rule's action signal:SIGUSR1 (docs/rules.md) makes the recorder
            # write the steps before the one the rule fired on.
            signal.signal(dump_signal, lambda signo, frame: self.dump())
        if self.run.active:
            self._install()
            self._snapshot_weights()

    # --- public ---------------------------------------------------------------------

    def record_loss(self, loss, name="loss"):
        """Records a loss of this step (a tensor or a number; with several calls
        in a step, as with gradient accumulation, their statistics are those of
        all the calls). Does not wait for the device."""
        if not self.run.active:
            return
        if not isinstance(loss, torch.Tensor):
            loss = torch.tensor(float(loss), dtype=torch.float64)
        self._losses.setdefault(name, []).append(loss.detach().reshape(-1))

    def wrap_loss(self, loss_fn, name="loss"):
        """`loss_fn` (e.g. nn.CrossEntropyLoss()) whose every result is recorded
        with record_loss()."""
        def recorded(*args, **kwargs):
            loss = loss_fn(*args, **kwargs)
            self.record_loss(loss, name)
            return loss
        return recorded

    def step(self):
        """Ends the current step: call it after optimizer.step() when watch() was
        given no optimizer (with one, each optimizer.step() ends a step)."""
        if self.run.active and not self._closed:
            self._end_step()

    def dump(self, path=None):
        """Writes the flight recorder's steps (torch.save) to `path` (default:
        trainwatch-flight-<job>-rank<r>-step<s>.pt in the working directory, which
        is the job's under `trainwatch run`), says where on stderr, returns the path."""
        if self._recorder is None:
            raise RuntimeError("the flight recorder is off: watch(..., flight_recorder_steps=N)")
        rank = self._rank[0] if self._rank else 0
        if path is None:
            path = os.path.abspath("trainwatch-flight-%s-rank%d-step%d.pt"
                                   % (self.run.job or "local", rank, self.current_step))
        self._recorder.write(path, job=self.run.job, rank=rank)
        _env.say("flight recorder: wrote the last %d steps' tensors to %s"
                 % (len(self._recorder.steps), path))
        return path

    def close(self):
        """Removes the hooks; optimizer.step() no longer ends steps. The
        optimizer gets its own step() back unless something (an LR scheduler)
        wrapped it since: then the wrapper stays and calls through."""
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._closed = True
        if self._original_step is not None and \
                getattr(self.optimizer.step, "__func__", None) is self._step_wrapper:
            self.optimizer.step = self._original_step

    # --- installing -----------------------------------------------------------------

    def _install(self):
        self._handles.append(self.model.register_forward_pre_hook(self._on_model_forward))
        wants_io = self.collections & {"inputs", "outputs"}
        for path, module in self.model.named_modules():
            name = path or MODEL_NAME
            if "activations" in self.collections and isinstance(module, ACTIVATION_MODULES):
                self._handles.append(module.register_forward_pre_hook(
                    self._activation_input_hook(name, module)))
                self._handles.append(module.register_forward_hook(
                    self._activation_output_hook(name, module)))
            selected = any(p.search(path) for p in self._include) if self._include \
                else module is self.model
            if wants_io and selected:
                self._handles.append(module.register_forward_hook(self._io_hook(name)))
        if self.optimizer is not None:
            self._wrap_optimizer()

    def _wrap_optimizer(self):
        # A bound method, as the LR schedulers expect to find (they wrap it in turn).
        original = self.optimizer.step
        hook = self

        def step(optimizer, *args, **kwargs):
            result = original(*args, **kwargs)
            if not hook._closed:
                hook._end_step()
            return result

        self._original_step = original
        self._step_wrapper = step
        self.optimizer.step = step.__get__(self.optimizer, type(self.optimizer))

    # --- during a step ----------------------------------------------------------------

    def _begin_step_state(self):
        self._full = self.current_step % self.save_interval == 0
        self._norms = self.current_step % self.norm_interval == 0
        self._forward_start = None
        self._losses = {}
        self._captured = {}      # (tensor name, collection) -> statistics vector
        self._alive = {}         # ReLU output name -> units positive at least once
        self._unsaturated = {}   # tanh/sigmoid input name -> units inside the bounds at least once

    def _recording(self):
        return self.model.training and self.run.active

    def _on_model_forward(self, module, inputs):
        if self._forward_start is None and self._recording():
            self._forward_start = time.perf_counter()
            self._device_timing.forward_started()

    def _activation_input_hook(self, name, module):
        bounds = next((b for kind, b in SATURATION_BOUNDS if isinstance(module, kind)), None)

        def hook(module, inputs):
            if not (self._full and self._recording()) or not inputs or \
                    not isinstance(inputs[0], torch.Tensor):
                return
            x = inputs[0]
            tensor = name + ":input"
            with torch.no_grad():
                self._captured[(tensor, "activations")] = (x.numel(), _device_stats(x))
                if bounds is not None and x.numel():
                    units = _units(x)
                    inside = ((units > bounds[0]) & (units < bounds[1])).any(0)
                    seen = self._unsaturated.get(tensor)
                    self._unsaturated[tensor] = inside if seen is None else seen | inside
        return hook

    def _activation_output_hook(self, name, module):
        dead_units = isinstance(module, DEAD_UNIT_MODULES)

        def hook(module, inputs, output):
            if not (self._full and self._recording()) or not isinstance(output, torch.Tensor):
                return
            tensor = name + ":output"
            with torch.no_grad():
                self._captured[(tensor, "activations")] = (output.numel(), _device_stats(output))
                if dead_units and output.numel():
                    alive = (_units(output) > 0).any(0)
                    seen = self._alive.get(tensor)
                    self._alive[tensor] = alive if seen is None else seen | alive
        return hook

    def _io_hook(self, name):
        def hook(module, inputs, output):
            if not (self._full and self._recording()):
                return
            with torch.no_grad():
                for collection, value, suffix in (("inputs", inputs, ":input"),
                                                  ("outputs", output, ":output")):
                    if collection not in self.collections:
                        continue
                    for tensor, x in _tensors_of(value, name + suffix):
                        self._captured[(tensor, collection)] = (x.numel(), _device_stats(x))
        return hook

    # --- the end of a step ------------------------------------------------------------

    def _end_step(self):
        boundary = time.perf_counter()
        self._device_timing.step_ended()
        entries = []   # (tensor, collection, stat names, vector on the device)
        counts = []    # (tensor, collection, element count) known on the host
        with torch.no_grad():
            self._parameter_statistics(entries, counts)
            self._activity_statistics(entries, counts)
            self._loss_statistics(entries, counts)
        if self._recorder is not None:
            self._recorder.record(self.current_step, self._parameters, self._losses)
        values = []
        if entries:
            device = entries[0][3].device
            values = _to_host(torch.cat([e[3].to(device, non_blocking=True) for e in entries]))
            self._recount_non_finite_gradients(entries, values, counts)
        rank, world = self._distributed()
        if self.report_steps and rank == 0:
            t_ms, points = self.run.stamp(self.current_step)
        else:
            t_ms, points = self.run.stamp(None)
        if world > 1:
            # Each rank's own step numbers: its statistics' times are its own,
            # which the job's step metric (rank 0's) does not number.
            points.append((self._rank_step_key(rank), t_ms, float(self.current_step)))
        points.extend(self._points(entries, values, counts, t_ms, rank if world > 1 else None))
        self._timing_points(points, boundary, t_ms, rank if world > 1 else None)
        # A NaN or an infinity goes out at once: ExplodingTensor may stop the job.
        urgent = any(stat in NON_FINITE_STATS and value > 0
                     for stat, value in self._stat_values(entries, values))
        self.run.put_points(points, urgent=urgent)
        self.current_step += 1
        self._begin_step_state()
        self._last_end = time.perf_counter()

    def _recount_non_finite_gradients(self, entries, values, counts):
        """On a step that sends only the gradients' l2, a gradient whose l2 is
        not finite holds a NaN or an infinity: its full statistics are taken
        too (a second transfer, only then), so ExplodingTensor sees the counts
        at this step rather than at the next full one."""
        offset = 0
        extra = []
        for tensor, collection, stats, _ in entries:
            if collection == "gradients" and stats == ("l2",) and not math.isfinite(values[offset]):
                grad = dict(self._parameters)[tensor].grad
                if grad is not None:
                    extra.append((tensor, "gradients", DEVICE_STATS, _device_stats(grad)))
                    counts.append((tensor, "gradients", grad.numel()))
            offset += len(stats)
        if extra:
            device = extra[0][3].device
            values.extend(_to_host(torch.cat([e[3].to(device) for e in extra])))
            entries.extend(extra)

    @staticmethod
    def _stat_values(entries, values):
        offset = 0
        for _, _, stats, _ in entries:
            yield from zip(stats, values[offset:offset + len(stats)])
            offset += len(stats)

    def _parameter_statistics(self, entries, counts):
        for name, p in self._parameters:
            kind = _parameter_kind(name)
            if kind in self.collections:
                if self._full:
                    entries.append((name, kind, DEVICE_STATS, _device_stats(p)))
                    counts.append((name, kind, p.numel()))
                if self._norms:
                    entries.append((name, kind, WEIGHT_NORM_STATS, self._weight_norms(name, p)))
            if "gradients" in self.collections and p.grad is not None:
                if self._full:
                    entries.append((name, "gradients", DEVICE_STATS, _device_stats(p.grad)))
                    counts.append((name, "gradients", p.grad.numel()))
                elif self._norms:
                    entries.append((name, "gradients", ("l2",), torch.linalg.vector_norm(
                        p.grad.detach()).to(torch.float64).reshape(1)))

    def _weight_norms(self, name, p):
        """[norm, update_norm, update_ratio] of a parameter: its L2 norm now,
        the norm of its change since the last norm step, and that change over
        the norm it had then."""
        w = p.detach()
        norm = torch.linalg.vector_norm(w).to(torch.float64)
        previous = self._previous.get(name)
        if previous is None or previous.device != w.device:  # new, or moved since
            update = torch.full((), math.nan, dtype=torch.float64, device=w.device)
            ratio = update
            self._previous[name] = w.clone()
        else:
            update = torch.linalg.vector_norm(w - previous).to(torch.float64)
            ratio = update / self._previous_norm[name]
            previous.copy_(w)
        self._previous_norm[name] = norm
        return torch.stack([norm, update, ratio])

    def _snapshot_weights(self):
        with torch.no_grad():
            for name, p in self._parameters:
                if _parameter_kind(name) not in self.collections:
                    continue
                self._previous[name] = p.detach().clone()
                self._previous_norm[name] = torch.linalg.vector_norm(p.detach()).to(
                    torch.float64)

    def _activity_statistics(self, entries, counts):
        for (tensor, collection), (count, vector) in self._captured.items():
            entries.append((tensor, collection, DEVICE_STATS, vector))
            counts.append((tensor, collection, count))
        for tensor, alive in self._alive.items():
            entries.append((tensor, "activations", ("dead_fraction",),
                            (1.0 - alive.to(torch.float64).mean()).reshape(1)))
        for tensor, inside in self._unsaturated.items():
            entries.append((tensor, "activations", ("saturated_fraction",),
                            (1.0 - inside.to(torch.float64).mean()).reshape(1)))

    def _loss_statistics(self, entries, counts):
        if "losses" not in self.collections and self.loss_metric is None:
            return
        for name, recorded in self._losses.items():
            losses = torch.cat([r.to(recorded[0].device) for r in recorded])
            stats = _device_stats(losses)
            entries.append((name, "losses", LOSS_STATS,
                            stats[[DEVICE_STATS.index(s) for s in LOSS_STATS]]))
            counts.append((name, "losses", losses.numel()))

    def _points(self, entries, values, counts, t_ms, rank):
        """The step's points: each finite statistic of each entry (`values` is
        the entries' vectors, concatenated), and the element counts."""
        points = []
        offset = 0
        for tensor, collection, stats, _ in entries:
            for stat, value in zip(stats, values[offset:offset + len(stats)]):
                if collection == "losses" and stat == "mean" and self.loss_metric:
                    points.append(self.run.metric_point(self.loss_metric, value, t_ms))
                if collection in self.collections and math.isfinite(value):
                    points.append((self._key(tensor, collection, stat, rank), t_ms, value))
            offset += len(stats)
        for tensor, collection, count in counts:
            if collection in self.collections:
                points.append((self._key(tensor, collection, "count", rank), t_ms, float(count)))
        return points

    def _timing_points(self, points, boundary, t_ms, rank):
        start = self._forward_start if self._forward_start is not None else self._last_end
        step_ms = self._device_timing.step_ms()
        if step_ms is None and start is not None:
            step_ms = (boundary - start) * 1000.0
        dims = {} if rank is None else {"Rank": str(rank)}
        if step_ms is not None:
            points.append((self._metric_key(STEP_TIME_METRIC, dims), t_ms, step_ms))
        if self._last_end is not None and self._forward_start is not None:
            points.append((self._metric_key(DATALOADER_WAIT_METRIC, dims), t_ms,
                           (self._forward_start - self._last_end) * 1000.0))

    def _key(self, tensor, collection, stat, rank):
        cache_key = (tensor, collection, stat, rank)
        key = self._keys.get(cache_key)
        if key is None:
            dims = {"Tensor": tensor, "Collection": collection}
            if rank is not None:
                dims["Rank"] = str(rank)
            key = self._keys[cache_key] = self.run.series_key(TENSORS, stat, dims)
        return key

    def _rank_step_key(self, rank):
        key = self._keys.get(("step", rank))
        if key is None:
            key = self._keys[("step", rank)] = self.run.series_key(
                TENSORS, RANK_STEP_METRIC, {"Rank": str(rank)})
        return key

    def _metric_key(self, metric, dims):
        if not dims:
            return self.run.metric_key(metric)
        return self.run.series_key("/aws/sagemaker/TrainingJobs", metric, dims)

    def _distributed(self):
        if self._rank is None:
            dist = torch.distributed
            if not (dist.is_available() and dist.is_initialized()):
                return 0, 1
            self._rank = (dist.get_rank(), dist.get_world_size())
        return self._rank


class _DeviceTiming:
    """Step time on a CUDA device: CUDA events at the first forward and at the
    step's end, read once the step's statistics have come (no extra wait).
    A model on the CPU (where it is when the step's first forward starts) is
    timed by the host's clock: step_ms() is None."""

    def __init__(self, parameters):
        self._parameters = parameters
        self._start = None
        self._end = None

    def forward_started(self):
        self._start = self._end = None
        device = next((p.device for _, p in self._parameters), None)
        if device is not None and device.type == "cuda":
            self._start = torch.cuda.Event(enable_timing=True)
            self._start.record()

    def step_ended(self):
        if self._start is not None:
            self._end = torch.cuda.Event(enable_timing=True)
            self._end.record()

    def step_ms(self):
        start, end = self._start, self._end
        self._start = self._end = None
        if start is None or end is None:
            return None
        end.synchronize()
        return start.elapsed_time(end)


class _FlightRecorder:
    """The raw values of selected tensors over the last `steps` steps, kept
    on their devices (parameters, gradients and recorded losses)."""

    def __init__(self, steps, regex):
        self._pattern = re.compile(regex) if regex else None
        self.steps = collections.deque(maxlen=steps)

    def _selected(self, name):
        return self._pattern is None or self._pattern.search(name) is not None

    def record(self, step, parameters, losses):
        tensors = {}
        for name, p in parameters:
            if self._selected("weights/" + name):
                tensors["weights/" + name] = p.detach().clone()
            if p.grad is not None and self._selected("gradients/" + name):
                tensors["gradients/" + name] = p.grad.detach().clone()
        for name, recorded in losses.items():
            if self._selected("losses/" + name):
                tensors["losses/" + name] = torch.cat([r.to(recorded[0].device) for r in recorded])
        self.steps.append((step, tensors))

    def write(self, path, job, rank):
        torch.save({"job": job, "rank": rank, "steps": [step for step, _ in self.steps],
                    "tensors": [{name: t.cpu() for name, t in tensors.items()}
                                for _, tensors in self.steps]}, path)


def watch(model, optimizer=None, *, run=None, collections=COLLECTIONS, include_regex=None,
          save_interval=10, norm_interval=1, report_steps=True, loss_metric=None,
          flight_recorder_steps=0, flight_recorder_regex=None, dump_signal=None):
    """Watches `model`: per step, statistics of its tensors go to the job
    (trainwatch/Tensors, one series per tensor and statistic). Returns the Hook.

    optimizer       each optimizer.step() ends a step; without one, call
                    hook.step() after each step.
    run             the trainwatch.Run to send with (default: a new Run()).
    collections     of gradients, weights, biases, losses, activations, inputs,
                    outputs (default all).
    include_regex   module paths (regex, or a list) whose inputs and outputs
                    are recorded; default the model's own.
    save_interval   every how many steps every statistic is computed (default 10;
                    step 0 first).
    norm_interval   every how many steps the weights' norm/update_norm/update_ratio
                    and the gradients' l2 are (default 1: every step).
    report_steps    send the step number as the job's step metric (rank 0).
    loss_metric     also send the mean recorded loss as this metric (e.g. "train:loss").
    flight_recorder_steps, flight_recorder_regex
                    keep the last N steps' raw parameters, gradients and losses
                    whose "collection/name" matches the regex, for hook.dump().
    dump_signal     a signal (e.g. signal.SIGUSR1) on which hook.dump() runs: a
                    rule's action signal:SIGUSR1 writes the steps it fired on.
    """
    return Hook(model, optimizer, run=run, collections=collections, include_regex=include_regex,
                save_interval=save_interval, norm_interval=norm_interval,
                report_steps=report_steps, loss_metric=loss_metric,
                flight_recorder_steps=flight_recorder_steps,
                flight_recorder_regex=flight_recorder_regex, dump_signal=dump_signal)
