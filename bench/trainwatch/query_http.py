#!/usr/bin/env python3
"""The range-query cases of the shared tools/query_bench.py, over HTTP against a
running `trainwatch server`: CloudWatch GetMetricData in AWS JSON 1.0 (what the
newer AWS SDKs send), one request per query, one MetricStat per series,
period 60 s, Average or Maximum, over the whole generated duration. Timed like
query_bench.py times the peers: from sending each request to the end of its
answer's body, summed over the pages; JSON encoding and parsing are not timed.

    query_http.py --port PORT --manifest SCALE.manifest.json [--n 20] [--warmup 2]
                  [--expect-samples N]

The series are those of query_bench.py: train_loss of job-0000/algo-1, and
every metric of TrainingJobName job-0000..job-0004, Host algo-1 (100 series),
found through GET /api/v1/metrics. Prints {"cases": {"one_avg": {"median_ms": ...}, ...}}
like query_bench.py. Standard library only; one keep-alive connection,
127.0.0.1 only.
"""
import argparse
import http.client
import json
import statistics
import sys
import time
import urllib.parse

TARGET = "GraniteServiceVersion20100801."
NAMESPACES = ("trainwatch/Hosts", "trainwatch/TrainingJobs")


def post(conn, operation, data):
    """One request of encoded JSON `data`; the raw answer. Timed by the caller, as
    tools/query_bench.py times the peers: from sending the request to the end of
    the answer's body (encoding the request and parsing the answer are not in it)."""
    conn.request("POST", "/", body=data, headers={
        "Content-Type": "application/x-amz-json-1.0",
        "X-Amz-Target": TARGET + operation,
        "x-amzn-query-mode": "true",
    })
    resp = conn.getresponse()
    payload = resp.read()
    if resp.status != 200:
        sys.exit("%s: HTTP %d: %s" % (operation, resp.status, payload[:500]))
    return payload


def list_metrics(conn, namespace):
    """Every series of the namespace, as MetricStat's Metric. Through the native API:
    CloudWatch's ListMetrics only lists metrics with data in the last two weeks, and
    the generated data is dated 2024."""
    out, after = [], None
    while True:
        query = {"namespace": namespace, "since": "0", "limit": "10000"}
        if after:
            query["after"] = after
        conn.request("GET", "/api/v1/metrics?" + urllib.parse.urlencode(query))
        resp = conn.getresponse()
        page = json.loads(resp.read())
        if resp.status != 200:
            sys.exit("GET /api/v1/metrics: HTTP %d: %s" % (resp.status, page))
        for m in page.get("metrics", []):
            out.append({"Namespace": m["namespace"], "MetricName": m["metric"],
                        "Dimensions": [{"Name": k, "Value": v}
                                       for k, v in sorted(m.get("dimensions", {}).items())]})
        after = page.get("next")
        if not after:
            return out


def dims(metric):
    return {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}


def queries(metrics, stat, period=60):
    return [{"Id": "q%d" % i, "ReturnData": True,
             "MetricStat": {"Metric": m, "Period": period, "Stat": stat}}
            for i, m in enumerate(metrics)]


def count_samples(conn, metrics, man):
    """Every sample the server holds for `metrics`: GetMetricData SampleCount with hour-long
    periods over the whole data, 500 series a request (the API's limit). Like the peers'
    benchmark scripts, which count through their query API on the server they then time."""
    start = man["start_ms"] // 1000 // 3600 * 3600
    end = man["end_ms"] // 1000 + 3600
    total = 0
    for i in range(0, len(metrics), 500):
        body = {"MetricDataQueries": queries(metrics[i:i + 500], "SampleCount", 3600),
                "StartTime": start, "EndTime": end}
        while True:
            page = json.loads(post(conn, "GetMetricData", json.dumps(body).encode()))
            total += sum(int(v) for r in page.get("MetricDataResults", [])
                         for v in r.get("Values", []))
            if not page.get("NextToken"):
                break
            body = dict(body, NextToken=page["NextToken"])
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--expect-samples", type=int,
                    help="first count every sample through the server (GetMetricData "
                         "SampleCount) and fail unless there are this many")
    a = ap.parse_args()
    man = json.load(open(a.manifest))
    start = man["start_ms"] // 1000 + 60
    end = man["start_ms"] // 1000 + man["duration_s"]
    conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=300)

    every = [m for ns in NAMESPACES for m in list_metrics(conn, ns)]
    if a.expect_samples is not None:
        got = count_samples(conn, every, man)
        if got != a.expect_samples:
            sys.exit("the server holds %d samples, expected %d" % (got, a.expect_samples))
    one = [m for m in every if m["MetricName"] == "train_loss"
           and dims(m).get("TrainingJobName") == "job-0000" and dims(m).get("Host") == "algo-1"]
    hundred = [m for m in every if dims(m).get("Host") == "algo-1"
               and dims(m).get("TrainingJobName") in {"job-000%d" % i for i in range(5)}]
    out = {"start": start, "end": end, "step": 60, "n": a.n,
           "interface": "HTTP: CloudWatch GetMetricData, AWS JSON 1.0, one keep-alive connection",
           "cases": {}}
    for name, metrics, stat in (("one_avg", one, "Average"), ("one_max", one, "Maximum"),
                                ("hundred_avg", hundred, "Average"),
                                ("hundred_max", hundred, "Maximum")):
        body = {"MetricDataQueries": queries(metrics, stat), "StartTime": start, "EndTime": end,
                "ScanBy": "TimestampAscending"}
        times = []
        for i in range(a.warmup + a.n):
            data, elapsed = json.dumps(body).encode(), 0.0
            with_values, points = set(), 0
            while True:
                t0 = time.perf_counter()
                payload = post(conn, "GetMetricData", data)
                elapsed += (time.perf_counter() - t0) * 1000
                page = json.loads(payload)
                for r in page.get("MetricDataResults", []):
                    if r.get("Values"):
                        with_values.add(r["Id"])
                    points += len(r.get("Values", []))
                if not page.get("NextToken"):
                    break
                data = json.dumps(dict(body, NextToken=page["NextToken"])).encode()
            series = len(with_values)
            if i >= a.warmup:
                times.append(elapsed)
        out["cases"][name] = {"median_ms": statistics.median(times), "min_ms": min(times),
                              "max_ms": max(times), "series": series,
                              "expected_series": 1 if name.startswith("one") else 100,
                              "points": points}
        if series != out["cases"][name]["expected_series"]:
            print("WARNING: %s returned %d series" % (name, series), file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
