"""trainwatch.Trial against a fake native API (docs/api.md: a job's record,
series and raw samples)."""

import importlib.util
import os
import unittest
from unittest import mock

import support
from support import FakeEndpoint

import trainwatch
from trainwatch.trial import TensorUnavailableForStep

JOB = "mnist-7"
JOBS = "/aws/sagemaker/TrainingJobs"
T0 = 1_736_942_400_000

RECORD = {
    "name": JOB, "status": "Completed", "step_metric": "step",
    "final_metrics": [{"name": "train:loss", "value": 0.25, "t_ms": T0 + 3000}],
    "rule_statuses": [
        {"configuration_name": "LossNotDecreasing", "rule": "LossNotDecreasing",
         "family": "model", "status": "IssuesFound", "details": "loss rose",
         "last_modified_ms": T0 + 3000, "findings_total": 1,
         "findings": [{"rule": "LossNotDecreasing", "reason": "diverging",
                       "subject": "train:loss", "severity": "warning", "step": 2,
                       "t_ms": T0 + 2000, "observed": 0.9, "threshold": 0.5,
                       "message": "the loss rose", "recommendation": "lower the lr"}]},
        {"configuration_name": "StepOutlier", "rule": "StepOutlier", "family": "profiler",
         "status": "NoIssuesFound", "details": "", "last_modified_ms": T0 + 3000,
         "findings_total": 0, "findings": []}],
}


def series(metric, t_ms, values, namespace=JOBS, **dims):
    dims.setdefault("TrainingJobName", JOB)
    return {"namespace": namespace, "metric": metric, "unit": "None", "dimensions": dims,
            "t_ms": t_ms, "values": values}


def tensor(stat, name, collection, t_ms, values, **dims):
    return series(stat, t_ms, values, "trainwatch/Tensors", Tensor=name, Collection=collection,
                  **dims)


