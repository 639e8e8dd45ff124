#include "app/archiver.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "absl/strings/str_format.h"
#include "agent/s3_store.h"
#include "archive/local_folder_store.h"
#include "nlohmann/json.hpp"
#include "util/log.h"
#include "util/status_macros.h"
#include "util/stop_wait.h"

namespace trainwatch::app {

absl::StatusOr<std::unique_ptr<model::ObjectStore>> OpenArchive(
    const std::string& url, const ArchiveTargetOptions& options) {
  if (url.empty()) {
    return absl::InvalidArgumentError(
        "the archive address is empty; give a folder or s3://BUCKET[/PREFIX]");
  }
  if (url.starts_with("s3://")) {
    agent::S3StoreOptions s3;
    TW_RETURN_IF_ERROR(agent::ParseS3Url(url, &s3));
    s3.endpoint = ResolveS3Endpoint(options.endpoint);
    if (options.for_reading) {
      s3.attempts = 2;
      s3.connect_timeout_ms = 2000;
      s3.request_timeout_ms = 30000;
    }
    if (!s3.endpoint.empty() && !s3.endpoint.starts_with("http://") &&
        !s3.endpoint.starts_with("https://")) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the S3 endpoint \"%s\" is not an http:// or https:// address", s3.endpoint));
    }
    s3.part_bytes = options.part_bytes;
    TW_ASSIGN_OR_RETURN(std::unique_ptr<agent::S3Store> store, agent::S3Store::Create(s3));
    return std::unique_ptr<model::ObjectStore>(std::move(store));
  }
  std::string folder = url;
  if (folder.starts_with("file://")) folder.erase(0, 7);
  if (folder.find("://") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the archive \"%s\": only folders and s3:// addresses are supported", url));
  }
  TW_ASSIGN_OR_RETURN(std::unique_ptr<archive::LocalFolderStore> store,
                      options.for_reading ? archive::LocalFolderStore::OpenForReading(folder)
                                          : archive::LocalFolderStore::Open(folder));
  return std::unique_ptr<model::ObjectStore>(std::move(store));
}

std::string ResolveS3Endpoint(const std::string& endpoint) {
  if (!endpoint.empty()) return endpoint;
  for (const char* env : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    const char* v = std::getenv(env);
    if (v != nullptr && *v != '\0') return v;
  }
  return "";
}

RecordedArchive NormalizedArchive(const RecordedArchive& archive) {
  RecordedArchive out;
  out.url = archive.url;
  if (out.url.starts_with("s3://")) {
    out.endpoint = ResolveS3Endpoint(archive.endpoint);
    return out;
  }
  // A folder by its absolute path: readers run from anywhere.
  if (out.url.starts_with("file://")) out.url.erase(0, 7);
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(out.url, ec);
  if (!ec) out.url = absolute.lexically_normal().string();
  return out;
}

absl::Status RecordArchive(const std::string& data_dir, const RecordedArchive& given) {
  const RecordedArchive archive = NormalizedArchive(given);
  nlohmann::ordered_json j = {{"url", archive.url}, {"endpoint", archive.endpoint}};
  const std::string path = data_dir + "/archive.json";
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << j.dump(2) << "\n";
    if (!out.flush()) {
      return absl::PermissionDeniedError(
          absl::StrFormat("cannot write \"%s\": %s", temp, std::strerror(errno)));
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    return absl::PermissionDeniedError(
        absl::StrFormat("cannot write \"%s\": %s", path, std::strerror(errno)));
  }
  return absl::OkStatus();
}

std::optional<RecordedArchive> FindRecordedArchive(const std::string& data_dir) {
  const std::string path = data_dir + "/archive.json";
  std::ifstream in(path);
  if (!in) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("url") || !j["url"].is_string()) {
    util::LogOnce("archive.json", absl::StrFormat("%s is not an archive record (want {\"url\": "
                                                  "...}); archived jobs are not read back",
                                                  path));
    return std::nullopt;
  }
  return RecordedArchive{j["url"].get<std::string>(), j.value("endpoint", "")};
}

ReadersWithArchive::ReadersWithArchive(query::MetricsReader* metrics, query::LogsReader* logs,
                                       query::JobsReader* jobs, const std::string& data_dir,
                                       const std::optional<RecordedArchive>& archive)
    : metrics_(metrics), logs_(logs) {
  if (!archive) return;
  absl::StatusOr<std::unique_ptr<model::ObjectStore>> store =
      OpenArchive(archive->url, {.endpoint = archive->endpoint, .for_reading = true});
  if (!store.ok()) {
    util::LogOnce("archive-open", absl::StrFormat("the archive of %s (%s): %s; archived jobs are "
                                                  "not read back",
                                                  data_dir, archive->url, store.status().message()));
    return;
  }
  store_ = *std::move(store);
  archived_ = std::make_unique<archive::ArchiveReader>(store_.get());
  backed_metrics_ =
      std::make_unique<archive::ArchiveBackedMetricsReader>(metrics, jobs, archived_.get());
  backed_logs_ = std::make_unique<archive::ArchiveBackedLogsReader>(logs, jobs, archived_.get());
  metrics_ = backed_metrics_.get();
  logs_ = backed_logs_.get();
}

