#include "model/job_record.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "absl/strings/str_format.h"
#include "model/job_events.h"

namespace trainwatch::model {
namespace {

struct JobStatusEntry {
  JobStatus status;
  std::string_view name;
};
constexpr JobStatusEntry kJobStatuses[] = {
    {JobStatus::kInProgress, "InProgress"}, {JobStatus::kCompleted, "Completed"},
    {JobStatus::kFailed, "Failed"},         {JobStatus::kStopping, "Stopping"},
    {JobStatus::kStopped, "Stopped"},
};

struct SecondaryEntry {
  SecondaryStatus status;
  std::string_view name;
};
constexpr SecondaryEntry kSecondaryStatuses[] = {
    {SecondaryStatus::kStarting, "Starting"},
    {SecondaryStatus::kDownloading, "Downloading"},
    {SecondaryStatus::kTraining, "Training"},
    {SecondaryStatus::kUploading, "Uploading"},
    {SecondaryStatus::kStopping, "Stopping"},
    {SecondaryStatus::kStopped, "Stopped"},
    {SecondaryStatus::kMaxRuntimeExceeded, "MaxRuntimeExceeded"},
    {SecondaryStatus::kCompleted, "Completed"},
    {SecondaryStatus::kFailed, "Failed"},
    {SecondaryStatus::kInterrupted, "Interrupted"},
};

}  // namespace

std::string_view JobStatusName(JobStatus status) {
  for (const auto& e : kJobStatuses) {
    if (e.status == status) return e.name;
  }
  return "Unknown";
}

std::string_view SecondaryStatusName(SecondaryStatus status) {
  for (const auto& e : kSecondaryStatuses) {
    if (e.status == status) return e.name;
  }
  return "Unknown";
}

std::optional<JobStatus> ParseJobStatus(std::string_view name) {
  for (const auto& e : kJobStatuses) {
    if (e.name == name) return e.status;
  }
  return std::nullopt;
}

std::optional<SecondaryStatus> ParseSecondaryStatus(std::string_view name) {
  for (const auto& e : kSecondaryStatuses) {
    if (e.name == name) return e.status;
  }
  return std::nullopt;
}

bool IsTerminal(JobStatus status) {
  return status == JobStatus::kCompleted || status == JobStatus::kFailed ||
         status == JobStatus::kStopped;
}

std::string JobRecord::HostName() const { return absl::StrFormat("%s/algo-%d", name, host_index); }

std::optional<JobHost> ParseHostName(std::string_view host) {
  constexpr std::string_view kAlgo = "/algo-";
  const size_t slash = host.rfind(kAlgo);
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  const std::string_view digits = host.substr(slash + kAlgo.size());
  if (digits.starts_with('0')) return std::nullopt;  // HostName writes none
  int n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size() || n < 1 || n > kMaxJobHosts) {
    return std::nullopt;
  }
  return JobHost{std::string(host.substr(0, slash)), n};
}

std::optional<JobHost> JobOfSeries(const SeriesKey& key) {
  if (const std::string* job = key.FindDimension(kTrainingJobNameDim); job && !job->empty()) {
    return JobHost{*job, 1};
  }
  if (const std::string* host = key.FindDimension(kHostDim)) return ParseHostName(*host);
  return std::nullopt;
}

namespace {

// A stop asked of a runner on another host shows as Stopping until the runner
// acts on it.
void ApplyStopRequest(JobRecord* job) {
  if (job->stop_requested_ms && job->status == JobStatus::kInProgress) {
    job->status = JobStatus::kStopping;
    job->secondary_status = SecondaryStatus::kStopping;
  }
}

}  // namespace

