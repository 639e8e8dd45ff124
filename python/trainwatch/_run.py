"""trainwatch.Run: a job's metrics, sent in the background."""

import atexit
import collections
import math
import numbers
import os
import threading
import time
import weakref

from . import _env, _http, _sender

TRAINING_JOBS = "/aws/sagemaker/TrainingJobs"
JOB_EVENTS = "trainwatch/JobEvents"
TENSORS = "trainwatch/Tensors"
NON_FINITE = "NonFiniteMetricValues"
PREDICTIONS = "trainwatch/Predictions"
DROPPED_METRIC = "trainwatch:client_dropped"
_MAX_NAME_BYTES = 255
_MAX_CACHED_NAMES = 10_000


def now_ms():
    return time.time_ns() // 1_000_000


def check_name(name, what="name"):
    if not isinstance(name, str):
        raise TypeError("%s must be a str, got %s" % (what, type(name).__name__))
    size = len(name) if name.isascii() else len(name.encode("utf-8"))
    if not 1 <= size <= _MAX_NAME_BYTES:
        raise ValueError("%s must be 1 to 255 bytes (UTF-8), got %d: %r"
                         % (what, size, name[:60]))
    return name


def as_number(value, what="value"):
    """`value` as a float: an int or float, a numpy scalar, or a one-element
    array or tensor (its .item()). TypeError for anything else (bool, str,
    complex, None, a larger array), ValueError for an int too large for a float."""
    kind = type(value)
    if kind is float:
        return value
    if kind is not bool and isinstance(value, numbers.Real):
        try:
            return float(value)
        except OverflowError:
            raise ValueError("%s=%r is too large for a float" % (what, value)) from None
    item = getattr(value, "item", None)
    if callable(item) and not isinstance(value, (bool, str, bytes)):
        try:
            scalar = item()
        except (ValueError, RuntimeError, TypeError):
            scalar = None
        if scalar is not None and not isinstance(scalar, (bool, complex)) and \
                isinstance(scalar, numbers.Real):
            return as_number(scalar, what)
    raise TypeError("%s must be a real number (int, float, a numpy scalar or a one-element "
                    "tensor), got %s" % (what, _describe_value(value)))


def _describe_value(value):
    text = repr(value)
    return "%s %s" % (type(value).__name__, text if len(text) <= 60 else text[:57] + "...")


def check_step(step, what="step"):
    if step is None:
        return None
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        raise TypeError("%s must be an int (or None), got %s" % (what, _describe_value(step)))
    step = int(step)
    if step < 0:
        raise ValueError("%s must be >= 0, got %d" % (what, step))
    return step


def non_finite_label(value):
    if value != value:
        return "NaN"
    return "+Inf" if value > 0 else "-Inf"


def _classes(values, what):
    """Class numbers from a sequence of ints, or of score rows (argmax)."""
    if hasattr(values, "tolist"):  # numpy arrays, torch tensors
        values = values.tolist()
    if not isinstance(values, (list, tuple)):
        raise TypeError("%s must be a sequence of class numbers (or of score rows), got %s"
                        % (what, type(values).__name__))
    out = []
    for i, v in enumerate(values):
        if isinstance(v, (list, tuple)):
            if not v:
                raise ValueError("%s[%d] is an empty row of scores" % (what, i))
            v = max(range(len(v)), key=v.__getitem__)
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
            raise ValueError("%s[%d] = %r: want a class number (an int >= 0) or a row of scores"
                             % (what, i, v))
        out.append(int(v))
    return out


def _flatten(data, prefix=""):
    flat = {}
    for name, value in data.items():
        if not isinstance(name, str):
            raise TypeError("metric names must be str, got %s" % type(name).__name__)
        if isinstance(value, dict):
            flat.update(_flatten(value, prefix + name + "/"))
        else:
            flat[prefix + name] = value
    return flat


