"""The aliases: Weights & Biases' init/log/finish, trainwatch.mlflow and
trainwatch.tensorboard.SummaryWriter each deliver the series they name."""

import os
import unittest
from unittest import mock

import support
from support import FakeEndpoint, captured_stderr

import trainwatch
import trainwatch.mlflow as mlflow
from trainwatch.tensorboard import SummaryWriter


class AliasTestCase(unittest.TestCase):
    def setUp(self):
        patcher = mock.patch.dict(os.environ, support.clean_environment(), clear=True)
        patcher.start()
        self.addCleanup(patcher.stop)
        support.forget_warnings()
        self.fake = FakeEndpoint()
        self.addCleanup(self.fake.close)
        os.environ.update(TRAINWATCH_ENDPOINT=self.fake.url, TRAINWATCH_JOB="alias-1")


class WandbTest(AliasTestCase):
    def tearDown(self):
        trainwatch.finish()
        trainwatch.config.clear()

    def test_init_log_finish_deliver_the_series_with_wandbs_steps(self):
        with captured_stderr():
            run = trainwatch.init(project="ignored", name="ignored", config={"lr": 0.1})
        self.assertIs(trainwatch.init(), run)  # init again: the same run
        trainwatch.log({"loss": 1.0, "val": {"acc": 0.5}})  # step 0
        trainwatch.log({"loss": 0.75})                      # step 1
        trainwatch.log({"lr": 0.1}, commit=False)           # still step 2 next
        trainwatch.log({"loss": 0.5})                       # step 2
        trainwatch.log({"loss": 0.25}, step=10)
        trainwatch.finish()
        self.assertEqual(self.fake.values("loss", TrainingJobName="alias-1"),
                         [1.0, 0.75, 0.5, 0.25])
        self.assertEqual(self.fake.values("val/acc"), [0.5])
        self.assertEqual(self.fake.values("lr"), [0.1])
        self.assertEqual(self.fake.values("step"), [0.0, 1.0, 2.0, 10.0])
        self.assertFalse(run.active)
        self.assertEqual(trainwatch.config.lr, 0.1)

    def test_log_before_init_says_what_to_do(self):
        with self.assertRaisesRegex(RuntimeError, r"trainwatch.init\(\)"):
            trainwatch.log({"loss": 1.0})

    def test_config_is_kept_in_the_process_and_says_so_once(self):
        with captured_stderr() as err:
            trainwatch.init(config={"lr": 0.1})
            trainwatch.config.batch_size = 32
            trainwatch.config.update({"epochs": 3})
        self.assertEqual(dict(trainwatch.config), {"lr": 0.1, "batch_size": 32, "epochs": 3})
        self.assertEqual(err.getvalue().count("not record"), 1)

    def test_a_value_that_is_not_a_number_is_refused(self):
        trainwatch.init()
        with self.assertRaisesRegex(TypeError, r"metrics\['caption'\]"):
            trainwatch.log({"caption": "a cat"})


