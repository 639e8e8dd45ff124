"""What the client's tests share: the package on sys.path, and a fake endpoint.

FakeEndpoint is an http.server in a thread. It takes POST /api/v1/samples as
the runner and the server do (docs/api.md), records what it accepted, and
answers the native API's reads (a job's record, series and raw samples) from
what it holds, so a test can send with the client and read back with Trial.
"""

import contextlib
import http.server
import io
import json
import os
import socket
import sys
import threading
import time
import urllib.parse

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

from trainwatch import _env  # noqa: E402

# Variables that would point the client at a real job.
CLIENT_ENVIRONMENT = ("TRAINWATCH_RUNNER_URL", "TRAINWATCH_ENDPOINT", "TRAINWATCH_JOB",
                      "TRAINWATCH_STEP_METRIC", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                      "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION")


def clean_environment():
    """os.environ without the client's variables (use with mock.patch.dict)."""
    return {k: v for k, v in os.environ.items() if k not in CLIENT_ENVIRONMENT}


def forget_warnings():
    """Lets the client's say-once messages be said again."""
    with _env._said_lock:
        _env._said.clear()


@contextlib.contextmanager
def captured_stderr():
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer):
        yield buffer


def wait_until(condition, timeout=10.0, interval=0.01):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return condition()


class FakeEndpoint:
    """Records accepted sample batches; answers reads from them.

    statuses: answers to give to the first POSTs, in order (then 200).
    stall: POST handlers wait until release() (or 30 s) before answering.
    page_samples: at most this many samples per GET .../samples answer
    (more: "next_start", as the server pages).
    """

    def __init__(self, statuses=(), stall=False, page_samples=1_000_000, job_record=None, port=0):
        self.requests = []      # (method, path, headers) of every request
        self.accepted = []      # bodies (dicts) answered 200
        self.refused = []       # bodies answered otherwise
        self.statuses = list(statuses)
        self.page_samples = page_samples
        self.job_records = {}
        if job_record is not None:
            self.job_records[job_record["name"]] = job_record
        self._release = threading.Event()
        if not stall:
            self._release.set()
        self._lock = threading.Lock()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                fake._release.wait(30)
                status, answer = fake._post(self.path, dict(self.headers), body)
                self._answer(status, answer)

            def do_GET(self):
                status, answer = fake._get(self.path, dict(self.headers))
                self._answer(status, answer)

            def _answer(self, status, answer):
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                # A client that went away (a process that exited while its
                # request was stalled) is no error of the test's.
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self._server = Server(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        daemon=True)
        self._thread.start()
        self.url = "http://127.0.0.1:%d" % self._server.server_address[1]

    def release(self):
        """Stalled handlers answer now, and later ones at once."""
        self._release.set()

    def close(self):
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- handling ---------------------------------------------------------------------

    def _post(self, path, headers, body):
        with self._lock:
            self.requests.append(("POST", path, headers))
            if path != "/api/v1/samples":
                return 404, {"error": {"code": "NotFound", "message": path}}
            status = self.statuses.pop(0) if self.statuses else 200
            batch = json.loads(body)
            if status != 200:
                self.refused.append(batch)
                return status, {"error": {"code": "Test", "message": "answered %d" % status}}
            self.accepted.append(batch)
            return 200, {"accepted": sum(len(s["values"]) for s in batch["series"])}

    def _get(self, path, headers):
        parts = urllib.parse.urlsplit(path)
        query = dict(urllib.parse.parse_qsl(parts.query))
        with self._lock:
            self.requests.append(("GET", path, headers))
            segments = parts.path.split("/")
            if parts.path.startswith("/api/v1/jobs/") and len(segments) in (5, 6):
                job = segments[4]
                what = segments[5] if len(segments) == 6 else "record"
                if what == "record" and job in self.job_records:
                    return 200, self.job_records[job]
                if what == "series":
                    return 200, {"series": self._job_series(job)}
                if what == "samples":
                    return 200, self._job_samples(job, query)
            return 404, {"error": {"code": "NotFound", "message": "no resource " + parts.path}}

    def _job_series(self, job):
        return [{"namespace": key[0], "metric": key[1], "dimensions": dict(key[2]),
                 "unit": key[3], "last_ms": t_ms[-1], "last_value": values[-1]}
                for key, (t_ms, values) in self._merged().items()
                if dict(key[2]).get("TrainingJobName") == job]

    def _job_samples(self, job, query):
        start = int(query.get("start", 0))
        chosen = []
        for key, (t_ms, values) in self._merged().items():
            if dict(key[2]).get("TrainingJobName") != job:
                continue
            if query.get("namespace") not in (None, key[0]) or query.get("metric") not in (None, key[1]):
                continue
            for t, v in zip(t_ms, values):
                if t >= start:
                    chosen.append((t, key, v))
        chosen.sort(key=lambda c: c[0])
        answer = {}
        if len(chosen) > self.page_samples:
            next_start = chosen[self.page_samples][0]
            chosen = [c for c in chosen if c[0] < next_start]
            answer["next_start"] = next_start
        series = {}
        for t, key, v in chosen:
            s = series.setdefault(key, {"namespace": key[0], "metric": key[1],
                                        "dimensions": dict(key[2]), "unit": key[3],
                                        "t_ms": [], "values": []})
            s["t_ms"].append(t)
            s["values"].append(v)
        answer["series"] = list(series.values())
        return answer

    # --- what arrived -----------------------------------------------------------------

    def _merged(self):
        merged = {}
        for batch in self.accepted:
            for s in batch["series"]:
                key = (s["namespace"], s["metric"], tuple(sorted(s["dimensions"].items())),
                       s.get("unit", "None"))
                t_ms, values = merged.setdefault(key, ([], []))
                t_ms.extend(s["t_ms"])
                values.extend(s["values"])
        return merged

    def series(self):
        """{(namespace, metric, dimensions as sorted pairs, unit): (t_ms, values)}
        of every accepted batch, in arrival order."""
        with self._lock:
            return self._merged()

    def find(self, metric, namespace=None, **dimensions):
        """[(key, t_ms, values)] of the series of `metric` whose dimensions
        include `dimensions`."""
        return [(key, t_ms, values) for key, (t_ms, values) in self.series().items()
                if key[1] == metric and (namespace is None or key[0] == namespace)
                and all(dict(key[2]).get(k) == v for k, v in dimensions.items())]

    def values(self, metric, namespace=None, **dimensions):
        """The values of the one series of `metric` with `dimensions`."""
        found = self.find(metric, namespace, **dimensions)
        if len(found) != 1:
            raise AssertionError("%d series of %s %s: %s" % (
                len(found), metric, dimensions, sorted(k for k, _, _ in self.find(metric))))
        return found[0][2]

    def sample_count(self):
        return sum(len(values) for _, values in self.series().values())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
