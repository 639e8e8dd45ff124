#include "app/open_store.h"

#include <chrono>
#include <filesystem>
#include <thread>

#include "absl/strings/str_format.h"

namespace trainwatch::app {
namespace {

uint64_t DirBytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) total += e.file_size(ec);
  }
  return total;
}

}  // namespace

absl::StatusOr<std::unique_ptr<store::Db>> OpenForRead(const std::string& data_dir) {
  store::DbOptions options;
  options.data_dir = data_dir;
  options.mode = store::OpenMode::kWriterIfFree;
  // A read command is short-lived: no background maintenance thread.
  options.background_thread = false;
  auto db = store::Db::Open(options);
  if (!db.ok() && absl::IsNotFound(db.status())) {
    return absl::NotFoundError(absl::StrFormat(
        "no trainwatch data in %s (run a job with `trainwatch run` first, or point --data / "
        "TRAINWATCH_DATA at the folder a job used)",
        data_dir));
  }
  return db;
}

absl::StatusOr<std::unique_ptr<store::Db>> OpenForRun(const std::string& data_dir) {
  store::DbOptions options;
  options.data_dir = data_dir;
  options.mode = store::OpenMode::kWriter;
  // One job writes little and reads almost nothing: small memtables and
  // block cache keep the runner small (BENCHMARKS.md, "The whole runner's memory").
  options.block_cache_bytes = 2 << 20;
  options.write_buffer_bytes = 1 << 20;
  options.head_write_buffer_bytes = 2 << 20;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (true) {
    auto db = store::Db::Open(options);
    if (db.ok() || !absl::IsFailedPrecondition(db.status()) ||
        std::chrono::steady_clock::now() >= deadline) {
      return db;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

absl::StatusOr<std::unique_ptr<store::Db>> OpenFollower(const std::string& data_dir,
                                                        util::Clock* clock) {
  store::DbOptions options;
  options.data_dir = data_dir;
  options.clock = clock;
  options.mode = store::OpenMode::kReader;
  options.background_thread = false;
  // Catching up with the writer on every request would cost more than it
  // shows; a quarter second behind is live enough.
  options.catch_up_min_interval_ms = 250;
  absl::StatusOr<std::unique_ptr<store::Db>> db = store::Db::Open(options);
  if (absl::IsNotFound(db.status())) {
    // Nothing written here yet: create the folder as a writer would, let go.
    store::DbOptions create = options;
    create.mode = store::OpenMode::kWriter;
    absl::StatusOr<std::unique_ptr<store::Db>> created = store::Db::Open(create);
    if (!created.ok() && !absl::IsFailedPrecondition(created.status())) return created.status();
    if (created.ok()) created->reset();
    db = store::Db::Open(options);
  }
  return db;
}

absl::StatusOr<std::unique_ptr<store::Db>> OpenForServer(const std::string& data_dir,
                                                         util::Clock* clock,
                                                         bool hold_for_archive) {
  store::DbOptions options;
  options.data_dir = data_dir;
  options.clock = clock;
  if (hold_for_archive) options.retention_hold_ms = 0;
  options.mode = store::OpenMode::kWriterIfFree;
  options.catch_up_min_interval_ms = 250;
  absl::StatusOr<std::unique_ptr<store::Db>> db = store::Db::Open(options);
  if (absl::IsNotFound(db.status())) {
    options.mode = store::OpenMode::kWriter;  // a new folder: create it
    db = store::Db::Open(options);
    if (absl::IsFailedPrecondition(db.status())) return OpenFollower(data_dir, clock);
  }
  return db;
}

absl::StatusOr<std::unique_ptr<store::Db>> OpenForImport(const std::string& data_dir) {
  store::DbOptions options;
  options.data_dir = data_dir;
  options.mode = store::OpenMode::kWriter;
  options.bulk_load = true;  // compactions: --compact, or the next writer
  options.background_thread = false;
  return store::Db::Open(options);
}

absl::StatusOr<CompactionReport> CompactDataFolder(const std::string& data_dir) {
  // Opening a writer would make a new, empty folder: nothing to compact.
  std::error_code ec;
  if (std::filesystem::is_directory(data_dir, ec) &&
      !std::filesystem::exists(store::DataFolderPaths(data_dir).db + "/CURRENT", ec)) {
    return absl::NotFoundError(absl::StrFormat(
        "no trainwatch data in %s: nothing to compact (check --data / TRAINWATCH_DATA)",
        data_dir));
  }
  if (!std::filesystem::exists(data_dir, ec)) {
    return absl::NotFoundError(absl::StrFormat(
        "no data folder at %s: nothing to compact (check --data / TRAINWATCH_DATA)", data_dir));
  }
  store::DbOptions options;
  options.data_dir = data_dir;
  options.mode = store::OpenMode::kWriter;
  options.background_thread = false;
  absl::StatusOr<std::unique_ptr<store::Db>> db = store::Db::Open(options);
  if (!db.ok()) return db.status();
  const std::string db_dir = store::DataFolderPaths(data_dir).db;
  CompactionReport report;
  report.bytes_before = DirBytes(db_dir);
  const auto t0 = std::chrono::steady_clock::now();
  if (absl::Status s = (*db)->CompactAll(); !s.ok()) return s;
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  report.bytes_after = DirBytes(db_dir);
  for (int i = 0; i < store::kv::kCfCount; ++i) {
    const auto cf = static_cast<store::kv::Cf>(i);
    report.sst_bytes.emplace_back(std::string(store::kv::CfName(cf)), (*db)->kv().SstBytes(cf));
  }
  return report;
}

}  // namespace trainwatch::app
