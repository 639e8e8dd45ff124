#!/usr/bin/python3
"""The same CloudWatch request gets the same answer in every protocol.

Every CloudWatch request the real clients sent (tests/captures: the query
protocol of Debian's awscli and boto3, the JSON 1.0 of the newer ones) is
decoded into its parameters and sent again, once in the query protocol, once
in AWS JSON 1.0 and once in Smithy RPC v2 CBOR, each to a fresh
tw_test_server, by a botocore whose CloudWatch model is pinned to that
protocol. The answers botocore decodes
(data, or error code and message) must be equal, request by request. Cases
the captures lack follow them (sub-second times, missing values...).

Timestamps in the captures (January 2025) are moved by a whole number of hours
to the present, the same for both protocols, so that writes are accepted and
reads find them.

Usage: protocol_equivalence_test.py --server PATH/tw_test_server [unittest args]
Needs a python whose botocore speaks the three protocols to CloudWatch (the
`python3` first on PATH, botocore >= 1.36); skipped with a notice otherwise.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aws_clients_test as clients  # noqa: E402  (Server, client_env)

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURES = os.path.join(HERE, "..", "captures")
CAPTURE_BASE_S = 1736942400  # 2025-01-15T12:00:00Z, around which the captures were made

# Runs under the botocore python: decodes the captures, sends each request in
# the protocol named on the command line, prints one outcome per request.
WORKER = r'''
import datetime, email.parser, gzip, json, os, sys, urllib.parse
import botocore, botocore.exceptions, botocore.session
from botocore.exceptions import ClientError

url, protocol, captures, shift_s, now_s = sys.argv[1:3] + [sys.argv[3], int(sys.argv[4]), int(sys.argv[5])]
session = botocore.session.get_session()
client = session.create_client(
    "cloudwatch", endpoint_url=url, region_name="us-east-1",
    aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"])
assert client.meta.service_model.protocol == protocol, client.meta.service_model.protocol
model = client.meta.service_model
UTC = datetime.timezone.utc

def when(value):
    if isinstance(value, (int, float)):
        t = datetime.datetime.fromtimestamp(value, UTC)
    else:
        t = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return t + datetime.timedelta(seconds=shift_s)

def from_json(shape, value):
    t = shape.type_name
    if t == "structure":
        return {k: from_json(shape.members[k], v) for k, v in value.items() if k in shape.members}
    if t == "list":
        return [from_json(shape.member, v) for v in value]
    if t == "map":
        return {k: from_json(shape.value, v) for k, v in value.items()}
    if t == "timestamp":
        return when(value)
    if t in ("double", "float") and isinstance(value, str):
        return float(value)  # "NaN", "Infinity"
    return value

def from_form(shape, prefix, form):
    t = shape.type_name
    if t == "structure":
        out = {}
        for name, member in shape.members.items():
            v = from_form(member, (prefix + "." if prefix else "") + name, form)
            if v is not None:
                out[name] = v
        return out if out or prefix in form else None
    if t == "list":
        items, i = [], 1
        while any(k == "%s.member.%d" % (prefix, i) or k.startswith("%s.member.%d." % (prefix, i))
                  for k in form):
            items.append(from_form(shape.member, "%s.member.%d" % (prefix, i), form))
            i += 1
        return items if items or prefix in form else None
    if prefix not in form:
        return None
    v = form[prefix]
    if t == "timestamp":
        return when(v)
    if t in ("integer", "long"):
        return int(v)
    if t in ("double", "float"):
        return float(v)
    if t == "boolean":
        return v == "true"
    return v

def decode(path):
    raw = open(path, "rb").read()
    head, body = raw.split(b"\r\n\r\n", 1)
    headers = email.parser.BytesHeaderParser().parsebytes(head.split(b"\r\n", 1)[1] + b"\r\n\r\n")
    if headers.get("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    target = headers.get("X-Amz-Target")
    if target:
        operation = target.split(".")[-1]
        return operation, from_json(model.operation_model(operation).input_shape, json.loads(body or b"{}"))
    form = dict(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True))
    operation = form.pop("Action")
    form.pop("Version", None)
    return operation, from_form(model.operation_model(operation).input_shape, "", form) or {}

def plain(value):
    if isinstance(value, datetime.datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k != "ResponseMetadata"}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value

requests = []
for name in sorted(os.listdir(captures)):
    requests.append((name,) + decode(os.path.join(captures, name)))
now = datetime.datetime.fromtimestamp(now_s, UTC)
half = datetime.timedelta(milliseconds=500)
metric = {"Namespace": "TrainWatch/equivalence", "MetricName": "loss"}
requests += [
    ("put for the cases below", "PutMetricData", {"Namespace": metric["Namespace"], "MetricData": [
        {"MetricName": "loss", "Value": 0.5, "Timestamp": now, "StorageResolution": 1}]}),
    ("sub-second StartTime", "GetMetricData", {"StartTime": now - half, "EndTime": now + 10 * half,
        "MetricDataQueries": [{"Id": "a", "MetricStat": {"Metric": metric, "Period": 1, "Stat": "Sum"}}]}),
    ("sub-second EndTime", "GetMetricStatistics", dict(metric, StartTime=now, EndTime=now + half,
        Period=1, Statistics=["Sum"])),
    ("metric math", "GetMetricData", {"StartTime": now - 60 * half, "EndTime": now + 10 * half,
        "MetricDataQueries": [
            {"Id": "a", "ReturnData": False, "MetricStat": {"Metric": metric, "Period": 1, "Stat": "Sum"}},
            {"Id": "e", "Expression": "FILL(a, 0) * 2 + 1", "Label": "twice"},
            {"Id": "m", "Expression": "METRICS()"}]}),
    ("StartTime equal to EndTime", "GetMetricData", {"StartTime": now, "EndTime": now,
        "MetricDataQueries": [{"Id": "a", "MetricStat": {"Metric": metric, "Period": 60, "Stat": "Sum"}}]}),
    ("no value", "PutMetricData", {"Namespace": metric["Namespace"], "MetricData": [{"MetricName": "x"}]}),
    ("Value and Values", "PutMetricData", {"Namespace": metric["Namespace"], "MetricData": [
        {"MetricName": "x", "Value": 1.0, "Values": [1.0, 2.0]}]}),
    ("Values and Counts of other lengths", "PutMetricData", {"Namespace": metric["Namespace"],
        "MetricData": [{"MetricName": "x", "Values": [1.0, 2.0], "Counts": [1.0]}]}),
]
out = []
for name, operation, params in requests:
    try:
        answer = getattr(client, botocore.xform_name(operation))(**params)
        out.append({"request": name, "operation": operation, "answer": plain(answer)})
    except botocore.exceptions.ParamValidationError as e:
        out.append({"request": name, "operation": operation, "refused by botocore": str(e)})
    except ClientError as e:
        err = e.response.get("Error", {})
        out.append({"request": name, "operation": operation, "error": [
            e.response["ResponseMetadata"]["HTTPStatusCode"], err.get("Code"), err.get("Message")]})
print(json.dumps(out))
'''


def pinned_model_dir(python, protocol):
    """An AWS_DATA_PATH folder holding botocore's CloudWatch model with only `protocol`."""
    script = ("import json, botocore.loaders; m = botocore.loaders.Loader()"
              ".load_service_model('cloudwatch', 'service-2'); print(json.dumps(m))")
    p = subprocess.run([python, "-c", script], capture_output=True, text=True, check=True)
    model = json.loads(p.stdout)
    model["metadata"]["protocol"] = protocol
    model["metadata"]["protocols"] = [protocol]
    folder = tempfile.mkdtemp(prefix="tw-model-%s-" % protocol)
    os.makedirs(os.path.join(folder, "cloudwatch", model["metadata"]["apiVersion"]))
    with open(os.path.join(folder, "cloudwatch", model["metadata"]["apiVersion"],
                           "service-2.json"), "w") as f:
        json.dump(model, f)
    return folder