class MlflowTest(AliasTestCase):
    def tearDown(self):
        mlflow.end_run()

    def test_metrics_in_a_run_block_are_delivered_at_its_end(self):
        with mlflow.start_run(run_name="ignored") as active:
            self.assertIs(mlflow.active_run(), active)
            mlflow.log_metric("loss", 0.5, step=3)
            mlflow.log_metrics({"acc": 0.9, "f1": 0.8}, step=4)
            mlflow.log_metric("lr", 0.01, timestamp=1_700_000_000_123)
        self.assertIsNone(mlflow.active_run())
        self.assertEqual(active.info.status, "FINISHED")
        self.assertEqual(self.fake.values("loss"), [0.5])
        self.assertEqual(self.fake.values("acc"), [0.9])
        self.assertEqual(self.fake.values("f1"), [0.8])
        self.assertEqual(self.fake.values("step"), [3.0, 4.0])
        [(_, lr_t, _)] = self.fake.find("lr")
        self.assertEqual(lr_t, [1_700_000_000_123])

    def test_log_metric_starts_a_run_and_a_second_start_is_refused(self):
        mlflow.log_metric("loss", 1.0)
        self.assertIsNotNone(mlflow.active_run())
        with self.assertRaisesRegex(RuntimeError, "already active"):
            mlflow.start_run()
        self.assertIs(mlflow.start_run(nested=True), mlflow.active_run())
        mlflow.end_run()
        self.assertEqual(self.fake.values("loss"), [1.0])

    def test_params_tags_and_artifacts_warn_once_and_do_nothing(self):
        with captured_stderr() as err:
            mlflow.log_param("lr", 0.1)
            mlflow.log_param("lr", 0.2)
            mlflow.log_params({"a": 1})
            mlflow.log_artifact("model.pt")
        lines = err.getvalue().splitlines()
        self.assertEqual(len(lines), 3, lines)
        self.assertIn("trainwatch.mlflow.log_param is not supported", lines[0])


class TensorBoardTest(AliasTestCase):
    def test_scalars_are_delivered_with_their_steps_and_wall_times(self):
        with SummaryWriter("runs/exp1") as writer:
            writer.add_scalar("train/loss", 0.3, global_step=7, walltime=1_700_000_000.5)
            writer.add_scalars("lr", {"group0": 0.1, "group1": 0.2}, 8)
        self.assertEqual(self.fake.values("train/loss"), [0.3])
        [(_, loss_t, _)] = self.fake.find("train/loss")
        self.assertEqual(loss_t, [1_700_000_000_500])
        self.assertEqual(self.fake.values("lr/group0"), [0.1])
        self.assertEqual(self.fake.values("lr/group1"), [0.2])
        self.assertEqual(self.fake.values("step"), [7.0, 8.0])

    def test_a_prefix_keeps_two_writers_apart(self):
        train, val = SummaryWriter(prefix="train/"), SummaryWriter(prefix="val/")
        train.add_scalar("loss", 1.0, 0)
        val.add_scalar("loss", 2.0, 0)
        train.close()
        val.close()
        self.assertEqual(self.fake.values("train/loss"), [1.0])
        self.assertEqual(self.fake.values("val/loss"), [2.0])

    def test_other_summaries_warn_once_and_do_nothing(self):
        writer = SummaryWriter()
        with captured_stderr() as err:
            writer.add_histogram("w", [1, 2, 3], 0)
            writer.add_histogram("w", [1, 2, 3], 1)
            writer.add_image("img", None, 0)
        writer.close()
        lines = err.getvalue().splitlines()
        self.assertEqual(len(lines), 2, lines)
        self.assertIn("SummaryWriter.add_histogram is not supported", lines[0])

    def test_bad_arguments_name_themselves(self):
        writer = SummaryWriter()
        self.addCleanup(writer.close)
        with self.assertRaisesRegex(TypeError, "tag must be a str"):
            writer.add_scalar(None, 1.0)
        with self.assertRaisesRegex(TypeError, "walltime"):
            writer.add_scalar("x", 1.0, walltime="now")
        with self.assertRaisesRegex(TypeError, "tag_scalar_dict"):
            writer.add_scalars("x", [1.0])


class OutsideAJobTest(unittest.TestCase):
    def test_every_alias_is_a_quiet_no_op_after_one_warning(self):
        with mock.patch.dict(os.environ, support.clean_environment(), clear=True), \
                captured_stderr() as err:
            support.forget_warnings()
            trainwatch.init()
            trainwatch.log({"loss": 1.0})
            trainwatch.finish()
            with mlflow.start_run():
                mlflow.log_metric("loss", 1.0)
            writer = SummaryWriter()
            writer.add_scalar("loss", 1.0, 0)
            writer.close()
        lines = err.getvalue().splitlines()
        self.assertEqual(len(lines), 1, lines)


if __name__ == "__main__":
    unittest.main()
