#!/usr/bin/env python3
"""Tests for thread_safety_check.py: a guarded member used without its mutex fails."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")

GOOD = """#include "util/mutex.h"
struct Counter {
  trainwatch::util::Mutex mu;
  int n ABSL_GUARDED_BY(mu) = 0;
  void Add() { trainwatch::util::MutexLock lock(mu); ++n; }
};
"""
BAD = """#include "util/mutex.h"
struct Counter {
  trainwatch::util::Mutex mu;
  int n ABSL_GUARDED_BY(mu) = 0;
  void Add() { ++n; }
};
"""


@unittest.skipIf(shutil.which("clang++") is None, "clang++ is not installed")
class ThreadSafetyCheckTest(unittest.TestCase):
    def run_check(self, text, unity=False):
        with tempfile.TemporaryDirectory() as root:
            src = os.path.join(root, "src")
            os.makedirs(src)
            path = os.path.join(src, "counter.cc")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            if unity:  # as CMake writes a unity source, in the build folder
                unity_dir = os.path.join(root, "build", "CMakeFiles", "t.dir", "Unity")
                os.makedirs(unity_dir)
                path = os.path.join(unity_dir, "unity_0_cxx.cxx")
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write('/* generated */\n#include "%s"\n' % os.path.join(src, "counter.cc"))
            entry = {"directory": root, "file": path,
                     "command": "ccache /usr/bin/c++ -I%s -std=c++20 -Wall -Werror "
                                "-fsanitize=address -o counter.o -c %s" % (SRC, path)}
            with open(os.path.join(root, "compile_commands.json"), "w") as fh:
                json.dump([entry], fh)
            return subprocess.run([sys.executable, os.path.join(HERE, "thread_safety_check.py"),
                                   root], capture_output=True, text=True)

    def test_a_guarded_member_used_with_its_mutex_passes(self):
        p = self.run_check(GOOD)
        self.assertEqual(p.returncode, 0, p.stdout)

    def test_a_guarded_member_used_without_its_mutex_fails(self):
        p = self.run_check(BAD)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("requires holding mutex 'mu'", p.stdout)

    def test_a_unity_source_is_checked_with_the_files_it_includes(self):
        self.assertEqual(self.run_check(GOOD, unity=True).returncode, 0)
        p = self.run_check(BAD, unity=True)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("requires holding mutex 'mu'", p.stdout)


if __name__ == "__main__":
    unittest.main()
