#!/usr/bin/env python3
"""Layer check: fails when a lower layer includes a higher one.

Usage: check_layers.py SRC_DIR

Every `#include "layer/..."` in src/<layer>/ must name the layer itself or one
that the table below allows (DESIGN.md's layer table), or be one of the few
headers of another layer that SHARED lets it use (the agent's wire format).
Third-party headers that belong to one folder (RocksDB to store/kv, Beast to
server, libcurl to agent) are checked too.

One way out of the store: query/ is the only reader. Outside store/ and
query/, no source file uses the store's read types (ReadView, SeriesRef, a
LogCursor, ...) or takes a read view (`.View()`); tests may, to check what a
write stored. api/, server/ and cli/ do not include store/ at all: app/, the
composition root, opens the store for them. The archive's tests may include
store/ to set up what they read through query/.
Prints each violation as FILE:LINE: message and exits 1 if there is any.
"""
import os
import re
import sys

ALLOWED = {
    "util": set(),
    "model": {"util"},
    "codec": {"util"},
    "store": {"codec", "model", "util"},
    "capture": {"model", "util"},
    "extract": {"model", "util"},
    "profiler": {"model", "util"},
    "ingest": {"store", "codec", "model", "util"},
    "query": {"store", "codec", "model", "util"},
    "archive": {"query", "model", "util"},
    "rules": {"query", "model", "util"},  # and SHARED["rules"]
    "report": {"query", "rules", "model", "util"},  # and SHARED["report"]
    "job": {"capture", "extract", "profiler", "model", "util"},
    "agent": {"model", "util"},  # and SHARED["agent"]
    "api": {"ingest", "query", "rules", "report", "job", "model", "util"},
    "server": {"api", "model", "util"},
    "app": None,  # composition root: everything
    # Subcommands: everything but the store, which app opens and query reads.
    "cli": {"util", "model", "codec", "capture", "extract", "profiler", "ingest", "query",
            "archive", "rules", "report", "job", "agent", "api", "server", "app"},
}

# The store's read side: only store/ and query/ use it (tests aside).
READ_TYPES = re.compile(
    r"\bstore::(ReadView|SeriesRef|LogCursor|LastValue|LogStreamInfo|LogPosition|"
    r"StoredLogEvent|AggregateRequest|Aggregate|CatchUpHold|RollupRecordCache)\b"
    r"|(\.|->)View\(\)")
READERS = ("store", "query")
# Layers whose tests may include store/ to set up what they read through query/.
TESTS_WITH_STORE = ("archive",)

# Single headers of a layer that another layer may include without using that
# layer: the agent and api/native share the agent wire format (DESIGN.md's
# agent row: "the wire codec it shares with api/native"). Each such header may
# itself include only what the sharing layer may use and the other headers of
# its list, so that the allowance brings nothing else of api/ along.
SHARED = {
    # and SigV4 signing (api/sigv4.h, with the request type and errors it
    # declares with): the agent signs what the server's verifier checks.
    "agent": ("api/native/agent_wire.h", "api/native/agent_codec.h", "api/snappy_body.h",
              "api/sigv4.h", "api/http.h", "api/errors.h"),
    # The names the profiler publishes under, which the rules read.
    "rules": ("profiler/metric_names.h",),
    "report": ("profiler/metric_names.h",),
}

# Third-party include prefix -> folders (relative to src/) allowed to use it.
OWNED = {
    "rocksdb/": ("store/kv",),
    "boost/beast": ("server",),
    "boost/asio": ("server",),
    "re2/": ("extract", "query"),
    "curl/": ("agent",),
}

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')


def includes(path):
    """(line number, included name) of each #include in the file."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            m = INCLUDE.match(line)
            if m:
                yield lineno, m.group(1)


def check_shared(src):
    """The SHARED headers of a layer that exists: present, and including only
    what that layer may use (or each other)."""
    problems = []
    for layer, headers in sorted(SHARED.items()):
        if not os.path.isdir(os.path.join(src, layer)):
            continue
        for header in headers:
            path = os.path.join(src, header)
            if not os.path.isfile(path):
                problems.append("%s: shared with '%s' but missing" % (header, layer))
                continue
            for lineno, inc in includes(path):
                target = inc.split("/")[0]
                if "/" not in inc or target not in ALLOWED or inc in headers:
                    continue
                if target not in ALLOWED[layer]:
                    problems.append(
                        "%s:%d: shared with '%s', so it may include only %s and %s; it "
                        "includes \"%s\"" % (header, lineno, layer,
                                              ", ".join(sorted(ALLOWED[layer])),
                                              ", ".join(headers), inc))
    return problems


def check(src):
    problems = check_shared(src)
    for root, _dirs, files in os.walk(src):
        rel_dir = os.path.relpath(root, src)
        if rel_dir == ".":
            continue
        layer = rel_dir.split(os.sep)[0]
        if layer not in ALLOWED:
            problems.append("%s: folder is not a layer of DESIGN.md's table" % rel_dir)
            continue
        for name in sorted(files):
            if not name.endswith((".h", ".cc")):
                continue
            path = os.path.join(root, name)
            if layer not in READERS and not name.endswith("_test.cc"):
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for lineno, line in enumerate(fh, 1):
                        read = READ_TYPES.search(line.split("//", 1)[0])
                        if read:
                            problems.append(
                                "%s:%d: reads the store directly (%s); only query/ reads it: "
                                "use query/reader.h (query::StoreReader)" %
                                (os.path.relpath(path, src), lineno, read.group(0)))
            for lineno, inc in includes(path):
                where = "%s:%d" % (os.path.relpath(path, src), lineno)
                for prefix, owners in OWNED.items():
                    if inc.startswith(prefix) and not any(
                            rel_dir == o or rel_dir.startswith(o + os.sep) for o in owners):
                        problems.append("%s: <%s> may be included only under %s" %
                                        (where, inc, ", ".join("src/" + o for o in owners)))
                target = inc.split("/")[0]
                if "/" not in inc or target not in ALLOWED or target == layer:
                    continue
                if inc in SHARED.get(layer, ()):
                    continue
                allowed = ALLOWED[layer]
                # The archive's tests set up the store they read through query/.
                if name.endswith("_test.cc") and target == "store" and layer in TESTS_WITH_STORE:
                    continue
                if allowed is not None and target not in allowed:
                    shared = SHARED.get(layer, ())
                    problems.append("%s: layer '%s' includes \"%s\"; '%s' may use only: %s%s" %
                                    (where, layer, inc, layer,
                                     ", ".join(sorted(allowed)) or "std and abseil",
                                     " and " + ", ".join(shared) if shared else ""))
    return problems


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip())
        return 2
    problems = check(sys.argv[1])
    for p in problems:
        print(p)
    print("layer check: %d violation(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
