"""MLflow's metric calls, so a script switches with
`import trainwatch.mlflow as mlflow`.

Covered: start_run (also as a context manager), end_run, active_run,
log_metric, log_metrics. Parameters, tags, artifacts, models and autologging
are not: those calls warn once and do nothing (docs/python.md)."""

from ._run import Run
from ._unsupported import ignored

_active = None


class RunInfo:
    def __init__(self, job):
        self.run_id = job
        self.run_name = job
        self.status = "RUNNING"


class ActiveRun:
    """What start_run returns; `with start_run():` ends the run at the block's end."""

    def __init__(self, run):
        self.run = run
        self.info = RunInfo(run.job)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        end_run("FINISHED" if exc_type is None else "FAILED")
        return False


def start_run(run_id=None, experiment_id=None, run_name=None, nested=False, tags=None,
              description=None, *, job=None, endpoint=None, **mlflow_arguments):
    """Starts the run of this job (found as trainwatch.Run finds it, or `job`,
    `endpoint`). MLflow's arguments are accepted and not used. Like MLflow, it
    refuses to start a second run while one is active (unless nested=True,
    which returns the active one)."""
    global _active
    if _active is not None:
        if nested:
            return _active
        raise RuntimeError("a run is already active (job %r): call end_run() first, or "
                           "start_run(nested=True)" % (_active.run.job,))
    _active = ActiveRun(Run(job, endpoint))
    return _active


def end_run(status="FINISHED"):
    """Delivers what is queued (at most the run's exit_timeout) and ends the run."""
    global _active
    if _active is not None:
        active, _active = _active, None
        active.info.status = status
        active.run.close()


def active_run():
    return _active


def _current():
    return (_active or start_run()).run


def log_metric(key, value, step=None, timestamp=None, **mlflow_arguments):
    """Records `key` = `value` at `step` (MLflow would store step 0 when it is
    None; trainwatch then sends no step). `timestamp`: ms since the epoch
    (default now). Starts a run when none is active, as MLflow does."""
    log_metrics({key: value}, step=step, timestamp=timestamp)


def log_metrics(metrics, step=None, timestamp=None, **mlflow_arguments):
    if timestamp is not None:
        if isinstance(timestamp, bool) or not isinstance(timestamp, int) or timestamp < 0:
            raise TypeError("timestamp must be ms since the epoch (an int >= 0), got %r"
                            % (timestamp,))
    _current().log_metrics(metrics, step=step, _t_ms=timestamp)


_WHAT = "trainwatch records metrics only"
log_param = ignored("trainwatch.mlflow", "log_param", _WHAT)
log_params = ignored("trainwatch.mlflow", "log_params", _WHAT)
set_tag = ignored("trainwatch.mlflow", "set_tag", _WHAT)
set_tags = ignored("trainwatch.mlflow", "set_tags", _WHAT)
log_artifact = ignored("trainwatch.mlflow", "log_artifact", _WHAT)
log_artifacts = ignored("trainwatch.mlflow", "log_artifacts", _WHAT)
log_dict = ignored("trainwatch.mlflow", "log_dict", _WHAT)
log_text = ignored("trainwatch.mlflow", "log_text", _WHAT)
log_figure = ignored("trainwatch.mlflow", "log_figure", _WHAT)
log_image = ignored("trainwatch.mlflow", "log_image", _WHAT)
log_table = ignored("trainwatch.mlflow", "log_table", _WHAT)
log_input = ignored("trainwatch.mlflow", "log_input", _WHAT)
autolog = ignored("trainwatch.mlflow", "autolog", _WHAT)
set_experiment = ignored("trainwatch.mlflow", "set_experiment", "the job is the experiment")
set_tracking_uri = ignored("trainwatch.mlflow", "set_tracking_uri",
                           "the endpoint comes from the environment")
