"""trainwatch.torch: per-step statistics of a PyTorch model's tensors.

    hook = trainwatch.torch.watch(model, optimizer)
    for x, y in loader:
        loss = loss_fn(model(x), y)
        hook.record_loss(loss)
        loss.backward()
        optimizer.step()          # a step ends here
        optimizer.zero_grad()

Statistics are computed with torch operations on each tensor's own device, as
a few raw reductions per tensor (the statistics are derived from them on the
host); at the end of a step they are concatenated into one vector and fetched
to the host in one transfer, then queued for the run's sender thread
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
from torch.nn.parameter import is_lazy

from . import _env
from ._run import TENSORS, Run
from ._tensor_stats import (DEVICE_STATS, LOSS_STATS, _as_float, _channel_means, _decode_exact,
                            _decode_fast, _exact_raw, _fast_raw, _host_stats, _loss_stats, _norms,
                            _quantiles, _to_host, _units)

COLLECTIONS = ("gradients", "weights", "biases", "losses", "activations", "inputs", "outputs")
NON_FINITE_STATS = ("nan", "pos_inf", "neg_inf")
# A rank's step numbers in a job of several processes (trainwatch/Tensors, with
# TrainingJobName and Rank, no Tensor): Trial numbers each rank's statistics by them.
RANK_STEP_METRIC = "step"
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
# Every statistic every 20 steps by default: on the reference machine's CPU
# models a full step added about 2.3 ms (MLP, 30 ms steps) and 2.6 ms (CNN,
# 7 ms steps), 0.4 % and 1.8 % of the mean step every 20 steps, twice that
# every 10 (BENCHMARKS.md, P1; docs/python.md, Cost).
SAVE_INTERVAL = 20
# Every statistic at the first steps too, with the gradients' p5 and p95:
# PoorWeightInitialization judges the first 10 saved steps.
INITIAL_STEPS = 10
# Token ids whose share of the inputs of embedding layers is counted
# (NLPSequenceRatio's default: 0, the usual padding id).
TOKEN_VALUES = (0,)


# On the CPU, reading a value waits for no device: the statistics of a CPU
# tensor are computed with a look at its first reductions (_host_stats), which
# spares passes that do not apply to it. False: as on a GPU (the tests use it).
CPU_READS = True


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


# Losses of at most this many elements are fetched as they are; their
# statistics are computed on the host.
RAW_LOSS_ELEMENTS = 256


def _gradient(p):
    """The gradient of parameter p as a dense tensor to measure (None: it has
    none). A sparse one (nn.Embedding(sparse=True)) is measured by its stored
    values: the rows the step touched (its implicit zeros would make every
    embedding's gradient look vanished)."""
    grad = p.grad
    if grad is not None and grad.is_sparse:
        return grad.coalesce().values()
    return grad


def _merge_units(masks, tensor, units, combine):
    """Merges one call's per-unit values of `tensor` into the step's, unit by
    unit with `combine`, among calls whose units have the same shape and
    device. A module called on tensors of other shapes in one step (one ReLU
    used twice in a block, micro-batches padded to their own lengths, replicas
    on several devices) keeps the units of each shape apart, and all of them
    count in the step's fraction."""
    by_shape = masks.setdefault(tensor, {})
    key = (tuple(units.shape), units.device)
    seen = by_shape.get(key)
    by_shape[key] = units if seen is None else combine(seen, units)


def _joined(blocks):
    """The blocks' vectors as one vector on the first one's device, of the
    widest of their types (None when every block's values are on the host
    already). A float32 value is exactly a Python float."""
    vectors = [vector for _, _, vector in blocks if vector is not None]
    if not vectors:
        return None
    # On a device when any vector is: a non-blocking copy to the host would be
    # read before it ends; one from the host to a device is ordered.
    device = next((v.device for v in vectors if v.device.type != "cpu"), vectors[0].device)
    return torch.cat([v if v.device == device else v.to(device, non_blocking=True)
                      for v in vectors])


def _append_stats(stats, tensor, collection, names, values, count):
    stats.extend((tensor, collection, name, value) for name, value in zip(names, values))
    stats.append((tensor, collection, "count", float(count)))


class _NormGroup:
    """The watched parameters of one device and dtype: norm (||W||) at norm
    steps, and at full steps update_norm (||W - W_before||, the change that
    step made) and update_ratio (that over ||W_before||), from one flat copy
    of their values taken at the end of the step before a full step (and by
    watch(), for step 0); with the L2 norms of gradients of that device and
    dtype. Each is one multi-tensor operation, however many parameters there
    are: the norms of each W, difference and gradient together, the copy
    minus W in place, W copied into the copy (one torch.cat into it). A norm
    step passes twice over the parameters (W, gradients); a full step three
    more times, and so does the step before it (the copy). update_ratio is
    computed on the host from the norms fetched with the copy."""

    def __init__(self, pairs, moved=False):
        self.names = [(name, _parameter_kind(name)) for name, _ in pairs]
        self.parameters = [p for _, p in pairs]
        self.key = (self.parameters[0].device, self.parameters[0].dtype)
        self._pointers = [p.data_ptr() for p in self.parameters]
        self._flats = self._flat() if all(p.is_contiguous() for p in self.parameters) else None
        flats = self._flats if self._flats is not None else self._flat()
        self._copy = torch.cat(flats)
        self._copy_views = list(torch.split(self._copy, [f.numel() for f in flats]))
        # The copy holds the values the next update is measured from (none
        # after a move: the parameters' values then are of no step).
        self._copied = not moved
        # ||W|| at the copy: on the device until fetched with a step's values.
        self._pending = torch.stack(_norms(flats))
        self._copied_norms = None  # host floats

    def _flat(self):
        return [p.detach().view(-1) if p.is_contiguous() else p.detach().reshape(-1)
                for p in self.parameters]

    def moved(self):
        """True when a parameter is no longer where it was (model.to(...), or
        its .data replaced)."""
        return [p.data_ptr() for p in self.parameters] != self._pointers

    def block(self, blocks, norms, update, copy, gradients=()):
        """Appends the step's block: these parameters' norms (sent when
        `norms`), their updates since the copy (`update`), the copy taken
        anew (`copy`: the next step is a full one), and the L2 norm of each of
        `gradients` ((name, parameter) whose .grad is of this device and
        dtype)."""
        flats = self._flats if self._flats is not None else self._flat()
        update = update and self._copied
        if update:
            torch._foreach_sub_(self._copy_views, flats)
            measured = flats + self._copy_views
        else:
            measured = list(flats)
        measured += [_gradient(p) for _, p in gradients]
        vector = torch.stack(_norms(measured))
        if copy:
            torch.cat(flats, out=self._copy)
        self._copied = copy
        pending = self._pending is not None
        if pending:
            vector = torch.cat([vector, self._pending])
            self._pending = None
        blocks.append(("norms", (self, norms, update, copy, gradients, pending), vector))

    def decode(self, raw, norms, update, copy, gradients, pending, stats, remeasure):
        count = len(self.names)
        values = raw[:count]
        if pending:
            self._copied_norms = raw[-count:]
        for i, (name, kind) in enumerate(self.names):
            norm = values[i]
            if norms:
                stats.append((name, kind, "norm", norm))
                if not math.isfinite(norm):
                    remeasure.append((name, kind, self.parameters[i], False))
            if update:
                change = raw[count + i]
                before = self._copied_norms[i] if self._copied_norms is not None else math.nan
                stats.append((name, kind, "update_norm", change))
                stats.append((name, kind, "update_ratio",
                              change / before if before != 0 else math.nan))
        if copy:
            self._copied_norms = values
        _decode_l2(gradients, raw[(2 if update else 1) * count:], stats, remeasure)


def _decode_l2(gradients, values, stats, remeasure):
    for (name, p), l2 in zip(gradients, values):
        if math.isfinite(l2):
            stats.append((name, "gradients", "l2", l2))
        else:  # a NaN or an infinity between full steps: counted at this step
            remeasure.append((name, "gradients", p, True))


class Hook:
    """Statistics of a model's tensors, step by step (made by watch())."""

    def __init__(self, model, optimizer=None, *, run=None, collections=COLLECTIONS,
                 include_regex=None, save_interval=SAVE_INTERVAL, norm_interval=1, report_steps=True,
                 loss_metric=None, flight_recorder_steps=0, flight_recorder_regex=None,
                 dump_signal=None, initial_steps=INITIAL_STEPS, image_channel_axis=1,
                 token_values=TOKEN_VALUES):
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
        for what, value in (("initial_steps", initial_steps),
                            ("image_channel_axis", image_channel_axis)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError("%s must be an int >= 0, got %r" % (what, value))
        token_values = tuple(token_values)
        if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in token_values):
            raise ValueError("token_values must be token ids (ints >= 0), got %r"
                             % (token_values,))
        if isinstance(flight_recorder_steps, bool) or not isinstance(flight_recorder_steps, int) \
                or flight_recorder_steps < 0:
            raise ValueError("flight_recorder_steps must be an int >= 0, got %r"
                             % (flight_recorder_steps,))
        self.model = model
        self.optimizer = optimizer
        self.run = run if run is not None else Run()
        self._owns_run = run is None  # closed with the hook
        self.collections = frozenset(collections)
        self.save_interval = save_interval
        self.initial_steps = initial_steps
        self.image_channel_axis = image_channel_axis
        self.token_values = token_values
        self.norm_interval = norm_interval
        self.report_steps = report_steps
        self.loss_metric = loss_metric
        self.current_step = 0  # the step in progress (0 first)
        patterns = [include_regex] if isinstance(include_regex, str) else list(include_regex or [])
        self._include = [re.compile(p) for p in patterns]
        self._handles = []
        self._closed = False
        self._dump_signal = None  # (signal, the handler before watch())
        self._original_step = None
        self._step_wrapper = None
        self._keys = {}
        self._rank = None      # (rank, world size) once torch.distributed is initialised
        self._parameters = [(name, p) for name, p in model.named_parameters()]
        # Parameters of lazy modules (nn.LazyLinear) have no values until the
        # first forward: measured from the first step that ends after it.
        self._lazy = sum(1 for _, p in self._parameters if is_lazy(p))  # how many are
        self._watch_gradients = "gradients" in self.collections
        self._norm_groups = None  # the weights' _NormGroups, one per device and dtype
        self._scratch = {}        # dtype -> the CPU work tensor of _fast_raw (_work)
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
            self._dump_signal = (dump_signal, signal.signal(
                dump_signal, lambda signo, frame: self.dump()))
        if self.run.active:
            self._install()
            self._norm_groups = self._new_norm_groups()

    def _new_norm_groups(self, moved=False):
        groups = {}
        with torch.no_grad():
            for name, p in self._parameters:
                if _parameter_kind(name) in self.collections and not is_lazy(p):
                    groups.setdefault((p.device, p.dtype), []).append((name, p))
            return [_NormGroup(pairs, moved) for pairs in groups.values()]

    # --- public ---------------------------------------------------------------------

    def record_loss(self, loss, name="loss"):
        """Records a loss of this step (a tensor or a number; with several calls
        in a step, as with gradient accumulation, their statistics are those of
        all the calls). Does not wait for the device. Ignored while the model is
        in eval mode (a validation loss through the same wrap_loss is no
        training loss) and after close()."""
        if self._closed or not self._recording():
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
        wrapped it since: then the wrapper stays and calls through. The
        dump_signal gets its handler from before watch() back, and the Run that
        watch() made (given no run=) is closed: what it holds is sent first."""
        for handle in self._handles:
            handle.remove()
        self._handles = []
        already = self._closed
        self._closed = True
        self._losses = {}
        if self._original_step is not None and \
                getattr(self.optimizer.step, "__func__", None) is self._step_wrapper:
            self.optimizer.step = self._original_step
        if self._dump_signal is not None:
            signo, before = self._dump_signal
            self._dump_signal = None
            try:
                signal.signal(signo, before if before is not None else signal.SIG_DFL)
            except ValueError:  # not the main thread: the handler stays, as harmless
                pass
        if self._owns_run and not already:
            self.run.close()

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
            if "inputs" in self.collections and self.token_values and \
                    isinstance(module, (nn.Embedding, nn.EmbeddingBag)):
                self._handles.append(module.register_forward_pre_hook(self._token_hook(name)))
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

    def _is_full(self, step):
        """Whether every statistic is computed at `step`."""
        return step % self.save_interval == 0 or step < self.initial_steps

    def _begin_step_state(self):
        self._full = self._is_full(self.current_step)
        self._norms = self.current_step % self.norm_interval == 0
        self._forward_start = None
        self._losses = {}
        self._captured = {}      # (tensor name, collection) -> (element count, _fast_raw vector)
        # (_merge_units: by the units' shape and device)
        self._alive = {}         # ReLU output name -> each unit's largest value in the step
        self._unsaturated = {}   # tanh/sigmoid input name -> units inside the bounds at least once
        self._channels = {}      # image input name -> (images, channel means on the device)
        self._tokens = {}        # embedding input name -> (elements, counts of token_values)

    def _recording(self):
        return self.model.training and self.run.active

    def _on_model_forward(self, module, inputs):
        if self._forward_start is None and self._recording():
            self._forward_start = time.perf_counter()
            self._device_timing.forward_started()

    def _work(self, x):
        """A tensor like flat x for _fast_raw to write into: on the CPU one kept
        per dtype, as large as the largest tensor measured (torch has no
        caching allocator there: a fresh one costs page faults at each use);
        elsewhere a new one (a GPU's caching allocator reuses its memory)."""
        n = x.numel()
        if x.device.type != "cpu":
            return torch.empty_like(x)
        work = self._scratch.get(x.dtype)
        if work is None or work.numel() < n:
            work = self._scratch[x.dtype] = torch.empty(n, dtype=x.dtype)
        return work[:n]

    def _capture(self, tensor, collection, x):
        """The statistics of an activation, input or output, taken when the
        forward passes it (it may be gone, or changed in place, by the end of
        the step): with the counts of non-finite elements, as it cannot be
        measured again."""
        x = _as_float(x)
        n = x.numel()
        if not n:
            self._captured[(tensor, collection)] = (0, None)
        elif CPU_READS and x.device.type == "cpu":
            self._captured[(tensor, collection)] = (n, _host_stats(x, self._work(x)))
        else:
            self._captured[(tensor, collection)] = (
                n, _fast_raw(x, self._work(x), count_non_finite=True))

    def _activation_input_hook(self, name, module):
        bounds = next((b for kind, b in SATURATION_BOUNDS if isinstance(module, kind)), None)

        def hook(module, inputs):
            if not (self._full and self._recording()) or not inputs or \
                    not isinstance(inputs[0], torch.Tensor):
                return
            x = inputs[0]
            tensor = name + ":input"
            with torch.no_grad():
                self._capture(tensor, "activations", x)
                if bounds is not None and x.numel():
                    units = _units(x)
                    inside = ((units > bounds[0]) & (units < bounds[1])).any(0)
                    _merge_units(self._unsaturated, tensor, inside, torch.logical_or)
        return hook

    def _activation_output_hook(self, name, module):
        dead_units = isinstance(module, DEAD_UNIT_MODULES)

        def hook(module, inputs, output):
            if not (self._full and self._recording()) or not isinstance(output, torch.Tensor):
                return
            tensor = name + ":output"
            with torch.no_grad():
                self._capture(tensor, "activations", output)
                if dead_units and output.numel():
                    # A unit is alive when its largest value over the batch is
                    # positive: one reduction, where (x > 0).any() makes a mask
                    # first (ten times the cost on the CPU). A unit with a NaN
                    # in the batch counts as dead (the maximum propagates NaN).
                    _merge_units(self._alive, tensor, _units(output).amax(0), torch.maximum)
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
                        self._capture(tensor, collection, x)
                        if collection == "inputs" and name == MODEL_NAME:  # the images fed
                            means = _channel_means(x, self.image_channel_axis)
                            if means is not None:
                                self._channels[tensor] = (x.shape[0], means)
        return hook

    def _token_hook(self, name):
        tensor = name + ":input"

        def hook(module, inputs):
            if not (self._full and self._recording()) or not inputs or \
                    not isinstance(inputs[0], torch.Tensor) or inputs[0].is_floating_point():
                return
            x = inputs[0]
            if x.numel():
                with torch.no_grad():
                    counts = torch.stack([(x == v).sum() for v in self.token_values])
                self._tokens[tensor] = (x.numel(), counts.double())
        return hook

    # --- the end of a step ------------------------------------------------------------
    #
    # Each part of the step's statistics is a block (kind, what, vector on the
    # device); the vectors are concatenated and fetched in one transfer, and
    # each block's values decoded into (tensor, collection, stat, value).

    def _end_step(self):
        boundary = time.perf_counter()
        self._device_timing.step_ended()
        blocks = []
        with torch.no_grad():
            self._parameter_blocks(blocks)
            self._activity_blocks(blocks)
            self._loss_blocks(blocks)
        if self._recorder is not None:
            self._recorder.record(self.current_step, self._parameters, self._losses)
        stats = []     # (tensor, collection, stat, value)
        if blocks:
            joined = _joined(blocks)
            remeasure = self._decode(blocks, [] if joined is None else _to_host(joined), stats)
            if remeasure:
                self._remeasure(remeasure, stats)
        rank, world = self._distributed()
        if self.report_steps and rank == 0:
            t_ms, points = self.run.stamp(self.current_step)
        else:
            t_ms, points = self.run.stamp(None)
        if world > 1:
            # Each rank's own step numbers: its statistics' times are its own,
            # which the job's step metric (rank 0's) does not number.
            points.append((self._rank_step_key(rank), t_ms, float(self.current_step)))
        urgent = self._points(points, stats, t_ms, rank if world > 1 else None)
        self._timing_points(points, boundary, t_ms, rank if world > 1 else None)
        # A NaN or an infinity goes out at once: ExplodingTensor may stop the job.
        self.run.put_points(points, urgent=urgent)
        self.current_step += 1
        self._begin_step_state()
        self._last_end = time.perf_counter()

    def _parameter_blocks(self, blocks):
        copy = self._is_full(self.current_step + 1)
        if self._lazy and self._norm_groups is not None:
            lazy = sum(1 for _, p in self._parameters if is_lazy(p))
            if lazy < self._lazy:  # some were made (a branch may run later)
                self._lazy = lazy
                self._norm_groups = self._new_norm_groups(moved=True)
        if self._norm_groups is not None and (self._norms or self._full or copy):
            if any(group.moved() for group in self._norm_groups):
                # Measured anew from here, grouped by their new devices.
                self._norm_groups = self._new_norm_groups(moved=True)
            gradients = {}  # (device, dtype) -> [(name, parameter)]: l2 between full steps
            if self._norms and not self._full and self._watch_gradients:
                for name, p in self._parameters:
                    grad = _gradient(p)
                    if grad is not None:
                        gradients.setdefault((grad.device, grad.dtype), []).append((name, p))
            for group in self._norm_groups:
                group.block(blocks, self._norms, self._full, copy, gradients.pop(group.key, ()))
            for pairs in gradients.values():  # of a device or dtype without watched weights
                vector = torch.stack(_norms([_gradient(p) for _, p in pairs]))
                blocks.append(("l2", pairs, vector))
        if not self._full:
            return
        for name, p in self._parameters:
            if self._lazy and is_lazy(p):
                continue
            kind = _parameter_kind(name)
            if kind in self.collections and p.numel():
                self._full_block(blocks, name, kind, p, False)
            grad = _gradient(p) if self._watch_gradients else None
            if grad is not None and grad.numel():
                self._full_block(blocks, name, "gradients", p, True)
                if self.current_step < self.initial_steps:
                    blocks.append(("quantiles", name, _quantiles(_as_float(grad))))

    def _full_block(self, blocks, name, collection, p, gradient):
        x = _as_float(_gradient(p) if gradient else p)
        if CPU_READS and x.device.type == "cpu":
            blocks.append(("host", (name, collection, x.numel(), _host_stats(x, self._work(x))),
                           None))
        else:
            # The count of what is measured: a sparse gradient's stored values.
            blocks.append(("fast", (name, collection, p, gradient, x.numel()),
                           _fast_raw(x, self._work(x))))

    def _activity_blocks(self, blocks):
        for (tensor, collection), (count, measured) in self._captured.items():
            device = isinstance(measured, torch.Tensor)
            blocks.append(("captured", (tensor, collection, count, measured),
                           measured if device else None))
        for stat, masks in (("dead_fraction", self._alive), ("saturated_fraction", self._unsaturated)):
            for tensor, by_shape in masks.items():
                counted = [units.sum(dtype=torch.float64) if stat == "saturated_fraction" else
                           (units > 0).sum(dtype=torch.float64) for units in by_shape.values()]
                device = counted[0].device
                active = counted[0] if len(counted) == 1 else \
                    torch.stack([c.to(device) for c in counted]).sum()
                units = sum(u.numel() for u in by_shape.values())
                blocks.append(("fraction", (tensor, stat, units), active.reshape(1)))
        for tensor, (images, means) in self._channels.items():
            blocks.append(("channels", (tensor, images), means))
        for tensor, (elements, counts) in self._tokens.items():
            blocks.append(("tokens", (tensor, elements), counts))

    def _loss_blocks(self, blocks):
        if "losses" not in self.collections and self.loss_metric is None:
            return
        for name, recorded in self._losses.items():
            losses = recorded[0] if len(recorded) == 1 else \
                torch.cat([r.to(recorded[0].device) for r in recorded])
            if losses.numel() <= RAW_LOSS_ELEMENTS:  # the values themselves: fewer operations
                blocks.append(("loss", name, losses))
            elif losses.numel():
                blocks.append(("loss_exact", (name, losses.numel()), _exact_raw(_as_float(losses))))

    def _decode(self, blocks, values, stats):
        """Appends the blocks' statistics to `stats`; returns the parameters
        and gradients to measure again, element by element: those whose values
        hold a NaN or an infinity."""
        remeasure = []
        offset = 0
        for kind, what, vector in blocks:
            size = 0 if vector is None else vector.numel()
            raw = values[offset:offset + size]
            offset += size
            if kind == "norms":
                group = what[0]
                group.decode(raw, *what[1:], stats, remeasure)
            elif kind == "l2":
                _decode_l2(what, raw, stats, remeasure)
            elif kind == "fast":
                name, collection, p, gradient, count = what
                decoded, finite = _decode_fast(raw, count)
                if finite:
                    _append_stats(stats, name, collection, DEVICE_STATS, decoded, count)
                else:
                    remeasure.append((name, collection, p, gradient))
            elif kind == "host":
                name, collection, count, decoded = what
                _append_stats(stats, name, collection, DEVICE_STATS, decoded, count)
            elif kind == "captured":
                tensor, collection, count, measured = what
                if isinstance(measured, tuple):  # _host_stats
                    _append_stats(stats, tensor, collection, DEVICE_STATS, measured, count)
                elif size:
                    decoded, _ = _decode_fast(raw, count)
                    _append_stats(stats, tensor, collection, DEVICE_STATS, decoded, count)
                else:
                    stats.append((tensor, collection, "count", 0.0))
            elif kind == "fraction":
                tensor, stat, units = what
                if units:
                    stats.append((tensor, "activations", stat, 1.0 - raw[0] / units))
            elif kind == "quantiles":
                stats.append((what, "gradients", "p5", raw[0]))
                stats.append((what, "gradients", "p95", raw[1]))
            elif kind == "channels":
                tensor, images = what
                stats.append((tensor, "inputs", "samples", float(images)))
                stats.extend((tensor, "inputs", ("channel_mean", "Channel", str(c)), mean)
                             for c, mean in enumerate(raw))
            elif kind == "tokens":
                tensor, elements = what
                stats.append((tensor, "inputs", "count", float(elements)))
                stats.extend((tensor, "inputs", ("token_fraction", "Token", str(v)), n / elements)
                             for v, n in zip(self.token_values, raw))
            elif kind == "loss":
                _append_stats(stats, what, "losses", LOSS_STATS, _loss_stats(raw), len(raw))
            else:  # loss_exact
                name, count = what
                every = dict(zip(DEVICE_STATS, _decode_exact(raw, count)))
                _append_stats(stats, name, "losses", LOSS_STATS,
                              [every[stat] for stat in LOSS_STATS], count)
        return remeasure

    def _remeasure(self, remeasure, stats):
        """Every statistic of the parameters and gradients that hold a NaN or
        an infinity (a second transfer, only then), so that ExplodingTensor
        sees their counts at this step, also between full steps."""
        seen = set()
        blocks = []
        for name, collection, p, gradient in remeasure:
            tensor = _gradient(p) if gradient else p
            if (name, collection) in seen or tensor is None or not tensor.numel():
                continue
            seen.add((name, collection))
            x = _as_float(tensor)
            blocks.append(((name, collection, x.numel()), _exact_raw(x, self._work(x))))
        if not blocks:
            return
        values = _to_host(_joined([(None, None, vector) for _, vector in blocks]))
        offset = 0
        for (name, collection, count), vector in blocks:
            raw = values[offset:offset + vector.numel()]
            offset += vector.numel()
            _append_stats(stats, name, collection, DEVICE_STATS, _decode_exact(raw, count), count)

    def _points(self, points, stats, t_ms, rank):
        """Appends the step's points: each finite statistic of a collection
        being recorded. True when one counts a NaN or an infinity."""
        urgent = False
        collections = self.collections
        key = self._key
        for tensor, collection, stat, value in stats:
            if stat in NON_FINITE_STATS and value > 0:
                urgent = True
            if collection == "losses" and stat == "mean" and self.loss_metric:
                points.append(self.run.metric_point(self.loss_metric, value, t_ms))
            if collection in collections and math.isfinite(value):
                points.append((key(tensor, collection, stat, rank), t_ms, value))
        return urgent

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
            if isinstance(stat, tuple):  # a statistic of one part: (stat, dimension, part)
                stat, part_dim, part = stat
                dims[part_dim] = part
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
            if is_lazy(p):
                continue
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
          save_interval=SAVE_INTERVAL, norm_interval=1, report_steps=True, loss_metric=None,
          flight_recorder_steps=0, flight_recorder_regex=None, dump_signal=None,
          initial_steps=INITIAL_STEPS, image_channel_axis=1, token_values=TOKEN_VALUES):
    """Watches `model`: per step, statistics of its tensors go to the job
    (trainwatch/Tensors, one series per tensor and statistic). Returns the Hook.

    optimizer       each optimizer.step() ends a step; without one, call
                    hook.step() after each step.
    run             the trainwatch.Run to send with (default: a new Run()).
    collections     of gradients, weights, biases, losses, activations, inputs,
                    outputs (default all).
    include_regex   module paths (regex, or a list) whose inputs and outputs
                    are recorded; default the model's own.
    save_interval   every how many steps every statistic, and the weights'
                    update_norm/update_ratio, are computed (default 20; step 0
                    first).
    initial_steps   every statistic at each of the first N steps too, with the
                    gradients' p5 and p95 (default 10: PoorWeightInitialization).
    image_channel_axis
                    the channel axis of the model's 4-D image input, whose
                    per-channel means CheckInputImages reads (default 1,
                    [N, C, H, W]; 3 only for a tensor whose shape is
                    [N, H, W, C]: torch.channels_last keeps [N, C, H, W]).
    token_values    token ids whose share of the inputs of embedding layers is
                    sent (default (0,), the usual padding id; NLPSequenceRatio).
    norm_interval   every how many steps the weights' norm and the gradients'
                    l2 are (default 1: every step).
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
                flight_recorder_regex=flight_recorder_regex, dump_signal=dump_signal,
                initial_steps=initial_steps, image_channel_axis=image_channel_axis,
                token_values=token_values)
