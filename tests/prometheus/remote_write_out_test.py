#!/usr/bin/python3
"""`trainwatch server --remote-write URL` streams every sample it ingests to
real receivers: Debian's prometheus (--web.enable-remote-write-receiver) and
victoria-metrics, both on loopback, both stopped mid-stream and started again
while trainwatch is restarted too; every sample is then read back through
each receiver's own query API and compared, value for value, in order.

The test starts the receivers itself and stops them; a receiver that is not
installed is skipped with a notice.

Usage: remote_write_out_test.py --trainwatch PATH/trainwatch [unittest args]
Standard library only; run with /usr/bin/python3.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

TRAINWATCH = None
PROMETHEUS = shutil.which("prometheus")
VICTORIA = shutil.which("victoria-metrics")
JOB = "rw-out-1"
PER_PHASE = 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


def wait_for(what, fn, timeout=90):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            got = fn()
            if got:
                return got
            last = got
        except (OSError, ValueError, KeyError) as e:
            last = e
        time.sleep(0.25)
    raise AssertionError("timed out waiting for %s (last: %s)" % (what, last))


class Receiver:
    """prometheus or victoria-metrics on a fixed port and data folder, so that
    a restart finds what it stored."""

    def __init__(self, kind, root):
        self.kind = kind
        self.port = free_port()
        self.data = os.path.join(root, kind)
        self.log = open(os.path.join(root, kind + ".log"), "a")
        self.proc = None
        if kind == "prometheus":
            self.config = os.path.join(root, "prometheus.yml")
            with open(self.config, "w") as f:
                f.write("global:\n  scrape_interval: 1m\nscrape_configs: []\n")

    def write_url(self):
        return "http://127.0.0.1:%d/api/v1/write" % self.port

    def start(self):
        if self.kind == "prometheus":
            args = [PROMETHEUS, "--config.file=" + self.config, "--storage.tsdb.path=" + self.data,
                    "--web.listen-address=127.0.0.1:%d" % self.port, "--web.enable-remote-write-receiver"]
            ready = "/-/ready"
        else:
            args = [VICTORIA, "-storageDataPath=" + self.data, "-httpListenAddr=127.0.0.1:%d" % self.port,
                    "-retentionPeriod=100y", "-search.disableCache", "-search.latencyOffset=0s"]
            ready = "/health"
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.log)
        wait_for(self.kind + " to be ready", lambda: urllib.request.urlopen(
            "http://127.0.0.1:%d%s" % (self.port, ready), timeout=2).status == 200)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def samples(self):
        """(timestamp ms, value) of the job's series, in time order."""
        if self.kind == "victoria-metrics":
            with urllib.request.urlopen("http://127.0.0.1:%d/internal/force_flush" % self.port,
                                        timeout=10) as answer:
                answer.read()
        q = urllib.parse.urlencode({"query": '{__name__="train:loss",TrainingJobName="%s"}[1h]' % JOB,
                                    "time": "%.3f" % time.time()})
        answer = get_json("http://127.0.0.1:%d/api/v1/query?%s" % (self.port, q))
        if answer.get("status") != "success" or not answer["data"]["result"]:
            return []
        [series] = answer["data"]["result"]
        return [(int(round(float(t) * 1000)), float(v)) for t, v in series["values"]]


class RemoteWriteOut(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tw-rw-out-")
        self.receivers = []
        self.server = None
        self.t0 = (int(time.time()) - 600) * 1000  # whole seconds: the query protocol's

    def tearDown(self):
        self.stop_server()
        for r in self.receivers:
            r.stop()
            r.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def start_server(self):
        args = [TRAINWATCH, "server", "--listen", "127.0.0.1:0", "--data", os.path.join(self.dir, "data")]
        for r in self.receivers:
            args += ["--remote-write", r.write_url()]
        self.server = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.server.stdout.readline()
        if "serving http://" not in line:
            self.fail("trainwatch server did not start: %r %s" % (line, self.server.stderr.read()))
        self.url = line.split("serving ")[1].split()[0]

    def stop_server(self):
        if self.server is not None:
            self.server.send_signal(signal.SIGTERM)
            self.assertEqual(self.server.wait(timeout=60), 0, self.server.stderr.read())
            self.server.stdout.close()
            self.server.stderr.close()
            self.server = None

    def put(self, first):
        """PutMetricData (query protocol) of samples first..first+PER_PHASE-1."""
        form = {"Action": "PutMetricData", "Version": "2010-08-01", "Namespace": "/aws/sagemaker/TrainingJobs"}
        for k, i in enumerate(range(first, first + PER_PHASE), start=1):
            m = "MetricData.member.%d." % k
            form[m + "MetricName"] = "train:loss"
            form[m + "Value"] = repr(self.value(i))
            form[m + "StorageResolution"] = "1"
            form[m + "Timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.t0 / 1000 + i))
            form[m + "Dimensions.member.1.Name"] = "TrainingJobName"
            form[m + "Dimensions.member.1.Value"] = JOB
        body = urllib.parse.urlencode(form).encode()
        req = urllib.request.Request(self.url + "/", data=body, method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        with urllib.request.urlopen(req, timeout=30) as r:
            self.assertEqual(r.status, 200)

    @staticmethod
    def value(i):
        return 2.5 - 0.03125 * i

    def expected(self, n):
        return [(self.t0 + 1000 * i, self.value(i)) for i in range(n)]

    def wait_all(self, n):
        for r in self.receivers:
            got = wait_for("%s to hold %d samples" % (r.kind, n), lambda: (lambda s: s if len(s) >= n else None)(r.samples()))
            self.assertEqual(got, self.expected(n), r.kind)

    def test_every_sample_reaches_both_receivers_across_their_restarts_and_trainwatchs(self):
        for kind, path in (("prometheus", PROMETHEUS), ("victoria-metrics", VICTORIA)):
            if path is None:
                print("NOTICE: %s is not installed: not tested against it" % kind, file=sys.stderr)
            else:
                self.receivers.append(Receiver(kind, self.dir))
        if not self.receivers:
            self.skipTest("neither prometheus nor victoria-metrics is installed")
        for r in self.receivers:
            r.start()
        self.start_server()
        self.put(0)
        self.wait_all(PER_PHASE)
        # The receivers go away: samples wait in the queue.
        for r in self.receivers:
            r.stop()
        self.put(PER_PHASE)
        time.sleep(1)  # the queue has them (flushed every 200 ms)
        # trainwatch restarts too; the queue is on disk.
        self.stop_server()
        self.start_server()
        self.put(2 * PER_PHASE)
        for r in self.receivers:
            r.start()
        self.wait_all(3 * PER_PHASE)
        # The server's own view of its receivers.
        with urllib.request.urlopen(self.url + "/metrics", timeout=30) as r:
            page = r.read().decode()
        self.assertIn("trainwatch_remote_write_samples_queued_total", page)


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--trainwatch" in args:
        i = args.index("--trainwatch")
        TRAINWATCH = args[i + 1]
        del args[i:i + 2]
    if not TRAINWATCH or not os.path.exists(TRAINWATCH):
        sys.exit("usage: remote_write_out_test.py --trainwatch PATH/trainwatch")
    unittest.main(argv=[sys.argv[0], "-v", *args])
