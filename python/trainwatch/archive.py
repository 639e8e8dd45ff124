"""Reading a trainwatch archive (docs/format/archive.md) with the standard
library alone; pandas when you ask for DataFrames.

    from trainwatch import archive
    a = archive.open_archive("/mnt/archive")    # an S3 archive: `aws s3 sync` it first
    a.jobs()                                    # ["mnist-1", ...]
    job = a.job("mnist-1")
    job.record["status"]                        # the job record, as GET /api/v1/jobs/NAME gives it
    job.samples(metric="train:loss")            # [{"namespace": ..., "timestamp_ms": ..., ...}]
    job.samples_frame()                         # every sample, a pandas DataFrame
    job.logs_frame()

From a shell: python3 -m trainwatch.archive FOLDER [JOB]
"""

import csv
import gzip
import io
import json
import os
import sys

FORMAT_VERSION = 1
SAMPLE_COLUMNS = ("namespace", "metric", "unit", "dimensions", "timestamp_ms", "value", "count",
                  "sum", "minimum", "maximum", "storage_resolution")
NUMBER_COLUMNS = ("value", "count", "sum", "minimum", "maximum")


class ArchiveError(Exception):
    """The folder is not a trainwatch archive, or a file of it is damaged."""


def open_archive(folder):
    """The archive in `folder` (a local copy of an S3 archive works too)."""
    return Archive(folder)


class Archive:
    def __init__(self, folder):
        self.folder = folder
        if not os.path.isdir(os.path.join(folder, "jobs")):
            raise ArchiveError(f"{folder} holds no trainwatch archive (no jobs/ folder); "
                               "write one with `trainwatch archive --to FOLDER`")

    def jobs(self):
        """The archived jobs' names, sorted."""
        root = os.path.join(self.folder, "jobs")
        return sorted(n for n in os.listdir(root)
                      if os.path.isfile(os.path.join(root, n, "job.json")))

    def job(self, name):
        if not os.path.isfile(os.path.join(self.folder, "jobs", name, "job.json")):
            raise KeyError(f"no job {name!r} in the archive {self.folder} "
                           f"(it holds: {', '.join(self.jobs()) or 'none'})")
        return ArchivedJob(os.path.join(self.folder, "jobs", name))


