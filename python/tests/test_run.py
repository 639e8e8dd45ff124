"""trainwatch.Run: what log_metric sends, when, and what it refuses."""

import math
import os
import subprocess
import sys
import textwrap
import threading
import time
import unittest
from unittest import mock

import support
from support import FakeEndpoint, captured_stderr, wait_until

import trainwatch

JOBS = "/aws/sagemaker/TrainingJobs"


class RunTestCase(unittest.TestCase):
    def setUp(self):
        patcher = mock.patch.dict(os.environ, support.clean_environment(), clear=True)
        patcher.start()
        self.addCleanup(patcher.stop)
        support.forget_warnings()
        self.fake = FakeEndpoint()
        self.addCleanup(self.fake.close)

    def new_run(self, **options):
        options.setdefault("batch_interval", 0.05)
        run = trainwatch.Run(job="mnist-7", endpoint=self.fake.url, **options)
        self.addCleanup(run.close, 1.0)
        return run


class LogMetricTest(RunTestCase):
    def test_sends_each_metric_and_the_step_with_the_contracts_content(self):
        run = self.new_run()
        run.log_metric("train:loss", 0.5, step=1)
        run.log_metric("train:acc", 0.75, step=1)
        run.log_metric("train:loss", 0.25, step=2)
        self.assertTrue(run.flush(5))

        series = {s["metric"]: s for batch in self.fake.accepted for s in batch["series"]}
        loss = series["train:loss"]
        self.assertEqual(
            set(loss), {"namespace", "metric", "dimensions", "unit", "t_ms", "values"})
        self.assertEqual(loss["namespace"], JOBS)
        self.assertEqual(loss["dimensions"], {"TrainingJobName": "mnist-7"})
        self.assertEqual(loss["unit"], "None")
        self.assertEqual(self.fake.values("train:loss"), [0.5, 0.25])
        self.assertEqual(self.fake.values("train:acc"), [0.75])
        # The step is sent when it changes, at the time of that step's metrics.
        [(_, step_t, steps)] = self.fake.find("step", JOBS)
        self.assertEqual(steps, [1.0, 2.0])
        [(_, loss_t, _)] = self.fake.find("train:loss")
        self.assertEqual(step_t, loss_t)
        # Steps within one millisecond are stamped a millisecond apart, so
        # the second may be ahead of the clock by that millisecond.
        now = time.time() * 1000
        self.assertTrue(all(now - 60_000 < t <= now + 1 for t in loss_t), (loss_t, now))

    def test_log_metrics_shares_one_time_and_uses_the_runners_step_metric(self):
        with mock.patch.dict(os.environ, {"TRAINWATCH_STEP_METRIC": "global_step"}):
            run = self.new_run()
        run.log_metrics({"a": 1, "b": 2.5}, step=7)
        run.flush(5)
        [(_, a_t, _)] = self.fake.find("a")
        [(_, b_t, _)] = self.fake.find("b")
        self.assertEqual(a_t, b_t)
        self.assertEqual(self.fake.values("global_step"), [7.0])
        self.assertEqual(self.fake.find("step"), [])

    def test_steps_faster_than_a_millisecond_get_times_of_their_own(self):
        run = self.new_run()
        for step in range(200):
            run.log_metric("loss", step, step=step)
            run.log_metric("acc", step)  # no step: at the current step's time
        run.flush(5)
        [(_, step_t, steps)] = self.fake.find("step", JOBS)
        self.assertEqual(steps, [float(s) for s in range(200)])
        self.assertTrue(all(a < b for a, b in zip(step_t, step_t[1:])), step_t)
        [(_, loss_t, _)] = self.fake.find("loss")
        [(_, acc_t, _)] = self.fake.find("acc")
        self.assertEqual(loss_t, step_t)
        self.assertEqual(acc_t, step_t)

    def test_without_a_step_no_step_is_sent(self):
        run = self.new_run()
        run.log_metric("lr", 0.1)
        run.flush(5)
        self.assertEqual(self.fake.values("lr"), [0.1])
        self.assertEqual(self.fake.find("step"), [])

    def test_predictions_are_sent_as_counts_per_true_and_predicted_class(self):
        run = self.new_run()
        run.log_predictions([0, 0, 1, 2], [0, 1, 1, 2], step=3)
        run.log_predictions([1], [[0.1, 0.7, 0.2]], step=4)  # scores: argmax
        run.flush(5)
        counts = {(dict(k[2])["Label"], dict(k[2])["Predicted"]): v
                  for k, _, v in self.fake.find("Count", "trainwatch/Predictions")}
        self.assertEqual(counts, {("0", "0"): [1.0], ("0", "1"): [1.0], ("1", "1"): [1.0, 1.0],
                                  ("2", "2"): [1.0]})
        with self.assertRaisesRegex(ValueError, "as long: 2 labels, 1 predictions"):
            run.log_predictions([0, 1], [0])
        with self.assertRaisesRegex(ValueError, r"labels\[1\] = -1: want a class number"):
            run.log_predictions([0, -1], [0, 0])

    def test_a_full_batch_goes_without_waiting_for_the_interval(self):
        run = self.new_run(batch_size=100, batch_interval=60)
        for i in range(1000):
            run.log_metric("m", i)
        self.assertTrue(wait_until(lambda: self.fake.sample_count() >= 1000, timeout=5))
        sizes = [sum(len(s["values"]) for s in b["series"]) for b in self.fake.accepted]
        self.assertTrue(all(size <= 100 for size in sizes), sizes)
        self.assertEqual(self.fake.values("m"), [float(i) for i in range(1000)])

    def test_the_bytes_and_requests_accepted_are_counted(self):
        run = self.new_run(batch_size=100)
        self.assertEqual((run.bytes_sent, run.requests_sent), (0, 0))
        for i in range(250):
            run.log_metric("m", i, step=i)
        self.assertTrue(run.flush(5))
        posted = [int(headers["Content-Length"]) for method, _, headers in self.fake.requests
                  if method == "POST"]
        self.assertEqual(run.requests_sent, len(posted))
        self.assertEqual(run.bytes_sent, sum(posted))
        run.close(1.0)
        self.assertEqual(run.bytes_sent, sum(posted))  # still known once closed

    def test_a_few_points_go_after_the_interval(self):
        run = self.new_run(batch_size=1000, batch_interval=0.1)
        run.log_metric("m", 1.0)
        run.log_metric("m", 2.0)
        # Well short of a batch, they still go (how many requests it takes
        # depends on the machine's load: not asserted).
        self.assertTrue(wait_until(lambda: self.fake.sample_count() == 2, timeout=10))

    def test_non_finite_values_are_counted_not_sent(self):
        run = self.new_run()
        for value in (1.0, math.nan, math.inf, -math.inf, math.nan, 2.0):
            run.log_metric("train:loss", value, step=3)
        run.flush(5)
        self.assertEqual(self.fake.values("train:loss"), [1.0, 2.0])
        counted = {dict(key[2])["Value"]: values
                   for key, _, values in self.fake.find("NonFiniteMetricValues")}
        self.assertEqual(counted, {"NaN": [1.0, 1.0], "+Inf": [1.0], "-Inf": [1.0]})
        for key, _, _ in self.fake.find("NonFiniteMetricValues"):
            self.assertEqual(key[0], "trainwatch/JobEvents")
            self.assertEqual(key[3], "Count")
            self.assertEqual(set(dict(key[2])), {"TrainingJobName", "MetricName", "Value"})
            self.assertEqual(dict(key[2])["MetricName"], "train:loss")

    def test_numpy_scalars_and_one_element_arrays_are_numbers(self):
        try:
            import numpy
        except ImportError:
            self.skipTest("numpy is not installed")
        run = self.new_run()
        run.log_metric("m", numpy.float32(0.5))
        run.log_metric("m", numpy.int64(3))
        run.log_metric("m", numpy.array(4.0))
        run.log_metric("m", numpy.array([5.0]))
        run.flush(5)
        self.assertEqual(self.fake.values("m"), [0.5, 3.0, 4.0, 5.0])


