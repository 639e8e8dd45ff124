// The CloudWatch Logs dispatcher.
#include "api/logs/logs.h"

#include "absl/strings/str_format.h"
#include "api/errors.h"

namespace trainwatch::api::logs {

absl::StatusOr<std::string> DescribeLogGroups(const Node&, const Context&, const Backends&);
absl::StatusOr<std::string> DescribeLogStreams(const Node&, const Context&, const Backends&);
absl::StatusOr<std::string> CreateLogGroup(const Node&, const Context&, const Backends&);
absl::StatusOr<std::string> CreateLogStream(const Node&, const Context&, const Backends&);
absl::StatusOr<std::string> GetLogEvents(const Node&, const Context&, const Backends&);
absl::StatusOr<std::string> FilterLogEvents(const Node&, const Context&, const Backends&);
absl::StatusOr<std::string> PutLogEvents(const Node&, const Context&, const Backends&);
absl::StatusOr<std::string> DeleteLogGroup(const Node&, const Context&, const Backends&);
absl::StatusOr<std::string> DeleteLogStream(const Node&, const Context&, const Backends&);
absl::StatusOr<std::string> PutRetentionPolicy(const Node&, const Context&, const Backends&);
absl::StatusOr<std::string> DeleteRetentionPolicy(const Node&, const Context&, const Backends&);

namespace {

using Operation = absl::StatusOr<std::string> (*)(const Node&, const Context&, const Backends&);

constexpr std::pair<std::string_view, Operation> kOperations[] = {
    {"DescribeLogGroups", DescribeLogGroups}, {"DescribeLogStreams", DescribeLogStreams},
    {"CreateLogGroup", CreateLogGroup},       {"CreateLogStream", CreateLogStream},
    {"GetLogEvents", GetLogEvents},           {"FilterLogEvents", FilterLogEvents},
    {"PutLogEvents", PutLogEvents},           {"DeleteLogGroup", DeleteLogGroup},
    {"DeleteLogStream", DeleteLogStream},     {"PutRetentionPolicy", PutRetentionPolicy},
    {"DeleteRetentionPolicy", DeleteRetentionPolicy},
};

// Logs operations trainwatch does not serve yet (§6.4 and beyond).
constexpr std::string_view kLater[] = {
    "StartLiveTail",        "StartQuery",
    "StopQuery",            "GetQueryResults",        "DescribeQueries",
    "PutMetricFilter",      "DescribeMetricFilters",  "DeleteMetricFilter",
    "PutSubscriptionFilter", "DescribeSubscriptionFilters", "DeleteSubscriptionFilter",
    "TagLogGroup",          "UntagLogGroup",          "ListTagsLogGroup",
    "TagResource",          "UntagResource",          "ListTagsForResource",
    "GetLogRecord",         "GetLogGroupFields",      "CreateExportTask",
    "DescribeExportTasks",  "AssociateKmsKey",        "DisassociateKmsKey",
};

}  // namespace

absl::StatusOr<std::string> Handle(std::string_view operation, const Node& input,
                                   const Context& context, const Backends& backends) {
  for (const auto& [name, run] : kOperations) {
    if (name == operation) {
      if (absl::Status s = input.ExpectStructure(); !s.ok()) {
        return InvalidParameterException(MessageOf(s));
      }
      return run(input, context, backends);
    }
  }
  for (std::string_view later : kLater) {
    if (operation == later) return NotImplemented(operation);
  }
  return AwsStatus("InvalidAction",
                   absl::StrFormat("Unknown operation %s for Logs_20140328.",
                                   std::string(operation.substr(0, 100))));
}

}  // namespace trainwatch::api::logs