PROTOCOLS = ("query", "json", "smithy-rpc-v2-cbor")


def botocore_with_all(python):
    script = ("import botocore.loaders; m = botocore.loaders.Loader()"
              ".load_service_model('cloudwatch', 'service-2')['metadata'];"
              "print(all(p in m.get('protocols', []) for p in %r))" % (PROTOCOLS,))
    p = subprocess.run([python, "-c", script], capture_output=True, text=True)
    return p.returncode == 0 and p.stdout.strip() == "True"


class ProtocolEquivalence(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.python = shutil.which("python3")
        if not cls.python or not botocore_with_all(cls.python):
            raise unittest.SkipTest("no python3 on PATH whose botocore speaks the query "
                                    "protocol, JSON 1.0 and RPC v2 CBOR to CloudWatch")
        # Every CloudWatch request of the query and JSON clients, in capture order.
        cls.captures = tempfile.mkdtemp(prefix="tw-captures-")
        n = 0
        for client in ("debcli", "debboto3", "pipcli", "pipboto3"):
            folder = os.path.join(CAPTURES, client)
            for name in sorted(os.listdir(folder)):
                if "-cw-" in name and name.endswith(".request.http"):
                    n += 1
                    shutil.copy(os.path.join(folder, name),
                                os.path.join(cls.captures, "%03d-%s-%s" % (n, client, name)))
        cls.shift_s = (int(time.time()) // 3600 - CAPTURE_BASE_S // 3600) * 3600
        cls.now_s = int(time.time()) - 300  # the extra cases' time, the same in both runs

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.captures, ignore_errors=True)

    def answers(self, protocol):
        server = clients.Server()
        home = tempfile.mkdtemp(prefix="tw-equivalence-home-")
        models = pinned_model_dir(self.python, protocol)
        try:
            env = clients.client_env(home)
            env["AWS_DATA_PATH"] = models
            p = subprocess.run([self.python, "-c", WORKER, server.url, protocol, self.captures,
                                str(self.shift_s), str(self.now_s)], capture_output=True, text=True, env=env,
                               timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            return json.loads(p.stdout)
        finally:
            server.stop()
            shutil.rmtree(home, ignore_errors=True)
            shutil.rmtree(models, ignore_errors=True)

    def test_every_request_gets_the_same_answer_in_every_protocol(self):
        query, json10, cbor = (self.answers(p) for p in PROTOCOLS)
        self.assertEqual(len(query), len(json10))
        self.assertEqual(len(query), len(cbor))
        self.assertGreaterEqual(len(query), 20)
        answered = sum("answer" in a for a in query)
        self.assertGreaterEqual(answered, 10, "most captured requests succeed")
        math = [a for a in query if a["request"] == "metric math"][0]
        self.assertIn("answer", math, math)
        self.assertEqual([r["Label"] for r in math["answer"]["MetricDataResults"]], ["twice", "loss"])
        for a, b, c in zip(query, json10, cbor):
            with self.subTest(request=a["request"], operation=a["operation"]):
                self.assertEqual(a, b, "query vs JSON 1.0")
                self.assertEqual(a, c, "query vs RPC v2 CBOR")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "--server":
        sys.exit(__doc__)
    clients.SERVER = sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)
