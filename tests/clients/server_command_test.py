#!/usr/bin/python3
"""`trainwatch server` as a user starts it: serves the data folder, answers AWS
clients and the native API, refuses to listen beyond loopback without --auth,
and stops cleanly on SIGTERM.

Usage: server_command_test.py --trainwatch PATH/trainwatch [unittest args]
Standard library only (boto3 parts are skipped without it); run with /usr/bin/python3.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest
import urllib.request

TRAINWATCH = None


def has_boto3():
    return subprocess.run(["/usr/bin/python3", "-c", "import boto3"], capture_output=True).returncode == 0


class ServerCommand(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tw-server-cmd-")
        self.data = os.path.join(self.dir, "data")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, *args):
        proc = subprocess.Popen([TRAINWATCH, "server", "--listen", "127.0.0.1:0", "--data", self.data, *args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = proc.stdout.readline()
        if "serving http://" not in line:
            proc.kill()
            self.fail("trainwatch server did not start: %r %s" % (line, proc.stderr.read()))
        url = line.split("serving ")[1].split()[0]
        return proc, url

    def stop(self, proc):
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(timeout=30), 0, proc.stderr.read())

    def test_serves_an_empty_folder_and_stops_on_sigterm(self):
        proc, url = self.start()
        try:
            with urllib.request.urlopen(url + "/api/v1/health", timeout=30) as r:
                health = json.load(r)
            self.assertEqual(health["status"], "ok")
            self.assertEqual(health["backends"], {"samples": True, "metrics": True, "logs": True, "jobs": True, "agents": True})
            with urllib.request.urlopen(url + "/metrics", timeout=30) as r:
                self.assertIn(b"trainwatch_http_requests_total", r.read())
            if has_boto3():
                script = (
                    "import sys, boto3, botocore\n"
                    "kw = dict(endpoint_url=sys.argv[1], region_name='us-east-1', aws_access_key_id='a', aws_secret_access_key='b')\n"
                    "sm = boto3.client('sagemaker', **kw)\n"
                    "print(len(sm.list_training_jobs()['TrainingJobSummaries']))\n"
                    "try:\n"
                    "    sm.describe_training_job(TrainingJobName='nope')\n"
                    "except botocore.exceptions.ClientError as e:\n"
                    "    print(e.response['Error']['Code'])\n"
                    "print(len(boto3.client('logs', **kw).describe_log_groups()['logGroups']))\n"
                    "print(len(boto3.client('cloudwatch', **kw).list_metrics()['Metrics']))\n")
                env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true", HOME=self.dir,
                           AWS_CONFIG_FILE=os.path.join(self.dir, "c"),
                           AWS_SHARED_CREDENTIALS_FILE=os.path.join(self.dir, "k"))
                out = subprocess.run(["/usr/bin/python3", "-c", script, url], capture_output=True,
                                     text=True, env=env, timeout=120)
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertEqual(out.stdout.split(), ["0", "ValidationException", "0", "0"])
        finally:
            self.stop(proc)

    def test_takes_runs_and_put_metric_data_as_the_folders_writer(self):
        proc, url = self.start()
        try:
            with open(os.path.join(self.data, "server.json")) as f:
                self.assertEqual(json.load(f)["url"], url)
            # A run on the folder finds the server and sends its data there.
            run = subprocess.run([TRAINWATCH, "run", "--data", self.data, "--name", "via-server",
                                  "--profile-interval", "off", "--metric", "loss=loss=([0-9.]+)",
                                  "--", "/bin/sh", "-c", "echo loss=0.5; echo loss=0.25"],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertIn("data to the server at " + url, run.stderr)
            self.assertEqual(run.stdout, "loss=0.5\nloss=0.25\n")
            with urllib.request.urlopen(url + "/api/v1/jobs/via-server", timeout=30) as r:
                job = json.load(r)
            self.assertEqual(job["status"], "Completed")
            self.assertEqual(job["final_metrics"][0]["value"], 0.25)
            self.assertFalse(os.listdir(os.path.join(self.data, "spool")), "spool left behind")
            # Jobs at once on one folder, each through the server.
            runs = [subprocess.Popen([TRAINWATCH, "run", "--data", self.data, "--name", "par-%d" % i,
                                      "--profile-interval", "off", "--metric", "loss=loss=([0-9.]+)",
                                      "--", "/bin/sh", "-c",
                                      "for i in 1 2 3 4 5; do echo loss=0.$i; sleep 0.2; done"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for i in range(3)]
            for p in runs:
                out, err = p.communicate(timeout=120)
                self.assertEqual(p.returncode, 0, err)
            for i in range(3):
                with urllib.request.urlopen(url + "/api/v1/jobs/par-%d" % i, timeout=30) as r:
                    job = json.load(r)
                self.assertEqual(job["status"], "Completed")
                self.assertEqual(job["final_metrics"][0]["value"], 0.5)
            # The read commands work beside the server (as its followers).
            describe = subprocess.run([TRAINWATCH, "describe", "via-server", "--data", self.data],
                                      capture_output=True, text=True, timeout=60)
            self.assertEqual(describe.returncode, 0, describe.stderr)
            self.assertIn("Completed", describe.stdout)
            if has_boto3():
                script = (
                    "import boto3, datetime, sys\n"
                    "cw = boto3.client('cloudwatch', endpoint_url=sys.argv[1], region_name='us-east-1',"
                    " aws_access_key_id='k', aws_secret_access_key='s')\n"
                    "now = datetime.datetime.now(datetime.timezone.utc)\n"
                    "cw.put_metric_data(Namespace='Custom', MetricData=[{'MetricName': 'm',"
                    " 'Value': 3.0, 'Unit': 'Count', 'StorageResolution': 1}])\n"
                    "r = cw.get_metric_statistics(Namespace='Custom', MetricName='m',"
                    " StartTime=now - datetime.timedelta(minutes=5),"
                    " EndTime=now + datetime.timedelta(minutes=5), Period=60, Statistics=['Sum'])\n"
                    "print(sum(d['Sum'] for d in r['Datapoints']))\n")
                env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true", HOME=self.dir)
                out = subprocess.run(["/usr/bin/python3", "-c", script, url], capture_output=True,
                                     text=True, env=env, timeout=120)
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertEqual(out.stdout.split(), ["3.0"])
        finally:
            self.stop(proc)
        self.assertFalse(os.path.exists(os.path.join(self.data, "server.json")))

    def test_refuses_other_addresses_without_auth(self):
        p = subprocess.run([TRAINWATCH, "server", "--listen", "0.0.0.0:0", "--data", self.data],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--auth", p.stderr)
        p = subprocess.run([TRAINWATCH, "server", "--listen", "nonsense", "--data", self.data],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("HOST:PORT", p.stderr)

    def test_auth_file_makes_signatures_required(self):
        auth = os.path.join(self.dir, "auth")
        with open(auth, "w") as f:
            f.write("AKIDEXAMPLE wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n")
        proc, url = self.start("--auth", auth)
        try:
            req = urllib.request.Request(url + "/", data=b"{}", method="POST", headers={
                "X-Amz-Target": "SageMaker.ListTrainingJobs", "Content-Type": "application/x-amz-json-1.1"})
            with self.assertRaises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(req, timeout=30)
            self.assertEqual(err.exception.code, 400)
            self.assertEqual(json.load(err.exception)["__type"], "MissingAuthenticationTokenException")
        finally:
            self.stop(proc)


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--trainwatch" in args:
        i = args.index("--trainwatch")
        TRAINWATCH = args[i + 1]
        del args[i:i + 2]
    if not TRAINWATCH or not os.path.exists(TRAINWATCH):
        sys.exit("usage: server_command_test.py --trainwatch PATH/trainwatch")
    unittest.main(argv=[sys.argv[0], "-v", *args])
