// store_crash_writer DATA_DIR FIRST_BATCH: the child of store_crash_test.
//
// Writes numbered batches (samples of three kinds, and a log event) through
// Db, and prints each batch number on stdout, flushed, only after the write
// returned: a printed number is an acknowledged write. Runs until killed.
// What a batch holds is a pure function of its number (CrashBatch), so the
// test can check every sample it finds.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "store/crash_batch.h"
#include "store/db.h"

int main(int argc, char** argv) {
  using namespace trainwatch;
  if (argc != 3) {
    std::fprintf(stderr, "usage: store_crash_writer DATA_DIR FIRST_BATCH\n");
    return 2;
  }
  store::DbOptions o;
  o.data_dir = argv[1];
  o.mode = store::OpenMode::kWriter;
  o.retention = store::testing::CrashRetention();
  // Small chunks: seals (chunk + rollups + head deletion) happen all the time.
  o.head.max_chunk_rows = 37;
  o.head.max_open_ms = 200;
  o.head.idle_ms = 100;
  auto db = store::Db::Open(o);
  if (!db.ok()) {
    std::fprintf(stderr, "store_crash_writer: %s\n", std::string(db.status().message()).c_str());
    return 1;
  }
  const int64_t first = std::strtoll(argv[2], nullptr, 10);
  for (int64_t b = first;; ++b) {
    model::SampleBatch samples = store::testing::CrashBatch(b);
    absl::Status s = (*db)->PutSamples(samples);
    if (s.ok()) s = (*db)->PutLogs(store::testing::CrashLogs(b));
    if (!s.ok()) {
      std::fprintf(stderr, "store_crash_writer: batch %ld: %s\n", static_cast<long>(b),
                   std::string(s.message()).c_str());
      return 1;
    }
    std::printf("%ld\n", static_cast<long>(b));
    std::fflush(stdout);
    if (b % 11 == 0) (void)(*db)->Maintain();
    if (b % 50 == 0) (void)(*db)->SealAll();
  }
}
