// trainwatch admin compact: store maintenance (docs/store.md); trainwatch
// admin deliver: spools left for another server (docs/running.md).
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "absl/strings/str_format.h"
#include "agent/remote_sink.h"
#include "agent/server_discovery.h"
#include "app/data_dir.h"
#include "cli/commands.h"
#include "app/open_store.h"
#include "util/time_parse.h"

namespace trainwatch::cli {
namespace {

int RunCompact(const GlobalOptions& global, bool json) {
  const std::string data_dir = app::ResolveDataDir(global.data_dir);
  absl::StatusOr<app::CompactionReport> report = app::CompactDataFolder(data_dir);
  if (!report.ok()) {
    std::fprintf(stderr, "trainwatch admin compact: %s\n",
                 std::string(report.status().message()).c_str());
    return absl::IsFailedPrecondition(report.status()) || absl::IsNotFound(report.status()) ? 2
                                                                                            : 1;
  }
  if (json) {
    std::string cfs;
    for (const auto& [name, bytes] : report->sst_bytes) {
      cfs += absl::StrFormat("%s\"%s\": %d", cfs.empty() ? "" : ", ", name, bytes);
    }
    std::printf("%s\n", absl::StrFormat("{\"seconds\": %.3f, \"bytes_before\": %d, "
                                         "\"bytes_after\": %d, \"sst_bytes\": {%s}}",
                                         report->seconds, report->bytes_before,
                                         report->bytes_after, cfs)
                            .c_str());
  } else {
    std::printf("compacted %s in %.2f s: %s -> %s bytes\n", data_dir.c_str(), report->seconds,
                std::to_string(report->bytes_before).c_str(),
                std::to_string(report->bytes_after).c_str());
  }
  return 0;
}

// Sends each spool that runs with --endpoint left in this data folder to
// its server, as the run would have: every batch once (the server knows
// each agent's batches by number), then removes it.
int RunDeliver(const GlobalOptions& global, const std::string& timeout) {
  absl::StatusOr<int64_t> timeout_ms = util::ParseDurationMs(timeout);
  if (!timeout_ms.ok() || *timeout_ms <= 0) {
    std::fprintf(stderr, "trainwatch admin deliver: --timeout \"%s\": want a duration such as "
                 "30s or 10m\n", timeout.c_str());
    return 2;
  }
  const std::string data_dir = app::ResolveDataDir(global.data_dir);
  std::error_code ec;
  std::filesystem::directory_iterator it(agent::SpoolRoot(data_dir), ec);
  int delivered = 0, left = 0;
  for (const auto& entry : ec ? std::filesystem::directory_iterator() : it) {
    if (!entry.is_directory()) continue;
    const std::string dir = entry.path().string();
    std::optional<agent::SpoolTarget> target = agent::ReadSpoolTarget(dir);
    if (!target || target->server_of_data_folder) {
      std::fprintf(stderr, "%s: for the server of this data folder, which delivers it when it "
                   "starts\n", dir.c_str());
      continue;
    }
    agent::RemoteSinkOptions options;
    options.endpoint = target->endpoint;
    options.spool_dir = dir;
    options.agent = entry.path().filename().string();  // its batches' agent name
    absl::StatusOr<std::unique_ptr<agent::RemoteSink>> sink = agent::RemoteSink::Create(options);
    if (!sink.ok()) {  // FailedPrecondition: a run that is still sending it
      std::fprintf(stderr, "%s: %s\n", dir.c_str(), std::string(sink.status().message()).c_str());
      ++left;
      continue;
    }
    const int64_t batches = (*sink)->pending();
    const bool done = (*sink)->Drain(*timeout_ms, [&](int64_t pending, const std::string& error) {
      std::fprintf(stderr, "%s: %lld batches wait for %s (%s)\n", dir.c_str(),
                   static_cast<long long>(pending), target->endpoint.c_str(), error.c_str());
    });
    if (!done) {
      std::fprintf(stderr, "%s: %lld batches are still not delivered to %s after %s; run this "
                   "again once it answers\n", dir.c_str(),
                   static_cast<long long>((*sink)->pending()), target->endpoint.c_str(),
                   timeout.c_str());
      ++left;
      continue;
    }
    sink->reset();  // lets go of the spool's lock
    std::filesystem::remove_all(dir, ec);
    std::printf("delivered %lld batches of %s to %s\n", static_cast<long long>(batches),
                entry.path().filename().c_str(), target->endpoint.c_str());
    ++delivered;
  }
  if (delivered == 0 && left == 0) std::printf("no spool in %s waits for another server\n",
                                               data_dir.c_str());
  return left == 0 ? 0 : 1;
}

}  // namespace

void RegisterAdminCommand(CLI::App& root, GlobalOptions* options, int* exit_code) {
  CLI::App* admin = root.add_subcommand("admin", "maintenance of the data folder");
  admin->require_subcommand(1);
  admin->footer(
      "Examples:\n"
      "  trainwatch admin compact --data /mnt/runs\n"
      "  trainwatch admin deliver --data /mnt/runs");
  auto json = std::make_shared<bool>(false);
  CLI::App* compact = admin->add_subcommand(
      "compact",
      "seal open chunks, flush, and compact the data folder fully: the smallest size on disk, "
      "and retention applied now (needs the folder's writer lock)");
  compact->add_flag("--json", *json, "print sizes per column family as JSON");
  AddDataOption(compact, options);
  // A nested command: its footer ends in the newline main() adds to the others'.
  compact->footer(
      "Examples:\n"
      "  trainwatch admin compact\n"
      "  trainwatch admin compact --data /mnt/runs --json\n");
  compact->callback([options, exit_code, json] { *exit_code = RunCompact(*options, *json); });

  auto timeout = std::make_shared<std::string>("1m");
  CLI::App* deliver = admin->add_subcommand(
      "deliver",
      "send what runs with --endpoint left spooled here (their server was away when they "
      "ended) to that server, then remove it");
  deliver->add_option("--timeout", *timeout,
                      "how long to wait for each server to take its spool (default 1m)");
  AddDataOption(deliver, options);
  deliver->footer(
      "Examples:\n"
      "  trainwatch admin deliver\n"
      "  trainwatch admin deliver --data /mnt/runs --timeout 10m\n");
  deliver->callback([options, exit_code, timeout] { *exit_code = RunDeliver(*options, *timeout); });
}

}  // namespace trainwatch::cli
