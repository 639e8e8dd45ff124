// trainwatch admin compact: store maintenance (docs/store.md).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "app/data_dir.h"
#include "cli/commands.h"
#include "store/db.h"

namespace trainwatch::cli {
namespace {

uint64_t DirBytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) total += e.file_size(ec);
  }
  return total;
}

int RunCompact(const GlobalOptions& global, bool json) {
  store::DbOptions o;
  o.data_dir = app::ResolveDataDir(global.data_dir);
  o.mode = store::OpenMode::kWriter;
  o.background_thread = false;
  auto db = store::Db::Open(o);
  if (!db.ok()) {
    std::fprintf(stderr, "trainwatch admin compact: %s\n", std::string(db.status().message()).c_str());
    return absl::IsFailedPrecondition(db.status()) || absl::IsNotFound(db.status()) ? 2 : 1;
  }
  const std::string db_dir = o.data_dir + "/db";
  const uint64_t before = DirBytes(db_dir);
  auto t0 = std::chrono::steady_clock::now();
  absl::Status s = (*db)->CompactAll();
  if (!s.ok()) {
    std::fprintf(stderr, "trainwatch admin compact: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const uint64_t after = DirBytes(db_dir);
  if (json) {
    std::string cfs;
    for (int i = 0; i < store::kv::kCfCount; ++i) {
      const auto cf = static_cast<store::kv::Cf>(i);
      cfs += absl::StrFormat("%s\"%s\": %d", i ? ", " : "", store::kv::CfName(cf),
                             (*db)->kv().SstBytes(cf));
    }
    std::printf("%s\n", absl::StrFormat("{\"seconds\": %.3f, \"bytes_before\": %d, "
                                         "\"bytes_after\": %d, \"sst_bytes\": {%s}}",
                                         secs, before, after, cfs)
                           .c_str());
  } else {
    std::printf("compacted %s in %.2f s: %s -> %s bytes\n", o.data_dir.c_str(), secs,
                std::to_string(before).c_str(), std::to_string(after).c_str());
  }
  return 0;
}

}  // namespace

void RegisterAdminCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  CLI::App* admin = root.add_subcommand("admin", "maintenance of the data folder");
  admin->require_subcommand(1);
  auto json = std::make_shared<bool>(false);
  CLI::App* compact = admin->add_subcommand(
      "compact",
      "seal open chunks, flush, and compact the data folder fully: the smallest size on disk, "
      "and retention applied now (needs the folder's writer lock)");
  compact->add_flag("--json", *json, "print sizes per column family as JSON");
  AddDataOption(compact, options);
  compact->callback([options, exit_code, json] { *exit_code = RunCompact(*options, *json); });
}

}  // namespace trainwatch::cli