ReadersWithArchive::~ReadersWithArchive() = default;

Archiver::Archiver(query::MetricsReader* metrics, query::LogsReader* logs, query::JobsReader* jobs,
                   model::ObjectStore* store, ArchiverOptions options)
    : metrics_(metrics), logs_(logs), jobs_(jobs), store_(store), options_(options) {
  if (options_.hold != nullptr) options_.hold->SetRetentionHold(0);  // until the first pass
}

Archiver::~Archiver() = default;

absl::StatusOr<Archiver::PassResult> Archiver::Pass(
    const std::vector<std::string>& names,
    const std::function<void(const archive::JobArchivePass&)>& progress, std::stop_token stop) {
  util::MutexLock pass_lock(pass_mu_);
  std::vector<model::JobRecord> jobs;
  if (names.empty()) {
    TW_ASSIGN_OR_RETURN(jobs, jobs_->ListJobs());
  } else {
    for (const std::string& name : names) {
      TW_ASSIGN_OR_RETURN(std::optional<model::JobRecord> job, jobs_->GetJob(name));
      if (!job) {
        return absl::NotFoundError(absl::StrFormat(
            "no training job \"%s\" in this data folder (trainwatch jobs lists them)", name));
      }
      jobs.push_back(*std::move(job));
    }
  }
  PassResult result;
  archive::ArchiveOptions options;
  options.now_ms = options_.clock->NowMs();
  options.settle_ms = options_.settle_ms;
  options.on_segment = progress;
  options.stop = stop;
  // The late-data journal follows passes over every job (a server's).
  archive::LateJournal* const late = names.empty() ? options_.late : nullptr;
  auto fail = [&](absl::Status status) {
    util::MutexLock lock(mu_);
    ++counts_.failures;
    result.failures.push_back(std::move(status));
  };

  // Where each job's pass reads.
  std::vector<std::optional<archive::JobArchivePlan>> plans(jobs.size());
  std::vector<archive::LateJournal::PlannedJob> planned;
  std::vector<std::string> unplanned;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const int64_t read_to = late != nullptr ? late->ReadTo(jobs[i].name) : 0;
    absl::StatusOr<archive::JobArchivePlan> plan =
        archive::PlanJobArchive(jobs[i], store_, options, read_to);
    if (!plan.ok()) {
      fail(plan.status());
      unplanned.push_back(jobs[i].name);
      continue;
    }
    plans[i] = *std::move(plan);
    // (A stop is looked at once every job is planned: the journal must know them all.)
    if (plans[i]->skip) {
      planned.push_back({jobs[i].name, archive::LateJournal::kEndOfTime,
                         archive::LateJournal::kEndOfTime});
    } else {
      // Journaled from the end of what this pass reads: an ended job's
      // everything (the pass completes it), else from its cut, or from where
      // it reads from when a raised --archive-settle or a clock stepped back
      // puts the cut before that.
      planned.push_back({jobs[i].name, plans[i]->from_ms,
                         plans[i]->ended ? archive::LateJournal::kEndOfTime
                                         : std::max(plans[i]->from_ms, plans[i]->to_ms)});
    }
  }
  // With the late-data journal: the pass reads one state of the store, and
  // what comes after it is journaled (archive/late_journal.h).
  archive::ArchiveReaders readers{metrics_, logs_};
  std::unique_ptr<query::StoreReader> pinned;
  absl::Status pinning;
  if (late != nullptr) {
    options_.ingest->AtQuietPoint([&] {
      late->BeginPass(planned, unplanned);
      absl::StatusOr<std::unique_ptr<query::StoreReader>> reader = options_.store->Pinned();
      if (reader.ok()) {
        pinned = *std::move(reader);
      } else {
        pinning = reader.status();
      }
    });
    if (pinning.ok()) pinning = late->SaveDrops();
    if (!pinning.ok()) fail(pinning);  // once, for every job
    readers = {pinned.get(), pinned.get()};
  }

  // What no pass has looked at yet stays too.
  int64_t hold_ms = options.now_ms - options.settle_ms;
  bool stopped = false;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!plans[i]) continue;
    const model::JobRecord& job = jobs[i];
    // Where the job's data is archived to, should the pass not run (a stop).
    int64_t archived_to =
        plans[i]->skip ? archive::LateJournal::kEndOfTime : plans[i]->from_ms;
    absl::StatusOr<archive::JobArchivePass> pass = absl::CancelledError("stopped");
    bool counted = false;  // a failure counted once above
    if (!pinning.ok()) {
      pass = pinning;
      counted = true;
    } else if (stop.stop_requested()) {
      stopped = true;
    } else {
      pass = archive::ArchiveJob(readers, job, store_, options, *plans[i], &archived_to);
    }
    if (late != nullptr) {
      // A failed pass of a job the archive has no record of yet reads its
      // windows again: its late data waits. Otherwise it goes out as usual.
      const bool drain = pass.ok() || plans[i]->stored_job_json.has_value();
      if (absl::Status s = late->EndJob(job.name, archived_to, drain); !s.ok()) fail(s);
    }
    if (stopped) continue;
    if (!pass.ok()) {
      if (!counted) fail(pass.status());
      continue;
    }
    util::MutexLock lock(mu_);
    if (!pass->complete) hold_ms = std::min(hold_ms, pass->archived_to_ms);
    if (pass->interrupted) stopped = true;
    counts_.segments += static_cast<int64_t>(pass->segments.size());
    counts_.bytes += pass->bytes;
    if (!pass->skipped && pass->bytes > 0) result.jobs.push_back(*std::move(pass));
  }
  pinned.reset();
  if (late != nullptr && !stopped) WriteLate(options.now_ms, &result);
  result.stopped = stopped;
  if (names.empty() && result.failures.empty() && !stopped && options_.hold != nullptr) {
    options_.hold->SetRetentionHold(std::min(hold_ms, FirstNewJobMs(jobs)));
  }
  util::MutexLock lock(mu_);
  ++counts_.passes;
  counts_.last_pass_ms = options.now_ms;
  return result;
}