JobRecord MergeHostRecords(std::vector<JobRecord> records) {
  for (JobRecord& r : records) {
    r.hosts.clear();
    ApplyStopRequest(&r);
  }
  std::sort(records.begin(), records.end(),
            [](const JobRecord& a, const JobRecord& b) { return a.host_index < b.host_index; });
  if (records.size() == 1) return std::move(records.front());

  const JobRecord* decider = nullptr;
  bool all_terminal = true;
  for (const JobRecord& r : records) {
    if (!IsTerminal(r.status)) {
      all_terminal = false;
      if (decider == nullptr) decider = &r;
    }
  }
  JobStatus status = JobStatus::kInProgress;
  if (all_terminal) {
    auto any = [&](JobStatus s) {
      return std::any_of(records.begin(), records.end(),
                         [s](const JobRecord& r) { return r.status == s; });
    };
    status = any(JobStatus::kFailed)    ? JobStatus::kFailed
             : any(JobStatus::kStopped) ? JobStatus::kStopped
                                        : JobStatus::kCompleted;
    for (const JobRecord& r : records) {
      if (r.status == status) {
        decider = &r;
        break;
      }
    }
  } else if (std::any_of(records.begin(), records.end(), [](const JobRecord& r) {
               return r.status == JobStatus::kStopping;
             })) {
    status = JobStatus::kStopping;
  }

  JobRecord job = *decider;
  job.status = status;
  // The rule engine writes its results on one host's record (the first it
  // saw); configurations are the same on every host.
  for (const JobRecord& r : records) {
    if (!r.rule_statuses.empty() || !r.rule_configurations.empty()) {
      job.rule_configurations = r.rule_configurations;
      job.rules_profile = r.rules_profile;
      job.step_metric = r.step_metric;
      job.rule_statuses = r.rule_statuses;
      if (!r.rule_statuses.empty()) break;
    }
  }
  if (status == JobStatus::kStopping) job.secondary_status = SecondaryStatus::kStopping;
  job.training_end_ms.reset();
  for (const JobRecord& r : records) {
    job.creation_ms = std::min(job.creation_ms, r.creation_ms);
    job.last_modified_ms = std::max(job.last_modified_ms, r.last_modified_ms);
    if (r.training_start_ms &&
        (!job.training_start_ms || *r.training_start_ms < *job.training_start_ms)) {
      job.training_start_ms = r.training_start_ms;
    }
    if (all_terminal && r.training_end_ms &&
        (!job.training_end_ms || *r.training_end_ms > *job.training_end_ms)) {
      job.training_end_ms = r.training_end_ms;
    }
  }
  job.final_metrics.clear();
  if (all_terminal) {
    // The latest value of each metric over all hosts, in definition order
    // (then any name only another host's definitions have).
    std::vector<std::string> names;
    for (const JobRecord& r : records) {
      for (const MetricDefinition& d : r.metric_definitions) {
        if (std::find(names.begin(), names.end(), d.name) == names.end()) names.push_back(d.name);
      }
      for (const FinalMetric& m : r.final_metrics) {
        if (std::find(names.begin(), names.end(), m.name) == names.end()) names.push_back(m.name);
      }
    }
    for (const std::string& name : names) {
      const FinalMetric* latest = nullptr;
      for (const JobRecord& r : records) {
        for (const FinalMetric& m : r.final_metrics) {
          if (m.name == name && (latest == nullptr || m.t_ms > latest->t_ms)) latest = &m;
        }
      }
      if (latest != nullptr) job.final_metrics.push_back(*latest);
    }
  }
  job.hosts = std::move(records);
  return job;
}

const JobRecord* FindHost(const JobRecord& job, int host_index) {
  if (job.hosts.empty()) return job.host_index == host_index ? &job : nullptr;
  for (const JobRecord& h : job.hosts) {
    if (h.host_index == host_index) return &h;
  }
  return nullptr;
}

std::vector<JobRecord> HostRecords(const JobRecord& job) {
  if (!job.hosts.empty()) return job.hosts;
  return {job};
}

std::string TrainingJobArn(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "arn:aws:sagemaker:us-east-1:000000000000:training-job/" + lower;
}

bool IsValidJobName(std::string_view name) {
  // ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}: alphanumerics and hyphens, starting and
  // ending with an alphanumeric, at most 63 characters.
  if (name.empty() || name.size() > 63) return false;
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  for (char c : name) {
    if (!alnum(c) && c != '-') return false;
  }
  return true;
}

}  // namespace trainwatch::model
