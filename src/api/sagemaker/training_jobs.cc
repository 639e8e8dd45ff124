// DescribeTrainingJob, ListTrainingJobs, StopTrainingJob, CreateTrainingJob's
// call into the backend, and the SageMaker dispatcher (spec §7.2-§7.5).
#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "api/errors.h"
#include "api/sagemaker/sagemaker.h"
#include "api/validation.h"
#include "api/wire_time.h"
#include "query/errors.h"
#include "query/jobs.h"
#include "rules/catalog.h"

namespace trainwatch::api::sagemaker {

using Json = nlohmann::ordered_json;

namespace {

constexpr std::string_view kNamePattern = "^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}";

bool JobName(std::string_view s) { return model::IsValidJobName(s); }

absl::Status NoJobRunner() {
  return BackendMissing("job runner");
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = absl::ascii_tolower(static_cast<unsigned char>(c));
  return out;
}

// Request members DescribeTrainingJob echoes, in AWS's order, split around
// the members trainwatch computes.
constexpr std::string_view kEchoBeforeTimes[] = {
    "HyperParameters", "AlgorithmSpecification", "RoleArn",  "InputDataConfig",
    "OutputDataConfig", "ResourceConfig",        "VpcConfig", "StoppingCondition"};
constexpr std::string_view kEchoAfterTimes[] = {
    "EnableNetworkIsolation", "EnableInterContainerTrafficEncryption", "EnableManagedSpotTraining",
    "CheckpointConfig"};
constexpr std::string_view kEchoLast[] = {
    "DebugHookConfig",          "ExperimentConfig", "DebugRuleConfigurations",
    "TensorBoardOutputConfig",  "ProfilerConfig",   "ProfilerRuleConfigurations"};
constexpr std::string_view kEchoTail[] = {"Environment", "RetryStrategy"};

absl::StatusOr<std::string> ReadJobName(const Node& input) {
  ValidationErrors errors;
  FieldReader r(&errors);
  std::optional<std::string> name = r.String(input["TrainingJobName"], true, 1, 63, JobName,
                                             kNamePattern);
  if (!errors.empty()) return errors.ToStatus("ValidationException");
  return *name;
}

absl::StatusOr<model::JobRecord> FindJob(const Backends& backends, const std::string& name) {
  if (backends.jobs == nullptr) return NoJobRunner();
  absl::StatusOr<std::optional<model::JobRecord>> job = backends.jobs->GetJob(name);
  if (!job.ok()) return job.status();
  if (!*job) return ValidationException(kJobNotFound);
  return **job;
}

absl::StatusOr<std::string> CreateTrainingJob(const Node& input, const Context& context,
                                              const Backends& backends) {
  absl::StatusOr<TrainingJobSpec> spec = DecodeCreateTrainingJob(input, context);
  if (!spec.ok()) return spec.status();
  if (backends.jobs == nullptr) return NoJobRunner();
  absl::StatusOr<model::JobRecord> job = backends.jobs->CreateTrainingJob(*spec);
  if (absl::IsAlreadyExists(job.status())) {
    return AwsStatus("ResourceInUse",
                     absl::StrFormat("Training job names must be unique within an AWS account and "
                                     "region, and a training job with this name already exists "
                                     "(%s)",
                                     JobArn(context, spec->name)));
  }
  if (!job.ok()) return job.status();
  Json body;
  body["TrainingJobArn"] = JobArn(context, job->name);
  return DumpJson(body);
}

absl::StatusOr<std::string> DescribeTrainingJob(const Node& input, const Context& context,
                                                const Backends& backends) {
  absl::StatusOr<std::string> name = ReadJobName(input);
  if (!name.ok()) return name.status();
  absl::StatusOr<model::JobRecord> job = FindJob(backends, *name);
  if (!job.ok()) return job.status();
  return DescribeJson(*job, context);
}

absl::StatusOr<std::string> ListTrainingJobs(const Node& input, const Context& context,
                                             const Backends& backends) {
  ValidationErrors errors;
  FieldReader r(&errors);
  std::optional<std::string> token = r.String(input["NextToken"], false, 0, 8192);
  int64_t max = r.Int(input["MaxResults"], false, 1, 100).value_or(10);
  std::optional<int64_t> created_after = r.TimestampMs(input["CreationTimeAfter"]);
  std::optional<int64_t> created_before = r.TimestampMs(input["CreationTimeBefore"]);
  std::optional<int64_t> modified_after = r.TimestampMs(input["LastModifiedTimeAfter"]);
  std::optional<int64_t> modified_before = r.TimestampMs(input["LastModifiedTimeBefore"]);
  std::optional<std::string> contains = r.String(
      input["NameContains"], false, 0, 63,
      [](std::string_view s) {
        return std::all_of(s.begin(), s.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-';
        });
      },
      "[a-zA-Z0-9\\-]+");
  std::optional<std::string> status = r.Enum(
      input["StatusEquals"], false, {"InProgress", "Completed", "Failed", "Stopping", "Stopped"});
  std::string sort_by =
      r.Enum(input["SortBy"], false, {"Name", "CreationTime", "Status"}).value_or("CreationTime");
  bool descending =
      r.Enum(input["SortOrder"], false, {"Ascending", "Descending"}).value_or("Ascending") ==
      "Descending";
  std::optional<std::string> warm =
      r.Enum(input["WarmPoolStatusEquals"], false, {"Available", "Terminated", "Reused", "InUse"});
  std::optional<std::string> plan = r.String(input["TrainingPlanArnEquals"], false, 0, 2048);
  if (!errors.empty()) return errors.ToStatus("ValidationException");

