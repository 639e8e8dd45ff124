#!/usr/bin/python3
"""A real Prometheus scrapes `trainwatch server`: /metrics (trainwatch's own
health) and /metrics?job=NAME (a job's latest metrics), and what it stored
is read back through its own query API and compared with trainwatch's; and
it streams what it scrapes into trainwatch over remote write.

The test starts Debian's prometheus on loopback itself (skips, saying so,
when it is not installed) and stops it.

Usage: scrape_test.py --trainwatch PATH/trainwatch [unittest args]
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
JOB = "scrape-1"
# The job prints these losses, one a line, then stays up while Prometheus scrapes.
LOSSES = [2.5, 1.25, 0.75, 0.5, 0.375]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


def wait_for(what, fn, timeout=60):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            got = fn()
            if got:
                return got
        except (OSError, ValueError, KeyError) as e:
            last = e
        time.sleep(0.25)
    raise AssertionError("timed out waiting for %s (last error: %s)" % (what, last))


@unittest.skipIf(PROMETHEUS is None, "prometheus is not installed (apt-get install prometheus)")
class PrometheusScrapes(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tw-prom-")
        self.procs = []
        self.server = subprocess.Popen(
            [TRAINWATCH, "server", "--listen", "127.0.0.1:0", "--data", os.path.join(self.dir, "data")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.procs.append(self.server)
        line = self.server.stdout.readline()
        if "serving http://" not in line:
            self.fail("trainwatch server did not start: %r %s" % (line, self.server.stderr.read()))
        self.url = line.split("serving ")[1].split()[0]

    def tearDown(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if getattr(self, "prom_log", None):
            self.prom_log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def start_prometheus(self, remote_write=False):
        host, port = urllib.parse.urlsplit(self.url).netloc.split(":")
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write(
                "global:\n"
                "  scrape_interval: 1s\n"
                "  scrape_timeout: 1s\n"
                "scrape_configs:\n"
                "  - job_name: trainwatch\n"
                "    static_configs: [{targets: ['%s:%s']}]\n"
                "  - job_name: trainwatch-jobs\n"
                "    params: {job: ['%s']}\n"
                "    static_configs: [{targets: ['%s:%s']}]\n" % (host, port, JOB, host, port))
            if remote_write:
                f.write("remote_write:\n"
                        "  - url: %s/api/v1/write\n"
                        "    queue_config: {batch_send_deadline: 1s}\n" % self.url)
        self.prom_port = free_port()
        self.prom_log = open(os.path.join(self.dir, "prometheus.log"), "w")
        prom = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + config, "--storage.tsdb.path=" + os.path.join(self.dir, "tsdb"),
             "--web.listen-address=127.0.0.1:%d" % self.prom_port],
            stdout=subprocess.DEVNULL, stderr=self.prom_log)
        self.procs.append(prom)
        wait_for("prometheus to be ready",
                 lambda: urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % self.prom_port, timeout=2).status == 200)

    def prom_query_at(self, query, at):
        q = urllib.parse.urlencode({"query": query, "time": "%.3f" % at})
        answer = get_json("http://127.0.0.1:%d/api/v1/query?%s" % (self.prom_port, q))
        self.assertEqual(answer["status"], "success", answer)
        return answer["data"]["result"]

    def prom_query(self, query):
        q = urllib.parse.urlencode({"query": query})
        answer = get_json("http://127.0.0.1:%d/api/v1/query?%s" % (self.prom_port, q))
        self.assertEqual(answer["status"], "success", answer)
        return answer["data"]["result"]

    def test_prometheus_remote_writes_into_trainwatch(self):
        """Prometheus (its remote-write sender) streams what it scrapes to
        trainwatch: the series arrive by the naming rule, with the values
        Prometheus itself stored."""
        self.start_prometheus(remote_write=True)
        dims = "dimension=instance&dimension=job=trainwatch"

        def stored_up():
            found = get_json(self.url + "/api/v1/metrics?namespace=Prometheus&metric=up&" + dims)
            return found["metrics"]
        [metric] = wait_for("Prometheus's up series to arrive over remote write", stored_up)
        self.assertEqual(metric["dimensions"]["job"], "trainwatch")
        instance = metric["dimensions"]["instance"]
        # One sample of a counter of trainwatch's own (a moving one: it counts the
        # scrapes), as Prometheus stored it and as trainwatch did, at its own time.
        name = "trainwatch_http_requests_total"
        selector = '%s{job="trainwatch",code="2xx"}' % name

        def same_sample():
            at = time.time() - 5
            value = self.prom_query_at(selector, at)
            stamp = self.prom_query_at("timestamp(%s)" % selector, at)
            if not value or not stamp:
                return None
            t_ms = int(round(float(stamp[0]["value"][1]) * 1000))
            labels = value[0]["metric"]
            query = urllib.parse.urlencode(
                [("namespace", "Prometheus"), ("metric", name), ("period", "1s"),
                 ("stat", "Maximum"), ("start", "%.3f" % (t_ms / 1000)),
                 ("end", "%.3f" % (t_ms / 1000 + 1))] +
                [("dimension", "%s=%s" % (k, v)) for k, v in sorted(labels.items())
                 if k != "__name__"])
            stats = get_json(self.url + "/api/v1/metrics/statistics?" + query)
            if not stats["datapoints"]:
                return None
            return float(value[0]["value"][1]) == stats["datapoints"][0]["values"]["Maximum"]
        self.assertTrue(wait_for("trainwatch to hold a sample Prometheus stored", same_sample))
        self.assertTrue(instance)

    def test_prometheus_scrapes_health_and_a_jobs_metrics(self):
        script = ("import sys, time\n"
                  "for v in %r:\n"
                  "    print('loss: %%s' %% v, flush=True)\n"
                  "    time.sleep(0.1)\n"
                  "time.sleep(300)\n" % LOSSES)
        job = subprocess.Popen(
            [TRAINWATCH, "run", "--endpoint", self.url, "--name", JOB, "--profile-interval", "200ms",
             "--metric", "train:loss=loss: ([0-9.]+)", "--", sys.executable, "-c", script],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.procs.append(job)
        wait_for("the job's last loss to be stored", lambda: any(
            s["metric"] == "train:loss" and s["last_value"] == LOSSES[-1]
            for s in get_json(self.url + "/api/v1/jobs/%s/series" % JOB)["series"]))
        self.start_prometheus()

        # Both targets up: Prometheus parsed both pages.
        def targets_up():
            active = get_json("http://127.0.0.1:%d/api/v1/targets" % self.prom_port)["data"]["activeTargets"]
            return len(active) == 2 and all(t["health"] == "up" for t in active) and active
        try:
            targets = wait_for("both trainwatch targets to be scraped", targets_up, timeout=30)
        except AssertionError:
            active = get_json("http://127.0.0.1:%d/api/v1/targets" % self.prom_port)["data"]["activeTargets"]
            self.fail("scrape failed: %s" % [(t["scrapeUrl"], t["health"], t["lastError"]) for t in active])
        self.assertEqual(sorted(t["scrapeUrl"].split("/", 3)[3] for t in targets),
                         ["metrics", "metrics?job=%s" % JOB])

        # The job's metrics as trainwatch holds them, by the naming rule.
        loss = wait_for("train:loss in prometheus", lambda: self.prom_query(
            '{__name__="train:loss", TrainingJobName="%s"}' % JOB))
        self.assertEqual(len(loss), 1, loss)
        self.assertEqual(float(loss[0]["value"][1]), LOSSES[-1])
        self.assertEqual(loss[0]["metric"]["namespace"], "/aws/sagemaker/TrainingJobs")
        info = self.prom_query('trainwatch_job_info{training_job="%s"}' % JOB)
        self.assertEqual([i["metric"]["status"] for i in info], ["InProgress"])
        ours = {(s["metric"], tuple(sorted(s["dimensions"].items())), s["unit"]): s["last_value"]
                for s in get_json(self.url + "/api/v1/jobs/%s/series" % JOB)["series"]}
        cpu = [k for k in ours if k[0] == "CPUUtilization" and dict(k[1]).get("Host") == JOB + "/algo-1"]
        self.assertTrue(cpu, "the profiler's CPUUtilization of the job's host: %s" % sorted(ours))
        scraped = self.prom_query('CPUUtilization{Host="%s/algo-1"}' % JOB)
        self.assertTrue(scraped, "CPUUtilization of the job's host in prometheus")

        # trainwatch's own health, as counters Prometheus can rate().
        samples = self.prom_query('trainwatch_ingest_samples_total{job="trainwatch"}')
        self.assertGreaterEqual(float(samples[0]["value"][1]), len(LOSSES))
        for name in ["trainwatch_ingest_write_seconds_count", "trainwatch_rules_evaluation_seconds_count",
                     "trainwatch_http_request_duration_seconds_count", "trainwatch_store_series",
                     "trainwatch_rules_queue_items", "trainwatch_live_reader_resets_total"]:
            got = self.prom_query('%s{job="trainwatch"}' % name)
            self.assertEqual(len(got), 1, "%s: %s" % (name, got))
        self.assertGreater(float(self.prom_query('trainwatch_rules_evaluation_seconds_count{job="trainwatch"}')[0]["value"][1]), 0)
        self.assertGreaterEqual(float(self.prom_query('trainwatch_store_series{job="trainwatch"}')[0]["value"][1]), 1)
        # Scrapes keep coming: the request counter Prometheus sees grows.
        first = float(self.prom_query('trainwatch_http_request_duration_seconds_count{job="trainwatch"}')[0]["value"][1])
        wait_for("a later scrape", lambda: float(self.prom_query(
            'trainwatch_http_request_duration_seconds_count{job="trainwatch"}')[0]["value"][1]) > first, timeout=15)


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--trainwatch" not in args:
        sys.exit("usage: scrape_test.py --trainwatch PATH/trainwatch [unittest args]")
    i = args.index("--trainwatch")
    TRAINWATCH = args[i + 1]
    del args[i:i + 2]
    unittest.main(argv=[sys.argv[0]] + args, verbosity=2)
