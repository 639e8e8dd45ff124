#!/usr/bin/env python3
"""Delay of `trainwatch server --remote-write` to a VictoriaMetrics receiver:
puts one probe sample into trainwatch every --every seconds (PutMetricData,
query protocol; its value is its number) and looks for the probes in
VictoriaMetrics (/api/v1/export) every --poll seconds, until the file --stop
exists; then prints {"probes", "seen", "p50_s", "p99_s", "max_s"} as JSON.
--ready FILE is created once the warm-up probe is seen, so that a caller starts
its load only then and every measured probe goes in while it runs.
A probe's delay runs from trainwatch's answer to its PutMetricData to the
first export that holds it. One probe goes first, unmeasured, and is waited
for: VictoriaMetrics shows a new series' first samples only after about 5 s
(its index of new series), which is the receiver's, not the path's.
Standard library only.
"""
import argparse
import json
import os
import statistics
import threading
import time
import urllib.parse
import urllib.request


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trainwatch", required=True, help="http://127.0.0.1:PORT")
    ap.add_argument("--victoria", required=True, help="http://127.0.0.1:PORT")
    ap.add_argument("--stop", required=True, help="stop once this file exists")
    ap.add_argument("--ready", help="created once the warm-up probe is seen")
    ap.add_argument("--every", type=float, default=0.1)
    ap.add_argument("--poll", type=float, default=0.02)
    a = ap.parse_args()
    sent, seen = {}, {}
    lock = threading.Lock()
    done = threading.Event()

    def put_one(n):
        form = {"Action": "PutMetricData", "Version": "2010-08-01", "Namespace": "bench",
                "MetricData.member.1.MetricName": "rw_probe",
                "MetricData.member.1.Value": str(n),
                "MetricData.member.1.StorageResolution": "1"}
        req = urllib.request.Request(a.trainwatch + "/", data=urllib.parse.urlencode(form).encode(),
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()

    def shown():
        q = urllib.parse.urlencode({"match[]": '{__name__="rw_probe"}'})
        try:
            with urllib.request.urlopen(a.victoria + "/api/v1/export?" + q, timeout=30) as r:
                return r.read().decode()
        except OSError:
            return ""

    # The series first: the warm-up probe (-1), waited for up to 60 s.
    put_one(-1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and '-1' not in shown():
        time.sleep(0.05)
    if a.ready:
        open(a.ready, "w").close()

    def put():
        n = 0
        while not os.path.exists(a.stop):
            put_one(n)
            with lock:
                sent[n] = time.monotonic()
            n += 1
            time.sleep(a.every)
        done.set()

    def poll():
        while True:
            finished = done.is_set()
            body = shown()
            now = time.monotonic()
            for line in body.splitlines():
                for v in json.loads(line).get("values", []):
                    n = int(v)
                    with lock:
                        if n not in seen and n in sent:
                            seen[n] = now
            with lock:
                if finished and len(seen) == len(sent):
                    return
            if finished and now - sent_last() > 30:
                return
            time.sleep(a.poll)

    def sent_last():
        with lock:
            return max(sent.values()) if sent else time.monotonic()

    t = threading.Thread(target=put)
    t.start()
    poll()
    t.join()
    delays = sorted(seen[n] - sent[n] for n in seen)
    out = {"probes": len(sent), "seen": len(seen)}
    if delays:
        out.update(p50_s=statistics.median(delays), p99_s=delays[min(len(delays) - 1, int(0.99 * len(delays)))],
                   max_s=delays[-1])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
