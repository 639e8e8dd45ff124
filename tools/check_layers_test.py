#!/usr/bin/env python3
"""Tests for check_layers.py: the layer check must catch an upward include."""
import os
import tempfile
import unittest

import check_layers


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


class CheckLayersTest(unittest.TestCase):
    def test_downward_include_is_fine(self):
        with tempfile.TemporaryDirectory() as src:
            write(src, "store/db.cc", '#include "codec/chunk.h"\n#include "store/db.h"\n')
            self.assertEqual(check_layers.check(src), [])

    def test_upward_include_is_reported(self):
        with tempfile.TemporaryDirectory() as src:
            write(src, "codec/chunk.cc", '#include "store/db.h"\n')
            problems = check_layers.check(src)
            self.assertEqual(len(problems), 1)
            self.assertIn("codec/chunk.cc:1", problems[0])

    def test_sibling_include_is_reported(self):
        with tempfile.TemporaryDirectory() as src:
            write(src, "capture/a.cc", '#include "extract/matcher.h"\n')
            self.assertEqual(len(check_layers.check(src)), 1)

    def test_rocksdb_outside_kv_is_reported(self):
        with tempfile.TemporaryDirectory() as src:
            write(src, "store/kv/kv.cc", "#include <rocksdb/db.h>\n")
            write(src, "store/db.cc", "#include <rocksdb/db.h>\n")
            problems = check_layers.check(src)
            self.assertEqual(len(problems), 1)
            self.assertIn("store/db.cc", problems[0])

    def test_app_may_include_anything(self):
        with tempfile.TemporaryDirectory() as src:
            write(src, "app/app.cc", '#include "server/server.h"\n#include "store/db.h"\n')
            self.assertEqual(check_layers.check(src), [])

    def test_cli_api_and_server_may_not_include_the_store(self):
        with tempfile.TemporaryDirectory() as src:
            write(src, "cli/a.cc", '#include "store/db.h"\n#include "query/reader.h"\n')
            write(src, "api/b.cc", '#include "store/read_view.h"\n')
            write(src, "server/c.cc", '#include "store/db.h"\n')
            problems = check_layers.check(src)
            self.assertEqual(len(problems), 3, problems)

    def test_reading_the_store_outside_query_is_reported(self):
        with tempfile.TemporaryDirectory() as src:
            write(src, "app/a.cc", "auto view = db.View();\n")
            write(src, "ingest/b.cc", "std::vector<store::SeriesRef> refs;\n")
            write(src, "app/c.cc", "// a comment may name store::ReadView\n")
            problems = check_layers.check(src)
            self.assertEqual(len(problems), 2, problems)
            self.assertIn("app/a.cc:1", problems[0])
            self.assertIn("only query/ reads it", problems[0])

    def test_query_store_and_tests_may_read_the_store(self):
        with tempfile.TemporaryDirectory() as src:
            write(src, "query/r.cc", "store::ReadView v = *db.View();\n")
            write(src, "store/s.cc", "store::ReadView v = *db.View();\n")
            write(src, "ingest/ingest_test.cc", "auto view = db_->View();\n")
            self.assertEqual(check_layers.check(src), [])


if __name__ == "__main__":
    unittest.main()
