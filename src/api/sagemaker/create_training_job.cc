// CreateTrainingJob (spec/aws-api.md §7.2): validation of every field the
// local runner uses, in AWS's generic message format, then a TrainingJobSpec.
#include <algorithm>
#include <set>

#include "absl/strings/str_format.h"
#include "api/errors.h"
#include "api/sagemaker/sagemaker.h"
#include "api/validation.h"
#include "rules/config.h"

namespace trainwatch::api::sagemaker {
namespace {

bool Alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool JobName(std::string_view s) { return model::IsValidJobName(s); }

bool RoleArnOk(std::string_view s) {
  // ^arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+$
  if (s.rfind("arn:aws", 0) != 0) return false;
  size_t i = 7;
  while (i < s.size() && ((s[i] >= 'a' && s[i] <= 'z') || s[i] == '-')) ++i;
  if (s.substr(i, 6) != ":iam::") return false;
  i += 6;
  for (size_t k = 0; k < 12; ++k, ++i) {
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
  }
  if (s.substr(i, 6) != ":role/" && s.substr(i, 5) != ":role") return false;
  i += s.substr(i, 6) == ":role/" ? 6 : 5;
  if (i >= s.size()) return false;
  return std::all_of(s.begin() + static_cast<std::ptrdiff_t>(i), s.end(), [](char c) {
    return Alnum(c) || std::string_view("_+=,.@-/").find(c) != std::string_view::npos;
  });
}

bool ChannelName(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return Alnum(c) || c == '.' || c == '-' || c == '_';
  });
}

// s3://bucket/..., https://..., and trainwatch's file:// extension.
bool StorageUri(std::string_view s) {
  for (std::string_view scheme : {"s3://", "https://", "file://"}) {
    if (s.rfind(scheme, 0) == 0 && s.size() > scheme.size()) return true;
  }
  return false;
}

bool InstanceType(std::string_view s) {
  if (s == "local" || s == "local_gpu") return true;
  // ^ml\.[a-z0-9]+\.[a-z0-9]+$
  if (s.rfind("ml.", 0) != 0) return false;
  std::string_view rest = s.substr(3);
  size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == rest.size()) return false;
  return std::all_of(rest.begin(), rest.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.';
  }) && std::count(rest.begin(), rest.end(), '.') == 1;
}

bool EnvKey(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return Alnum(c) || c == '_'; });
}

void ReadRules(const Node& list, bool profiler, FieldReader& r, TrainingJobSpec* spec) {
  std::optional<std::vector<Node>> rules = r.List(list, false, 0, 20);
  if (!rules) return;
  std::set<std::string> names;
  for (const Node& rule : *rules) {
    std::optional<std::string> name = r.String(rule["RuleConfigurationName"], true, 1, 256);
    r.String(rule["RuleEvaluatorImage"], true, 0, 255);
    r.String(rule["LocalPath"], false, 0, 4096);
    r.String(rule["S3OutputPath"], false, 0, 1024, StorageUri, "^(https|s3)://([^/]+)/?(.*)$");
    r.Int(rule["VolumeSizeInGB"], false, 0, 16384);
    std::optional<std::map<std::string, std::string>> params =
        r.Map(rule["RuleParameters"], 100, 256, 256);
    if (!name) continue;
    if (!names.insert(*name).second) {
      r.errors().Free(absl::StrFormat("RuleConfigurationName '%s' is used by more than one rule",
                                      *name));
      continue;
    }
    TrainingJobSpec::Rule out;
    out.configuration_name = *name;
    out.profiler = profiler;
    if (params) {
      out.parameters = *params;
      if (auto it = params->find("rule_to_invoke"); it != params->end()) {
        out.rule_to_invoke = it->second;
      }
    }
    spec->rules.push_back(std::move(out));
  }
}

}  // namespace

