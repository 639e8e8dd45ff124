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

    def write_wire(self, src, codec_includes='#include "api/native/agent_wire.h"\n'):
        write(src, "api/native/agent_wire.h", '#include "model/series.h"\n')
        write(src, "api/native/agent_codec.h", codec_includes)
        write(src, "api/snappy_body.h", "#include <string>\n")
        write(src, "api/sigv4.h", '#include "api/errors.h"\n#include "api/http.h"\n')
        write(src, "api/errors.h", '#include "api/http.h"\n')
        write(src, "api/http.h", "#include <string>\n")

    def test_agent_may_include_the_shared_wire_headers_and_no_other_api_header(self):
        with tempfile.TemporaryDirectory() as src:
            self.write_wire(src)
            write(src, "agent/remote_sink.cc",
                  '#include "api/native/agent_codec.h"\n#include "api/snappy_body.h"\n'
                  '#include "model/sinks.h"\n#include "api/backend.h"\n')
            problems = check_layers.check(src)
            self.assertEqual(len(problems), 1, problems)
            self.assertIn("agent/remote_sink.cc:4", problems[0])

    def test_a_shared_header_that_brings_in_more_of_its_layer_is_reported(self):
        with tempfile.TemporaryDirectory() as src:
            self.write_wire(src, codec_includes='#include "api/backend.h"\n')
            write(src, "agent/remote_sink.cc", '#include "api/native/agent_codec.h"\n')
            problems = check_layers.check(src)
            self.assertEqual(len(problems), 1, problems)
            self.assertIn("api/native/agent_codec.h:1", problems[0])

    def test_a_missing_shared_header_is_reported(self):
        with tempfile.TemporaryDirectory() as src:
            self.write_wire(src)
            os.remove(os.path.join(src, "api/snappy_body.h"))
            write(src, "agent/spool.cc", '#include "util/log.h"\n')
            problems = check_layers.check(src)
            self.assertEqual(len(problems), 1, problems)
            self.assertIn("api/snappy_body.h", problems[0])

    def test_curl_outside_agent_is_reported(self):
        with tempfile.TemporaryDirectory() as src:
            self.write_wire(src)
            write(src, "agent/remote_sink.cc", "#include <curl/curl.h>\n")
            write(src, "cli/stop_command.cc", "#include <curl/curl.h>\n")
            problems = check_layers.check(src)
            self.assertEqual(len(problems), 1, problems)
            self.assertIn("cli/stop_command.cc", problems[0])

    def test_job_may_use_the_profiler_but_not_api_or_store(self):
        with tempfile.TemporaryDirectory() as src:
            write(src, "job/local_jobs.cc",
                  '#include "profiler/profiler.h"\n#include "api/backend.h"\n'
                  '#include "store/db.h"\n')
            self.assertEqual(len(check_layers.check(src)), 2)

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
