#!/usr/bin/python3
"""`trainwatch run --ui` as a user runs it: the dashboard's server in the run's
process, its live stream (GET /api/v1/live) carrying the job's metrics, lines
and status while the job runs; refused with --endpoint.

Usage: run_ui_test.py --trainwatch PATH/trainwatch [unittest args]
Standard library only; run with /usr/bin/python3.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.request

TRAINWATCH = None

# The training command: two lines, then waits for the test's go-ahead (a
# file), then a last line.
TRAINER = r"""
import os, sys, time
print("loss: 1.0", flush=True)
print("loss: 0.5", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.02)
print("loss: 0.25", flush=True)
"""


def events(response):
    """(event, data) of each event of a text/event-stream response, until it ends."""
    event, data = None, None
    for raw in response:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[len("event: "):]
        elif line.startswith("data: "):
            data = json.loads(line[len("data: "):])
        elif line == "" and event is not None:
            yield event, data
            event, data = None, None


class RunUi(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tw-run-ui-")
        self.data = os.path.join(self.dir, "data")
        self.go = os.path.join(self.dir, "go")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_serves_the_job_live_while_it_runs(self):
        proc = subprocess.Popen(
            [TRAINWATCH, "run", "--ui", "127.0.0.1:0", "--name", "ui-job", "--data", self.data,
             "--metric", r"train:loss=loss: (\S+)", "--", "/usr/bin/python3", "-c", TRAINER, self.go],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            url = None
            while url is None:
                line = proc.stderr.readline()
                self.assertNotEqual(line, "", "trainwatch run --ui printed no URL")
                if "dashboard at " in line:
                    url = line.split("dashboard at ")[1].split()[0]
            self.assertRegex(url, r"^http://127\.0\.0\.1:\d+/$")
            with urllib.request.urlopen(url + "api/v1/health", timeout=30) as r:
                self.assertEqual(json.load(r)["status"], "ok")
            with urllib.request.urlopen(url + "api/v1/live?job=ui-job", timeout=30) as r:
                self.assertEqual(r.headers["Content-Type"], "text/event-stream")
                self.assertEqual(r.readline(), b"retry: 1000\n")
                self.assertEqual(r.readline(), b"\n")
                open(self.go, "w").close()  # from now on the stream sees all
                values, lines, status = [], [], None
                for event, data in events(r):
                    if event == "samples":
                        for s in data["series"]:
                            if s["metric"] == "train:loss":
                                values += s["v"]
                    elif event == "logs":
                        lines += [e["message"] for e in data["events"]]
                    elif event == "job":
                        status = data["status"]
                        if status == "Completed":
                            break
                self.assertIn(0.25, values)
                self.assertIn("loss: 0.25", lines)
                self.assertEqual(status, "Completed")
            self.assertEqual(proc.wait(timeout=60), 0)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def test_refused_with_an_endpoint(self):
        p = subprocess.run([TRAINWATCH, "run", "--ui", "--endpoint", "http://127.0.0.1:1",
                            "--data", self.data, "--", "true"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("open http://127.0.0.1:1/ for the dashboard", p.stderr)

    def test_refuses_other_addresses(self):
        p = subprocess.run([TRAINWATCH, "run", "--ui", "0.0.0.0:9400", "--data", self.data,
                            "--", "true"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("this machine only", p.stderr)


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--trainwatch" in args:
        i = args.index("--trainwatch")
        TRAINWATCH = args[i + 1]
        del args[i:i + 2]
    if not TRAINWATCH or not os.path.exists(TRAINWATCH):
        sys.exit("usage: run_ui_test.py --trainwatch PATH/trainwatch")
    unittest.main(argv=[sys.argv[0], "-v", *args])
