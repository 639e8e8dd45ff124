#!/usr/bin/env python3
"""HTTP ingest into `trainwatch server`, shaped like the shared tools/remote_write.py
so that the two rows compare: the same generated data, 2 keep-alive connections
(one shard of series each), 2000 samples per request, requests in time order,
a barrier every 10 requests.

  native_ingest.py encode --vmimport DATA/small.vmimport --manifest DATA/small.manifest.json
                          --out-prefix WORK/small.tw [--protocol native|putmetricdata]
                          [--compress snappy]
      builds the request bodies and stores them as WORK/small.tw.0, .1: a sequence of
      [4-byte big-endian length][body] records, and WORK/small.tw.json.
      --compress snappy (native only; needs python3-snappy, as tools/remote_write.py
      does) compresses each body as one snappy block, as remote write compresses its
      protobuf, and the sender sends it with Content-Encoding: snappy.
      native: POST /api/v1/samples bodies ({"series": [...]}, each series a column
      of timestamps and values). putmetricdata: CloudWatch PutMetricData in AWS JSON
      1.0, 1000 MetricData (one value each) per request, the API's own limit.
      Timestamps are moved forward so that the newest sample is a minute old:
      trainwatch's ingest takes CloudWatch's window (14 days back), and the
      generator dates its data in 2024. Values, series and order are unchanged.

  native_ingest.py send --port P --in-prefix WORK/small.tw [--rate SAMPLES_PER_S]
      prints JSON {samples, requests, seconds, samples_per_s, errors}.
      --rate paces the requests so that the samples sent by time t are at most
      rate * t (all connections together; a request late behind its schedule
      goes at once): a steady load instead of a flood.

Standard library only; 127.0.0.1 only.
"""
import argparse
import http.client
import json
import struct
import sys
import threading
import time

SAMPLES_PER_REQUEST = 2000
PUT_METRIC_DATA_PER_REQUEST = 1000


def load_series(path):
    """One entry per series, in time order. VictoriaMetrics' export format splits a
    series over several lines (one per block); they are merged here so that each
    series goes to one sender, in time order, as tools/remote_write.py sends them."""
    merged = {}
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            labels = dict(rec["metric"])
            name = labels.pop("__name__")
            ns = labels.pop("namespace", "trainwatch/Imported")
            key = (ns, name, tuple(sorted(labels.items())))
            entry = merged.setdefault(key, (ns, name, labels, []))
            entry[3].extend(zip(rec["timestamps"], rec["values"]))
    series = []
    for ns, name, labels, points in merged.values():
        points.sort(key=lambda p: p[0])
        series.append((ns, name, labels, [p[0] for p in points], [p[1] for p in points]))
    return series


