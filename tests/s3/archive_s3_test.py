#!/usr/bin/python3
"""`trainwatch archive --to s3://...` against a real S3-compatible server
(s3rver from npm, web/node_modules) on loopback, through a small proxy that can
fail requests and checks every signature: a large object goes up in parts, a
part that fails is sent again, a server that keeps failing mid-upload leaves
no partial object (the upload is aborted and the segment has no manifest), wrong credentials give a
clear error and delete nothing locally, and what was archived reads back with
Debian's boto3 and the client's trainwatch.archive, sample for sample.

The test starts s3rver and the proxy itself and stops them; without node or
s3rver it is skipped with a notice.

Usage: archive_s3_test.py --trainwatch PATH/trainwatch --source SRC [unittest args]
Run with /usr/bin/python3 (boto3 from python3-boto3).
"""
import http.client
import http.server
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

TRAINWATCH = None
SOURCE = None
JOB = "big-1"
BUCKET = "runs"
KEY_ID = SECRET = "S3RVER"  # s3rver's built-in account
IMPORTED = 2 * 300_000      # samples imported for the job: a samples.csv.gz of about 10 MiB


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FaultyProxy(http.server.ThreadingHTTPServer):
    """Forwards every request to s3rver unchanged (the Host header too: it is
    signed) and records it; `fail(request)` returning a status answers that
    instead."""

    daemon_threads = True

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.requests = []
        self.fail = lambda method, path: None
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", free_port()), ProxyHandler)


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _signature_matches(self, body):
        """s3rver checks only the access key id: the signature is checked here,
        recomputed with botocore's S3 signer for the secret s3rver holds."""
        from botocore.auth import S3SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        auth_header = self.headers.get("Authorization", "")
        try:
            signed = auth_header.split("SignedHeaders=")[1].split(",")[0].split(";")
            given = auth_header.split("Signature=")[1].strip()
        except IndexError:
            return False
        # The payload's hash is signed: it must be the body's.
        import hashlib
        if self.headers.get("X-Amz-Content-SHA256") != hashlib.sha256(body).hexdigest():
            return False
        headers = {name: self.headers[name] for name in signed if name in self.headers}
        request = AWSRequest(method=self.command,
                             url="http://%s%s" % (self.headers["Host"], self.path),
                             data=body, headers=headers)
        request.context["timestamp"] = self.headers.get("X-Amz-Date", "")
        signer = S3SigV4Auth(Credentials(KEY_ID, SECRET), "s3", "us-east-1")
        canonical = signer.canonical_request(request)
        expected = signer.signature(signer.string_to_sign(request, canonical), request)
        return expected == given

    def _forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with self.server.lock:
            self.server.requests.append((self.command, self.path))
        status = self.server.fail(self.command, self.path)
        if not status and not self._signature_matches(body):
            status = 403
        if status:
            payload = (b"<Error><Code>SignatureDoesNotMatch</Code><Message>The request "
                       b"signature we calculated does not match the signature you provided."
                       b"</Message></Error>" if status == 403 else
                       b"<Error><Code>InternalError</Code><Message>injected by the test"
                       b"</Message></Error>")
            self.send_response(status)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        conn = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=60)
        conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for name, value in self.headers.items():
            conn.putheader(name, value)
        conn.endheaders(body)
        r = conn.getresponse()
        data = r.read()
        self.send_response(r.status)
        for name, value in r.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward


