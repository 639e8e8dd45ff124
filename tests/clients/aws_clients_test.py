#!/usr/bin/python3
"""Drives the real AWS clients against trainwatch's server (tw_test_server: the
server with the in-memory fake backend), the way users do:

  * Debian's /usr/bin/aws (AWS CLI v2.9, query protocol to CloudWatch),
  * /usr/bin/python3 with Debian's boto3 1.26 (query protocol),
  * the `aws` and `python3` first on PATH when they are other installs
    (e.g. awscli 1.45 / botocore 1.43: AWS JSON 1.0 to CloudWatch).

A client that is not installed is skipped with a notice.

Usage: aws_clients_test.py --server PATH/tw_test_server [unittest args]
Standard library only; run it with /usr/bin/python3.
"""
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

SERVER = None
KEY, SECRET = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"


class Server:
    """tw_test_server on a free loopback port; stopped with SIGTERM."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([SERVER, "--listen", "127.0.0.1:0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.proc.kill()
            raise RuntimeError("tw_test_server did not start: %r %s" % (line, self.proc.stderr.read()))
        self.url = "http://" + line.split()[-1]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        stderr = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        if self.proc.returncode != 0:
            raise RuntimeError("tw_test_server exited with %d: %s" % (self.proc.returncode, stderr))


def client_env(home, secret=SECRET):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({
        "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": secret,
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_PAGER": "", "HOME": home,
        "AWS_CONFIG_FILE": os.path.join(home, "config"),
        "AWS_SHARED_CREDENTIALS_FILE": os.path.join(home, "credentials"),
    })
    return env


def find_on_path(name, not_this):
    """The `name` first on PATH, unless it resolves to the same file as `not_this`."""
    found = shutil.which(name)
    if not found:
        return None
    try:
        if os.path.exists(not_this) and os.path.samefile(os.path.realpath(found), not_this):
            return None
    except OSError:
        return None
    return found


def has_boto3(python):
    if not python or not os.path.exists(python) and not shutil.which(python):
        return False
    return subprocess.run([python, "-c", "import boto3"], capture_output=True).returncode == 0


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class CliTests:
    """Mixin: the same scenario for one `aws` executable."""
    AWS = None
    PROTOCOL = None

    @classmethod
    def setUpClass(cls):
        if not cls.AWS:
            raise unittest.SkipTest("%s: this AWS CLI is not installed" % cls.__name__)
        cls.home = tempfile.mkdtemp(prefix="tw-aws-home-")
        cls.server = Server()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.home, ignore_errors=True)

    def aws(self, *args, ok=True):
        p = subprocess.run([self.AWS, "--endpoint-url", self.server.url, "--output", "json", *args],
                           capture_output=True, text=True, env=client_env(self.home), timeout=120)
        if ok:
            self.assertEqual(p.returncode, 0, "aws %s failed: %s" % (" ".join(args), p.stderr))
            return json.loads(p.stdout) if p.stdout.strip() else {}
        self.assertNotEqual(p.returncode, 0, "aws %s should have failed" % " ".join(args))
        return p.stderr

    def test_metrics(self):
        now = int(time.time())
        ns = "TrainWatch/cli"
        data = [
            {"MetricName": "train:loss", "Dimensions": [{"Name": "TrainingJobName", "Value": "j1"}],
             "Timestamp": iso(now - 120 + i), "Value": 0.5 - i / 100, "StorageResolution": 1}
            for i in range(10)]
        data.append({"MetricName": "step_ms", "Timestamp": iso(now - 120), "Unit": "Milliseconds",
                     "Values": [100, 200, 300, 400], "Counts": [1, 1, 1, 97]})
        self.aws("cloudwatch", "put-metric-data", "--namespace", ns, "--metric-data", json.dumps(data))
        stats = self.aws("cloudwatch", "get-metric-statistics", "--namespace", ns,
                         "--metric-name", "step_ms", "--start-time", iso(now - 600),
                         "--end-time", iso(now + 60), "--period", "60",
                         "--extended-statistics", "p50", "p99", "p100")
        self.assertEqual(len(stats["Datapoints"]), 1, stats)
        ext = stats["Datapoints"][0]["ExtendedStatistics"]
        self.assertEqual((ext["p50"], ext["p99"], ext["p100"]), (400.0, 400.0, 400.0))
        stats = self.aws("cloudwatch", "get-metric-statistics", "--namespace", ns,
                         "--metric-name", "train:loss", "--dimensions", "Name=TrainingJobName,Value=j1",
                         "--start-time", iso(now - 600), "--end-time", iso(now + 60),
                         "--period", "1", "--statistics", "Average", "SampleCount")
        self.assertEqual(len(stats["Datapoints"]), 10)
        self.assertEqual(stats["Label"], "train:loss")
        queries = [{"Id": "loss", "MetricStat": {"Metric": {"Namespace": ns, "MetricName": "train:loss",
                    "Dimensions": [{"Name": "TrainingJobName", "Value": "j1"}]}, "Period": 1,
                    "Stat": "Maximum"}}]
        # --page-size 3 (MaxDatapoints on the wire): the CLI follows NextToken to completion.
        got = self.aws("cloudwatch", "get-metric-data", "--metric-data-queries", json.dumps(queries),
                       "--start-time", iso(now - 600), "--end-time", iso(now + 60),
                       "--scan-by", "TimestampAscending", "--page-size", "3")
        values = [v for r in got["MetricDataResults"] for v in r["Values"]]
        self.assertEqual(values, [0.5 - i / 100 for i in range(10)])  # exact round trip
        self.assertNotIn("NextToken", got)
        listed = self.aws("cloudwatch", "list-metrics", "--namespace", ns)
        self.assertEqual(sorted(m["MetricName"] for m in listed["Metrics"]), ["step_ms", "train:loss"])
        err = self.aws("cloudwatch", "put-metric-data", "--namespace", ns, "--metric-name", "x",
                       "--value", "1", "--timestamp", iso(now - 30 * 86400), ok=False)
        self.assertIn("InvalidParameterValue", err)
        self.assertIn("within the past two weeks", err)

    def test_logs(self):
        group, stream = "/aws/sagemaker/TrainingJobs", "cli-job/algo-1-1736942400"
        self.aws("logs", "create-log-group", "--log-group-name", group)
        self.aws("logs", "create-log-stream", "--log-group-name", group, "--log-stream-name", stream)
        now_ms = int(time.time() * 1000)
        events = [{"timestamp": now_ms - 5000 + i, "message": "epoch=%d train_loss=0.%d" % (i, 9 - i)}
                  for i in range(5)] + [{"timestamp": now_ms, "message": "ERROR out of memory"}]
        self.aws("logs", "put-log-events", "--log-group-name", group, "--log-stream-name", stream,
                 "--log-events", json.dumps(events))
        streams = self.aws("logs", "describe-log-streams", "--log-group-name", group,
                           "--log-stream-name-prefix", "cli-job/")
        self.assertEqual([s["logStreamName"] for s in streams["logStreams"]], [stream])
        got = self.aws("logs", "get-log-events", "--log-group-name", group, "--log-stream-name",
                       stream, "--start-from-head", "--limit", "4")
        self.assertEqual(got["events"][0]["message"], "epoch=0 train_loss=0.9")
        self.assertTrue(got["nextForwardToken"].startswith("f/"))
        filtered = self.aws("logs", "filter-log-events", "--log-group-name", group,
                            "--filter-pattern", "ERROR")
        self.assertEqual([e["message"] for e in filtered["events"]], ["ERROR out of memory"])
        err = self.aws("logs", "get-log-events", "--log-group-name", "/no/such/group",
                       "--log-stream-name", "x", ok=False)
        self.assertIn("ResourceNotFoundException", err)

    def test_sagemaker(self):
        job = {
            "TrainingJobName": "cli-job-1",
            "AlgorithmSpecification": {"TrainingImage": "local/trainer:latest", "TrainingInputMode": "File",
                                       "MetricDefinitions": [{"Name": "train:loss", "Regex": "loss=([0-9.]+)"}]},
            "RoleArn": "arn:aws:iam::000000000000:role/TrainWatchLocal",
            "OutputDataConfig": {"S3OutputPath": "s3://bucket/output"},
            "ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30},
            "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        }
        path = os.path.join(self.home, "job.json")
        with open(path, "w") as f:
            json.dump(job, f)
        created = self.aws("sagemaker", "create-training-job", "--cli-input-json", "file://" + path)
        self.assertEqual(created["TrainingJobArn"],
                         "arn:aws:sagemaker:us-east-1:000000000000:training-job/cli-job-1")
        err = self.aws("sagemaker", "create-training-job", "--cli-input-json", "file://" + path, ok=False)
        self.assertIn("ResourceInUse", err)
        described = self.aws("sagemaker", "describe-training-job", "--training-job-name", "cli-job-1")
        self.assertEqual(described["TrainingJobStatus"], "InProgress")
        self.assertEqual(described["ModelArtifacts"]["S3ModelArtifacts"],
                         "s3://bucket/output/cli-job-1/output/model.tar.gz")
        job["TrainingJobName"] = "cli-job-2"
        with open(path, "w") as f:
            json.dump(job, f)
        self.aws("sagemaker", "create-training-job", "--cli-input-json", "file://" + path)
        # --page-size 1: the CLI follows NextToken through every page.
        listed = self.aws("sagemaker", "list-training-jobs", "--name-contains", "cli-job",
                          "--sort-by", "Name", "--page-size", "1")
        self.assertEqual([s["TrainingJobName"] for s in listed["TrainingJobSummaries"]],
                         ["cli-job-1", "cli-job-2"])
        self.aws("sagemaker", "stop-training-job", "--training-job-name", "cli-job-1")
        described = self.aws("sagemaker", "describe-training-job", "--training-job-name", "cli-job-1")
        self.assertEqual(described["TrainingJobStatus"], "Stopping")
        err = self.aws("sagemaker", "describe-training-job", "--training-job-name", "no-such-job", ok=False)
        self.assertIn("ValidationException", err)
        self.assertIn("Requested resource not found", err)


class DebianCli(CliTests, unittest.TestCase):
    AWS = "/usr/bin/aws" if os.path.exists("/usr/bin/aws") else None
    PROTOCOL = "query"


class PathCli(CliTests, unittest.TestCase):
    AWS = find_on_path("aws", "/usr/bin/aws")
    PROTOCOL = "json"


BOTO3_SCRIPT = textwrap.dedent(r'''
    import datetime, json, sys, time
    import boto3, botocore
    url, secret = sys.argv[1], sys.argv[2]
    kw = dict(endpoint_url=url, region_name="us-east-1", aws_access_key_id="AKIDEXAMPLE",
              aws_secret_access_key=secret)
    cw, logs, sm = boto3.client("cloudwatch", **kw), boto3.client("logs", **kw), boto3.client("sagemaker", **kw)
    out = {"botocore": botocore.__version__}
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    ns = "TrainWatch/boto3"
    # More than 10 KB: botocore >= 1.34.40 gzips this body.
    data = [{"MetricName": "m%03d" % i, "Dimensions": [{"Name": "Host", "Value": "algo-1"}],
             "Timestamp": now, "Value": float(i)} for i in range(300)]
    cw.put_metric_data(Namespace=ns, MetricData=data)
    pages = list(cw.get_paginator("list_metrics").paginate(Namespace=ns))
    out["listed"] = sum(len(p["Metrics"]) for p in pages)
    stats = cw.get_metric_statistics(
        Namespace=ns, MetricName="m007", Dimensions=[{"Name": "Host", "Value": "algo-1"}],
        StartTime=now - datetime.timedelta(minutes=5), EndTime=now + datetime.timedelta(minutes=1),
        Period=60, ExtendedStatistics=["p99"])
    out["p99"] = stats["Datapoints"][0]["ExtendedStatistics"]["p99"]
    try:
        cw.put_metric_data(Namespace=ns, MetricData=[{"MetricName": "x", "Value": float("nan")}])
        out["nan"] = "accepted"
    except cw.exceptions.InvalidParameterValueException as e:
        out["nan"] = e.response["Error"]["Code"]
    try:
        logs.get_log_events(logGroupName="/no/such/group", logStreamName="x")
    except logs.exceptions.ResourceNotFoundException as e:
        out["logs"] = e.response["Error"]["Code"]
    try:
        sm.describe_training_job(TrainingJobName="no-such-job")
    except botocore.exceptions.ClientError as e:
        out["sm"] = e.response["Error"]["Code"]
    job = dict(TrainingJobName="boto-job", AlgorithmSpecification={"TrainingImage": "i", "TrainingInputMode": "File"},
               RoleArn="arn:aws:iam::000000000000:role/TrainWatchLocal",
               OutputDataConfig={"S3OutputPath": "s3://b/o"},
               ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
               StoppingCondition={"MaxRuntimeInSeconds": 60})
    sm.create_training_job(**job)
    try:
        sm.create_training_job(**job)
    except sm.exceptions.ResourceInUse as e:
        out["inuse"] = e.response["Error"]["Code"]
    # Log groups and streams are records of their own (issue 31, item 1).
    def code(call, **args):
        try:
            call(**args)
            return "ok"
        except botocore.exceptions.ClientError as e:
            return e.response["Error"]["Code"]
    life = out["lifecycle"] = {}
    g, s = "/tw/lifecycle", "run-1"
    logs.create_log_group(logGroupName=g)
    life["create_again"] = code(logs.create_log_group, logGroupName=g)
    life["empty_group_streams"] = logs.describe_log_streams(logGroupName=g)["logStreams"]
    life["stream_without_group"] = code(logs.create_log_stream, logGroupName="/tw/none", logStreamName=s)
    logs.create_log_stream(logGroupName=g, logStreamName=s)
    life["stream_again"] = code(logs.create_log_stream, logGroupName=g, logStreamName=s)
    listed = logs.describe_log_streams(logGroupName=g)["logStreams"]
    life["empty_stream"] = sorted(listed[0]) if listed else None
    life["bad_retention"] = code(logs.put_retention_policy, logGroupName=g, retentionInDays=2)
    logs.put_retention_policy(logGroupName=g, retentionInDays=7)
    now_ms = int(time.time() * 1000)
    day = 86400 * 1000
    r = logs.put_log_events(logGroupName=g, logStreamName=s,
                            logEvents=[{"timestamp": now_ms - 20 * day, "message": "ancient"}])
    life["all_too_old"] = r.get("rejectedLogEventsInfo")
    # A batch spans at most 24 hours: too old and expired, then kept and too new.
    r = logs.put_log_events(logGroupName=g, logStreamName=s, logEvents=[
        {"timestamp": now_ms - 14 * day - 60000, "message": "ancient"},
        {"timestamp": now_ms - 13 * day - 120000, "message": "expired"}])
    life["old"] = r.get("rejectedLogEventsInfo")
    r = logs.put_log_events(logGroupName=g, logStreamName=s, logEvents=[
        {"timestamp": now_ms, "message": "kept"},
        {"timestamp": now_ms + 3 * 3600 * 1000, "message": "future"}])
    life["new"] = r.get("rejectedLogEventsInfo")
    life["stored"] = [e["message"] for e in logs.get_log_events(
        logGroupName=g, logStreamName=s, startFromHead=True)["events"]]
    life["no_stream"] = code(logs.put_log_events, logGroupName=g, logStreamName="none",
                             logEvents=[{"timestamp": now_ms, "message": "x"}])
    group = [x for x in logs.describe_log_groups(logGroupNamePrefix="/tw/")["logGroups"]
             if x["logGroupName"] == g][0]
    life["group"] = {k: group.get(k) for k in ("retentionInDays", "storedBytes")}
    life["group_has_arn_and_time"] = "arn" in group and group["creationTime"] > 0
    stream = logs.describe_log_streams(logGroupName=g)["logStreams"][0]
    life["stream_times"] = [stream.get(k) == now_ms for k in
                            ("firstEventTimestamp", "lastEventTimestamp")]
    logs.put_log_events(logGroupName=g, logStreamName=s, logEvents=[
        {"timestamp": now_ms + i, "message": json.dumps({"step": i, "loss": 1.0 / (i + 1), "phase": p})}
        for i, p in enumerate(["train", "train", "eval", "train"])])
    life["json_filter"] = [json.loads(e["message"])["step"] for e in logs.filter_log_events(
        logGroupName=g, filterPattern='{ $.loss < 0.6 && $.phase = "train" }')["events"]]
    life["delimited_filter"] = [e["message"] for e in logs.filter_log_events(
        logGroupName=g, filterPattern="[word = kept]")["events"]]
    life["bad_filter"] = code(logs.filter_log_events, logGroupName=g, filterPattern="{ $.loss > }")
    logs.delete_retention_policy(logGroupName=g)
    group = logs.describe_log_groups(logGroupNamePrefix=g)["logGroups"][0]
    life["retention_after_delete"] = group.get("retentionInDays")
    logs.delete_log_stream(logGroupName=g, logStreamName=s)
    life["stream_deleted_again"] = code(logs.delete_log_stream, logGroupName=g, logStreamName=s)
    logs.delete_log_group(logGroupName=g)
    life["group_deleted_again"] = code(logs.delete_log_group, logGroupName=g)
    life["streams_of_deleted"] = code(logs.describe_log_streams, logGroupName=g)
    print(json.dumps(out))
''')


class Boto3Tests:
    PYTHON = None

    @classmethod
    def setUpClass(cls):
        if not has_boto3(cls.PYTHON):
            raise unittest.SkipTest("%s: boto3 is not installed for this python" % cls.__name__)
        cls.server = Server()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def run_script(self, secret=SECRET):
        home = tempfile.mkdtemp(prefix="tw-boto3-home-")
        try:
            return subprocess.run([self.PYTHON, "-c", BOTO3_SCRIPT, self.server.url, secret],
                                  capture_output=True, text=True, env=client_env(home, secret), timeout=120)
        finally:
            shutil.rmtree(home, ignore_errors=True)

    def test_calls_and_modeled_exceptions(self):
        p = self.run_script()
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.assertEqual(out["listed"], 300)  # two ListMetrics pages
        self.assertEqual(out["p99"], 7.0)
        self.assertEqual(out["nan"], "InvalidParameterValue")
        self.assertEqual(out["logs"], "ResourceNotFoundException")
        self.assertEqual(out["sm"], "ValidationException")
        self.assertEqual(out["inuse"], "ResourceInUse")
        life = out["lifecycle"]
        self.assertEqual(life["create_again"], "ResourceAlreadyExistsException")
        self.assertEqual(life["empty_group_streams"], [])
        self.assertEqual(life["stream_without_group"], "ResourceNotFoundException")
        self.assertEqual(life["stream_again"], "ResourceAlreadyExistsException")
        self.assertEqual(life["empty_stream"], ["arn", "creationTime", "logStreamName", "storedBytes"])
        self.assertEqual(life["bad_retention"], "InvalidParameterException")
        self.assertEqual(life["all_too_old"], {"tooOldLogEventEndIndex": 1})
        self.assertEqual(life["old"], {"tooOldLogEventEndIndex": 1, "expiredLogEventEndIndex": 2})
        self.assertEqual(life["new"], {"tooNewLogEventStartIndex": 1})
        self.assertEqual(life["stored"], ["kept"])
        self.assertEqual(life["no_stream"], "ResourceNotFoundException")
        self.assertEqual(life["group"], {"retentionInDays": 7, "storedBytes": 4})
        self.assertTrue(life["group_has_arn_and_time"])
        self.assertEqual(life["stream_times"], [True, True])
        self.assertEqual(life["json_filter"], [1, 3])
        self.assertEqual(life["delimited_filter"], ["kept"])
        self.assertEqual(life["bad_filter"], "InvalidParameterException")
        self.assertIsNone(life["retention_after_delete"])
        self.assertEqual(life["stream_deleted_again"], "ResourceNotFoundException")
        self.assertEqual(life["group_deleted_again"], "ResourceNotFoundException")
        self.assertEqual(life["streams_of_deleted"], "ResourceNotFoundException")


class DebianBoto3(Boto3Tests, unittest.TestCase):
    PYTHON = "/usr/bin/python3"


class PathBoto3(Boto3Tests, unittest.TestCase):
    PYTHON = find_on_path("python3", "/usr/bin/python3")


class SignedRequests(unittest.TestCase):
    """With --auth the server checks SigV4; the clients sign with the auth file's key."""

    @classmethod
    def setUpClass(cls):
        cls.pythons = [p for p in ("/usr/bin/python3", find_on_path("python3", "/usr/bin/python3"))
                       if p and has_boto3(p)]
        if not cls.pythons:
            raise unittest.SkipTest("no python with boto3")
        cls.dir = tempfile.mkdtemp(prefix="tw-auth-")
        path = os.path.join(cls.dir, "auth")
        with open(path, "w") as f:
            f.write("# test credentials\n%s %s\n" % (KEY, SECRET))
        os.chmod(path, 0o600)
        cls.server = Server("--auth", path)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_right_and_wrong_secret(self):
        script = textwrap.dedent('''
            import sys, boto3, botocore
            cw = boto3.client("cloudwatch", endpoint_url=sys.argv[1], region_name="us-east-1",
                              aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key=sys.argv[2])
            try:
                cw.list_metrics()
                print("ok")
            except botocore.exceptions.ClientError as e:
                print(e.response["Error"]["Code"])
        ''')
        for python in self.pythons:
            ok = subprocess.run([python, "-c", script, self.server.url, SECRET],
                                capture_output=True, text=True, timeout=120)
            self.assertEqual(ok.stdout.strip(), "ok", ok.stderr)
            bad = subprocess.run([python, "-c", script, self.server.url, "wrong-secret"],
                                 capture_output=True, text=True, timeout=120)
            self.assertIn(bad.stdout.strip(), ("SignatureDoesNotMatch", "InvalidSignatureException"),
                          bad.stderr)


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--server" in args:
        i = args.index("--server")
        SERVER = args[i + 1]
        del args[i:i + 2]
    if not SERVER or not os.path.exists(SERVER):
        sys.exit("usage: aws_clients_test.py --server PATH/tw_test_server")
    unittest.main(argv=[sys.argv[0], "-v", *args])
