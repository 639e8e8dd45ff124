"""trainwatch.Trial: a job's metrics, steps, tensor statistics and rule
results, read back from a `trainwatch server` (the native API, docs/api.md),
in the spirit of smdebug's trials.

    trial = trainwatch.Trial("mnist-7")          # or Trial("mnist-7", data="runs/")
    trial.metric("train:loss").by_step()         # {step: value}
    trial.tensor("fc1.weight", "gradients").values("abs_mean")
"""

import bisect
import json
import os
import re
import shutil
import subprocess
import time

from . import _env, _http, _sigv4
from ._run import TENSORS, TRAINING_JOBS

# The step metric when the job record names none (as the server guesses it).
STEP_METRIC_GUESSES = ("step", "train:step", "global_step")


class TensorUnavailableForStep(KeyError):
    """A tensor has no value of that statistic at that step."""


def _pandas():
    try:
        import pandas
    except ImportError:
        raise ImportError("to_pandas() needs pandas (Debian: python3-pandas, or pip install "
                          "pandas)") from None
    return pandas


class _StepIndex:
    """The step current at a time: the step metric's last value at or before it."""

    def __init__(self, t_ms=(), values=()):
        order = sorted(range(len(t_ms)), key=lambda i: t_ms[i])
        self._t_ms = [t_ms[i] for i in order]
        self._steps = [int(values[i]) for i in order]

    def __bool__(self):
        return bool(self._t_ms)

    def at(self, t_ms):
        i = bisect.bisect_right(self._t_ms, t_ms) - 1
        return self._steps[i] if i >= 0 else None

    def steps(self):
        return sorted(set(self._steps))


class Series:
    """One metric's samples in time order: `t_ms`, `values`, and `steps` (the
    job's step at each sample's time; None before the first step or in a job
    without a step metric)."""

    def __init__(self, name, dimensions, unit, t_ms, values, steps):
        self.name = name
        self.dimensions = dimensions
        self.unit = unit
        self.t_ms = t_ms
        self.values = values
        self.steps = steps

    @property
    def x_kind(self):
        """"step" when the samples have steps, else "time"."""
        return "step" if any(s is not None for s in self.steps) else "time"

    def points(self):
        """[(step, value)] (samples before the first step left out), or
        [(t_ms, value)] in a job without steps."""
        if self.x_kind == "time":
            return list(zip(self.t_ms, self.values))
        return [(s, v) for s, v in zip(self.steps, self.values) if s is not None]

    def __iter__(self):
        return iter(self.points())

    def __len__(self):
        return len(self.values)

    def __repr__(self):
        return "<Series %s: %d samples>" % (self.name, len(self.values))

    def by_step(self):
        """{step: the last value at that step}."""
        return {s: v for s, v in zip(self.steps, self.values) if s is not None}

    def to_pandas(self):
        """A DataFrame with columns t_ms, step, value."""
        pandas = _pandas()
        return pandas.DataFrame({"t_ms": self.t_ms, "step": pandas.array(self.steps, "Int64"),
                                 "value": self.values})


# Dimensions of a statistic of one part of a tensor (the hook's channel_mean of
# an image input's channel, token_fraction of one token id).
PART_DIMS = {"channel_mean": "Channel", "token_fraction": "Token"}