class ValidationTest(RunTestCase):
    def test_bad_calls_raise_naming_the_argument(self):
        run = self.new_run()
        cases = [
            (lambda: run.log_metric(3, 1.0), TypeError, "name must be a str"),
            (lambda: run.log_metric("", 1.0), ValueError, "name must be 1 to 255 bytes"),
            (lambda: run.log_metric("x" * 256, 1.0), ValueError, "got 256"),
            (lambda: run.log_metric("é" * 128, 1.0), ValueError, "got 256"),
            (lambda: run.log_metric("m", "0.5"), TypeError, "value must be a real number"),
            (lambda: run.log_metric("m", None), TypeError, "value must be a real number"),
            (lambda: run.log_metric("m", True), TypeError, "value must be a real number"),
            (lambda: run.log_metric("m", 1j), TypeError, "value must be a real number"),
            (lambda: run.log_metric("m", 10 ** 400), ValueError, "too large"),
            (lambda: run.log_metric("m", 1.0, step=-1), ValueError, "step must be >= 0"),
            (lambda: run.log_metric("m", 1.0, step=1.5), TypeError, "step must be an int"),
            (lambda: run.log_metrics([1.0]), TypeError, "metrics must be a dict"),
            (lambda: run.log_metrics({"a": 1.0, "b": "x"}), TypeError, "metrics['b']"),
        ]
        for call, error, message in cases:
            with self.subTest(message):
                with self.assertRaises(error) as raised:
                    call()
                self.assertIn(message, str(raised.exception))
        self.assertEqual(len("x" * 255), 255)
        run.log_metric("x" * 255, 1.0)  # the limit itself is fine
        run.flush(5)
        self.assertEqual(self.fake.find("a"), [])  # the refused log_metrics sent nothing
        self.assertEqual(self.fake.values("x" * 255), [1.0])