class ArchivedJob:
    def __init__(self, folder):
        self.folder = folder
        with open(os.path.join(folder, "job.json"), encoding="utf-8") as f:
            doc = json.load(f)
        if doc.get("format") != "trainwatch-archive":
            raise ArchiveError(f"{folder}/job.json is not a trainwatch archive's job.json")
        if doc.get("version", 0) > FORMAT_VERSION:
            raise ArchiveError(f"{folder} is archive format {doc.get('version')}; this reader "
                               f"knows format {FORMAT_VERSION}: use a newer trainwatch client")
        self.record = doc["job"]
        self.name = self.record["name"]
        # The job ended and everything of it is archived.
        self.complete = bool(doc.get("complete"))

    def segments(self):
        """The complete segments' folders (those with a manifest), oldest first;
        a segment that overlaps an earlier one (two writers at once) is left out."""
        root = os.path.join(self.folder, "segments")
        if not os.path.isdir(root):
            return []
        kept, end = [], None
        for name in sorted(os.listdir(root)):
            if not os.path.isfile(os.path.join(root, name, "manifest.json")):
                continue
            try:
                start, stop = (int(x) for x in name.split("-"))
            except ValueError:
                continue  # not a segment of this format
            if end is None or start >= end:
                kept.append(os.path.join(root, name))
                end = stop
        return kept

    def late_segments(self):
        """The complete late segments' folders (data that came after its
        window was archived), in the order they were written."""
        root = os.path.join(self.folder, "late")
        if not os.path.isdir(root):
            return []
        return [os.path.join(root, name) for name in sorted(os.listdir(root))
                if os.path.isfile(os.path.join(root, name, "manifest.json"))]

    def samples(self, namespace=None, metric=None):
        """Every sample (each a dict of SAMPLE_COLUMNS; `dimensions` a dict,
        absent numbers None), in series then time order per segment, the late
        segments' last."""
        out = []
        for segment in self.segments() + self.late_segments():
            series = {}
            with open(os.path.join(segment, "series.csv"), encoding="utf-8", newline="") as f:
                for row in csv.DictReader(f):
                    series[row["series"]] = row
            with gzip.open(os.path.join(segment, "samples.csv.gz"), "rt", encoding="utf-8",
                           newline="") as f:
                for row in csv.DictReader(f):
                    key = series.get(row["series"])
                    if key is None:
                        raise ArchiveError(f"{segment}: a sample of series {row['series']}, "
                                           "which series.csv does not list")
                    if namespace is not None and key["namespace"] != namespace:
                        continue
                    if metric is not None and key["metric"] != metric:
                        continue
                    sample = {"namespace": key["namespace"], "metric": key["metric"],
                              "unit": key["unit"], "dimensions": json.loads(key["dimensions"]),
                              "timestamp_ms": int(row["timestamp_ms"]),
                              "storage_resolution": int(row["storage_resolution"])}
                    for column in NUMBER_COLUMNS:
                        sample[column] = float(row[column]) if row[column] != "" else None
                    out.append(sample)
        return out

    def logs(self):
        """Every log event: dicts with stream, timestamp_ms, ingestion_ms, message."""
        out = []
        for segment in self.segments() + self.late_segments():
            with gzip.open(os.path.join(segment, "logs.jsonl.gz"), "rt", encoding="utf-8") as f:
                out.extend(json.loads(line) for line in f if line.strip())
        return out

    def samples_frame(self, namespace=None, metric=None):
        """samples() as a pandas DataFrame (dimensions as a JSON string column)."""
        pandas = _pandas()
        rows = self.samples(namespace, metric)
        for r in rows:
            r["dimensions"] = json.dumps(r["dimensions"], sort_keys=True)
        return pandas.DataFrame(rows, columns=list(SAMPLE_COLUMNS))

    def logs_frame(self):
        pandas = _pandas()
        return pandas.DataFrame(self.logs(),
                                columns=["stream", "timestamp_ms", "ingestion_ms", "message"])


def _pandas():
    try:
        import pandas
    except ImportError:
        raise ImportError("DataFrames need pandas (Debian: python3-pandas, or pip install "
                          "pandas); samples() and logs() need nothing") from None
    return pandas


def main(argv):
    if len(argv) not in (2, 3) or argv[1] in ("-h", "--help"):
        print("usage: python3 -m trainwatch.archive FOLDER [JOB]\n\n"
              "Lists the jobs of a trainwatch archive, or one job's series with their sample\n"
              "counts and its log events.\n\n"
              "Examples:\n"
              "  python3 -m trainwatch.archive /mnt/archive\n"
              "  python3 -m trainwatch.archive /mnt/archive mnist-1", file=sys.stderr)
        return 2
    try:
        a = open_archive(argv[1])
        if len(argv) == 2:
            for name in a.jobs():
                job = a.job(name)
                late = len(job.late_segments())
                late_note = f" and {late} late" if late else ""
                print(f"{name}\t{job.record.get('status', '?')}\t"
                      f"{len(job.segments())} segment(s){late_note}"
                      f"{'' if job.complete else ', more to come'}")
            return 0
        job = a.job(argv[2])
    except (ArchiveError, KeyError) as e:
        print(f"trainwatch.archive: error: {e.args[0]}", file=sys.stderr)
        return 2
    counts = {}
    for s in job.samples():
        key = (s["namespace"], s["metric"], json.dumps(s["dimensions"], sort_keys=True))
        counts[key] = counts.get(key, 0) + 1
    out = io.StringIO()
    for (ns, metric, dims), n in sorted(counts.items()):
        out.write(f"{ns}\t{metric}\t{dims}\t{n}\n")
    out.write(f"log events\t{len(job.logs())}\n")
    sys.stdout.write(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
