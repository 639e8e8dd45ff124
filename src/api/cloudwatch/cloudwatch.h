#pragma once
// CloudWatch metric operations (spec/aws-api.md §4): PutMetricData,
// GetMetricStatistics, GetMetricData, ListMetrics (and the alarm operations,
// docs/alarms.md), each as
//   Decode*(input)   -> typed request, fully validated (AWS codes and texts)
//   Run*(request)    -> typed response, through the Backends
//   Encode (query XML, JSON 1.0, CBOR) in query_codec.cc / json_codec.cc /
//   cbor_codec.cc.
// Handle() ties them together for the dispatcher.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/backend.h"
#include "api/errors.h"
#include "api/input.h"
#include "model/series.h"
#include "query/metric_math.h"
#include "query/periods.h"

namespace trainwatch::api::cloudwatch {

// What every operation gets besides its input.
struct Context {
  int64_t now_ms = 0;  // when the request arrived
  std::string request_id;
  std::string account_id = "000000000000";
};

// CloudWatch's limits (spec Appendix B).
inline constexpr size_t kMaxMetricData = 1000;
inline constexpr size_t kMaxValuesPerDatum = 150;
inline constexpr size_t kMaxStatistics = 5;
inline constexpr size_t kMaxExtendedStatistics = 10;
using query::kMaxStatisticsDatapoints;  // query/periods.h
inline constexpr size_t kMaxMetricDataQueries = 500;
inline constexpr size_t kListMetricsPageSize = 500;
inline constexpr size_t kMaxDimensionFilters = 10;

// ------------------------------------------------------------ PutMetricData

struct PutMetricDataRequest {
  std::string ns;
  size_t datum_count = 0;
  model::SampleBatch batch;  // one SeriesSamples per (key, storage resolution)
};
absl::StatusOr<PutMetricDataRequest> DecodePutMetricData(const Node& input, int64_t now_ms);
absl::Status RunPutMetricData(const PutMetricDataRequest& request, const Backends& backends);

// ------------------------------------------------------ GetMetricStatistics

struct GetMetricStatisticsRequest {
  MetricId metric;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  int64_t period_s = 60;
  std::vector<Statistic> statistics;
  bool extended = false;  // ExtendedStatistics (else Statistics)
  std::optional<std::string> unit;
};
struct GetMetricStatisticsResponse {
  std::string label;
  std::vector<Statistic> statistics;
  bool extended = false;
  std::vector<StatisticsBucket> datapoints;  // ascending
};
absl::StatusOr<GetMetricStatisticsRequest> DecodeGetMetricStatistics(const Node& input,
                                                                     const Context& context);
absl::StatusOr<GetMetricStatisticsResponse> RunGetMetricStatistics(
    const GetMetricStatisticsRequest& request, const Context& context, const Backends& backends);

// ------------------------------------------------------------ GetMetricData

struct MetricDataQuery {
  std::string id;
  // As given, or CloudWatch's default (SetDefaultLabels).
  std::string label;
  bool label_given = false;
  bool return_data = true;
  // An Expression query: its metric math (query/metric_math.h), and the
  // periods FILL fills (its own Period, else the MetricStat queries' finest).
  bool expression = false;
  std::shared_ptr<const query::MetricMath> math;
  MetricId metric;
  int64_t period_s = 60;
  Statistic stat;
  std::optional<std::string> unit;
};
struct GetMetricDataRequest {
  std::vector<MetricDataQuery> queries;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  bool descending = true;  // ScanBy TimestampDescending (the default)
  int64_t max_datapoints = query::kMaxMetricDataDatapoints;
  // Some returned result is computed by an expression: the request is answered
  // whole, without NextToken (as AWS answers requests with math).
  bool has_math = false;
  // Decoded NextToken: resume at query `query_index`, after `after_ms`.
  size_t resume_query = 0;
  std::optional<int64_t> resume_after_ms;
};
struct MetricDataResult {
  std::string id;
  std::string label;
  std::vector<int64_t> timestamps_ms;
  std::vector<double> values;
  std::string status_code = "Complete";
};
struct GetMetricDataResponse {
  std::vector<MetricDataResult> results;
  std::optional<std::string> next_token;
};
absl::StatusOr<GetMetricDataRequest> DecodeGetMetricData(const Node& input,
                                                         const Context& context);
absl::StatusOr<GetMetricDataResponse> RunGetMetricData(const GetMetricDataRequest& request,
                                                       const Context& context,
                                                       const Backends& backends);

// -------------------------------------------------------------- ListMetrics

struct ListMetricsRequest {
  ListMetricsQuery query;
  bool include_linked_accounts = false;
  bool other_account = false;  // OwningAccount names another account: empty result
  bool recently_active = false;  // RecentlyActive=PT3H (binds the NextToken)
};
struct ListMetricsResponse {
  std::vector<MetricId> metrics;
  std::optional<std::string> next_token;
  bool include_owning_accounts = false;
  std::string account_id;
};
absl::StatusOr<ListMetricsRequest> DecodeListMetrics(const Node& input, const Context& context);
absl::StatusOr<ListMetricsResponse> RunListMetrics(const ListMetricsRequest& request,
                                                   const Context& context,
                                                   const Backends& backends);

// ------------------------------------------------------------------ codecs

// Query protocol (XML) bodies, with the namespace and ResponseMetadata.
std::string EncodeXml(const GetMetricStatisticsResponse& response, std::string_view request_id);
std::string EncodeXml(const GetMetricDataResponse& response, std::string_view request_id);
std::string EncodeXml(const ListMetricsResponse& response, std::string_view request_id);
// For operations without output (PutMetricData).
std::string EncodeEmptyXml(std::string_view operation, std::string_view request_id);

// AWS JSON 1.0 bodies.
std::string EncodeJson(const GetMetricStatisticsResponse& response);
std::string EncodeJson(const GetMetricDataResponse& response);
std::string EncodeJson(const ListMetricsResponse& response);

// Smithy RPC v2 CBOR bodies.
std::string EncodeCbor(const GetMetricStatisticsResponse& response);
std::string EncodeCbor(const GetMetricDataResponse& response);
std::string EncodeCbor(const ListMetricsResponse& response);

// ------------------------------------------------------------- dispatcher

// Runs `operation` and returns the encoded body (query XML, JSON 1.0 or
// CBOR; an operation without output answers CBOR clients with no body).
// Unknown operations: InvalidAction; CloudWatch operations trainwatch does not
// serve yet: the "not implemented" error.
absl::StatusOr<std::string> Handle(std::string_view operation, const Node& input,
                                   Protocol protocol, const Context& context,
                                   const Backends& backends);

// The alarm operations (alarms.cc): PutMetricAlarm, DescribeAlarms,
// DescribeAlarmsForMetric, DeleteAlarms, SetAlarmState, DescribeAlarmHistory;
// nullopt for any other operation.
std::optional<absl::StatusOr<std::string>> HandleAlarmOperation(std::string_view operation,
                                                                const Node& input,
                                                                Protocol protocol,
                                                                const Context& context,
                                                                const Backends& backends);

// Shared validation of names (Namespace, MetricName, Dimensions) used by all
// four operations: appends messages to `errors` (as "code\tmessage").
struct Problems {
  std::vector<std::pair<std::string, std::string>> items;  // (code, message)
  void Add(std::string_view code, std::string message) {
    items.emplace_back(std::string(code), std::move(message));
  }
  bool empty() const { return items.empty(); }
  // One status: the first problem's code, every message joined with '\n' (AWS).
  absl::Status ToStatus() const;
};
// Validates and returns a Namespace (required unless `optional`). Writes
// (`for_write`) may not use the AWS/ namespaces, which AWS reserves for its
// services; reads of them are answered as of any namespace (here: nothing).
std::optional<std::string> ReadNamespace(const Node& node, bool required, Problems* problems,
                                         bool for_write = false);
std::optional<std::string> ReadMetricName(const Node& node, bool required, Problems* problems);
// Dimensions {Name, Value}: validated, sorted by name; duplicates rejected.
std::vector<model::Dimension> ReadDimensions(const Node& node, Problems* problems);
// Unit: one of the StandardUnit values.
std::optional<std::string> ReadUnit(const Node& node, Problems* problems);
// StartTime/EndTime pair (required; start < end), in the words of
// `operation` (GetMetricData or GetMetricStatistics).
void ReadTimeRange(std::string_view operation, const Node& input, int64_t* start_ms,
                   int64_t* end_ms, Problems* problems);
// A CloudWatch timestamp, rounded down to a whole second: the JSON 1.0 clients
// send whole epoch seconds (botocore drops the fraction), so a time given
// with milliseconds in the query protocol is read the same way.
absl::StatusOr<int64_t> ReadTimestampMs(const Node& node);

}  // namespace trainwatch::api::cloudwatch