class OutsideAJobTest(unittest.TestCase):
    def test_nothing_starts_one_warning_and_calls_are_cheap(self):
        with mock.patch.dict(os.environ, support.clean_environment(), clear=True):
            support.forget_warnings()
            threads = threading.active_count()
            with captured_stderr() as err:
                first = trainwatch.Run()
                second = trainwatch.Run()
                started = time.perf_counter()
                for i in range(20_000):
                    first.log_metric("loss", 0.5, step=i)
                per_call = (time.perf_counter() - started) / 20_000
                second.log_metrics({"a": 1.0})
                self.assertTrue(first.flush(1))
                first.close()
            self.assertFalse(first.active)
            self.assertIsNone(first.job)
            self.assertEqual(threading.active_count(), threads)
            lines = err.getvalue().splitlines()
            self.assertEqual(len(lines), 1, lines)
            self.assertIn("not inside a trainwatch job", lines[0])
            # Generous (a busy test machine): a call that did any work would
            # show; the figures are in BENCHMARKS.md, not asserted here.
            self.assertLess(per_call, 1e-3)
            # Checked all the same, so a script fails the same way in a job and out.
            with self.assertRaises(TypeError):
                first.log_metric("loss", "high")

    def test_an_endpoint_without_a_job_name_is_no_job(self):
        with mock.patch.dict(os.environ, support.clean_environment(), clear=True):
            os.environ["TRAINWATCH_ENDPOINT"] = "http://127.0.0.1:9400"
            support.forget_warnings()
            with captured_stderr() as err:
                run = trainwatch.Run()
            self.assertFalse(run.active)
            self.assertIn("no job name", err.getvalue())


class EnvironmentTest(unittest.TestCase):
    def setUp(self):
        support.forget_warnings()

    def test_the_runner_wins_and_its_job_is_used(self):
        from trainwatch import _env
        env = {"TRAINWATCH_RUNNER_URL": "http://127.0.0.1:5000", "TRAINWATCH_JOB": "j1",
               "TRAINWATCH_ENDPOINT": "http://127.0.0.1:9400", "AWS_ACCESS_KEY_ID": "AKID",
               "AWS_SECRET_ACCESS_KEY": "secret"}
        with captured_stderr() as err:
            d, _ = _env.find_destination("other", None, env)
        self.assertEqual((d.url, d.job, d.is_runner, d.credentials), (
            "http://127.0.0.1:5000", "j1", True, None))
        self.assertIn("Run(job='other') inside the run of job 'j1'", err.getvalue())
        self.assertEqual(d.step_metric, "step")

    def test_a_server_gets_signed_requests_with_the_region_of_the_environment(self):
        from trainwatch import _env
        env = {"TRAINWATCH_ENDPOINT": "https://tw.example:9400/", "TRAINWATCH_JOB": "j2",
               "AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "secret",
               "AWS_DEFAULT_REGION": "eu-west-1"}
        d, _ = _env.find_destination(None, None, env)
        self.assertEqual((d.url, d.job, d.is_runner), ("https://tw.example:9400", "j2", False))
        self.assertEqual((d.credentials.access_key_id, d.region), ("AKID", "eu-west-1"))
        env["AWS_REGION"] = "ap-south-1"
        self.assertEqual(_env.find_destination(None, None, env)[0].region, "ap-south-1")
        del env["AWS_REGION"], env["AWS_DEFAULT_REGION"]
        self.assertEqual(_env.find_destination(None, None, env)[0].region, "us-east-1")

    def test_a_bad_url_is_refused(self):
        from trainwatch import _env
        with self.assertRaises(ValueError):
            _env.find_destination("j", "127.0.0.1:9400", {})


