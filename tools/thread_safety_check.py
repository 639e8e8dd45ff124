#!/usr/bin/env python3
"""Thread-safety check: clang's -Wthread-safety over every translation unit.

Usage: thread_safety_check.py BUILD_DIR [--jobs N] [--filter SUBSTRING]

Reads BUILD_DIR/compile_commands.json (any preset's), and checks each source
file of src/ (tests and fuzz targets aside) with Debian's clang++ (-fsyntax-only: no code is
generated, so this takes a fraction of a build) with -Wthread-safety as an
error. In a unity build (the dev preset's) the database names the unity
sources, each including several of a target's files: each is checked as one
translation unit, as it is built, when it includes a file of src/ that is not
a test. Every member a mutex guards is annotated ABSL_GUARDED_BY (util/mutex.h),
so the check proves each is used with its mutex held. Other warnings are the
gcc build's business and are not reported here.

Prints each problem as clang does and exits 1 if there is any; exits 2 when
clang++ or the compile database is missing (the message says what to do).
"""
import argparse
import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys

# Flags of the gcc build that clang does not take, or that only cost time here.
DROP_PREFIXES = ("-fsanitize", "-fno-sanitize", "-Werror", "-Wall", "-Wextra", "-W", "-O",
                 "-g", "-fno-omit-frame-pointer", "-MD", "-MT", "-MF", "-o", "-c")
DROP_WITH_VALUE = {"-MT", "-MF", "-o"}
CHECK = ["-fsyntax-only", "-Wno-everything", "-Wthread-safety", "-Werror=thread-safety",
         "-Wthread-safety-beta"]


def clang_command(entry, clang):
    args = entry.get("arguments") or shlex.split(entry["command"])
    # The compiler (or a launcher and the compiler) comes before the first flag.
    while args and not args[0].startswith("-"):
        args = args[1:]
    out = [clang]
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in DROP_WITH_VALUE:
            skip = True
            continue
        if not a.startswith("-") and a.endswith((".cc", ".cpp", ".cxx")):
            continue  # the source file, given again below
        if a.startswith(DROP_PREFIXES):
            continue
        out.append(a)
    return out + CHECK + [entry["file"]]


def unity_sources(path, directory):
    """The files a CMake unity source includes (its lines: #include "/abs/file.cc")."""
    out = []
    with open(os.path.join(directory, path), encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line.startswith("#include \"") and line.endswith("\""):
                out.append(line[len("#include \""):-1])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build_dir")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--filter", default="", help="only files whose path contains this")
    opts = parser.parse_args()
    clang = shutil.which("clang++")
    if clang is None:
        print("thread_safety_check: clang++ is not installed; scripts/install-deps installs it")
        return 2
    db_path = os.path.join(opts.build_dir, "compile_commands.json")
    if not os.path.exists(db_path):
        print("thread_safety_check: no %s; configure a preset first (cmake --preset dev)" % db_path)
        return 2
    with open(db_path, encoding="utf-8") as fh:
        entries = json.load(fh)
    seen = set()
    todo = []
    for e in entries:
        f = e["file"]
        if f in seen:
            continue
        # Tests and fuzz targets share no state between threads of their own
        # beyond the fixtures (in src/*/testing, checked); skipping them halves the time.
        if f.endswith(".cc"):
            sources = [f]
        elif "/Unity/unity_" in f and f.endswith(".cxx"):
            sources = unity_sources(f, e["directory"])
        else:
            continue
        if not any("/src/" in s and not s.endswith(("_test.cc", "_fuzz.cc")) and opts.filter in s
                   for s in sources):
            continue
        seen.add(f)
        todo.append(e)

    def run(entry):
        cmd = clang_command(entry, clang)
        p = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
        return entry["file"], p.returncode, p.stdout + p.stderr

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        for f, rc, out in pool.map(run, todo):
            if rc != 0:
                failed += 1
                sys.stdout.write(out)
    print("thread_safety_check: %d of %d files with problems" % (failed, len(todo)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