int64_t Archiver::FirstNewJobMs(const std::vector<model::JobRecord>& listed) {
  // A job created since the pass listed them (an agent's spool delivered
  // late, say) may have data older than the hold: it stays until a pass reads it.
  absl::StatusOr<std::vector<model::JobRecord>> now = jobs_->ListJobs();
  if (!now.ok()) return 0;  // hold everything
  std::set<std::string> names;
  for (const model::JobRecord& job : listed) names.insert(job.name);
  int64_t first_ms = std::numeric_limits<int64_t>::max();
  for (const model::JobRecord& job : *now) {
    if (!names.contains(job.name)) first_ms = std::min(first_ms, job.creation_ms);
  }
  return first_ms;
}

void Archiver::WriteLate(int64_t now_ms, PassResult* result) {
  absl::StatusOr<std::vector<archive::LateDrain>> drains = options_.late->TakeLate();
  if (!drains.ok()) {
    util::MutexLock lock(mu_);
    ++counts_.failures;
    result->failures.push_back(drains.status());
    return;
  }
  std::vector<std::string> written;
  for (const archive::LateDrain& drain : *drains) {
    absl::StatusOr<int64_t> bytes =
        archive::WriteLateSegment(store_, drain.job, drain.id, drain.data, now_ms);
    util::MutexLock lock(mu_);
    if (!bytes.ok()) {
      ++counts_.failures;
      result->failures.push_back(bytes.status());
      continue;
    }
    written.push_back(drain.id);
    if (*bytes == 0) continue;  // written before
    ++counts_.late_segments;
    counts_.bytes += *bytes;
    archive::JobArchivePass pass;
    pass.job = drain.job;
    pass.segments.push_back("late/" + drain.id);
    pass.samples = drain.data.rows();
    pass.log_events = drain.data.events();
    pass.bytes = *bytes;
    result->jobs.push_back(std::move(pass));
  }
  // Once for them all: each forgotten drain rewrites the journal.
  if (absl::Status s = options_.late->Written(written); !s.ok()) {
    util::MutexLock lock(mu_);
    ++counts_.failures;
    result->failures.push_back(s);
  }
}

void Archiver::Start() {
  thread_ = std::jthread([this](std::stop_token stop) {
    do {
      absl::StatusOr<PassResult> pass = Pass({}, nullptr, stop);
      if (!pass.ok()) {
        util::LogWarning(absl::StrFormat("archive %s: %s; trying again in %d s",
                                         store_->Describe(), pass.status().message(),
                                         options_.interval_ms / 1000));
        continue;
      }
      for (const archive::JobArchivePass& job : pass->jobs) {
        if (job.segments.empty()) continue;
        util::LogInfo(absl::StrFormat(
            "archive %s: job %s: %d segment(s), %d samples, %d log events, %d bytes%s",
            store_->Describe(), job.job, job.segments.size(), job.samples, job.log_events,
            job.bytes, job.complete ? " (complete)" : ""));
      }
      for (const absl::Status& failure : pass->failures) {
        util::LogWarning(absl::StrFormat("archive: %s; trying again in %d s (the archive deletes "
                                         "nothing locally%s)",
                                         failure.message(), options_.interval_ms / 1000,
                                         options_.hold != nullptr
                                             ? ", and the data folder keeps what it has not taken"
                                             : ""));
      }
    } while (util::SleepFor(stop, std::chrono::milliseconds(options_.interval_ms)));
  });
}

Archiver::Counts Archiver::counts() const {
  Counts c;
  {
    util::MutexLock lock(mu_);
    c = counts_;
  }
  if (options_.late != nullptr) {
    const archive::LateJournal::Stats late = options_.late->stats();
    c.late_pending = late.rows + late.events;
    c.late_dropped = late.dropped;
  }
  return c;
}

}  // namespace trainwatch::app
