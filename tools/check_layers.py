#!/usr/bin/env python3
"""Layer check: fails when a lower layer includes a higher one.

Usage: check_layers.py SRC_DIR

Every `#include "layer/..."` in src/<layer>/ must name the layer itself or one
that the table below allows (DESIGN.md's layer table). Third-party headers that
belong to one folder (RocksDB to store/kv, Beast to server) are checked too.

One way out of the store: query/ is the only reader. Outside store/ and
query/, no source file uses the store's read types (ReadView, SeriesRef, a
LogCursor, ...) or takes a read view (`.View()`); tests may, to check what a
write stored. api/, server/ and cli/ do not include store/ at all: app/, the
composition root, opens the store for them.

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
    "rules": {"query", "model", "util"},
    "job": {"capture", "extract", "profiler", "model", "util"},
    "api": {"ingest", "query", "rules", "job", "model", "util"},
    "server": {"api", "model", "util"},
    "app": None,  # composition root: everything
    # Subcommands: everything but the store, which app opens and query reads.
    "cli": {"util", "model", "codec", "capture", "extract", "profiler", "ingest", "query",
            "rules", "job", "api", "server", "app"},
}

# The store's read side: only store/ and query/ use it (tests aside).
READ_TYPES = re.compile(
    r"\bstore::(ReadView|SeriesRef|LogCursor|LastValue|LogStreamInfo|LogPosition|"
    r"StoredLogEvent|AggregateRequest|Aggregate|CatchUpHold|RollupRecordCache)\b"
    r"|(\.|->)View\(\)")
READERS = ("store", "query")

# Third-party include prefix -> folders (relative to src/) allowed to use it.
OWNED = {
    "rocksdb/": ("store/kv",),
    "boost/beast": ("server",),
    "boost/asio": ("server",),
    "re2/": ("extract", "query"),
}

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')


def check(src):
    problems = []
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
            reads_checked = layer not in READERS and not name.endswith("_test.cc")
            with open(path, encoding="utf-8", errors="replace") as fh:
                for lineno, line in enumerate(fh, 1):
                    code = line.split("//", 1)[0]
                    if reads_checked and READ_TYPES.search(code):
                        problems.append(
                            "%s:%d: reads the store directly (%s); only query/ reads it: use "
                            "query/reader.h (query::StoreReader)" %
                            (os.path.relpath(path, src), lineno, READ_TYPES.search(code).group(0)))
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    inc = m.group(1)
                    where = "%s:%d" % (os.path.relpath(path, src), lineno)
                    for prefix, owners in OWNED.items():
                        if inc.startswith(prefix) and not any(
                                rel_dir == o or rel_dir.startswith(o + os.sep) for o in owners):
                            problems.append("%s: <%s> may be included only under %s" %
                                            (where, inc, ", ".join("src/" + o for o in owners)))
                    target = inc.split("/")[0]
                    if "/" not in inc or target not in ALLOWED or target == layer:
                        continue
                    allowed = ALLOWED[layer]
                    if allowed is not None and target not in allowed:
                        problems.append("%s: layer '%s' includes \"%s\"; '%s' may use only: %s" %
                                        (where, layer, inc, layer,
                                         ", ".join(sorted(allowed)) or "std and abseil"))
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