class Tensor:
    """The statistics of one tensor (trainwatch.torch's hook), by step."""

    def __init__(self, trial, name, collection, rank):
        self._trial = trial
        self.name = name
        self.collection = collection
        self.rank = rank

    def __repr__(self):
        return "<Tensor %s (%s%s)>" % (self.name, self.collection,
                                       "" if self.rank is None else ", rank %s" % self.rank)

    def _dimensions(self):
        dims = {"Tensor": self.name, "Collection": self.collection,
                "TrainingJobName": self._trial.job}
        if self.rank is not None:
            dims["Rank"] = self.rank
        return dims

    def _of_tensor(self, s):
        """Whether series `s` is a statistic of this tensor (of any part)."""
        dims = s["dimensions"]
        part = PART_DIMS.get(s["metric"])
        if part is not None:
            dims = {k: v for k, v in dims.items() if k != part}
        return s["namespace"] == TENSORS and dims == self._dimensions()

    def stats(self):
        """The statistics stored for this tensor (mean, l2, norm, dead_fraction...)."""
        return sorted({s["metric"] for s in self._trial._series_list() if self._of_tensor(s)})

    def parts(self, stat):
        """The channels (channel_mean) or token ids (token_fraction) the statistic
        was stored for, as ints."""
        part = PART_DIMS.get(stat)
        if part is None:
            raise ValueError("%s is not a statistic of parts; those are %s"
                             % (stat, ", ".join(sorted(PART_DIMS))))
        return sorted(int(s["dimensions"][part]) for s in self._trial._series_list()
                      if s["metric"] == stat and self._of_tensor(s))

    def series(self, stat="mean", part=None):
        dims = self._dimensions()
        if stat in PART_DIMS:
            if part is None:
                raise ValueError("%s is stored per %s: pass part= (one of %s)"
                                 % (stat, PART_DIMS[stat].lower(), self.parts(stat)))
            dims[PART_DIMS[stat]] = str(part)
        for s in self._trial._samples(TENSORS, stat):
            if s["dimensions"] == dims:
                return self._trial._as_series(s, self.rank)
        return self._trial._as_series({"metric": stat, "dimensions": dims, "unit": "None",
                                       "t_ms": [], "values": []})

    def values(self, stat="mean", part=None):
        """{step: value} of one statistic; `part`: the channel or token id of
        channel_mean and token_fraction."""
        return self.series(stat, part).by_step()

    def steps(self):
        """The steps at which any statistic of the tensor was stored."""
        steps = set()
        for stat in self.stats():
            for part in self.parts(stat) if stat in PART_DIMS else (None,):
                steps.update(self.values(stat, part))
        return sorted(steps)

    def reduction_value(self, step, stat="mean"):
        """One statistic at one step (smdebug's name); TensorUnavailableForStep
        when it was not stored then (not a save step, or not finite)."""
        values = self.values(stat)
        if step not in values:
            raise TensorUnavailableForStep("%s (%s) has no %s at step %s"
                                           % (self.name, self.collection, stat, step))
        return values[step]

    def to_pandas(self):
        """A DataFrame indexed by step, one column per statistic."""
        pandas = _pandas()
        columns = {}
        for stat in self.stats():  # a statistic of parts: a column per part, "channel_mean[0]"
            for part in self.parts(stat) if stat in PART_DIMS else (None,):
                name = stat if part is None else "%s[%d]" % (stat, part)
                columns[name] = pandas.Series(self.values(stat, part), dtype="float64")
        return pandas.DataFrame(columns).sort_index().rename_axis("step")