def native_requests(shard, shift, per_request):
    """Time-ordered requests of about per_request samples over the shard's series."""
    n = len(shard)
    steps = max(1, per_request // n)
    group = max(1, per_request // steps)
    length = max(len(s[3]) for s in shard)
    for t0 in range(0, length, steps):
        for g in range(0, n, group):
            body = []
            for ns, name, dims, ts, vs in shard[g:g + group]:
                t = ts[t0:t0 + steps]
                if t:
                    body.append({"namespace": ns, "metric": name, "dimensions": dims,
                                 "t_ms": [x + shift for x in t], "values": vs[t0:t0 + steps]})
            if body:
                yield json.dumps({"series": body}, separators=(",", ":")).encode()


def put_metric_data_requests(shard, shift):
    """PutMetricData bodies (JSON 1.0), one namespace per request, time order."""
    by_ns = {}
    for s in shard:
        by_ns.setdefault(s[0], []).append(s)
    length = max(len(s[3]) for s in shard)
    pending = {}
    for t in range(length):
        for ns, members in by_ns.items():
            batch = pending.setdefault(ns, [])
            for _, name, dims, ts, vs in members:
                if t < len(ts):
                    batch.append({"MetricName": name,
                                  "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
                                  "Timestamp": (ts[t] + shift) / 1000.0, "Value": vs[t],
                                  "StorageResolution": 1})
                if len(batch) == PUT_METRIC_DATA_PER_REQUEST:
                    yield json.dumps({"Namespace": ns, "MetricData": batch},
                                     separators=(",", ":")).encode()
                    batch = pending[ns] = []
    for ns, batch in pending.items():
        if batch:
            yield json.dumps({"Namespace": ns, "MetricData": batch}, separators=(",", ":")).encode()


def cmd_encode(a):
    compress = None
    if a.compress == "snappy":
        if a.protocol != "native":
            sys.exit("--compress snappy is for --protocol native (PutMetricData takes gzip only)")
        try:
            import snappy
        except ImportError:
            sys.exit("--compress snappy needs python3-snappy (Debian package), in this interpreter")
        compress = snappy.compress
    man = json.load(open(a.manifest))
    series = load_series(a.vmimport)
    shift = int(time.time() * 1000) - 60000 - man["end_ms"]
    shards = [series[k::a.shards] for k in range(a.shards)]
    counts = []
    for k, shard in enumerate(shards):
        gen = (native_requests(shard, shift, SAMPLES_PER_REQUEST) if a.protocol == "native"
               else put_metric_data_requests(shard, shift))
        n = 0
        with open("%s.%d" % (a.out_prefix, k), "wb") as out:
            for body in gen:
                if compress:
                    body = compress(body)
                out.write(struct.pack(">I", len(body)))
                out.write(body)
                n += 1
        counts.append(n)
    meta = {"shards": a.shards, "samples": sum(len(s[3]) for s in series),
            "protocol": a.protocol, "content_encoding": a.compress or "identity",
            "encoded_at_ms": int(time.time() * 1000), "requests": counts}
    json.dump(meta, open(a.out_prefix + ".json", "w"))


def read_records(path):
    out = []
    with open(path, "rb") as f:
        while True:
            head = f.read(4)
            if len(head) < 4:
                return out
            out.append(f.read(struct.unpack(">I", head)[0]))


def cmd_send(a):
    meta = json.load(open(a.in_prefix + ".json"))
    shards = [read_records("%s.%d" % (a.in_prefix, k)) for k in range(meta["shards"])]
    rounds = max(len(s) for s in shards)
    barrier = threading.Barrier(len(shards))
    errors = []
    if meta["protocol"] == "native":
        path, headers = "/api/v1/samples", {"Content-Type": "application/json"}
        if meta.get("content_encoding", "identity") != "identity":
            headers["Content-Encoding"] = meta["content_encoding"]
    else:
        path, headers = "/", {"Content-Type": "application/x-amz-json-1.0",
                              "X-Amz-Target": "GraniteServiceVersion20100801.PutMetricData",
                              "x-amzn-query-mode": "true"}

    # --rate: request i of every connection is due when all connections
    # together have been given (i * connections) requests' worth of time.
    per_request = meta["samples"] / max(1, sum(len(s) for s in shards))
    interval = per_request * len(shards) / a.rate if a.rate else 0.0

    def worker(recs):
        conn = http.client.HTTPConnection("127.0.0.1", a.port, timeout=120)
        for i in range(rounds):
            if interval:
                wait = t0 + i * interval - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
            if i < len(recs):
                conn.request("POST", path, body=recs[i], headers=headers)
                resp = conn.getresponse()
                body = resp.read()
                if resp.status // 100 != 2:
                    errors.append("HTTP %d: %s" % (resp.status, body[:300]))
            if i % 10 == 9:
                barrier.wait(timeout=600)
        conn.close()

    threads = [threading.Thread(target=worker, args=(s,)) for s in shards]
    t0 = time.perf_counter() + 0.05
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.perf_counter() - t0
    out = {"samples": meta["samples"], "requests": sum(len(s) for s in shards), "seconds": dt,
           "samples_per_s": meta["samples"] / dt, "errors": len(errors),
           "first_errors": errors[:3]}
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    if errors:
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("encode")
    e.add_argument("--vmimport", required=True)
    e.add_argument("--manifest", required=True)
    e.add_argument("--out-prefix", required=True)
    e.add_argument("--shards", type=int, default=2)
    e.add_argument("--protocol", choices=("native", "putmetricdata"), default="native")
    e.add_argument("--compress", choices=("snappy",), default=None)
    s = sub.add_parser("send")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--in-prefix", required=True)
    s.add_argument("--rate", type=float, default=0.0,
                   help="samples a second, all connections together (default: as fast as answered)")
    a = ap.parse_args()
    cmd_encode(a) if a.cmd == "encode" else cmd_send(a)


if __name__ == "__main__":
    main()
