#include "model/job_record.h"

#include <cctype>

#include "absl/strings/str_format.h"

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
