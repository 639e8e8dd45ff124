"""Where the client sends to: the runner of the job, a server, or nowhere.

The environment (docs/python.md, "The environment"):
- TRAINWATCH_RUNNER_URL, TRAINWATCH_JOB, TRAINWATCH_STEP_METRIC: set by
  `trainwatch run` for the training process;
- TRAINWATCH_ENDPOINT (+ TRAINWATCH_JOB or Run(job=...)): a `trainwatch server`;
- AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN and
  AWS_REGION / AWS_DEFAULT_REGION: requests to a server are signed (SigV4).
"""

import os
import sys
import threading
import urllib.parse

from . import _sigv4

DEFAULT_STEP_METRIC = "step"
DEFAULT_SERVER = "http://127.0.0.1:9400"

_said = set()
_said_lock = threading.Lock()


def say_once(key, message):
    """Writes "trainwatch: <message>" on stderr the first time `key` is seen in
    this process; later calls with the same key say nothing."""
    with _said_lock:
        if key in _said:
            return
        _said.add(key)
    sys.stderr.write("trainwatch: %s\n" % message)
    sys.stderr.flush()


def say(message):
    sys.stderr.write("trainwatch: %s\n" % message)
    sys.stderr.flush()


class Destination:
    """An endpoint that takes POST /api/v1/samples, and the job to send for."""

    def __init__(self, url, job, is_runner, step_metric, credentials=None, region=None):
        self.url = url
        self.job = job
        self.is_runner = is_runner
        self.step_metric = step_metric
        self.credentials = credentials  # None: requests are not signed
        self.region = region


def check_url(url, what):
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("%s must be an http:// or https:// URL, got %r" % (what, url))
    return url.rstrip("/")


def find_destination(job=None, endpoint=None, environ=None):
    """The Destination for Run(job, endpoint), or (None, why) outside any job.

    An explicit `endpoint` is a server. Otherwise the runner's
    TRAINWATCH_RUNNER_URL wins (with its TRAINWATCH_JOB), then TRAINWATCH_ENDPOINT."""
    env = os.environ if environ is None else environ
    if job is not None and (not isinstance(job, str) or not job):
        raise ValueError("job must be a non-empty str, got %r" % (job,))
    step_metric = env.get("TRAINWATCH_STEP_METRIC") or DEFAULT_STEP_METRIC
    env_job = env.get("TRAINWATCH_JOB") or None
    runner_url = env.get("TRAINWATCH_RUNNER_URL")
    if endpoint is None and runner_url:
        if job is not None and env_job is not None and job != env_job:
            say_once(("job", job), "Run(job=%r) inside the run of job %r: sending to %r"
                     % (job, env_job, env_job))
            job = env_job
        job = job or env_job
        if job is None:
            return None, "TRAINWATCH_RUNNER_URL is set but TRAINWATCH_JOB is not"
        return Destination(check_url(runner_url, "TRAINWATCH_RUNNER_URL"), job, True,
                           step_metric), None
    url = endpoint or env.get("TRAINWATCH_ENDPOINT")
    if not url:
        return None, "not inside a trainwatch job (no TRAINWATCH_RUNNER_URL or TRAINWATCH_ENDPOINT)"
    url = check_url(url, "endpoint" if endpoint else "TRAINWATCH_ENDPOINT")
    job = job or env_job
    if job is None:
        return None, "%s is set but no job name: pass job=... or set TRAINWATCH_JOB" % (
            "endpoint" if endpoint else "TRAINWATCH_ENDPOINT")
    credentials = _sigv4.Credentials.from_environment(env)
    region = _sigv4.region_from_environment(env) if credentials else None
    return Destination(url, job, False, step_metric, credentials, region), None


def server_url(endpoint=None, environ=None):
    """A server to read from: `endpoint`, TRAINWATCH_ENDPOINT, or the default
    `trainwatch server` address."""
    env = os.environ if environ is None else environ
    if endpoint:
        return check_url(endpoint, "endpoint")
    if env.get("TRAINWATCH_ENDPOINT"):
        return check_url(env["TRAINWATCH_ENDPOINT"], "TRAINWATCH_ENDPOINT")
    return DEFAULT_SERVER
