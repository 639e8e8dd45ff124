"""trainwatch's Python client: a training job's metrics and tensor statistics,
sent to `trainwatch run` (or a `trainwatch server`) in the background, and read
back for analysis. Standard library only; PyTorch and pandas are optional.

    import trainwatch
    run = trainwatch.Run()                 # finds the job from the environment
    run.log_metric("train:loss", 0.25, step=10)

Aliases for scripts written for other trackers (docs/python.md):
    trainwatch.init() / trainwatch.log({...}, step=s) / trainwatch.finish()
    trainwatch.mlflow     log_metric, log_metrics, start_run, end_run
    trainwatch.tensorboard.SummaryWriter   add_scalar, add_scalars
    trainwatch.torch.watch(model, optimizer)   tensor statistics (PyTorch)
    trainwatch.Trial(job)                  reads a job's data back
"""

import importlib

from ._run import Run
from ._wandb import Config, config, finish, init, log
from .trial import Trial

__version__ = "0.1.0"
__all__ = ["Run", "Trial", "init", "log", "finish", "config", "Config"]

_SUBMODULES = ("mlflow", "tensorboard", "torch")


def __getattr__(name):
    # trainwatch.torch, trainwatch.mlflow, ... without importing them (or
    # PyTorch) until they are used.
    if name in _SUBMODULES:
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'trainwatch' has no attribute %r (docs/python.md lists what "
                         "the client has)" % (name,))