  if (backends.jobs == nullptr) return NoJobRunner();
  absl::StatusOr<std::vector<model::JobRecord>> jobs = backends.jobs->ListJobs();
  if (!jobs.ok()) return jobs.status();
  // No warm pools or training plans here: those filters match nothing.
  if (warm || plan) jobs->clear();
  query::ListJobsRequest list;
  list.name_contains = contains.value_or("");
  if (status) list.status = model::ParseJobStatus(*status);
  list.creation_after_ms = created_after;
  list.creation_before_ms = created_before;
  list.modified_after_ms = modified_after;
  list.modified_before_ms = modified_before;
  list.sort_by = sort_by == "Name"     ? query::JobSortBy::kName
                 : sort_by == "Status" ? query::JobSortBy::kStatus
                                       : query::JobSortBy::kCreationTime;
  list.descending = descending;
  list.max_results = static_cast<int>(max);
  list.next_token = token.value_or("");
  // As SageMaker does: MaxResults jobs first, then the filters.
  list.filter_after_paging = true;
  absl::StatusOr<query::ListJobsResponse> page = query::ListJobs(*std::move(jobs), list);
  if (query::GetErrorKind(page.status()) == query::ErrorKind::kInvalidCursor) {
    return ValidationException(
        absl::StrFormat("The NextToken is invalid: %s.", MessageOf(page.status())));
  }
  if (!page.ok()) return page.status();
  Json summaries = Json::array();
  for (const model::JobRecord& job : page->jobs) {
    Json s;
    s["TrainingJobName"] = job.name;
    s["TrainingJobArn"] = JobArn(context, job.name);
    s["CreationTime"] = EpochSeconds(job.creation_ms);
    if (model::IsTerminal(job.status) && job.training_end_ms) {
      s["TrainingEndTime"] = EpochSeconds(*job.training_end_ms);
    }
    s["LastModifiedTime"] = EpochSeconds(job.last_modified_ms);
    s["TrainingJobStatus"] = std::string(model::JobStatusName(job.status));
    s["SecondaryStatus"] = std::string(model::SecondaryStatusName(job.secondary_status));
    summaries.push_back(std::move(s));
  }
  Json body;
  body["TrainingJobSummaries"] = std::move(summaries);
  if (!page->next_token.empty()) body["NextToken"] = page->next_token;
  return DumpJson(body);
}

absl::StatusOr<std::string> StopTrainingJob(const Node& input, const Context& context,
                                            const Backends& backends) {
  (void)context;
  absl::StatusOr<std::string> name = ReadJobName(input);
  if (!name.ok()) return name.status();
  auto rejected = [](const model::JobRecord& job) {
    return ValidationException(
        absl::StrFormat("The request was rejected because the training job is in status %s.",
                        model::JobStatusName(job.status)));
  };
  absl::StatusOr<model::JobRecord> job = FindJob(backends, *name);
  if (!job.ok()) return job.status();
  if (job->status != model::JobStatus::kInProgress) return rejected(*job);
  absl::Status stopped = backends.jobs->StopJob(*name);
  if (absl::IsNotFound(stopped)) return ValidationException(kJobNotFound);
  if (absl::IsFailedPrecondition(stopped)) {
    // It left InProgress meanwhile; report the status it is in now.
    absl::StatusOr<model::JobRecord> now = FindJob(backends, *name);
    if (!now.ok()) return now.status();
    return rejected(*now);
  }
  if (!stopped.ok()) return stopped;
  return std::string("{}");
}

// SageMaker operations trainwatch does not serve yet (§7.6).
constexpr std::string_view kLater[] = {
    "UpdateTrainingJob", "ListTags", "AddTags", "DeleteTags", "CreateHyperParameterTuningJob",
    "DescribeHyperParameterTuningJob", "ListHyperParameterTuningJobs",
    "ListTrainingJobsForHyperParameterTuningJob", "StopHyperParameterTuningJob",
    "CreateProcessingJob", "DescribeProcessingJob", "ListProcessingJobs", "StopProcessingJob",
};

}  // namespace