class TrialTest(unittest.TestCase):
    def setUp(self):
        patcher = mock.patch.dict(os.environ, support.clean_environment(), clear=True)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.fake = FakeEndpoint(job_record=RECORD, page_samples=3)
        self.addCleanup(self.fake.close)
        steps = [T0, T0 + 1000, T0 + 2000, T0 + 3000]
        self.fake.accepted.append({"series": [
            series("step", steps, [0, 1, 2, 3]),
            # one sample before the first step, then one in each step
            series("train:loss", [T0 - 500] + steps, [2.0, 1.0, 0.5, 0.9, 0.25]),
            tensor("abs_mean", "fc1.weight", "gradients", [T0, T0 + 2000], [0.1, 0.05]),
            tensor("l2", "fc1.weight", "gradients", steps, [1.0, 0.9, 0.8, 0.7]),
            tensor("norm", "fc1.weight", "weights", steps, [3.0, 3.1, 3.2, 3.3]),
            tensor("dead_fraction", "relu:output", "activations", [T0], [0.25]),
            tensor("l2", "fc1.weight", "gradients", [T0], [5.0], Rank="1"),
            series("train:loss", [T0], [7.0], TrainingJobName="other-job"),
        ]})
        self.trial = trainwatch.Trial(JOB, endpoint=self.fake.url)
        self.addCleanup(self.trial.close)

    def test_steps_and_a_metric_aligned_with_them(self):
        self.assertEqual(self.trial.steps(), [0, 1, 2, 3])
        loss = self.trial.metric("train:loss")
        self.assertEqual(loss.t_ms[0], T0 - 500)
        self.assertEqual(loss.steps, [None, 0, 1, 2, 3])
        self.assertEqual(loss.by_step(), {0: 1.0, 1: 0.5, 2: 0.9, 3: 0.25})
        self.assertEqual(list(loss), [(0, 1.0), (1, 0.5), (2, 0.9), (3, 0.25)])
        self.assertEqual(self.trial.metric_names(), ["step", "train:loss"])
        self.assertEqual(len(self.trial.metric("no-such-metric")), 0)

    def test_the_samples_are_read_page_by_page(self):
        self.trial.metric("train:loss")
        pages = [path for method, path, _ in self.fake.requests
                 if "/samples" in path and "train%3Aloss" in path]
        self.assertEqual(len(pages), 2)  # 5 samples, 3 a page
        self.assertIn("start=%d" % (T0 + 2000), pages[1])

    def test_tensors_by_collection_step_and_rank(self):
        self.assertEqual(self.trial.tensor_names(), ["fc1.weight", "relu:output"])
        self.assertEqual(self.trial.tensor_names(collection="activations"), ["relu:output"])
        self.assertEqual(self.trial.collections(), ["activations", "gradients", "weights"])
        self.assertEqual(self.trial.workers(), ["1"])
        with self.assertRaisesRegex(ValueError, "gradients, weights"):
            self.trial.tensor("fc1.weight")
        with self.assertRaises(KeyError):
            self.trial.tensor("nope")
        gradient = self.trial.tensor("fc1.weight", "gradients")
        self.assertEqual(gradient.rank, "1")  # only rank 1 sent with a Rank: it is taken
        rank0 = trainwatch.trial.Tensor(self.trial, "fc1.weight", "gradients", None)
        self.assertEqual(rank0.values("abs_mean"), {0: 0.1, 2: 0.05})
        self.assertEqual(rank0.values("l2"), {0: 1.0, 1: 0.9, 2: 0.8, 3: 0.7})
        self.assertEqual(rank0.stats(), ["abs_mean", "l2"])
        self.assertEqual(rank0.steps(), [0, 1, 2, 3])
        self.assertEqual(rank0.reduction_value(2, "abs_mean"), 0.05)
        with self.assertRaises(TensorUnavailableForStep):
            rank0.reduction_value(1, "abs_mean")
        self.assertEqual(gradient.values("l2"), {0: 5.0})
        self.assertEqual(self.trial.tensor("fc1.weight", "weights").values("norm")[3], 3.3)
        self.assertEqual(self.trial.tensor("relu:output").values("dead_fraction"), {0: 0.25})

    def test_statistics_of_parts_come_by_channel_or_token(self):
        self.fake.accepted.append({"series": [
            tensor("samples", "model:input", "inputs", [T0, T0 + 1000], [64, 64]),
            tensor("channel_mean", "model:input", "inputs", [T0, T0 + 1000], [127.5, 120.0],
                   Channel="0"),
            tensor("channel_mean", "model:input", "inputs", [T0], [0.01], Channel="1"),
            tensor("token_fraction", "0:input", "inputs", [T0 + 2000], [0.66], Token="0"),
        ]})
        self.trial.refresh()
        images = self.trial.tensor("model:input")
        self.assertEqual(images.stats(), ["channel_mean", "samples"])
        self.assertEqual(images.parts("channel_mean"), [0, 1])
        self.assertEqual(images.values("channel_mean", part=0), {0: 127.5, 1: 120.0})
        self.assertEqual(images.values("channel_mean", 1), {0: 0.01})
        self.assertEqual(images.steps(), [0, 1])
        with self.assertRaisesRegex(ValueError, r"stored per channel: pass part= \(one of \[0, 1\]\)"):
            images.values("channel_mean")
        with self.assertRaisesRegex(ValueError, "samples is not a statistic of parts"):
            images.parts("samples")
        self.assertEqual(self.trial.tensor("0:input").values("token_fraction", 0), {2: 0.66})
        if importlib.util.find_spec("pandas") is not None:
            self.assertEqual(list(images.to_pandas().columns),
                             ["channel_mean[0]", "channel_mean[1]", "samples"])

    def test_the_record_final_metrics_rules_and_findings(self):
        self.assertEqual(self.trial.status(), "Completed")
        self.assertEqual(self.trial.final_metrics(), {"train:loss": 0.25})
        statuses = self.trial.rule_statuses()
        self.assertEqual([(s["rule"], s["status"]) for s in statuses],
                         [("LossNotDecreasing", "IssuesFound"), ("StepOutlier", "NoIssuesFound")])
        self.assertNotIn("findings", statuses[0])
        [finding] = self.trial.findings()
        self.assertEqual((finding["reason"], finding["step"]), ("diverging", 2))
        self.assertEqual(self.trial.findings("StepOutlier"), [])

    def test_refresh_reads_anew(self):
        self.assertEqual(self.trial.steps(), [0, 1, 2, 3])
        self.fake.accepted.append({"series": [series("step", [T0 + 4000], [4])]})
        self.assertEqual(self.trial.steps(), [0, 1, 2, 3])
        self.trial.refresh()
        self.assertEqual(self.trial.steps(), [0, 1, 2, 3, 4])

    def test_an_unknown_job_is_a_key_error(self):
        with trainwatch.Trial("no-such-job", endpoint=self.fake.url) as trial, \
                self.assertRaisesRegex(KeyError, "no-such-job"):
            trial.record()

    def test_pandas_frames(self):
        if importlib.util.find_spec("pandas") is None:
            self.skipTest("pandas is not installed (Debian: python3-pandas)")
        frame = self.trial.to_pandas()
        self.assertEqual(list(frame.columns), ["metric", "t_ms", "step", "value"])
        loss = frame[frame.metric == "train:loss"]
        self.assertEqual(loss.value.tolist(), [2.0, 1.0, 0.5, 0.9, 0.25])
        self.assertTrue(loss.step.isna().iloc[0])
        stats = trainwatch.trial.Tensor(self.trial, "fc1.weight", "gradients", None).to_pandas()
        self.assertEqual(list(stats.columns), ["abs_mean", "l2"])
        self.assertEqual(stats.index.tolist(), [0, 1, 2, 3])
        self.assertTrue(stats.abs_mean.isna()[1])

    def test_the_endpoint_comes_from_the_environment_or_the_default(self):
        self.assertEqual(trainwatch.Trial(JOB).endpoint, "http://127.0.0.1:9400")
        os.environ["TRAINWATCH_ENDPOINT"] = self.fake.url + "/"
        self.assertEqual(trainwatch.Trial(JOB).endpoint, self.fake.url)


class RoundTripTest(unittest.TestCase):
    """What a Run sends, a Trial reads back with the same steps."""

    def test_logged_metrics_come_back_by_step(self):
        with mock.patch.dict(os.environ, support.clean_environment(), clear=True), \
                FakeEndpoint(job_record={"name": "rt"}) as fake:
            run = trainwatch.Run(job="rt", endpoint=fake.url, batch_interval=0.05)
            for step in range(5):
                run.log_metrics({"train:loss": 1.0 / (step + 1), "lr": 0.1}, step=step)
            run.close(5)
            with trainwatch.Trial("rt", endpoint=fake.url) as trial:
                self.assertEqual(trial.steps(), [0, 1, 2, 3, 4])
                self.assertEqual(trial.metric("train:loss").by_step(),
                                 {s: 1.0 / (s + 1) for s in range(5)})


if __name__ == "__main__":
    unittest.main()