class Run:
    """The metrics of one training job.

    Inside `trainwatch run` it sends to the run's own endpoint; elsewhere to
    the server of TRAINWATCH_ENDPOINT (or `endpoint`) for the job `job` (or
    TRAINWATCH_JOB). Outside any job it starts nothing, says so once on stderr,
    and every call does nothing but check its arguments.

    Sending never waits for the network: points go into a queue of at most
    `max_queue` points, and a background thread sends them in batches of up to
    `batch_size` points, at least every `batch_interval` seconds. At exit the
    queue is flushed for at most `exit_timeout` seconds.
    """

    def __init__(self, job=None, endpoint=None, *, max_queue=100_000, batch_size=2_000,
                 batch_interval=0.2, exit_timeout=5.0):
        if max_queue < 1 or batch_size < 1 or batch_interval <= 0 or exit_timeout < 0:
            raise ValueError("max_queue and batch_size must be >= 1, batch_interval > 0 and "
                             "exit_timeout >= 0")
        destination, why = _env.find_destination(job, endpoint)
        self._destination = destination
        self._options = (max_queue, batch_size, batch_interval)
        self.exit_timeout = exit_timeout
        self._sender = None
        self._dropped_before_close = 0
        self._sent_before_close = (0, 0)
        self._closed = False
        self._lock = threading.Lock()
        self._wandb_step = 0
        self._last_step = None
        self._last_step_t_ms = 0
        self._step_lock = threading.Lock()
        if destination is None:
            self.job = None
            self.step_metric = None
            _env.say_once("inactive", "%s: metrics are not sent" % why)
            return
        self.job = destination.job
        self.step_metric = destination.step_metric
        self._job_dims = (("TrainingJobName", self.job),)
        self._metric_keys = {}
        self._non_finite_keys = {}
        self._step_key = self.metric_key(self.step_metric)
        self._sender = self._new_sender()
        atexit.register(self._at_exit)
        this = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: this() and this()._after_fork())

    def __repr__(self):
        if self._destination is None:
            return "<trainwatch.Run (inactive)>"
        return "<trainwatch.Run job=%r to %s%s>" % (
            self.job, self._destination.url, " (closed)" if self._closed else "")

    @property
    def active(self):
        """True while the run sends (inside a job, not closed)."""
        return self._destination is not None and not self._closed

    @property
    def url(self):
        return self._destination.url if self._destination else None

    # --- metrics ------------------------------------------------------------------

    def log_metric(self, name, value, step=None):
        """Records `name` = `value` (at `step`, when given), timed now."""
        check_name(name)
        value = as_number(value)
        step = check_step(step)
        sender = self._live_sender()
        if sender is None:
            return
        t_ms, points = self._stamp(step)
        points.append(self._metric_point(name, value, t_ms))
        sender.put_many(points, urgent=not math.isfinite(value))

    def log_metrics(self, metrics, step=None, _t_ms=None):
        """Records each name -> value of `metrics`, all at one time (and `step`).
        Nothing is recorded when any of them is invalid."""
        if not hasattr(metrics, "items"):
            raise TypeError("metrics must be a dict of name -> number, got %s"
                            % type(metrics).__name__)
        checked = [(check_name(name, "metric name"), as_number(value, "metrics[%r]" % (name,)))
                   for name, value in metrics.items()]
        step = check_step(step)
        sender = self._live_sender()
        if sender is None:
            return
        t_ms, points = self._stamp(step, _t_ms)
        points.extend(self._metric_point(name, value, t_ms) for name, value in checked)
        sender.put_many(points, urgent=not all(math.isfinite(v) for _, v in checked))

    def log_predictions(self, labels, predictions, step=None):
        """Records a classifier's predictions for one step: `labels` the true
        classes, `predictions` the predicted ones (class numbers from 0), or
        rows of scores whose largest is taken (argmax). Lists, tuples, numpy
        arrays or torch tensors. Sent as counts per (true, predicted) pair,
        which ClassImbalance and Confusion read (docs/rules.md)."""
        true = _classes(labels, "labels")
        predicted = _classes(predictions, "predictions")
        if len(true) != len(predicted):
            raise ValueError("labels and predictions must be as long: %d labels, %d predictions"
                             % (len(true), len(predicted)))
        sender = self._live_sender()
        if sender is None:
            return
        t_ms, points = self._stamp(step)
        for (label, guess), n in sorted(collections.Counter(zip(true, predicted)).items()):
            key = self.series_key(PREDICTIONS, "Count",
                                  {"Label": str(label), "Predicted": str(guess)}, "Count")
            points.append((key, t_ms, float(n)))
        sender.put_many(points)

    def flush(self, timeout=None):
        """Waits until everything recorded so far is delivered (or dropped), at
        most `timeout` seconds. True when it all went."""
        sender = self._sender
        if sender is None or self._closed:
            return True
        return sender.flush(timeout)

    def close(self, timeout=None):
        """Delivers what is queued (at most `timeout` seconds, default
        exit_timeout) and stops the sender. Later calls send nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            sender, self._sender = self._sender, None
        if sender is not None:
            sender.close(self.exit_timeout if timeout is None else timeout)
            self._dropped_before_close = sender.dropped
            self._sent_before_close = (sender.bytes_sent, sender.requests_sent)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def dropped(self):
        """Points dropped so far because the queue was full."""
        sender = self._sender
        return sender.dropped if sender is not None else self._dropped_before_close

    @property
    def bytes_sent(self):
        """Bytes of the request bodies the endpoint accepted so far (what the
        metrics cost on the wire, before HTTP's headers)."""
        sender = self._sender
        return sender.bytes_sent if sender is not None else self._sent_before_close[0]

    @property
    def requests_sent(self):
        """Requests the endpoint accepted so far."""
        sender = self._sender
        return sender.requests_sent if sender is not None else self._sent_before_close[1]

    # --- Weights & Biases' shape (trainwatch.init / trainwatch.log) ---------------

    def log(self, data, step=None, commit=None):
        """Records a dict of metrics as wandb.log does: nested dicts become
        "outer/inner" names; without `step`, the step is the run's own counter,
        which goes up by one after each call (unless commit=False)."""
        if not hasattr(data, "items"):
            raise TypeError("data must be a dict of name -> number, got %s" % type(data).__name__)
        step = check_step(step)
        if step is None:
            step = self._wandb_step
        self.log_metrics(_flatten(data), step=step)
        if commit is not False:
            self._wandb_step = step + 1

    def finish(self, exit_code=None, quiet=None):
        """wandb.finish(): delivers what is queued and closes the run."""
        self.close()

    # --- for the aliases and the hook ----------------------------------------------

    def metric_key(self, name):
        key = self._metric_keys.get(name)
        if key is None:
            key = (TRAINING_JOBS, name, self._job_dims, "None")
            if len(self._metric_keys) < _MAX_CACHED_NAMES:
                self._metric_keys[name] = key
        return key

    def series_key(self, namespace, metric, dimensions, unit="None"):
        """A series of this job: `dimensions` (name -> value) and TrainingJobName."""
        return (namespace, metric, tuple(sorted(dict(dimensions, TrainingJobName=self.job).items())),
                unit)

    def put_points(self, points, urgent=False):
        """Queues (series key, t_ms, value) points as they are (finite values
        only); `urgent` sends them at once (a NaN the rules should see now)."""
        sender = self._live_sender()
        if sender is not None:
            sender.put_many(points, urgent=urgent)

    def metric_point(self, name, value, t_ms):
        """The point of metric `name` = `value` (a float), or of its
        NonFiniteMetricValues event when it is not finite."""
        return self._metric_point(name, value, t_ms)

    def stamp(self, step):
        """(t_ms, points) for what happens now at `step` (None: no step): the
        time to give it, and the step metric's point when the step changed."""
        return self._stamp(step)

    # --- internals ----------------------------------------------------------------

    def _live_sender(self):
        """The sender, or None when the run is inactive or closed."""
        sender = self._sender
        if sender is not None:
            return sender
        if self._destination is None:
            return None
        if self._closed:
            _env.say_once(("closed", id(self)), "the run of job %r is closed: later metrics are "
                          "not sent" % (self.job,))
            return None
        with self._lock:  # in a child process forked after the run started
            if self._sender is None and not self._closed:
                self._sender = self._new_sender()
            return self._sender

    def _stamp(self, step, t_ms=None):
        # A step's time is strictly after the previous step's, and what is
        # recorded later is never before the current step's time: the steps
        # of a loop faster than one a millisecond stay apart when a reader
        # aligns samples with steps by time ("the step last reported at or
        # before"). A time the caller gives (t_ms) is kept as it is.
        given = t_ms is not None
        with self._step_lock:
            last_t = self._last_step_t_ms
            if not given:
                t_ms = max(now_ms(), last_t)
            if step is None or step == self._last_step:
                return t_ms, []
            if not given and t_ms <= last_t:
                t_ms = last_t + 1
            self._last_step = step
            self._last_step_t_ms = t_ms
        return t_ms, [(self._step_key, t_ms, float(step))]

    def _metric_point(self, name, value, t_ms):
        if math.isfinite(value):
            return (self.metric_key(name), t_ms, value)
        label = non_finite_label(value)
        key = self._non_finite_keys.get((name, label))
        if key is None:
            key = (JOB_EVENTS, NON_FINITE,
                   (("MetricName", name), ("TrainingJobName", self.job), ("Value", label)),
                   "Count")
            self._non_finite_keys[(name, label)] = key
        return (key, t_ms, 1.0)

    def _new_sender(self):
        d = self._destination
        connection = _http.Connection(d.url, d.credentials, d.region)
        describe = ("the runner of job %r" if d.is_runner else "the server for job %r") % d.job
        describe += " (%s)" % d.url
        max_queue, batch_size, interval = self._options
        return _sender.Sender(connection, self.metric_key(DROPPED_METRIC), max_queue, batch_size,
                              interval, describe)

    def _after_fork(self):
        # The parent's sender thread is not in the child, and its locks may
        # have been held when it forked: the child starts afresh on first use.
        self._sender = None
        self._lock = threading.Lock()
        self._step_lock = threading.Lock()

    def _at_exit(self):
        self.close(self.exit_timeout)
