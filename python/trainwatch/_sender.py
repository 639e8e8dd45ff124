"""The background sender: a bounded queue of points, drained by one daemon
thread into POST /api/v1/samples batches.

A point is (series key, t_ms, value); a series key is
(namespace, metric, dimensions as a tuple of (name, value) pairs, unit).

put_many() never waits for the network: it appends under a lock held for a few
operations; when the queue is full the OLDEST point is dropped and counted.
The thread sends a batch when `batch_size` points are waiting or every
`interval` seconds, retries 503s, other 5xx and connection errors with a
bounded backoff without reordering, and drops a batch the endpoint refuses
(4xx: resending cannot help), saying so once on stderr.
"""

import collections
import http.client
import json
import threading
import time

from . import _env, _http

SAMPLES_PATH = "/api/v1/samples"
MAX_BACKOFF_S = 2.0
DROP_REPORT_EVERY_S = 10.0
_TAKE_CHUNK = 512  # points moved out of the queue per hold of the lock


def _now_ms():
    return time.time_ns() // 1_000_000


_SERIES_HEADS = {}           # series key -> its JSON up to the opening of "t_ms"
_MAX_SERIES_HEADS = 100_000


def _series_head(key):
    head = _SERIES_HEADS.get(key)
    if head is None:
        head = json.dumps({"namespace": key[0], "metric": key[1], "dimensions": dict(key[2]),
                           "unit": key[3]}, separators=(",", ":"))[:-1] + ',"t_ms":['
        if len(_SERIES_HEADS) >= _MAX_SERIES_HEADS:
            _SERIES_HEADS.clear()
        _SERIES_HEADS[key] = head
    return head


def encode_batch(points):
    """The JSON body for `points`: one series per key, in order of first
    appearance, samples in the order given. Each series' head (namespace,
    metric, dimensions, unit) is encoded once per process and kept; the
    columns are joined as text (json.dumps writes floats with repr too)."""
    series = {}
    for key, t_ms, value in points:
        columns = series.get(key)
        if columns is None:
            columns = series[key] = ([], [])
        columns[0].append(t_ms)
        columns[1].append(value)
    parts = []
    for key, (t_ms, values) in series.items():
        text = ",".join(map(repr, values))
        if "n" in text:  # nan or inf: not JSON (the callers send finite values only)
            raise ValueError("a non-finite value in series %r: %s" % (key, text[:80]))
        parts.append("%s%s],\"values\":[%s]}" % (_series_head(key), ",".join(map(str, t_ms)), text))
    return ('{"series":[%s]}' % ",".join(parts)).encode("utf-8")