def run(*args, env=None, check=True):
    p = subprocess.run([TRAINWATCH, *args], capture_output=True, text=True, env=env, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError("trainwatch %s failed (%d):\n%s\n%s" %
                             (" ".join(args), p.returncode, p.stdout, p.stderr))
    return p


class ArchiveS3Test(unittest.TestCase):
    """s3rver checks the access key id; the proxy in front of it checks each
    request's SigV4 signature as S3 would (with botocore's signer)."""

    @classmethod
    def setUpClass(cls):
        node = shutil.which("node")
        s3rver = os.path.join(SOURCE, "web", "node_modules", "s3rver", "bin", "s3rver.js")
        if not node or not os.path.exists(s3rver):
            raise unittest.SkipTest("SKIPPED: needs node and s3rver (npm ci in web/; "
                                    "scripts/install-deps installs them)")
        try:
            import boto3  # noqa: F401
        except ImportError:
            raise unittest.SkipTest("SKIPPED: needs boto3 (Debian: python3-boto3)")
        cls.root = tempfile.mkdtemp(prefix="tw-archive-s3-")
        cls.s3_port = free_port()
        cls.s3_log = open(os.path.join(cls.root, "s3rver.log"), "w")
        cls.s3 = subprocess.Popen(
            [node, s3rver, "-d", os.path.join(cls.root, "s3"), "-a", "127.0.0.1", "-p",
             str(cls.s3_port), "--configure-bucket", BUCKET, "--no-vhost-buckets"],
            stdout=cls.s3_log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", cls.s3_port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline or cls.s3.poll() is not None:
                    raise AssertionError("s3rver did not start (see %s)" % cls.s3_log.name)
                time.sleep(0.2)
        cls.proxy = FaultyProxy(cls.s3_port)
        threading.Thread(target=cls.proxy.serve_forever, daemon=True).start()
        cls.endpoint = "http://127.0.0.1:%d" % cls.proxy.server_address[1]
        cls.env = dict(os.environ, AWS_ACCESS_KEY_ID=KEY_ID, AWS_SECRET_ACCESS_KEY=SECRET,
                       AWS_REGION="us-east-1")
        # A finished job with its log, and a few MiB of its metrics.
        cls.data = os.path.join(cls.root, "data")
        run("run", "--data", cls.data, "--name", JOB, "--metric", "loss=loss: ([0-9.]+)",
            "--", "sh", "-c", "for i in 1 2 3; do echo loss: 0.$i; done")
        record = json.loads(run("describe", "--data", cls.data, JOB, "--json").stdout)
        t0 = int(record["CreationTime"] * 1000)
        rng = random.Random(7)
        path = os.path.join(cls.root, "big.vmimport")
        with open(path, "w") as f:
            for metric in ("grad_norm", "weight_norm"):
                n = IMPORTED // 2
                f.write(json.dumps({
                    "metric": {"__name__": metric, "namespace": "/aws/sagemaker/TrainingJobs",
                               "TrainingJobName": JOB},
                    "values": [rng.random() for _ in range(n)],
                    "timestamps": [t0 - n + i for i in range(n)]}) + "\n")
        run("import", "--data", cls.data, "--keep", "forever", "--quiet", path)
        cls.boto = __import__("boto3").client(
            "s3", endpoint_url="http://127.0.0.1:%d" % cls.s3_port, aws_access_key_id=KEY_ID,
            aws_secret_access_key=SECRET, region_name="us-east-1")

    @classmethod
    def tearDownClass(cls):
        cls.proxy.shutdown()
        cls.proxy.server_close()
        cls.s3.terminate()
        cls.s3.wait(timeout=30)
        cls.s3_log.close()
        shutil.rmtree(cls.root, ignore_errors=True)

    def setUp(self):
        self.proxy.fail = lambda method, path: None
        with self.proxy.lock:
            self.proxy.requests.clear()

    def archive(self, prefix, env=None, check=True):
        return run("archive", "--data", self.data, "--to", "s3://%s/%s" % (BUCKET, prefix),
                   "--endpoint", self.endpoint, "--part-size", "5", "--settle", "0s", JOB,
                   env=env or self.env, check=check)

    def keys(self, prefix):
        pages = self.boto.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def download(self, prefix):
        folder = tempfile.mkdtemp(dir=self.root)
        for key in self.keys(prefix + "/"):
            path = os.path.join(folder, key[len(prefix) + 1:])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self.boto.download_file(BUCKET, key, path)
        return folder

    def read_back(self, prefix):
        return self.read_back_from(prefix, JOB)

    def test_a_job_goes_up_in_parts_and_reads_back_sample_for_sample(self):
        p = self.archive("whole")
        self.assertIn("(complete)", p.stdout)
        methods = [(m, path) for m, path in self.proxy.requests]
        self.assertTrue(any(m == "POST" and path.endswith("?uploads=") for m, path in methods),
                        "no multipart upload was started: %s" % methods[:10])
        parts = [path for m, path in methods if m == "PUT" and "partNumber=" in path]
        self.assertGreaterEqual(len(parts), 2)
        job = self.read_back("whole")
        self.assertTrue(job.complete)
        self.assertEqual(job.record["status"], "Completed")
        grad = job.samples(metric="grad_norm")
        self.assertEqual(len(grad), IMPORTED // 2)
        rng = random.Random(7)
        self.assertEqual([s["value"] for s in grad], [rng.random() for _ in range(IMPORTED // 2)])
        self.assertEqual([s["value"] for s in job.samples(metric="loss")], [0.1, 0.2, 0.3])
        algo = [e["message"] for e in job.logs() if e["stream"] == job.record["log_stream"]]
        self.assertEqual(algo, ["loss: 0.1", "loss: 0.2", "loss: 0.3"])
        # The rules' findings are archived too (their own stream).
        self.assertTrue(any('"rule":"CPUBottleneck"' in e["message"] for e in job.logs()))
        frame = job.samples_frame(metric="weight_norm")
        self.assertEqual(len(frame), IMPORTED // 2)
        # Nothing new: the next run writes nothing.
        self.assertIn("nothing new", self.archive("whole").stdout)

    def test_a_part_that_fails_once_is_sent_again(self):
        failed = []

        def fail(method, path):
            if method == "PUT" and "partNumber=2&" in path and not failed:
                failed.append(path)
                return 503
            return None
        self.proxy.fail = fail
        self.archive("retried")
        self.assertEqual(len(failed), 1)
        part2 = [path for m, path in self.proxy.requests if m == "PUT" and "partNumber=2&" in path]
        self.assertEqual(len(part2), 2)  # the failure, then the retry
        self.assertEqual(len(self.read_back("retried").samples(metric="grad_norm")), IMPORTED // 2)

    def test_a_server_failing_mid_upload_leaves_no_partial_object(self):
        self.proxy.fail = lambda m, path: 500 if m == "PUT" and "partNumber=2&" in path else None
        p = self.archive("broken", check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("part 2", p.stderr)
        self.assertIn("still failing after 5 attempts", p.stderr)
        aborts = [path for m, path in self.proxy.requests if m == "DELETE" and "uploadId=" in path]
        self.assertEqual(len(aborts), 1, self.proxy.requests)
        keys = self.keys("broken/")
        self.assertFalse([k for k in keys if k.endswith("samples.csv.gz")], keys)
        self.assertFalse([k for k in keys if k.endswith("manifest.json")], keys)
        # The abort above is what S3 needs to drop the parts (s3rver 3.7 implements neither
        # AbortMultipartUpload nor ListMultipartUploads, so they are not checked there).
        # The server recovers: the next run writes the whole segment.
        self.proxy.fail = lambda method, path: None
        self.assertIn("(complete)", self.archive("broken").stdout)
        self.assertEqual(len(self.read_back("broken").samples(metric="grad_norm")), IMPORTED // 2)

    def test_wrong_credentials_are_a_clear_error_and_nothing_is_deleted_locally(self):
        env = dict(self.env, AWS_SECRET_ACCESS_KEY="not-the-secret")
        p = self.archive("refused", env=env, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("refused the credentials", p.stderr)
        self.assertIn("SignatureDoesNotMatch", p.stderr)
        self.assertIn("AWS_SECRET_ACCESS_KEY", p.stderr)
        self.assertEqual(self.keys("refused/"), [])
        # Every sample is still in the data folder.
        m = run("metrics", "--data", self.data, JOB, "--format", "json").stdout
        self.assertIn("grad_norm", m)
        self.assertEqual(len(self.read_back_local()), IMPORTED // 2)

    def read_back_local(self):
        folder = os.path.join(self.root, "local-check")
        shutil.rmtree(folder, ignore_errors=True)
        run("archive", "--data", self.data, "--to", folder, "--quiet", "--settle", "0s", JOB)
        sys.path.insert(0, os.path.join(SOURCE, "python"))
        from trainwatch import archive
        return archive.open_archive(folder).job(JOB).samples(metric="grad_norm")

    def test_an_archived_job_reads_back_whole_after_the_data_folder_dropped_its_samples(self):
        data = os.path.join(self.root, "old")
        run("run", "--data", data, "--name", "old-1", "--metric", "loss=loss: ([0-9.]+)",
            "--", "sh", "-c", "for i in 1 2 3 4 5 6; do echo loss: 0.$i; sleep 0.1; done")
        run("archive", "--data", data, "--to", "s3://%s/readback" % BUCKET, "--endpoint",
            self.endpoint, "--quiet", "--settle", "0s", env=self.env)
        # The data folder keeps raw samples a second, and drops them at compaction.
        with open(os.path.join(data, "retention.conf"), "w") as f:
            f.write("* raw=1s\n")
        time.sleep(2)
        run("admin", "compact", "--data", data)
        sys.path.insert(0, os.path.join(SOURCE, "python"))
        import trainwatch
        env = {"TRAINWATCH_BIN": TRAINWATCH, "AWS_ACCESS_KEY_ID": KEY_ID,
               "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "us-east-1"}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            with trainwatch.Trial("old-1", data=data) as trial:
                self.assertEqual(trial.metric("loss").values, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
            # A replay and the report read the archive too.
            def replay_inputs():
                return json.loads(run("rules", "replay", "--data", data, "old-1", "--rule",
                                      "LossNotDecreasing", "--json").stdout)["inputs"]
            with_archive = replay_inputs()
            run("report", "--data", data, "old-1", "--format", "json", "-o", "-")
            # Without the archive's record, the folder alone has lost them.
            os.rename(os.path.join(data, "archive.json"), os.path.join(data, "archive.off"))
            with trainwatch.Trial("old-1", data=data) as trial:
                self.assertEqual(trial.metric("loss").values, [])
            self.assertGreater(with_archive, replay_inputs())
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_the_server_archives_each_job_as_it_ends(self):
        data = os.path.join(self.root, "served")
        port = free_port()
        log = open(os.path.join(self.root, "server.log"), "w")
        server = subprocess.Popen(
            [TRAINWATCH, "server", "--data", data, "--listen", "127.0.0.1:%d" % port,
             "--archive", "s3://%s/served" % BUCKET, "--archive-endpoint", self.endpoint,
             "--archive-every", "1s", "--archive-settle", "0s"], stdout=log,
            stderr=subprocess.STDOUT, env=self.env)
        try:
            deadline = time.time() + 60
            while not os.path.exists(os.path.join(data, "server.json")):
                self.assertLess(time.time(), deadline, "the server did not start")
                self.assertIsNone(server.poll(), "the server exited")
                time.sleep(0.2)
            run("run", "--data", data, "--name", "served-1", "--metric", "loss=loss: ([0-9.]+)",
                "--", "sh", "-c", "for i in 1 2 3; do echo loss: 0.$i; done")
            key = "served/jobs/served-1/job.json"
            while True:
                if key in self.keys("served/jobs/"):
                    try:  # s3rver, unlike S3, serves an object while it is being replaced
                        doc = json.loads(self.boto.get_object(Bucket=BUCKET, Key=key)["Body"].read())
                    except json.JSONDecodeError:
                        doc = {"complete": False}
                    if doc["complete"]:
                        break
                self.assertLess(time.time(), deadline, "the job was not archived complete")
                time.sleep(0.5)
            self.assertEqual([s["value"] for s in self.read_back_from("served", "served-1")
                              .samples(metric="loss")], [0.1, 0.2, 0.3])
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port) as answer:
                metrics = answer.read().decode()
            segments = [line for line in metrics.splitlines()
                        if line.startswith("trainwatch_archive_segments_total ")]
            self.assertEqual(len(segments), 1, metrics[-2000:])
            self.assertGreaterEqual(float(segments[0].split()[1]), 1)

            # Late: a datapoint and a log event for the job archived complete,
            # stamped inside it, reach the archive as a late segment.
            record = json.loads(run("describe", "--data", data, "served-1", "--json").stdout)
            stamp = record["CreationTime"] + 0.5
            endpoint = "http://127.0.0.1:%d" % port
            import boto3
            import datetime
            when = datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc)
            boto3.client("cloudwatch", endpoint_url=endpoint, region_name="us-east-1",
                         aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET).put_metric_data(
                Namespace="/aws/sagemaker/TrainingJobs",
                MetricData=[{"MetricName": "loss", "Value": 0.05, "Timestamp": when,
                             "Dimensions": [{"Name": "TrainingJobName", "Value": "served-1"}]}])
            logs = boto3.client("logs", endpoint_url=endpoint, region_name="us-east-1",
                                aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET)
            stream = {"logGroupName": "/aws/sagemaker/TrainingJobs",
                      "logStreamName": "served-1/algo-1-late"}
            logs.create_log_stream(**stream)
            logs.put_log_events(**stream, logEvents=[{"timestamp": int(stamp * 1000),
                                                      "message": "a late line"}])
            # A pass may come between the two requests: then each has a late
            # segment of its own.
            while True:
                if any(k.endswith("/manifest.json")
                       for k in self.keys("served/jobs/served-1/late/")):
                    job = self.read_back_from("served", "served-1")
                    values = sorted(s["value"] for s in job.samples(metric="loss"))
                    lines = [e["message"] for e in job.logs()]
                    if 0.05 in values and "a late line" in lines:
                        break
                self.assertLess(time.time(), deadline + 60, "no late segment was written")
                time.sleep(0.5)
            self.assertEqual(values, [0.05, 0.1, 0.2, 0.3])
            self.assertEqual(lines.count("a late line"), 1)
            with urllib.request.urlopen(endpoint + "/metrics") as answer:
                metrics = answer.read().decode()
            late_segments = [line for line in metrics.splitlines()
                             if line.startswith("trainwatch_archive_late_segments_total ")]
            self.assertIn(late_segments, (["trainwatch_archive_late_segments_total 1"],
                                          ["trainwatch_archive_late_segments_total 2"]),
                          metrics[-2000:])
        finally:
            server.terminate()
            server.wait(timeout=60)
            log.close()

    def read_back_from(self, prefix, job):
        sys.path.insert(0, os.path.join(SOURCE, "python"))
        from trainwatch import archive
        return archive.open_archive(self.download(prefix)).job(job)

    def test_a_missing_bucket_says_to_create_it(self):
        # As for a folder's first archive: one where every job failed is not
        # recorded as where its jobs read back from.
        record = os.path.join(self.data, "archive.json")
        if os.path.exists(record):
            os.rename(record, record + ".saved")
        try:
            p = run("archive", "--data", self.data, "--to", "s3://no-such-bucket/x", "--endpoint",
                    self.endpoint, JOB, env=self.env, check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn("create the bucket first", p.stderr)
            self.assertFalse(os.path.exists(record), "an archive nothing reached is recorded")
        finally:
            if os.path.exists(record + ".saved"):
                os.replace(record + ".saved", record)


class ArchiveFolderTest(unittest.TestCase):
    """The writer and the Python reader agree, with nothing but a folder (runs
    without node or s3rver)."""

    def test_a_job_archived_to_a_folder_reads_back_with_the_python_reader(self):
        root = tempfile.mkdtemp(prefix="tw-archive-folder-")
        try:
            data = os.path.join(root, "data")
            run("run", "--data", data, "--name", "folder-1", "--metric", "loss=loss: ([0-9.]+)",
                "--", "sh", "-c", "for i in 1 2 3; do echo loss: 0.$i; done")
            # Ended just now: not complete until the settle time has passed.
            p = run("archive", "--data", data, "--to", os.path.join(root, "a"), "--quiet")
            self.assertNotIn("(complete)", p.stdout)
            p = run("archive", "--data", data, "--to", os.path.join(root, "a"), "--quiet",
                    "--settle", "0s")
            self.assertIn("(complete)", p.stdout)
            sys.path.insert(0, os.path.join(SOURCE, "python"))
            from trainwatch import archive
            job = archive.open_archive(os.path.join(root, "a")).job("folder-1")
            self.assertTrue(job.complete)
            self.assertEqual([s["value"] for s in job.samples(metric="loss")], [0.1, 0.2, 0.3])
            self.assertEqual(job.samples(metric="loss")[0]["dimensions"],
                             {"TrainingJobName": "folder-1"})
            cpu = job.samples(namespace="/aws/sagemaker/TrainingJobs", metric="CPUUtilization")
            self.assertTrue(cpu and cpu[0]["dimensions"] == {"Host": "folder-1/algo-1"}, cpu)
            algo = [e["message"] for e in job.logs() if e["stream"] == job.record["log_stream"]]
            self.assertEqual(algo, ["loss: 0.1", "loss: 0.2", "loss: 0.3"])
            # The data folder reads archived jobs back from there.
            with open(os.path.join(data, "archive.json")) as f:
                self.assertEqual(json.load(f)["url"], os.path.join(root, "a"))
            # A folder that cannot be made is no usage error (1); an address
            # of another kind is (2).
            p = run("archive", "--data", data, "--to", os.path.join(root, "a", "jobs", "folder-1",
                                                                   "job.json", "x"), check=False)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("cannot create the archive folder", p.stderr)
            p = run("archive", "--data", data, "--to", "ftp://host/x", check=False)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn("only folders and s3:// addresses are supported", p.stderr)
        finally:
            shutil.rmtree(root, ignore_errors=True)


def main():
    global TRAINWATCH, SOURCE
    args = sys.argv[1:]
    for flag in ("--trainwatch", "--source"):
        if flag not in args:
            sys.exit("usage: archive_s3_test.py --trainwatch PATH --source SRC [unittest args]")
        i = args.index(flag)
        value = os.path.abspath(args[i + 1])
        del args[i:i + 2]
        if flag == "--trainwatch":
            TRAINWATCH = value
        else:
            SOURCE = value
    unittest.main(argv=[sys.argv[0]] + args, verbosity=2)


if __name__ == "__main__":
    main()