def _start_server(data):
    """A `trainwatch server` on the data folder `data`, on a free loopback
    port: (process, its URL). A folder a run still writes is served read-only."""
    if not os.path.isdir(data):
        raise FileNotFoundError("data: no folder %r (the data folder a run wrote: --data, "
                                "$TRAINWATCH_DATA, ~/.local/share/trainwatch)" % (data,))
    program = os.environ.get("TRAINWATCH_BIN") or shutil.which("trainwatch")
    if not program:
        raise FileNotFoundError("Trial(data=...) starts `trainwatch server` on the folder, but no "
                                "trainwatch program is on PATH: set TRAINWATCH_BIN to it")
    process = subprocess.Popen([program, "server", "--data", data, "--listen", "127.0.0.1:0"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    # "trainwatch: serving http://127.0.0.1:PORT (data ...); Ctrl-C stops"
    line = process.stdout.readline()
    match = re.search(r"serving (http://\S+)", line)
    if not match:
        process.kill()
        error = process.stderr.read().strip()
        raise RuntimeError("trainwatch server on %r did not start: %s"
                           % (data, error or line.strip() or "no output"))
    return process, match.group(1)


class Trial:
    """A job's data, read from a `trainwatch server` (`endpoint`, else
    TRAINWATCH_ENDPOINT, else http://127.0.0.1:9400), or from a data folder
    (`data`: a `trainwatch server` of its own is started on it, on loopback,
    and stopped by close(); the `trainwatch` program is TRAINWATCH_BIN or the
    one on PATH). Requests are SigV4-signed when AWS credentials are in the
    environment.

    Answers are kept: call refresh() to see what a running job added since."""

    def __init__(self, job, endpoint=None, data=None):
        if not isinstance(job, str) or not job:
            raise ValueError("job must be a non-empty str, got %r" % (job,))
        if endpoint and data:
            raise ValueError("give endpoint or data, not both")
        self.job = job
        self._server = None
        if data:
            self._server, endpoint = _start_server(data)
        self.endpoint = _env.server_url(endpoint)
        credentials = _sigv4.Credentials.from_environment()
        self._connection = _http.Connection(
            self.endpoint, credentials, _sigv4.region_from_environment() if credentials else None,
            timeout=60.0)
        self.refresh()

    def __repr__(self):
        return "<Trial %s at %s>" % (self.job, self.endpoint)

    def close(self):
        """Closes the kept-open connection to the server (a later call opens
        another); stops the server started for `data`."""
        self._connection.close()
        if self._server is not None:
            self._server.terminate()
            try:
                self._server.wait(10)
            except subprocess.TimeoutExpired:
                self._server.kill()
            self._server = None

    def __del__(self):
        if getattr(self, "_server", None) is not None:
            self._server.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def refresh(self):
        """Forgets what was read, so the next calls read the job's data anew."""
        self._cache = {}

    # --- the job record -------------------------------------------------------------

    def record(self):
        """The job's record (GET /api/v1/jobs/NAME): status, final metrics,
        rule statuses and findings, ..."""
        return self._cached(("record",), lambda: self._get("/api/v1/jobs/" + self.job))

    def status(self):
        return self.record().get("status")

    def final_metrics(self):
        """{name: value}: the job's last value of each of its metrics."""
        return {m["name"]: m["value"] for m in self.record().get("final_metrics", [])}

    def rule_statuses(self):
        """[{configuration_name, rule, family, status, details, findings_total, ...}]
        (the findings themselves: findings())."""
        return [{k: v for k, v in rs.items() if k != "findings"}
                for rs in self.record().get("rule_statuses", [])]

    def findings(self, rule=None):
        """Every recorded finding ({rule, reason, subject, severity, step, t_ms,
        observed, threshold, message, recommendation}), of one rule when given
        (a rule or configuration name)."""
        return [f for rs in self.record().get("rule_statuses", [])
                if rule is None or rule in (rs.get("rule"), rs.get("configuration_name"))
                for f in rs.get("findings", [])]

    # --- metrics and steps ----------------------------------------------------------

    def step_metric(self):
        """The name of the job's step metric, or None when it has none."""
        named = self.record().get("step_metric")
        if named:
            return named
        present = {s["metric"] for s in self._series_list()
                   if s["namespace"] == TRAINING_JOBS and s["dimensions"] == self._job_dims()}
        return next((name for name in STEP_METRIC_GUESSES if name in present), None)

    def steps(self):
        """The job's steps (values of its step metric), ascending."""
        return self._step_index().steps()

    def metric_names(self):
        """The job's own metrics (namespace /aws/sagemaker/TrainingJobs)."""
        return sorted({s["metric"] for s in self._series_list()
                       if s["namespace"] == TRAINING_JOBS and s["dimensions"] == self._job_dims()})

    def metric(self, name, namespace=TRAINING_JOBS):
        """One metric of the job, as a Series aligned with the job's steps."""
        t_ms, values, unit = [], [], "None"
        samples = []
        for s in self._samples(namespace, name):
            if s["dimensions"] == self._job_dims():
                samples.extend(zip(s["t_ms"], s["values"]))
                unit = s.get("unit", unit)
        samples.sort(key=lambda p: p[0])
        t_ms = [t for t, _ in samples]
        values = [v for _, v in samples]
        return self._as_series({"metric": name, "dimensions": self._job_dims(), "unit": unit,
                                "t_ms": t_ms, "values": values})

    def metric_data(self, queries, start_ms=None, end_ms=None):
        """CloudWatch's GetMetricData over the server's data, metric math
        included (POST /api/v1/metrics/data): {Id: Series} of the queries
        that return data, each Series named by its label and aligned with
        the job's steps. A query is GetMetricData's (Id, MetricStat or
        Expression, Label, ReturnData, Period), or, for one of the job's own
        metrics, {"Id": "loss", "metric": "train:loss", "stat": "Average",
        "period": 60} (stat and period optional, as here). start_ms and
        end_ms default to the job's span, a minute either side."""
        body = {"MetricDataQueries": [self._metric_data_query(q) for q in queries],
                "ScanBy": "TimestampAscending"}
        record = self.record()
        now_ms = int(time.time() * 1000)
        if start_ms is None:
            start_ms = record.get("creation_ms", now_ms - 3_600_000) - 60_000
        if end_ms is None:
            end_ms = (record.get("training_end_ms") or now_ms) + 60_000
        body["StartTime"] = start_ms // 1000
        body["EndTime"] = -(-end_ms // 1000)
        merged = {}
        while True:
            status, data = self._connection.request(
                "POST", "/api/v1/metrics/data", body=json.dumps(body).encode(),
                content_type="application/json")
            if status != 200:
                raise ValueError("metric_data: %s" % _http.error_message(data))
            answer = json.loads(data.decode("utf-8"))
            for r in answer.get("MetricDataResults", []):
                into = merged.setdefault(r["Id"], {"metric": r.get("Label", r["Id"]),
                                                   "dimensions": {}, "t_ms": [], "values": []})
                into["t_ms"].extend(int(round(t * 1000)) for t in r.get("Timestamps", []))
                into["values"].extend(r.get("Values", []))
            if not answer.get("NextToken"):
                break
            body["NextToken"] = answer["NextToken"]
        return {i: self._as_series(s) for i, s in merged.items()}

    def _metric_data_query(self, query):
        if not isinstance(query, dict) or "Id" not in query:
            raise ValueError("metric_data: each query is a dict with an Id, got %r" % (query,))
        if "metric" not in query:
            return query
        unknown = set(query) - {"Id", "metric", "stat", "period", "Label", "ReturnData"}
        if unknown:
            raise ValueError("metric_data: the shorthand {Id, metric, stat, period, Label, "
                             "ReturnData} has no %s" % ", ".join(sorted(unknown)))
        out = {"Id": query["Id"], "MetricStat": {
            "Metric": {"Namespace": TRAINING_JOBS, "MetricName": query["metric"],
                       "Dimensions": [{"Name": k, "Value": v} for k, v in self._job_dims().items()]},
            "Period": query.get("period", 60), "Stat": query.get("stat", "Average")}}
        for key in ("Label", "ReturnData"):
            if key in query:
                out[key] = query[key]
        return out

    def to_pandas(self, names=None):
        """The job's metrics (or those of `names`) as one long DataFrame with
        columns metric, t_ms, step, value."""
        pandas = _pandas()
        frames = [self.metric(name).to_pandas().assign(metric=name)
                  for name in (self.metric_names() if names is None else names)]
        if not frames:
            return pandas.DataFrame(columns=["metric", "t_ms", "step", "value"])
        return pandas.concat(frames, ignore_index=True)[["metric", "t_ms", "step", "value"]]

    # --- tensors --------------------------------------------------------------------

    def _tensor_series(self):
        return [s for s in self._series_list()
                if s["namespace"] == TENSORS and "Tensor" in s["dimensions"]]

    def tensor_names(self, collection=None):
        """Names of the tensors with statistics (of one collection when given)."""
        return sorted({s["dimensions"]["Tensor"] for s in self._tensor_series()
                       if collection is None or s["dimensions"].get("Collection") == collection})

    def collections(self):
        return sorted({s["dimensions"].get("Collection") for s in self._tensor_series()} - {None})

    def workers(self):
        """The ranks that sent statistics (empty for a job of one process)."""
        return sorted({s["dimensions"]["Rank"] for s in self._tensor_series()
                       if "Rank" in s["dimensions"]}, key=lambda r: (len(r), r))

    def tensor(self, name, collection=None, rank=None):
        """A tensor's statistics. `collection` is needed when the name is in
        several (a parameter is in weights and gradients); `rank` picks a
        process of a distributed job (default: rank 0)."""
        found = [s["dimensions"] for s in self._tensor_series()
                 if s["dimensions"]["Tensor"] == name]
        collections = sorted({d.get("Collection") for d in found})
        if not found:
            raise KeyError("job %r has no statistics of a tensor %r (tensor_names() lists them)"
                           % (self.job, name))
        if collection is None:
            if len(collections) > 1:
                raise ValueError("tensor %r is in the collections %s: pass collection="
                                 % (name, ", ".join(map(str, collections))))
            collection = collections[0]
        elif collection not in collections:
            raise KeyError("tensor %r is not in collection %r (it is in %s)"
                           % (name, collection, ", ".join(map(str, collections))))
        ranks = {d["Rank"] for d in found if "Rank" in d and d.get("Collection") == collection}
        if rank is None and ranks:
            rank = min(ranks, key=lambda r: (len(r), r))  # numerically: "2" before "10"
        return Tensor(self, name, collection, None if rank is None else str(rank))

    # --- reading --------------------------------------------------------------------

    def _job_dims(self):
        return {"TrainingJobName": self.job}

    def _get(self, path, query=None):
        try:
            return self._connection.get_json(path, query)
        except _http.HttpError as e:
            if e.status == 404:
                raise KeyError("%s: %s" % (self.job, e.message)) from None
            raise

    def _cached(self, key, read):
        if key not in self._cache:
            self._cache[key] = read()
        return self._cache[key]

    def _series_list(self):
        return self._cached(("series",), lambda: self._get(
            "/api/v1/jobs/%s/series" % self.job)["series"])

    def _samples(self, namespace, metric):
        """The raw samples of the job's series of one namespace and metric
        (None: all), every page of GET /api/v1/jobs/NAME/samples."""
        def read():
            query = {}
            if namespace is not None:
                query["namespace"] = namespace
            if metric is not None:
                query["metric"] = metric
            merged = {}
            while True:
                page = self._get("/api/v1/jobs/%s/samples" % self.job, query)
                for s in page.get("series", []):
                    key = (s["namespace"], s["metric"], tuple(sorted(s["dimensions"].items())),
                           s.get("unit", "None"))
                    into = merged.setdefault(key, dict(s, t_ms=[], values=[]))
                    into["t_ms"].extend(s["t_ms"])
                    into["values"].extend(s["values"])
                if page.get("next_start") is not None:
                    query["start"] = page["next_start"]
                elif page.get("next"):
                    query["after"] = page["next"]
                else:
                    return list(merged.values())
        return self._cached(("samples", namespace, metric), read)

    def _step_index(self):
        def read():
            name = self.step_metric()
            if name is None:
                return _StepIndex()
            samples = [(t, v) for s in self._samples(TRAINING_JOBS, name)
                       if s["dimensions"] == self._job_dims()
                       for t, v in zip(s["t_ms"], s["values"])]
            return _StepIndex([t for t, _ in samples], [v for _, v in samples])
        return self._cached(("steps",), read)

    def _rank_step_index(self, rank):
        """A rank's own steps (the hook sends them in a job of several processes)."""
        def read():
            dims = dict(self._job_dims(), Rank=rank)
            samples = [(t, v) for s in self._samples(TENSORS, "step") if s["dimensions"] == dims
                       for t, v in zip(s["t_ms"], s["values"])]
            return _StepIndex([t for t, _ in samples], [v for _, v in samples])
        return self._cached(("steps", rank), read)

    def _as_series(self, s, rank=None):
        """A Series, each sample numbered by the step current at its time: the
        job's step metric, or for a rank of a distributed job, that rank's."""
        index = self._rank_step_index(rank) if rank is not None else None
        if not index:
            index = self._step_index()
        return Series(s["metric"], s["dimensions"], s.get("unit", "None"), list(s["t_ms"]),
                      list(s["values"]), [index.at(t) for t in s["t_ms"]])