class DeliveryTest(RunTestCase):
    def test_503_and_connection_errors_are_retried_in_order(self):
        self.fake.statuses = [503, 503]
        run = self.new_run(batch_size=2)
        with captured_stderr() as err:
            for i in range(6):
                run.log_metric("m", i)
            self.assertTrue(run.flush(10))
        self.assertEqual(self.fake.values("m"), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
        self.assertEqual(len(self.fake.refused), 2)
        self.assertIn("retrying", err.getvalue())

    def test_an_endpoint_that_is_not_up_yet_gets_everything_once_it_is(self):
        port = support.free_port()
        run = trainwatch.Run(job="late", endpoint="http://127.0.0.1:%d" % port,
                             batch_interval=0.05, batch_size=2)
        self.addCleanup(run.close, 1.0)
        with captured_stderr() as err:
            for i in range(5):
                run.log_metric("m", i)
            self.assertFalse(run.flush(0.3))
            with FakeEndpoint(port=port) as late:
                self.assertTrue(run.flush(10))
                self.assertEqual(late.values("m"), [0.0, 1.0, 2.0, 3.0, 4.0])
        self.assertIn("ConnectionRefusedError", err.getvalue())
        self.assertIn("answers again", err.getvalue())

    def test_a_refused_batch_is_dropped_and_said_once(self):
        self.fake.statuses = [400, 400]
        run = self.new_run()
        with captured_stderr() as err:
            run.log_metric("m", 1.0)
            self.assertTrue(run.flush(5))
            run.log_metric("m", 2.0)
            self.assertTrue(run.flush(5))
            run.log_metric("m", 3.0)
            self.assertTrue(run.flush(5))
        self.assertEqual(self.fake.values("m"), [3.0])
        lines = [line for line in err.getvalue().splitlines() if "refused" in line]
        self.assertEqual(len(lines), 1, err.getvalue())
        self.assertIn("HTTP 400", lines[0])


class QueueFullTest(unittest.TestCase):
    def test_a_stalled_endpoint_never_slows_the_loop_and_the_oldest_are_dropped(self):
        with mock.patch.dict(os.environ, support.clean_environment(), clear=True), \
                FakeEndpoint(stall=True) as fake, captured_stderr() as err:
            run = trainwatch.Run(job="slow", endpoint=fake.url, max_queue=1000, batch_size=100,
                                 batch_interval=0.01)
            calls = 50_000
            slowest = 0.0
            started = time.perf_counter()
            for i in range(calls):
                before = time.perf_counter()
                run.log_metric("m", i)
                slowest = max(slowest, time.perf_counter() - before)
            per_call = (time.perf_counter() - started) / calls
            dropped = run.dropped
            # The first batch is held by the stalled endpoint; of the rest the
            # queue keeps the newest 1000.
            self.assertEqual(dropped, calls - 100 - 1000)
            # The endpoint stalls until released: a call that waited for it
            # would never return. Bounds generous for a busy machine.
            self.assertLess(per_call, 1e-3)
            self.assertLess(slowest, 1.0)
            fake.release()
            self.assertTrue(run.flush(10))
            run.close(5)
            self.assertEqual(run.dropped, dropped)
            # Delivered: the held batch (100 in a row, from wherever the queue
            # started when the sender took them) and the newest 1000.
            values = fake.values("m")
            first = int(values[0])
            self.assertEqual(values, [float(i) for i in list(range(first, first + 100)) +
                                      list(range(calls - 1000, calls))])
            reported = fake.values("trainwatch:client_dropped", "/aws/sagemaker/TrainingJobs",
                                   TrainingJobName="slow")
            self.assertEqual(reported[-1], float(dropped))
            self.assertEqual(reported, sorted(reported))  # cumulative
        self.assertIn("trainwatch: dropped %d statistics (queue full)" % dropped, err.getvalue())


SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[1])
    import trainwatch
    run = trainwatch.Run(job="exiting", endpoint=sys.argv[2], exit_timeout=float(sys.argv[3]))
    for i in range(5000):
        run.log_metric("m", i, step=i)
    print("logged", flush=True)
""")


class ExitTest(unittest.TestCase):
    def run_script(self, url, exit_timeout):
        env = support.clean_environment()
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-c", SCRIPT, support.PYTHON_DIR, url,
                               str(exit_timeout)], env=env, capture_output=True, text=True,
                              timeout=60)
        return done, time.monotonic() - started

    def test_what_is_queued_at_exit_is_delivered(self):
        with FakeEndpoint() as fake:
            done, _ = self.run_script(fake.url, 5.0)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(fake.values("m"), [float(i) for i in range(5000)])
            self.assertEqual(fake.values("step"), [float(i) for i in range(5000)])

    def test_exit_waits_no_longer_than_the_deadline(self):
        with FakeEndpoint(stall=True) as fake:
            done, took = self.run_script(fake.url, 0.5)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertLess(took, 10)
            self.assertIn("not delivered", done.stderr)


if __name__ == "__main__":
    unittest.main()