absl::StatusOr<TrainingJobSpec> DecodeCreateTrainingJob(const Node& input, const Context& context) {
  ValidationErrors errors;
  FieldReader r(&errors);
  TrainingJobSpec spec;
  spec.creation_ms = context.now_ms;
  std::vector<std::string> unsupported;  // semantic problems (free text)

  if (auto name = r.String(input["TrainingJobName"], true, 1, 63, JobName,
                           "^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")) {
    spec.name = *name;
  }

  Node algo = input["AlgorithmSpecification"];
  if (!algo.present()) {
    errors.NotNull(algo.path());
  } else {
    if (algo["AlgorithmName"].present()) {
      unsupported.push_back(
          "AlgorithmSpecification.AlgorithmName is not supported by trainwatch; give "
          "TrainingImage (and ContainerEntrypoint to run a local command)");
    }
    if (auto image = r.String(algo["TrainingImage"], true, 0, 255)) spec.training_image = *image;
    if (auto mode = r.Enum(algo["TrainingInputMode"], true, {"Pipe", "File", "FastFile"})) {
      if (*mode == "Pipe") {
        unsupported.push_back("TrainingInputMode Pipe is not supported by trainwatch yet; use File");
      }
      spec.input_mode = "File";
    }
    if (auto defs = r.List(algo["MetricDefinitions"], false, 0, 40)) {
      std::set<std::string> names;
      for (const Node& d : *defs) {
        std::optional<std::string> name = r.String(d["Name"], true, 1, 255);
        std::optional<std::string> regex = r.String(d["Regex"], true, 1, 500);
        if (!name || !regex) continue;
        if (!names.insert(*name).second) {
          unsupported.push_back(
              absl::StrFormat("MetricDefinitions name '%s' is used more than once", *name));
          continue;
        }
        spec.metric_definitions.push_back({*name, *regex});
      }
    }
    r.Bool(algo["EnableSageMakerMetricsTimeSeries"]);
    if (auto entry = r.List(algo["ContainerEntrypoint"], false, 1, 10)) {
      for (const Node& e : *entry) {
        if (auto s = r.String(e, true, 0, 256)) spec.entrypoint.push_back(*s);
      }
    }
    if (auto args = r.List(algo["ContainerArguments"], false, 1, 100)) {
      for (const Node& a : *args) {
        if (auto s = r.String(a, true, 0, 256)) spec.arguments.push_back(*s);
      }
    }
  }

  if (auto hp = r.Map(input["HyperParameters"], 100, 256, 2500)) spec.hyperparameters = *hp;
  if (auto role = r.String(input["RoleArn"], true, 20, 2048, RoleArnOk,
                           "^arn:aws[a-z\\-]*:iam::\\d{12}:role/?[a-zA-Z_0-9+=,.@\\-_/]+$")) {
    spec.role_arn = *role;
  }

  if (auto channels = r.List(input["InputDataConfig"], false, 1, 20)) {
    std::set<std::string> names;
    for (const Node& c : *channels) {
      TrainingJobSpec::Channel channel;
      std::optional<std::string> name =
          r.String(c["ChannelName"], true, 1, 64, ChannelName, "[A-Za-z0-9\\.\\-_]+");
      Node source = c["DataSource"];
      if (!source.present()) {
        errors.NotNull(source.path());
      } else if (source["FileSystemDataSource"].present()) {
        unsupported.push_back("FileSystemDataSource channels are not supported by trainwatch yet; "
                              "use S3DataSource with an s3:// or file:// S3Uri");
      } else if (Node s3 = source["S3DataSource"]; !s3.present()) {
        errors.NotNull(s3.path());
      } else {
        if (auto type = r.Enum(s3["S3DataType"], true,
                               {"ManifestFile", "S3Prefix", "AugmentedManifestFile"})) {
          if (*type != "S3Prefix") {
            unsupported.push_back(absl::StrFormat(
                "S3DataType %s is not supported by trainwatch yet; use S3Prefix", *type));
          }
          channel.data_type = *type;
        }
        if (auto uri = r.String(s3["S3Uri"], true, 0, 1024, StorageUri, "^(https|s3)://([^/]+)/?(.*)$")) {
          channel.uri = *uri;
        }
        r.Enum(s3["S3DataDistributionType"], false, {"FullyReplicated", "ShardedByS3Key"});
      }
      if (auto ct = r.String(c["ContentType"], false, 0, 256)) channel.content_type = *ct;
      if (auto comp = r.Enum(c["CompressionType"], false, {"None", "Gzip"})) {
        channel.compression_type = *comp;
      }
      r.Enum(c["RecordWrapperType"], false, {"None", "RecordIO"});
      if (auto mode = r.Enum(c["InputMode"], false, {"Pipe", "File", "FastFile"})) {
        if (*mode == "Pipe") unsupported.push_back("Channel InputMode Pipe is not supported yet");
      }
      if (!name) continue;
      if (!names.insert(*name).second) {
        unsupported.push_back(absl::StrFormat("ChannelName '%s' is used more than once", *name));
        continue;
      }
      channel.name = *name;
      spec.channels.push_back(std::move(channel));
    }
  }

  Node output = input["OutputDataConfig"];
  if (!output.present()) {
    errors.NotNull(output.path());
  } else {
    if (auto path = r.String(output["S3OutputPath"], true, 0, 1024, StorageUri,
                             "^(https|s3)://([^/]+)/?(.*)$")) {
      spec.output_path = *path;
    }
    r.String(output["KmsKeyId"], false, 0, 2048);
    r.Enum(output["CompressionType"], false, {"GZIP", "NONE"});
  }

  Node resources = input["ResourceConfig"];
  if (!resources.present()) {
    errors.NotNull(resources.path());
  } else {
    if (auto type = r.String(resources["InstanceType"], true, 0, 64, InstanceType,
                             "^ml\\.[a-z0-9]+\\.[a-z0-9]+$ (or local, local_gpu)")) {
      spec.instance_type = *type;
    }
    if (auto count = r.Int(resources["InstanceCount"], true, 0, INT32_MAX)) {
      if (*count != 1) {
        unsupported.push_back(absl::StrFormat(
            "ResourceConfig.InstanceCount %d is not supported by trainwatch yet; use 1", *count));
      }
      spec.instance_count = *count;
    }
    if (auto gb = r.Int(resources["VolumeSizeInGB"], true, 1, INT32_MAX)) spec.volume_size_gb = *gb;
    r.String(resources["VolumeKmsKeyId"], false, 0, 2048);
    r.Int(resources["KeepAlivePeriodInSeconds"], false, 0, 3600);
    if (resources["InstanceGroups"].present()) {
      unsupported.push_back("ResourceConfig.InstanceGroups is not supported by trainwatch yet");
    }
  }

  Node stopping = input["StoppingCondition"];
  if (!stopping.present()) {
    errors.NotNull(stopping.path());
  } else {
    if (auto max = r.Int(stopping["MaxRuntimeInSeconds"], false, 1, 2419200)) {
      spec.max_runtime_s = *max;
    }
    r.Int(stopping["MaxWaitTimeInSeconds"], false, 1, INT32_MAX);
  }

  if (auto env = r.Map(input["Environment"], 48, 512, 512)) {
    for (const auto& [k, v] : *env) {
      if (!EnvKey(k)) {
        nlohmann::json key = k;
        errors.Pattern(input["Environment"].path() + ".key", key, "[a-zA-Z_][a-zA-Z0-9_]*");
      }
    }
    spec.environment = *env;
  }

  spec.profiling_interval_ms = 1000;  // instance metrics, as SageMaker always publishes them
  if (Node profiler = input["ProfilerConfig"]; profiler.present()) {
    r.String(profiler["S3OutputPath"], false, 0, 1024, StorageUri, "^(https|s3)://([^/]+)/?(.*)$");
    r.Map(profiler["ProfilingParameters"], 20, 256, 256);
    std::optional<int64_t> interval = 500;
    if (Node ms = profiler["ProfilingIntervalInMilliseconds"]; ms.present()) {
      interval = r.Int(ms, false, 1, 60000);
      if (interval && *interval != 100 && *interval != 200 && *interval != 500 &&
          *interval != 1000 && *interval != 5000 && *interval != 60000) {
        errors.Enum(ms.path(), ms.raw(), {"100", "200", "500", "1000", "5000", "60000"});
        interval.reset();
      }
    }
    if (interval) spec.profiling_interval_ms = *interval;
    if (r.Bool(profiler["DisableProfiler"]).value_or(false)) spec.profiling_interval_ms = 0;
  }

  ReadRules(input["DebugRuleConfigurations"], false, r, &spec);
  ReadRules(input["ProfilerRuleConfigurations"], true, r, &spec);

  if (Node hook = input["DebugHookConfig"]; hook.present()) {
    r.String(hook["S3OutputPath"], true, 0, 1024, StorageUri, "^(https|s3)://([^/]+)/?(.*)$");
    r.String(hook["LocalPath"], false, 0, 4096);
    r.Map(hook["HookParameters"], 20, 256, 256);
    if (auto collections = r.List(hook["CollectionConfigurations"], false, 0, 20)) {
      for (const Node& c : *collections) {
        r.String(c["CollectionName"], false, 1, 256);
        r.Map(c["CollectionParameters"], 20, 256, 256);
      }
    }
  }
  if (Node tb = input["TensorBoardOutputConfig"]; tb.present()) {
    r.String(tb["S3OutputPath"], true, 0, 1024, StorageUri, "^(https|s3)://([^/]+)/?(.*)$");
    r.String(tb["LocalPath"], false, 0, 4096);
  }
  if (Node cp = input["CheckpointConfig"]; cp.present()) {
    r.String(cp["S3Uri"], true, 0, 1024, StorageUri, "^(https|s3)://([^/]+)/?(.*)$");
    r.String(cp["LocalPath"], false, 0, 4096);
  }
  if (Node retry = input["RetryStrategy"]; retry.present()) {
    r.Int(retry["MaximumRetryAttempts"], true, 1, 30);
  }
  if (auto tags = r.List(input["Tags"], false, 0, 50)) {
    for (const Node& t : *tags) {
      std::optional<std::string> key = r.String(t["Key"], true, 1, 128);
      std::optional<std::string> value = r.String(t["Value"], false, 0, 256);
      if (key) spec.tags.emplace_back(*key, value.value_or(""));
    }
  }
  for (const char* flag : {"EnableNetworkIsolation", "EnableInterContainerTrafficEncryption",
                           "EnableManagedSpotTraining"}) {
    r.Bool(input[flag]);
  }

  if (!errors.empty()) return errors.ToStatus("ValidationException");
  if (!unsupported.empty()) return ValidationException(unsupported.front());

  // The rules: as configured (checked as `trainwatch run --rules` checks
  // them), or the default set.
  nlohmann::json rule_lists = nlohmann::json::object();
  for (const char* key : {"ProfilerRuleConfigurations", "DebugRuleConfigurations"}) {
    if (input.raw().contains(key)) rule_lists[key] = input.raw()[key];
  }
  if (!rule_lists.empty()) {
    absl::StatusOr<std::vector<model::RuleConfiguration>> configs =
        rules::ParseRuleConfigurations(rule_lists, "request");
    if (!configs.ok()) return ValidationException(std::string(configs.status().message()));
    spec.rule_configurations = std::move(*configs);
  }
  if (spec.rule_configurations.empty()) spec.rule_configurations = rules::DefaultRuleConfigurations();
  if (absl::Status s =
          rules::ValidateRuleConfigurations(&spec.rule_configurations, rules::Profile::kDefault);
      !s.ok()) {
    return ValidationException(std::string(s.message()));
  }
  spec.step_metric = rules::DefaultStepMetric(spec.metric_definitions);

  // What DescribeTrainingJob echoes: the request with SageMaker's defaults.
  nlohmann::json echo = input.raw();
  echo.erase("Tags");
  echo["StoppingCondition"]["MaxRuntimeInSeconds"] = spec.max_runtime_s;
  if (echo.contains("ProfilerConfig") &&
      !echo["ProfilerConfig"].contains("ProfilingIntervalInMilliseconds")) {
    echo["ProfilerConfig"]["ProfilingIntervalInMilliseconds"] = 500;
  }
  for (const char* flag : {"EnableNetworkIsolation", "EnableInterContainerTrafficEncryption",
                           "EnableManagedSpotTraining"}) {
    if (!echo.contains(flag)) echo[flag] = false;
  }
  spec.request_json = echo.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return spec;
}

}  // namespace trainwatch::api::sagemaker
