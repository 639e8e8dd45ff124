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
import time
import unittest
import urllib.error
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
            # The health answer names the build as `trainwatch version` does: the
            # release and, built from a git checkout, the commit (at least 12 hex
            # digits: git prints more where 12 are ambiguous). This assumes the
            # binary was built from the checkout the test runs from, as ctest does.
            version = subprocess.run([TRAINWATCH, "version"], capture_output=True, text=True,
                                     check=True).stdout.splitlines()[0]
            self.assertRegex(version, r"^trainwatch \d+\.\d+\.\d+"
                                      r"( \(commit [0-9a-f]{12,}(, with uncommitted changes)?\))?$")
            self.assertEqual(health["version"], version[len("trainwatch "):])
            source = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            top = (subprocess.run(["git", "-C", source, "rev-parse", "--show-toplevel"],
                                  capture_output=True, text=True)
                   if shutil.which("git") else None)
            if top and top.returncode == 0 and os.path.realpath(top.stdout.strip()) == os.path.realpath(source):
                self.assertIn("(commit ", version)
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
            # `trainwatch stop` from another terminal goes through the server.
            long_run = subprocess.Popen([TRAINWATCH, "run", "--data", self.data, "--name", "to-stop",
                                         "--profile-interval", "off", "--stop-grace", "5s", "--",
                                         "/bin/sleep", "600"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(300):
                try:
                    with urllib.request.urlopen(url + "/api/v1/jobs/to-stop", timeout=30) as r:
                        if json.load(r)["secondary_status"] == "Training":
                            break
                except urllib.error.HTTPError:
                    pass
                time.sleep(0.1)
            stop = subprocess.run([TRAINWATCH, "stop", "to-stop", "--data", self.data],
                                  capture_output=True, text=True, timeout=120)
            self.assertEqual(stop.returncode, 0, stop.stderr)
            self.assertIn("to-stop is Stopped", stop.stderr)
            long_run.communicate(timeout=60)
            self.assertEqual(long_run.returncode, 128 + 15)
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

    @unittest.skipUnless(has_boto3(), "needs /usr/bin/python3 with boto3")
    def test_create_training_job_runs_a_local_process_like_sagemaker_script_mode(self):
        proc, url = self.start()
        try:
            data_in = os.path.join(self.dir, "train-data")
            os.makedirs(data_in)
            with open(os.path.join(data_in, "rows.csv"), "w") as f:
                f.write("1,2\n")
            out = os.path.join(self.dir, "out")
            train = os.path.join(self.dir, "train.py")
            with open(train, "w") as f:
                f.write("import os, json, sys\n"
                        "assert sys.argv[1:] == ['--epochs', '2'], sys.argv\n"
                        "rows = open(os.path.join(os.environ['SM_CHANNEL_TRAIN'], 'rows.csv')).read()\n"
                        "assert json.load(open(os.environ['SM_INPUT_CONFIG_DIR'] + '/hyperparameters.json')) == {'epochs': '2'}\n"
                        "assert os.getcwd() == os.path.dirname(os.environ['SM_MODEL_DIR'])\n"
                        "open(os.environ['SM_MODEL_DIR'] + '/model.txt', 'w').write(rows)\n"
                        "for e in range(int(os.environ['SM_HP_EPOCHS'])):\n"
                        "    print('epoch', e, 'train_loss=%.2f' % (1.0 / (e + 1)), os.environ['TW_NOTE'])\n")
            script = (
                "import boto3, json, sys, time\n"
                "sm = boto3.client('sagemaker', endpoint_url=sys.argv[1], region_name='us-east-1',"
                " aws_access_key_id='k', aws_secret_access_key='s')\n"
                "train = sys.argv[2]\n"
                "sm.create_training_job(TrainingJobName='sm-local', HyperParameters={'epochs': '2'},"
                " AlgorithmSpecification={'TrainingImage': 'local/none', 'TrainingInputMode': 'File',"
                " 'ContainerEntrypoint': ['/usr/bin/python3', train],"
                " 'MetricDefinitions': [{'Name': 'train:loss', 'Regex': 'train_loss=([0-9.]+)'}]},"
                " RoleArn='arn:aws:iam::000000000000:role/R',"
                " InputDataConfig=[{'ChannelName': 'train', 'DataSource': {'S3DataSource': {"
                "'S3DataType': 'S3Prefix', 'S3Uri': 'file://" + data_in + "'}}}],"
                " OutputDataConfig={'S3OutputPath': 'file://" + out + "'},"
                " ResourceConfig={'InstanceType': 'ml.m5.large', 'InstanceCount': 1, 'VolumeSizeInGB': 1},"
                " StoppingCondition={'MaxRuntimeInSeconds': 600}, Environment={'TW_NOTE': 'note'})\n"
                "for _ in range(600):\n"
                "    d = sm.describe_training_job(TrainingJobName='sm-local')\n"
                "    if d['TrainingJobStatus'] in ('Completed', 'Failed', 'Stopped'): break\n"
                "    time.sleep(0.1)\n"
                "print(d['TrainingJobStatus'], d.get('FailureReason', ''))\n"
                "print(json.dumps({m['MetricName']: m['Value'] for m in d['FinalMetricDataList']}))\n"
                "print(d['ModelArtifacts']['S3ModelArtifacts'])\n"
                "sm.create_training_job(TrainingJobName='sm-long', AlgorithmSpecification={"
                "'TrainingImage': 'local/none', 'TrainingInputMode': 'File',"
                " 'ContainerEntrypoint': ['/bin/sleep', '600']}, RoleArn='arn:aws:iam::000000000000:role/R',"
                " OutputDataConfig={'S3OutputPath': 'file://" + out + "'},"
                " ResourceConfig={'InstanceType': 'ml.m5.large', 'InstanceCount': 1, 'VolumeSizeInGB': 1},"
                " StoppingCondition={'MaxRuntimeInSeconds': 600})\n"
                "sm.stop_training_job(TrainingJobName='sm-long')\n"
                "for _ in range(600):\n"
                "    d = sm.describe_training_job(TrainingJobName='sm-long')\n"
                "    if d['TrainingJobStatus'] == 'Stopped': break\n"
                "    time.sleep(0.1)\n"
                "print(d['TrainingJobStatus'])\n"
                "try:\n"
                "    sm.create_training_job(TrainingJobName='sm-bad', AlgorithmSpecification={"
                "'TrainingImage': 'local/none', 'TrainingInputMode': 'File'}, RoleArn='arn:aws:iam::000000000000:role/R',"
                " OutputDataConfig={'S3OutputPath': 's3://b/o'},"
                " ResourceConfig={'InstanceType': 'ml.m5.large', 'InstanceCount': 1, 'VolumeSizeInGB': 1},"
                " StoppingCondition={'MaxRuntimeInSeconds': 600})\n"
                "except Exception as e:\n"
                "    print(e.response['Error']['Code'], e.response['Error']['Message'])\n")
            env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true", HOME=self.dir)
            res = subprocess.run(["/usr/bin/python3", "-c", script, url, train], capture_output=True,
                                 text=True, env=env, timeout=240)
            self.assertEqual(res.returncode, 0, res.stderr)
            lines = res.stdout.splitlines()
            self.assertEqual(lines[0].strip(), "Completed", res.stdout)
            self.assertEqual(json.loads(lines[1]), {"train:loss": 0.5})
            self.assertEqual(lines[2], "file://%s/sm-local/output/model.tar.gz" % out)
            self.assertEqual(lines[3], "Stopped")
            self.assertIn("ContainerEntrypoint is required", lines[4])
            self.assertTrue(lines[4].startswith("ValidationException"), lines[4])
            tar = subprocess.run(["tar", "-tzf", "%s/sm-local/output/model.tar.gz" % out],
                                 capture_output=True, text=True)
            self.assertIn("./model.txt", tar.stdout.split())
            logs = subprocess.run([TRAINWATCH, "logs", "sm-local", "--data", self.data],
                                  capture_output=True, text=True, timeout=60)
            self.assertIn("epoch 1 train_loss=0.50 note", logs.stdout)
        finally:
            self.stop(proc)

    def test_an_alarm_on_a_jobs_metric_goes_to_alarm_and_stops_the_job(self):
        """CloudWatch alarms as users set them with awscli and boto3: evaluated
        live, their history kept, their action stopping the job, kept across a
        restart."""
        if not has_boto3():
            self.skipTest("Debian's python3-boto3 is not installed")
        proc, url = self.start()
        env = dict(os.environ, AWS_EC2_METADATA_DISABLED="true", HOME=self.dir,
                   AWS_ACCESS_KEY_ID="a", AWS_SECRET_ACCESS_KEY="b", AWS_DEFAULT_REGION="us-east-1",
                   AWS_CONFIG_FILE=os.path.join(self.dir, "c"),
                   AWS_SHARED_CREDENTIALS_FILE=os.path.join(self.dir, "k"), AWS_PAGER="")
        run = None
        try:
            run = subprocess.Popen([TRAINWATCH, "run", "--data", self.data, "--name", "diverges",
                                    "--profile-interval", "off", "--stop-grace", "5s", "--",
                                    "/bin/sleep", "600"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            # Debian's awscli (query protocol) sets the alarm: a loss above 5
            # in 2 of the last 3 ten-second periods stops the job.
            cli = shutil.which("aws", path="/usr/bin") or shutil.which("aws")
            if cli is None:
                self.skipTest("awscli is not installed")
            put = subprocess.run(
                [cli, "--endpoint-url", url, "cloudwatch", "put-metric-alarm",
                 "--alarm-name", "loss-diverged", "--namespace", "/aws/sagemaker/TrainingJobs",
                 "--metric-name", "train:loss", "--dimensions", "Name=TrainingJobName,Value=diverges",
                 "--statistic", "Maximum", "--period", "10", "--evaluation-periods", "3",
                 "--datapoints-to-alarm", "2", "--threshold", "5",
                 "--comparison-operator", "GreaterThanThreshold", "--alarm-actions", "StopTraining"],
                capture_output=True, text=True, env=env, timeout=120)
            self.assertEqual(put.returncode, 0, put.stderr)
            # An action trainwatch cannot run is refused, saying what it runs.
            bad = subprocess.run(
                [cli, "--endpoint-url", url, "cloudwatch", "put-metric-alarm",
                 "--alarm-name", "sns", "--namespace", "n", "--metric-name", "m",
                 "--statistic", "Average", "--period", "60", "--evaluation-periods", "1",
                 "--threshold", "1", "--comparison-operator", "GreaterThanThreshold",
                 "--alarm-actions", "arn:aws:sns:us-east-1:123456789012:ops"],
                capture_output=True, text=True, env=env, timeout=120)
            self.assertNotEqual(bad.returncode, 0)
            self.assertIn("InvalidParameterValue", bad.stderr)
            self.assertIn("StopTraining, exec:", bad.stderr)
            # Datapoints breach in two periods (high resolution: 10 s periods
            # see only such data, as in CloudWatch).
            script = (
                "import sys, time, boto3\n"
                "cw = boto3.client('cloudwatch', endpoint_url=sys.argv[1], region_name='us-east-1')\n"
                "for i in range(4):\n"
                "    cw.put_metric_data(Namespace='/aws/sagemaker/TrainingJobs', MetricData=[{\n"
                "        'MetricName': 'train:loss', 'Value': 9.0, 'StorageResolution': 1,\n"
                "        'Dimensions': [{'Name': 'TrainingJobName', 'Value': 'diverges'}]}])\n"
                "    time.sleep(5)\n"
                "for _ in range(120):\n"
                "    a = cw.describe_alarms(AlarmNames=['loss-diverged'])['MetricAlarms'][0]\n"
                "    if a['StateValue'] == 'ALARM': break\n"
                "    time.sleep(0.5)\n"
                "print(a['StateValue'])\n"
                "print(a['StateReason'])\n")
            out = subprocess.run(["/usr/bin/python3", "-c", script, url], capture_output=True,
                                 text=True, env=env, timeout=180)
            self.assertEqual(out.returncode, 0, out.stderr)
            state, reason = out.stdout.splitlines()[:2]
            self.assertEqual(state, "ALARM", reason)
            self.assertRegex(reason, r"^Threshold Crossed: [23] out of the last 3 datapoints \[9 \(")
            # The action stopped the job.
            run.communicate(timeout=60)
            self.assertEqual(run.returncode, 128 + 15)
            with urllib.request.urlopen(url + "/api/v1/jobs/diverges", timeout=30) as r:
                self.assertEqual(json.load(r)["status"], "Stopped")
            # AWS JSON 1.0 answers the same alarm, its history newest first.
            def json10(target, body):
                req = urllib.request.Request(
                    url + "/", data=json.dumps(body).encode(), method="POST",
                    headers={"Content-Type": "application/x-amz-json-1.0",
                             "X-Amz-Target": "GraniteServiceVersion20100801." + target})
                with urllib.request.urlopen(req, timeout=30) as r:
                    return json.load(r)
            alarms = json10("DescribeAlarmsForMetric", {
                "Namespace": "/aws/sagemaker/TrainingJobs", "MetricName": "train:loss",
                "Dimensions": [{"Name": "TrainingJobName", "Value": "diverges"}]})["MetricAlarms"]
            self.assertEqual([a["StateValue"] for a in alarms], ["ALARM"])
            history = json10("DescribeAlarmHistory", {"AlarmName": "loss-diverged"})["AlarmHistoryItems"]
            kinds = [h["HistoryItemType"] for h in history]
            self.assertEqual(kinds[-1], "ConfigurationUpdate")
            self.assertIn("Started action StopTraining", [h["HistorySummary"] for h in history])
            # A newer botocore on PATH speaks CBOR to CloudWatch: the same answers.
            other = shutil.which("python3")
            if other and not os.path.samefile(other, "/usr/bin/python3") and subprocess.run(
                    [other, "-c", "import boto3"], capture_output=True).returncode == 0:
                script = (
                    "import sys, boto3\n"
                    "cw = boto3.client('cloudwatch', endpoint_url=sys.argv[1], region_name='us-east-1')\n"
                    "a = cw.describe_alarms(StateValue='ALARM')['MetricAlarms']\n"
                    "print(a[0]['AlarmName'], a[0]['EvaluationPeriods'], a[0]['Threshold'],\n"
                    "      a[0]['StateUpdatedTimestamp'].year > 2000)\n")
                out = subprocess.run([other, "-c", script, url], capture_output=True, text=True,
                                     env=env, timeout=120)
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertEqual(out.stdout.split(), ["loss-diverged", "3", "5.0", "True"])
            self.assertIn("Alarm updated from INSUFFICIENT_DATA to ALARM",
                          [h["HistorySummary"] for h in history])
        finally:
            if run is not None and run.poll() is None:
                run.kill()
                run.communicate()
            self.stop(proc)
        # The alarm, its state and its history survive a restart.
        proc, url = self.start()
        try:
            script = (
                "import sys, boto3\n"
                "cw = boto3.client('cloudwatch', endpoint_url=sys.argv[1], region_name='us-east-1')\n"
                "a = cw.describe_alarms()['MetricAlarms']\n"
                "print([(x['AlarmName'], x['StateValue'], x['AlarmActions']) for x in a])\n"
                "cw.delete_alarms(AlarmNames=['loss-diverged'])\n"
                "print(len(cw.describe_alarms()['MetricAlarms']))\n")
            out = subprocess.run(["/usr/bin/python3", "-c", script, url], capture_output=True,
                                 text=True, env=env, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(out.stdout.splitlines(),
                             ["[('loss-diverged', 'ALARM', ['StopTraining'])]", "0"])
        finally:
            self.stop(proc)

    def test_a_slow_host_of_a_multi_host_job_is_found_as_a_straggler(self):
        """Three agents, separate processes, feed one job on one server; the
        one whose steps come three times slower is the Straggler finding."""
        proc, url = self.start()
        try:
            def host(n, pause, steps):
                loop = ('i=0; while [ $i -lt %d ]; do echo "step $i"; i=$((i+1)); sleep %s; done'
                        % (steps, pause))
                return subprocess.Popen(
                    [TRAINWATCH, "run", "--data", self.data, "--name", "ddp", "--host", str(n),
                     "--profile-interval", "off", "--metric", r"step=step (\d+)",
                     "--rule", "Straggler:window=8", "--", "/bin/sh", "-c", loop],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            hosts = [host(1, "0.2", 100), host(2, "0.2", 100), host(3, "0.6", 34)]
            for p in hosts:
                _, err = p.communicate(timeout=120)
                self.assertEqual(p.returncode, 0, err)
            with urllib.request.urlopen(url + "/api/v1/jobs/ddp", timeout=30) as r:
                job = json.load(r)
            self.assertEqual(len(job["hosts"]), 3)
            status = [s for s in job["rule_statuses"] if s["configuration_name"] == "Straggler"]
            self.assertEqual(len(status), 1, job["rule_statuses"])
            self.assertEqual(status[0]["status"], "IssuesFound", status[0])
            findings = [f for f in status[0]["findings"] if f["reason"] == "straggler"]
            self.assertEqual({f["subject"] for f in findings}, {"host algo-3"}, findings)
            self.assertIn("Host algo-3 made", findings[0]["message"])
            # Each host's own steps are a series of their own (the job's step
            # series is every host's, as on SageMaker).
            with urllib.request.urlopen(url + "/api/v1/metrics?namespace=trainwatch/JobEvents"
                                        "&metric=HostStep", timeout=30) as r:
                hosts_seen = {m["dimensions"].get("Host") for m in json.load(r)["metrics"]}
            self.assertEqual(hosts_seen, {"ddp/algo-1", "ddp/algo-2", "ddp/algo-3"})
        finally:
            self.stop(proc)

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


    def test_auth_covers_the_native_api_dashboard_and_metrics(self):
        """Under --auth, /api/v1/, /metrics and the dashboard want a key too:
        HTTP Basic (browsers, Prometheus, curl -u) or SigV4 (the agent and the
        Python client); the health check stays open for probes."""
        key, secret = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
        auth = os.path.join(self.dir, "auth")
        with open(auth, "w") as f:
            f.write("%s %s\n" % (key, secret))
        proc, url = self.start("--auth", auth)
        try:
            def get(path, user=None):
                req = urllib.request.Request(url + path)
                if user:
                    import base64
                    req.add_header("Authorization", "Basic " + base64.b64encode(user.encode()).decode())
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        return r.status, r.headers, r.read()
                except urllib.error.HTTPError as e:
                    return e.code, e.headers, e.read()

            status, _, _ = get("/api/v1/health")
            self.assertEqual(status, 200)
            for path in ("/api/v1/jobs", "/metrics", "/", "/ui/app.js", "/api/v1/nope"):
                status, headers, body = get(path)
                self.assertEqual(status, 401, path)
                self.assertEqual(headers["WWW-Authenticate"], 'Basic realm="trainwatch", charset="UTF-8"')
                error = json.loads(body)["error"]
                self.assertEqual(error["code"], "Unauthenticated")
                self.assertIn("curl -u KEY:SECRET", error["message"])
            status, _, body = get("/api/v1/jobs", key + ":wrong")
            self.assertEqual(status, 401)
            self.assertIn("not a pair", json.loads(body)["error"]["message"])
            status, _, body = get("/api/v1/jobs", key + ":" + secret)
            self.assertEqual((status, json.loads(body)["jobs"]), (200, []))
            status, _, body = get("/", key + ":" + secret)
            self.assertEqual(status, 200)
            self.assertIn(b"<html", body.lower())
            status, _, body = get("/metrics", key + ":" + secret)
            self.assertEqual(status, 200)
            self.assertIn(b"trainwatch_http_requests_total", body)

            # A run sends to the server signed with the environment's key; without
            # one it stops before its command starts, saying what to do.
            env = dict(os.environ, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret)
            p = subprocess.run([TRAINWATCH, "run", "--quiet", "--endpoint", url, "--name", "signed",
                                "--data", os.path.join(self.dir, "agent"), "--",
                                "/bin/sh", "-c", "echo loss: 0.5"],
                               capture_output=True, text=True, timeout=120, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            status, _, body = get("/api/v1/jobs/signed", key + ":" + secret)
            self.assertEqual(status, 200, body)
            self.assertEqual(json.loads(body)["status"], "Completed")
            unsigned = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
            started = time.monotonic()
            p = subprocess.run([TRAINWATCH, "run", "--quiet", "--endpoint", url, "--name", "unsigned",
                                "--data", os.path.join(self.dir, "agent2"), "--",
                                "/bin/sh", "-c", "touch " + os.path.join(self.dir, "ran")],
                               capture_output=True, text=True, timeout=120, env=unsigned)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("AWS_ACCESS_KEY_ID", p.stderr)
            self.assertLess(time.monotonic() - started, 20)
            self.assertFalse(os.path.exists(os.path.join(self.dir, "ran")))

            # The Python client's Trial signs its reads with the same key.
            source = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            script = ("import sys, trainwatch\n"
                      "t = trainwatch.Trial('signed', endpoint=sys.argv[1])\n"
                      "print(t.record()['status'])\n")
            p = subprocess.run(["/usr/bin/python3", "-c", script, url], capture_output=True, text=True,
                               timeout=120, env=dict(env, PYTHONPATH=os.path.join(source, "python")))
            self.assertEqual(p.stdout.strip(), "Completed", p.stderr)
        finally:
            self.stop(proc)


    def test_jobs_a_server_with_auth_starts_send_their_metrics_without_a_key(self):
        """A CreateTrainingJob script holds no key of the auth file: what it logs
        through the Python client still reaches the server (a loopback endpoint
        of the server's own jobs)."""
        if not has_boto3():
            self.skipTest("no boto3 for /usr/bin/python3 (apt-get install python3-boto3)")
        key, secret = "AKIDJOBS", "jobs-secret"
        auth = os.path.join(self.dir, "auth")
        with open(auth, "w") as f:
            f.write("%s %s\n" % (key, secret))
        proc, url = self.start("--auth", auth)
        try:
            train = os.path.join(self.dir, "train.py")
            with open(train, "w") as f:
                f.write("import os, trainwatch\n"
                        "assert 'AWS_ACCESS_KEY_ID' not in os.environ\n"
                        "run = trainwatch.Run()\n"
                        "run.log_metric('val:acc', 0.75, step=1)\n"
                        "run.close()\n")
            script = (
                "import boto3, sys, time\n"
                "sm = boto3.client('sagemaker', endpoint_url=sys.argv[1], region_name='us-east-1',"
                " aws_access_key_id=sys.argv[3], aws_secret_access_key=sys.argv[4])\n"
                "sm.create_training_job(TrainingJobName='sm-auth', AlgorithmSpecification={"
                "'TrainingImage': 'local/none', 'TrainingInputMode': 'File',"
                " 'ContainerEntrypoint': ['/usr/bin/python3', sys.argv[2]]},"
                " RoleArn='arn:aws:iam::000000000000:role/R',"
                " OutputDataConfig={'S3OutputPath': 'file://" + os.path.join(self.dir, "out") + "'},"
                " ResourceConfig={'InstanceType': 'ml.m5.large', 'InstanceCount': 1, 'VolumeSizeInGB': 1},"
                " StoppingCondition={'MaxRuntimeInSeconds': 600})\n"
                "for _ in range(600):\n"
                "    d = sm.describe_training_job(TrainingJobName='sm-auth')\n"
                "    if d['TrainingJobStatus'] in ('Completed', 'Failed', 'Stopped'): break\n"
                "    time.sleep(0.1)\n"
                "print(d['TrainingJobStatus'], d.get('FailureReason', ''))\n")
            env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
            env.update(AWS_EC2_METADATA_DISABLED="true", HOME=self.dir)
            res = subprocess.run(["/usr/bin/python3", "-c", script, url, train, key, secret],
                                 capture_output=True, text=True, env=env, timeout=240)
            self.assertEqual(res.returncode, 0, res.stderr)
            self.assertEqual(res.stdout.splitlines()[0].strip(), "Completed", res.stdout)
            import base64
            req = urllib.request.Request(url + "/api/v1/jobs/sm-auth/series", headers={
                "Authorization": "Basic " + base64.b64encode((key + ":" + secret).encode()).decode()})
            with urllib.request.urlopen(req, timeout=30) as r:
                series = json.load(r)["series"]
            self.assertIn("val:acc", [s["metric"] for s in series], series)
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
