"""trainwatch.init / log / finish / config: Weights & Biases' calls, so a
script switches with `import trainwatch as wandb`."""

from . import _env
from ._run import Run

_run = None


class Config(dict):
    """wandb.config's shape: a dict also read and written as attributes
    (`config.lr`, `config.update({...})`). It is kept in the process only:
    trainwatch does not record it."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError("config has no %r" % (name,)) from None

    def __setattr__(self, name, value):
        _say_config_not_recorded()
        self[name] = value

    def update(self, *args, allow_val_change=None, **kwargs):
        _say_config_not_recorded()
        for source in args:
            dict.update(self, source if hasattr(source, "keys") else vars(source))
        dict.update(self, kwargs)

    def setdefaults(self, defaults):
        for name, value in defaults.items():
            self.setdefault(name, value)


def _say_config_not_recorded():
    _env.say_once("wandb-config", "config values are kept in the process only: trainwatch does "
                  "not record them (the job's hyperparameters are in its record)")


config = Config()


def init(job=None, endpoint=None, *, config=None, max_queue=100_000, batch_size=2_000,
         batch_interval=0.2, exit_timeout=5.0, **wandb_arguments):
    """Starts (or returns) the process's run, as wandb.init. W&B's other
    arguments (project, name, entity, tags, notes, mode, ...) are accepted and
    not used: the job is the one trainwatch runs (or `job`, TRAINWATCH_JOB)."""
    global _run
    if config is not None:
        globals()["config"].update(config)
    if _run is not None and _run.active:
        return _run
    _run = Run(job, endpoint, max_queue=max_queue, batch_size=batch_size,
               batch_interval=batch_interval, exit_timeout=exit_timeout)
    return _run


def log(data, step=None, commit=None):
    """wandb.log: records a dict of metrics (nested dicts become "a/b"); without
    `step`, at the run's own step counter, one more after each call."""
    if _run is None:
        raise RuntimeError("call trainwatch.init() before trainwatch.log()")
    _run.log(data, step=step, commit=commit)


def finish(exit_code=None, quiet=None):
    """wandb.finish: delivers what is queued (at most exit_timeout seconds) and
    closes the run; a later init() starts a new one."""
    global _run
    if _run is not None:
        _run.close()
        _run = None
