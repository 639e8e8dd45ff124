"""trainwatch.archive on archives written as docs/format/archive.md shows them."""

import gzip
import json
import os
import tempfile
import unittest

import support  # noqa: F401  (the package on sys.path)
from trainwatch import archive


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(path, mode) as f:
        f.write(data)


class ArchiveReaderTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        job = os.path.join(self.root, "jobs", "mnist-1")
        write(os.path.join(job, "job.json"), json.dumps(
            {"format": "trainwatch-archive", "version": 1, "complete": True,
             "job": {"name": "mnist-1", "status": "Completed"},
             "segments": ["0000000000000-0000000002000"]}))
        seg = os.path.join(job, "segments", "0000000000000-0000000002000")
        write(os.path.join(seg, "series.csv"),
              "series,namespace,metric,unit,dimensions\n"
              '0,/aws/sagemaker/TrainingJobs,train:loss,None,"{""TrainingJobName"":""mnist-1""}"\n'
              '1,/aws/sagemaker/TrainingJobs,batch,None,"{""TrainingJobName"":""mnist-1""}"\n')
        write(os.path.join(seg, "samples.csv.gz"), gzip.compress(
            b"series,timestamp_ms,value,count,sum,minimum,maximum,storage_resolution\n"
            b"0,1000,0.5,,,,,1\n0,1500,0.25,,,,,1\n1,1000,,4,10,1,4,60\n"))
        write(os.path.join(seg, "logs.jsonl.gz"), gzip.compress(
            b'{"stream":"mnist-1/algo-1-1","timestamp_ms":1000,"ingestion_ms":1001,'
            b'"message":"loss: 0.5"}\n'))
        write(os.path.join(seg, "manifest.json"), "{}")
        # A segment whose manifest never came: not read.
        broken = os.path.join(job, "segments", "0000000002000-0000000004000")
        write(os.path.join(broken, "series.csv"), "garbage")

    def test_samples_logs_and_record_read_back(self):
        a = archive.open_archive(self.root)
        self.assertEqual(a.jobs(), ["mnist-1"])
        job = a.job("mnist-1")
        self.assertTrue(job.complete)
        self.assertEqual(job.record["status"], "Completed")
        self.assertEqual(len(job.segments()), 1)
        loss = job.samples(metric="train:loss")
        self.assertEqual([(s["timestamp_ms"], s["value"]) for s in loss], [(1000, 0.5), (1500, 0.25)])
        self.assertEqual(loss[0]["dimensions"], {"TrainingJobName": "mnist-1"})
        self.assertIsNone(loss[0]["count"])
        (stats,) = job.samples(metric="batch")
        self.assertEqual((stats["value"], stats["count"], stats["sum"], stats["minimum"],
                          stats["maximum"], stats["storage_resolution"]), (None, 4, 10, 1, 4, 60))
        self.assertEqual([e["message"] for e in job.logs()], ["loss: 0.5"])

    def test_a_segment_overlapping_an_earlier_one_is_left_out(self):
        job = os.path.join(self.root, "jobs", "mnist-1", "segments")
        # Another writer's window over the same time, complete.
        twin = os.path.join(job, "0000000001000-0000000003000")
        for name in ("series.csv", "samples.csv.gz", "logs.jsonl.gz", "manifest.json"):
            src = os.path.join(job, "0000000000000-0000000002000", name)
            with open(src, "rb") as f:
                write(os.path.join(twin, name), f.read())
        a = archive.open_archive(self.root).job("mnist-1")
        self.assertEqual(len(a.segments()), 1)
        self.assertEqual(len(a.samples(metric="train:loss")), 2)

    def test_late_segments_add_to_the_windows(self):
        late = os.path.join(self.root, "jobs", "mnist-1", "late", "0000000900000-0badcafe")
        write(os.path.join(late, "series.csv"),
              "series,namespace,metric,unit,dimensions\n"
              '0,/aws/sagemaker/TrainingJobs,train:loss,None,"{""TrainingJobName"":""mnist-1""}"\n')
        write(os.path.join(late, "samples.csv.gz"), gzip.compress(
            b"series,timestamp_ms,value,count,sum,minimum,maximum,storage_resolution\n"
            b"0,1200,0.4,,,,,1\n"))
        write(os.path.join(late, "logs.jsonl.gz"), gzip.compress(
            b'{"stream":"mnist-1/algo-1-1","timestamp_ms":1200,"ingestion_ms":900000,'
            b'"message":"loss: 0.4"}\n'))
        write(os.path.join(late, "manifest.json"), "{}")
        # Without its manifest, a late segment is not read either.
        write(os.path.join(self.root, "jobs", "mnist-1", "late", "0000000950000-00000001",
                           "series.csv"), "garbage")
        job = archive.open_archive(self.root).job("mnist-1")
        self.assertEqual(len(job.late_segments()), 1)
        loss = job.samples(metric="train:loss")
        self.assertEqual(sorted((s["timestamp_ms"], s["value"]) for s in loss),
                         [(1000, 0.5), (1200, 0.4), (1500, 0.25)])
        self.assertEqual([e["message"] for e in job.logs()], ["loss: 0.5", "loss: 0.4"])

    def test_a_missing_job_or_a_newer_format_is_a_clear_error(self):
        a = archive.open_archive(self.root)
        with self.assertRaisesRegex(KeyError, "it holds: mnist-1"):
            a.job("other")
        path = os.path.join(self.root, "jobs", "mnist-1", "job.json")
        doc = json.load(open(path))
        doc["version"] = 2
        write(path, json.dumps(doc))
        with self.assertRaisesRegex(archive.ArchiveError, "newer trainwatch client"):
            a.job("mnist-1")
        with self.assertRaisesRegex(archive.ArchiveError, "no trainwatch archive"):
            archive.open_archive(os.path.join(self.root, "jobs"))

    def test_pandas_frames(self):
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("SKIPPED: pandas is not installed (Debian: python3-pandas)")
        frame = archive.open_archive(self.root).job("mnist-1").samples_frame()
        self.assertEqual(list(frame["value"].fillna(-1)), [0.5, 0.25, -1])
        self.assertEqual(len(archive.open_archive(self.root).job("mnist-1").logs_frame()), 1)


if __name__ == "__main__":
    unittest.main()
