"""SigV4: AWS's published test vectors, and what a Run sends a server."""

import datetime
import os
import unittest
from unittest import mock

import support
from support import FakeEndpoint

import trainwatch
from trainwatch import _sigv4

# AWS's Signature Version 4 test suite: credentials, date and scope.
SUITE_CREDENTIALS = _sigv4.Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
SUITE_DATE = datetime.datetime(2015, 8, 30, 12, 36, 0, tzinfo=datetime.timezone.utc)
SUITE_HOST = {"Host": "example.amazonaws.com"}
SUITE_SCOPE = "AKIDEXAMPLE/20150830/us-east-1/service/aws4_request"


class TestSuiteVectors(unittest.TestCase):
    def check(self, method, path, signature):
        headers = _sigv4.sign(method, path, SUITE_HOST, b"", SUITE_CREDENTIALS, "us-east-1",
                              "service", SUITE_DATE)
        self.assertEqual(headers["X-Amz-Date"], "20150830T123600Z")
        self.assertEqual(
            headers["Authorization"],
            "AWS4-HMAC-SHA256 Credential=%s, SignedHeaders=host;x-amz-date, Signature=%s"
            % (SUITE_SCOPE, signature))

    def test_get_vanilla(self):
        self.check("GET", "/", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")

    def test_get_vanilla_query_order_key_case(self):
        self.check("GET", "/?Param2=value2&Param1=value1",
                   "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500")

    def test_post_vanilla(self):
        self.check("POST", "/", "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b")


class AgainstBotocore(unittest.TestCase):
    """A body, a content type, a query and a session token, as botocore signs them."""

    def test_same_signature_as_botocore(self):
        try:
            from botocore.auth import SigV4Auth
            from botocore.awsrequest import AWSRequest
            from botocore.credentials import Credentials
        except ImportError:
            self.skipTest("botocore is not installed (Debian: python3-botocore)")
        body = b'{"series": []}'
        url = "http://127.0.0.1:9400/api/v1/jobs/mnist-7/samples?metric=train%3Aloss&namespace=a%2Fb"
        request = AWSRequest(method="POST", url=url, data=body,
                             headers={"Content-Type": "application/json"})
        credentials = Credentials("AKIDEXAMPLE", "secret", "TOKEN+/=")
        SigV4Auth(credentials, "monitoring", "eu-west-1").add_auth(request)
        signed_at = datetime.datetime.strptime(request.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ")
        ours = _sigv4.sign("POST", url[len("http://127.0.0.1:9400"):],
                           {"Host": "127.0.0.1:9400", "Content-Type": "application/json"}, body,
                           _sigv4.Credentials("AKIDEXAMPLE", "secret", "TOKEN+/="), "eu-west-1",
                           "monitoring", signed_at.replace(tzinfo=datetime.timezone.utc))
        self.assertEqual(ours["X-Amz-Security-Token"], "TOKEN+/=")
        # botocore also signs X-Amz-Security-Token and the same headers; compare signatures.
        self.assertEqual(ours["Authorization"].split("Signature=")[1],
                         request.headers["Authorization"].split("Signature=")[1])


class RunSigning(unittest.TestCase):
    def setUp(self):
        support.forget_warnings()

    def test_a_server_gets_signed_samples_and_a_runner_does_not(self):
        credentials = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret",
                       "AWS_SESSION_TOKEN": "token", "AWS_REGION": "eu-central-1"}
        with FakeEndpoint() as fake:
            env = dict(support.clean_environment(), TRAINWATCH_ENDPOINT=fake.url,
                       TRAINWATCH_JOB="signed", **credentials)
            with mock.patch.dict(os.environ, env, clear=True):
                run = trainwatch.Run(batch_interval=0.05)
                run.log_metric("m", 1.0)
                run.close(5)
            [(method, path, headers)] = fake.requests
            self.assertEqual((method, path), ("POST", "/api/v1/samples"))
            auth = headers["Authorization"]
            self.assertTrue(auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"), auth)
            self.assertIn("/eu-central-1/monitoring/aws4_request", auth)
            self.assertIn("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token", auth)
            self.assertEqual(headers["X-Amz-Security-Token"], "token")
            self.assertEqual(fake.values("m"), [1.0])

        with FakeEndpoint() as runner:
            env = dict(support.clean_environment(), TRAINWATCH_RUNNER_URL=runner.url,
                       TRAINWATCH_JOB="signed", **credentials)
            with mock.patch.dict(os.environ, env, clear=True):
                run = trainwatch.Run(batch_interval=0.05)
                run.log_metric("m", 1.0)
                run.close(5)
            [(_, _, headers)] = runner.requests
            self.assertNotIn("Authorization", headers)
            self.assertEqual(runner.values("m"), [1.0])


if __name__ == "__main__":
    unittest.main()