class Sender:
    def __init__(self, connection, dropped_key, max_queue=100_000, batch_size=2_000,
                 interval=0.2, describe="the endpoint"):
        if max_queue < 1 or batch_size < 1 or interval <= 0:
            raise ValueError("max_queue and batch_size must be >= 1 and interval > 0")
        self._connection = connection
        self._dropped_key = dropped_key  # the series of the cumulative drop count
        self._max_queue = max_queue
        self._batch_size = batch_size
        self._interval = interval
        self._describe = describe
        self._lock = threading.Lock()
        self._queue = collections.deque()
        self._wake = threading.Event()
        self._progress = threading.Condition(threading.Lock())
        self._closing = threading.Event()
        self._queued = 0      # points ever put
        self._done = 0        # points delivered, refused, dropped or given up
        self.dropped = 0      # points dropped because the queue was full
        self._dropped_sent = 0
        self._dropped_said = 0
        self._dropped_said_at = float("-inf")
        self.refused = 0      # points in batches the endpoint refused (4xx)
        self.given_up = 0     # points not delivered before the close deadline
        self.bytes_sent = 0   # request bodies the endpoint accepted (2xx), in bytes
        self.requests_sent = 0
        self._deadline = None
        self._unreachable = False
        self._thread = threading.Thread(target=self._loop, name="trainwatch-sender", daemon=True)
        self._thread.start()

    # --- the training loop's side -------------------------------------------------

    def put_many(self, points, urgent=False):
        """Queues the points; `urgent` (a NaN or infinity the rules should see
        now) sends at once instead of at the next interval."""
        with self._lock:
            queue = self._queue
            for point in points:
                if len(queue) >= self._max_queue:
                    queue.popleft()
                    self.dropped += 1
                queue.append(point)
            self._queued += len(points)
            waiting = len(queue)
        if urgent or waiting >= self._batch_size:
            self._wake.set()

    def flush(self, timeout=None):
        """Waits until every point put before the call is delivered (or dropped);
        False when `timeout` seconds passed first."""
        with self._lock:
            target = self._queued
        self._wake.set()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._progress:
            while self._done + self.dropped < target and self._thread.is_alive():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._progress.wait(0.05 if left is None else min(left, 0.05))
        return self._done + self.dropped >= target

    def close(self, timeout):
        """Sends what is queued, for at most `timeout` seconds, then stops the
        thread. Returns the number of points that were not delivered."""
        self._deadline = time.monotonic() + timeout
        self._closing.set()
        self._wake.set()
        self._thread.join(timeout + 0.5)
        if self._thread.is_alive():  # waiting for an answer past the deadline
            with self._lock:
                left = self._queued - self._done - self.dropped
            _env.say("%d points were not delivered to %s before the exit deadline (it did not "
                     "answer)" % (left, self._describe))
            return left
        self._connection.close()
        return self.given_up

    # --- the thread -----------------------------------------------------------------

    def _take(self, limit):
        batch = []
        while len(batch) < limit:
            with self._lock:
                queue = self._queue
                for _ in range(min(_TAKE_CHUNK, limit - len(batch), len(queue))):
                    batch.append(queue.popleft())
                empty = not queue
            if empty:
                break
        return batch

    def _loop(self):
        while True:
            if not self._closing.is_set():
                self._wake.wait(self._interval)
            self._wake.clear()
            while True:
                batch = self._take(self._batch_size)
                report = self._drop_report()
                if not batch and report is None:
                    break
                self._deliver(batch + ([report] if report else []), len(batch))
                if self._closing.is_set() and time.monotonic() >= self._deadline:
                    self._give_up_rest()
                    return
            if self._closing.is_set():
                self._say_drops(final=True)
                return

    def _drop_report(self):
        dropped = self.dropped
        if dropped == self._dropped_sent:
            return None
        self._dropped_sent = dropped
        self._say_drops(final=False)
        return (self._dropped_key, _now_ms(), float(dropped))

    def _say_drops(self, final):
        dropped = self.dropped
        now = time.monotonic()
        if dropped == self._dropped_said or \
                (not final and now - self._dropped_said_at < DROP_REPORT_EVERY_S):
            return
        self._dropped_said, self._dropped_said_at = dropped, now
        _env.say("dropped %d statistics (queue full) so far: %s takes them more slowly than the "
                 "job makes them; the oldest waiting ones go first (Run(max_queue=...) keeps "
                 "more)" % (dropped, self._describe))

    def _finish(self, count):
        with self._progress:
            self._done += count
            self._progress.notify_all()

    def _give_up_rest(self):
        with self._lock:
            rest = len(self._queue)
            self._queue.clear()
        self._finish(rest)
        self.given_up += rest
        self._say_drops(final=True)
        if self.given_up:
            _env.say("%d points were not delivered to %s before the exit deadline"
                     % (self.given_up, self._describe))

    def _deliver(self, points, counted):
        body = encode_batch(points)
        backoff = 0.05
        while True:
            try:
                status, answer = self._connection.request(
                    "POST", SAMPLES_PATH, body=body, content_type="application/json")
                error = None
            except (OSError, http.client.HTTPException) as e:
                status, answer, error = None, b"", e
            if status is not None and 200 <= status < 300:
                self.bytes_sent += len(body)
                self.requests_sent += 1
                if self._unreachable:
                    self._unreachable = False
                    _env.say("%s answers again" % self._describe)
                self._finish(counted)
                return
            if status is not None and 400 <= status < 500 and status != 429:
                self.refused += counted
                _env.say_once(("refused", status),
                              "%s refused a batch of %d points (HTTP %d, %s); it is dropped "
                              "(later refusals with this status are not shown)"
                              % (self._describe, len(points), status,
                                 _http.error_message(answer)))
                self._finish(counted)
                return
            if not self._unreachable:
                self._unreachable = True
                why = "HTTP %d, %s" % (status, _http.error_message(answer)) if error is None \
                    else "%s: %s" % (type(error).__name__, error)
                _env.say("cannot deliver to %s (%s); retrying" % (self._describe, why))
            if self._closing.is_set():
                left = self._deadline - time.monotonic()
                if left <= 0:
                    self.given_up += counted
                    self._finish(counted)
                    return
                time.sleep(min(backoff, left))
            else:
                self._closing.wait(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)