std::string JobArn(const Context& context, std::string_view name) {
  return absl::StrFormat("arn:aws:sagemaker:%s:%s:training-job/%s", context.region,
                         context.account_id, Lower(name));
}

// SageMaker names the processing job that evaluates a rule
// "<job>-<rule configuration>-<8 hex>"; trainwatch evaluates in-process, so
// the hex is a hash of the two names (stable across describes).
std::string RuleEvaluationJobArn(const Context& context, std::string_view job,
                                 std::string_view configuration) {
  uint32_t h = 2166136261u;
  for (std::string_view part : {job, std::string_view("/"), configuration}) {
    for (char c : part) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  }
  std::string name = absl::StrFormat("%s-%s", Lower(job), Lower(configuration)).substr(0, 54);
  return absl::StrFormat("arn:aws:sagemaker:%s:%s:processing-job/%s-%08x", context.region,
                         context.account_id, name, h);
}

std::string DescribeJson(const model::JobRecord& job, const Context& context) {
  nlohmann::json request = nlohmann::json::object();
  if (!job.request_json.empty()) {
    request = nlohmann::json::parse(job.request_json, nullptr, false);
    if (!request.is_object()) request = nlohmann::json::object();
  } else {
    // A job started with `trainwatch run`: describe it in SageMaker's terms.
    nlohmann::json defs = nlohmann::json::array();
    for (const model::MetricDefinition& d : job.metric_definitions) {
      defs.push_back({{"Name", d.name}, {"Regex", d.regex}});
    }
    request["AlgorithmSpecification"] = {{"TrainingImage", "trainwatch/local"},
                                         {"TrainingInputMode", "File"},
                                         {"MetricDefinitions", defs}};
    if (!job.hyperparameters.empty()) request["HyperParameters"] = job.hyperparameters;
    if (!job.environment.empty()) request["Environment"] = job.environment;
    request["ResourceConfig"] = {
        {"InstanceType", "local"},
        {"InstanceCount", std::max<size_t>(1, job.hosts.size())},
        {"VolumeSizeInGB", 1}};
    request["StoppingCondition"] = {{"MaxRuntimeInSeconds", job.max_runtime_s}};
    if (job.profiling_interval_ms > 0) {
      request["ProfilerConfig"] = {{"ProfilingIntervalInMilliseconds", job.profiling_interval_ms}};
    }
    // The rules in SageMaker's shape, filed by family as SageMaker files them.
    for (const model::RuleConfiguration& c : job.rule_configurations) {
      const rules::RuleInfo* info = rules::FindRule(c.rule);
      const bool profiler = info != nullptr && info->family == rules::RuleFamily::kProfiler;
      nlohmann::json params = {{"rule_to_invoke", c.rule}};
      for (const auto& [k, v] : c.parameters) params[k] = v;
      for (const std::string& action : c.actions) params["action"] = action;
      request[profiler ? "ProfilerRuleConfigurations" : "DebugRuleConfigurations"].push_back(
          {{"RuleConfigurationName", c.name},
           {"RuleEvaluatorImage", "trainwatch/rules"},
           {"RuleParameters", params}});
    }
  }
  auto echo = [&](Json& body, std::string_view member) {
    auto it = request.find(member);
    if (it != request.end()) body[std::string(member)] = Json(*it);
  };

  Json body;
  body["TrainingJobName"] = job.name;
  body["TrainingJobArn"] = JobArn(context, job.name);
  auto output = request.find("OutputDataConfig");
  if (output != request.end() && output->is_object() && output->contains("S3OutputPath") &&
      (*output)["S3OutputPath"].is_string()) {
    std::string path = (*output)["S3OutputPath"].get<std::string>();
    while (!path.empty() && path.back() == '/') path.pop_back();
    body["ModelArtifacts"] = {
        {"S3ModelArtifacts", absl::StrFormat("%s/%s/output/model.tar.gz", path, job.name)}};
  }
  body["TrainingJobStatus"] = std::string(model::JobStatusName(job.status));
  body["SecondaryStatus"] = std::string(model::SecondaryStatusName(job.secondary_status));
  if (!job.failure_reason.empty()) body["FailureReason"] = job.failure_reason.substr(0, 1024);
  for (std::string_view m : kEchoBeforeTimes) echo(body, m);
  body["CreationTime"] = EpochSeconds(job.creation_ms);
  if (job.training_start_ms) body["TrainingStartTime"] = EpochSeconds(*job.training_start_ms);
  if (job.training_end_ms) body["TrainingEndTime"] = EpochSeconds(*job.training_end_ms);
  body["LastModifiedTime"] = EpochSeconds(job.last_modified_ms);
  Json transitions = Json::array();
  for (const model::StatusTransition& t : job.transitions) {
    Json item;
    item["Status"] = std::string(model::SecondaryStatusName(t.status));
    item["StartTime"] = EpochSeconds(t.start_ms);
    if (t.end_ms) item["EndTime"] = EpochSeconds(*t.end_ms);
    item["StatusMessage"] = t.message;
    transitions.push_back(std::move(item));
  }
  body["SecondaryStatusTransitions"] = std::move(transitions);
  if (model::IsTerminal(job.status) && !job.final_metrics.empty()) {
    Json finals = Json::array();
    for (const model::FinalMetric& m : job.final_metrics) {
      finals.push_back(
          Json{{"MetricName", m.name}, {"Value", m.value}, {"Timestamp", EpochSeconds(m.t_ms)}});
    }
    body["FinalMetricDataList"] = std::move(finals);
  }
  for (std::string_view m : kEchoAfterTimes) echo(body, m);
  if (job.training_start_ms && job.training_end_ms) {
    int64_t seconds = std::max<int64_t>(
        1, (*job.training_end_ms - *job.training_start_ms + 999) / 1000);
    body["TrainingTimeInSeconds"] = seconds;
    body["BillableTimeInSeconds"] = seconds;
  }
  for (std::string_view m : kEchoLast) echo(body, m);
  // Each rule's status, in the list of its family (spec/rules.md §3.4).
  for (const model::RuleStatus& s : job.rule_statuses) {
    std::string family = s.family;
    if (family.empty()) {
      const rules::RuleInfo* info = rules::FindRule(s.rule);
      family = info != nullptr ? std::string(rules::RuleFamilyName(info->family)) : "debug";
    }
    Json item;
    item["RuleConfigurationName"] = s.configuration_name;
    item["RuleEvaluationJobArn"] = RuleEvaluationJobArn(context, job.name, s.configuration_name);
    item["RuleEvaluationStatus"] = std::string(model::RuleStatusName(s.status));
    if (!s.details.empty()) item["StatusDetails"] = s.details.substr(0, 1024);
    item["LastModifiedTime"] = EpochSeconds(s.last_modified_ms);
    body[family == "profiler" ? "ProfilerRuleEvaluationStatuses" : "DebugRuleEvaluationStatuses"]
        .push_back(std::move(item));
  }
  auto profiler = request.find("ProfilerConfig");
  bool profiling = profiler != request.end() && profiler->is_object() &&
                   !(profiler->contains("DisableProfiler") &&
                     (*profiler)["DisableProfiler"].is_boolean() &&
                     (*profiler)["DisableProfiler"].get<bool>());
  body["ProfilingStatus"] = profiling ? "Enabled" : "Disabled";
  for (std::string_view m : kEchoTail) echo(body, m);
  return DumpJson(body);
}

absl::StatusOr<std::string> Handle(std::string_view operation, const Node& input,
                                   const Context& context, const Backends& backends) {
  using Operation = absl::StatusOr<std::string> (*)(const Node&, const Context&, const Backends&);
  static constexpr std::pair<std::string_view, Operation> kOperations[] = {
      {"CreateTrainingJob", CreateTrainingJob},
      {"DescribeTrainingJob", DescribeTrainingJob},
      {"ListTrainingJobs", ListTrainingJobs},
      {"StopTrainingJob", StopTrainingJob},
  };
  for (const auto& [name, run] : kOperations) {
    if (name == operation) {
      if (absl::Status s = input.ExpectStructure(); !s.ok()) {
        return ValidationException(MessageOf(s));
      }
      return run(input, context, backends);
    }
  }
  for (std::string_view later : kLater) {
    if (operation == later) return NotImplemented(operation);
  }
  return AwsStatus("InvalidAction", absl::StrFormat("Unknown operation %s for SageMaker.",
                                                    std::string(operation.substr(0, 100))));
}

}  // namespace trainwatch::api::sagemaker
