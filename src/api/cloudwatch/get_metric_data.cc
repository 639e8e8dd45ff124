// GetMetricData (spec/aws-api.md §4.6): MetricStat queries; pagination by
// MaxDatapoints over the results in request order.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/errors.h"
#include "api/cloudwatch/cloudwatch.h"
#include "api/cloudwatch/get_metric_data_internal.h"
#include "api/cloudwatch/statistics.h"
#include "api/pagination.h"

namespace trainwatch::api::cloudwatch {
namespace {

bool ValidId(std::string_view id) {
  if (id.empty() || id.size() > 255 || id[0] < 'a' || id[0] > 'z') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

void ReadQuery(const Node& q, const Context& context, std::set<std::string>* ids,
               std::vector<MetricDataQuery>* out, Problems* problems) {
  size_t before = problems->items.size();
  MetricDataQuery query;
  Node id = q["Id"];
  if (!id.present()) {
    problems->Add("MissingParameter", absl::StrFormat("The parameter %s is required.", id.path()));
  } else if (absl::StatusOr<std::string> s = id.String(); !s.ok()) {
    problems->Add("ValidationError", std::string(s.status().message()));
  } else if (!ValidId(*s)) {
    problems->Add("ValidationError",
                  absl::StrFormat("The value %s for parameter %s is not matching the expected "
                                  "pattern ^[a-z][a-zA-Z0-9_]*$.",
                                  *s, id.path()));
  } else if (!ids->insert(*s).second) {
    problems->Add("ValidationError",
                  absl::StrFormat("The value %s for parameter %s is used by more than one query; "
                                  "Ids must be unique.",
                                  *s, id.path()));
  } else {
    query.id = *s;
  }
  if (Node rd = q["ReturnData"]; rd.present()) {
    absl::StatusOr<bool> b = rd.Bool();
    if (!b.ok()) {
      problems->Add("ValidationError", std::string(b.status().message()));
    } else {
      query.return_data = *b;
    }
  }
  if (Node account = q["AccountId"]; account.present()) {
    absl::StatusOr<std::string> a = account.String();
    if (!a.ok() || *a != context.account_id) {
      problems->Add("ValidationError",
                    absl::StrFormat("The parameter %s must be absent or this server's account "
                                    "(%s).",
                                    account.path(), context.account_id));
    }
  }
  Node label = q["Label"];
  if (label.present()) {
    if (absl::StatusOr<std::string> s = label.String(); s.ok()) {
      query.label = *s;
      query.label_given = true;
    } else {
      problems->Add("ValidationError", std::string(s.status().message()));
    }
  }
  Node stat = q["MetricStat"];
  Node expression = q["Expression"];
  if (stat.present() == expression.present()) {
    problems->Add("ValidationError",
                  absl::StrFormat("The parameter %s must contain exactly one of MetricStat and "
                                  "Expression.",
                                  q.path()));
  } else if (expression.present()) {
    absl::StatusOr<std::string> e = expression.String();
    if (!e.ok() || e->empty() || e->size() > 2048) {
      problems->Add("ValidationError",
                    absl::StrFormat("The parameter %s must be 1-2048 characters.",
                                    expression.path()));
    } else if (absl::StatusOr<query::MetricMath> math = query::MetricMath::Parse(*e); !math.ok()) {
      problems->Add("ValidationError", absl::StrFormat("Error in expression %s: %s", query.id,
                                                       math.status().message()));
    } else {
      query.math = std::make_shared<const query::MetricMath>(*std::move(math));
    }
    query.expression = true;
    query.period_s = 0;  // none given: the MetricStat queries' finest
    if (Node period = q["Period"]; period.present()) {
      if (absl::StatusOr<int64_t> p = period.Int(); !p.ok() || !IsAllowedPeriod(*p)) {
        problems->Add("InvalidParameterValue",
                      absl::StrFormat("The parameter %s must be 1, 5, 10, 20, 30 or a multiple "
                                      "of 60.",
                                      period.path()));
      } else {
        query.period_s = *p;
      }
    }
  } else {
    Node metric = stat["Metric"];
    if (!metric.present()) {
      problems->Add("MissingParameter",
                    absl::StrFormat("The parameter %s is required.", metric.path()));
    } else {
      std::optional<std::string> ns = ReadNamespace(metric["Namespace"], true, problems);
      std::optional<std::string> name = ReadMetricName(metric["MetricName"], true, problems);
      query.metric.dimensions = ReadDimensions(metric["Dimensions"], problems);
      if (ns) query.metric.ns = *ns;
      if (name) query.metric.metric = *name;
    }
    Node period = stat["Period"];
    if (!period.present()) {
      problems->Add("MissingParameter",
                    absl::StrFormat("The parameter %s is required.", period.path()));
    } else if (absl::StatusOr<int64_t> p = period.Int(); !p.ok() || !IsAllowedPeriod(*p)) {
      problems->Add("InvalidParameterValue",
                    absl::StrFormat("The parameter %s must be 1, 5, 10, 20, 30 or a multiple of "
                                    "60.",
                                    period.path()));
    } else {
      query.period_s = *p;
    }
    Node s = stat["Stat"];
    if (!s.present()) {
      problems->Add("MissingParameter", absl::StrFormat("The parameter %s is required.", s.path()));
    } else if (absl::StatusOr<std::string> text = s.String(); !text.ok()) {
      problems->Add("ValidationError", std::string(text.status().message()));
    } else if (absl::StatusOr<Statistic> parsed = ParseAnyStatistic(*text); !parsed.ok()) {
      if (absl::IsUnimplemented(parsed.status())) {
        problems->Add("InvalidParameterValue",
                      absl::StrFormat("The value %s for parameter %s %s", QuoteValue(*text),
                                      s.path(), parsed.status().message()));
      } else {
        problems->Add("ValidationError",
                      absl::StrFormat("The value %s for parameter %s is not a valid statistic.",
                                      *text, s.path()));
      }
    } else {
      query.stat = *parsed;
    }
    query.unit = ReadUnit(stat["Unit"], problems);
  }
  if (problems->items.size() == before) out->push_back(std::move(query));
}

// CloudWatch's label for a query without one: a MetricStat's is the metric
// name, followed by its statistic when the request's MetricStat queries do
// not all have the same statistic, then by its period in seconds when they do
// not all have the same period (never by unit or dimensions). AWS's answers
// recorded in LocalStack's parity tests (test_label_generation) show this.
// An expression's is its Id (no recorded answer of AWS was found).
void SetDefaultLabels(std::vector<MetricDataQuery>* queries) {
  std::set<std::string> stats;
  std::set<int64_t> periods;
  for (const MetricDataQuery& q : *queries) {
    if (q.expression) continue;
    stats.insert(q.stat.name);
    periods.insert(q.period_s);
  }
  for (MetricDataQuery& q : *queries) {
    if (q.label_given) continue;
    if (q.expression) {
      q.label = q.id;
      continue;
    }
    q.label = q.metric.metric;
    if (stats.size() > 1) absl::StrAppend(&q.label, " ", q.stat.name);
    if (periods.size() > 1) absl::StrAppend(&q.label, " ", q.period_s);
  }
}

// Every Id an expression names is a query's, no expression depends on
// itself, an expression without Period takes the MetricStat queries' finest,
// and has_math tells whether a returned result needs math.
void CheckExpressions(GetMetricDataRequest* request, Problems* problems) {
  std::map<std::string, size_t> by_id;
  int64_t finest_s = 0;
  for (size_t i = 0; i < request->queries.size(); ++i) {
    const MetricDataQuery& q = request->queries[i];
    by_id[q.id] = i;
    if (!q.expression) finest_s = finest_s == 0 ? q.period_s : std::min(finest_s, q.period_s);
  }
  // Depth-first from each expression; `state` 1: on the path, 2: done.
  std::vector<int> state(request->queries.size(), 0);
  std::function<bool(size_t)> visit = [&](size_t i) {
    const MetricDataQuery& q = request->queries[i];
    if (!q.expression || state[i] == 2) return true;
    if (state[i] == 1) {
      problems->Add("ValidationError",
                    absl::StrFormat("Error in expression %s: it depends on itself", q.id));
      return false;
    }
    state[i] = 1;
    for (const std::string& ref : q.math->references()) {
      auto it = by_id.find(ref);
      if (it == by_id.end()) {
        problems->Add("ValidationError",
                      absl::StrFormat("Error in expression %s: no query has the Id %s", q.id, ref));
        return false;
      }
      if (!visit(it->second)) return false;
    }
    state[i] = 2;
    return true;
  };
  for (size_t i = 0; i < request->queries.size(); ++i) {
    MetricDataQuery& q = request->queries[i];
    if (!q.expression) continue;
    if (!visit(i)) return;
    if (q.period_s == 0) q.period_s = finest_s == 0 ? 60 : finest_s;
    if (q.return_data) request->has_math = true;
  }
}

}  // namespace

namespace {

// A token resumes the same request: the same queries over the same range, in
// the same order.
CursorBinding TokenBinding(const GetMetricDataRequest& request) {
  CursorBinding binding;
  // Not MaxDatapoints: a page's size does not move where the next one starts.
  binding.Add(request.start_ms).Add(request.end_ms).Add(request.descending ? "desc" : "asc");
  for (const MetricDataQuery& q : request.queries) {
    binding.Add(q.id).Add(q.return_data ? "r" : "-").Add(q.expression ? "e" : "m");
    binding.Add(q.metric.ns).Add(q.metric.metric);
    for (const model::Dimension& d : q.metric.dimensions) binding.Add(d.name).Add(d.value);
    binding.Add(q.period_s).Add(q.stat.name).Add(q.unit ? "u=" + *q.unit : "");
  }
  return binding;
}

}  // namespace

absl::StatusOr<GetMetricDataRequest> DecodeGetMetricData(const Node& input,
                                                         const Context& context) {
  Problems problems;
  GetMetricDataRequest request;
  Node queries = input["MetricDataQueries"];
  if (!queries.present()) {
    problems.Add("MissingParameter", "The parameter MetricDataQueries is required.");
    return problems.ToStatus();
  }
  absl::StatusOr<std::vector<Node>> items = queries.List();
  if (!items.ok()) return ValidationError(MessageOf(items.status()));
  if (items->empty() || items->size() > kMaxMetricDataQueries) {
    return ValidationError(absl::StrFormat(
        "The collection MetricDataQueries must have between 1 and %d items (got %d).",
        kMaxMetricDataQueries, items->size()));
  }
  std::set<std::string> ids;
  for (const Node& q : *items) ReadQuery(q, context, &ids, &request.queries, &problems);
  SetDefaultLabels(&request.queries);
  if (problems.empty()) CheckExpressions(&request, &problems);
  ReadTimeRange("GetMetricData", input, &request.start_ms, &request.end_ms, &problems);

  if (Node scan = input["ScanBy"]; scan.present()) {
    absl::StatusOr<std::string> s = scan.String();
    if (s.ok() && *s == "TimestampAscending") {
      request.descending = false;
    } else if (!s.ok() || *s != "TimestampDescending") {
      problems.Add("InvalidParameterValue",
                   "The parameter ScanBy must be TimestampDescending or TimestampAscending.");
    }
  }
  if (Node max = input["MaxDatapoints"]; max.present()) {
    absl::StatusOr<int64_t> m = max.Int();
    if (!m.ok() || *m < 1) {
      problems.Add("InvalidParameterValue", "The parameter MaxDatapoints must be at least 1.");
    } else {
      request.max_datapoints = std::min(*m, query::kMaxMetricDataDatapoints);
    }
  }
  if (!problems.empty()) return problems.ToStatus();

  if (Node token = input["NextToken"]; token.present()) {
    absl::StatusOr<std::string> text = token.String();
    const std::string shown = text.ok() ? *text : "";
    absl::StatusOr<nlohmann::json> cursor =
        DecodeToken(CursorKind::kMetricData, TokenBinding(request), shown, "InvalidNextToken",
                    absl::StrFormat("The NextToken %s is invalid", QuoteValue(shown)));
    if (!cursor.ok()) return cursor.status();
    const nlohmann::json* q = nullptr;
    {
      auto it = cursor->find("q");
      if (it != cursor->end()) q = &*it;
    }
    if (q == nullptr || !q->is_number_unsigned() ||
        q->get<size_t>() >= request.queries.size()) {
      return AwsStatus("InvalidNextToken",
                       absl::StrFormat("The NextToken %s is invalid; pass the NextToken of the "
                                       "previous response with the same queries.",
                                       QuoteValue(text.ok() ? *text : "")));
    }
    request.resume_query = q->get<size_t>();
    if (auto t = cursor->find("t"); t != cursor->end() && t->is_number_integer()) {
      request.resume_after_ms = t->get<int64_t>();
    }
  }
  return request;
}

namespace internal {


StatisticsQuery MakeStatisticsQuery(const GetMetricDataRequest& request, const Context& context,
                                    size_t qi, size_t max_buckets) {
  const MetricDataQuery& q = request.queries[qi];
  StatisticsQuery query;
  query.metric = q.metric;
  query.unit = q.unit;
  // A MetricStat without Unit aggregates every unit into one point a period.
  query.merge_units = true;
  query.start_ms = request.start_ms;
  query.end_ms = request.end_ms;
  query.period_s = q.period_s;
  query.now_ms = context.now_ms;
  query.statistics = {q.stat};
  query.descending = request.descending;
  if (qi == request.resume_query) query.resume_after_ms = request.resume_after_ms;
  query.max_buckets = max_buckets;
  return query;
}

// Large requests spread their queries over threads, each with a reader of the
// same snapshot: up to kMaxQueryThreads, one per kMinQueriesPerThread queries
// (below about 32 queries a thread costs more than it saves: measured with
// bench/trainwatch/query_http.py-shaped requests on 2 cores).
constexpr size_t kMinQueriesPerThread = 32;
constexpr size_t kMaxQueryThreads = 4;

// Runs fn(reader, k) for k in [0, count) over threads, each with its own
// reader of the same snapshot (a fork), when there are enough to be worth it;
// else, or when no fork or thread is to be had, on this thread.
void RunSpread(MetricsReader& reader, size_t count,
               const std::function<void(MetricsReader*, size_t)>& fn) {
  // Asked once: glibc reads /sys for it on every call.
  static const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  size_t threads = count < 2 * kMinQueriesPerThread
                       ? 1
                       : std::min({cores, kMaxQueryThreads, count / kMinQueriesPerThread});
  std::vector<std::unique_ptr<MetricsReader>> forks;
  while (forks.size() + 1 < threads) {
    std::unique_ptr<MetricsReader> fork = reader.Fork();
    if (fork == nullptr) break;
    forks.push_back(std::move(fork));
  }
  threads = forks.size() + 1;
  auto run = [&](MetricsReader* r, size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) fn(r, k);
  };
  const size_t per_thread = (count + threads - 1) / threads;
  std::vector<std::thread> workers;
  for (size_t t = 1; t < threads; ++t) {
    const size_t begin = std::min(count, t * per_thread);
    const size_t end = std::min(count, begin + per_thread);
    try {
      workers.emplace_back(run, forks[t - 1].get(), begin, end);
    } catch (const std::system_error&) {
      run(&reader, begin, end);  // no thread to be had: this one does it
    }
  }
  run(&reader, 0, std::min(count, per_thread));
  for (std::thread& w : workers) w.join();
}

}  // namespace internal

namespace {

using internal::MakeStatisticsQuery;
using internal::RunSpread;
using internal::kMinQueriesPerThread;

// An answer computed ahead of the in-order pass, and the bucket limit it ran
// with.
struct AnswerAhead {
  std::optional<absl::StatusOr<std::vector<StatisticsBucket>>> buckets;
  size_t max_buckets = 0;
};

// Runs the queries that return data ahead, on several threads, when the
// whole answer fits in one page (so nothing is computed that the page would
// not hold). Leaves `ahead` empty when that does not apply.
void RunQueriesAhead(const GetMetricDataRequest& request, const Context& context,
                     MetricsReader& reader, std::vector<AnswerAhead>* ahead) {
  std::vector<size_t> todo;
  for (size_t qi = request.resume_query; qi < request.queries.size(); ++qi) {
    const MetricDataQuery& q = request.queries[qi];
    if (q.return_data && !q.expression) todo.push_back(qi);
  }
  if (todo.size() < 2 * kMinQueriesPerThread) return;
  // At most one bucket per period per query (units are merged): the page
  // must hold them.
  const size_t page = static_cast<size_t>(request.max_datapoints);
  std::vector<size_t> estimate(request.queries.size(), 1);
  size_t total = 0;
  for (size_t qi : todo) {
    const int64_t period_ms = request.queries[qi].period_s * int64_t{1000};
    if (period_ms > 0 && request.end_ms > request.start_ms) {
      estimate[qi] = static_cast<size_t>((request.end_ms - request.start_ms) / period_ms) + 1;
    }
    total += estimate[qi];
    if (total > page) return;
  }
  ahead->resize(request.queries.size());
  RunSpread(reader, todo.size(), [&](MetricsReader* r, size_t k) {
    const size_t qi = todo[k];
    AnswerAhead& a = (*ahead)[qi];
    a.max_buckets = std::min(estimate[qi], page) + 1;
    a.buckets = r->GetStatistics(MakeStatisticsQuery(request, context, qi, a.max_buckets));
  });
}

}  // namespace

absl::StatusOr<GetMetricDataResponse> RunGetMetricData(const GetMetricDataRequest& request,
                                                       const Context& context,
                                                       const Backends& backends) {
  if (backends.metrics == nullptr) {
    return BackendMissing("metric store");
  }
  // One state of the data for every query (and one read view instead of one each).
  absl::StatusOr<std::unique_ptr<MetricsReader>> snapshot = backends.metrics->Snapshot();
  if (!snapshot.ok()) return snapshot.status();
  MetricsReader& reader = *snapshot != nullptr ? **snapshot : *backends.metrics;
  if (request.has_math) return internal::RunWithMath(request, context, reader);
  std::vector<AnswerAhead> ahead;
  if (*snapshot != nullptr) RunQueriesAhead(request, context, reader, &ahead);
  GetMetricDataResponse response;
  size_t remaining = static_cast<size_t>(request.max_datapoints);
  for (size_t qi = request.resume_query; qi < request.queries.size(); ++qi) {
    const MetricDataQuery& q = request.queries[qi];
    if (!q.return_data || q.expression) continue;
    if (remaining == 0) {
      response.next_token = EncodeToken(CursorKind::kMetricData, TokenBinding(request), {{"q", qi}});
      break;
    }
    // One more than the page holds tells whether the query goes on.
    const StatisticsQuery query = MakeStatisticsQuery(request, context, qi, remaining + 1);
    absl::StatusOr<std::vector<StatisticsBucket>> buckets;
    // An answer computed ahead serves when it is whole (shorter than its
    // limit) or holds at least as many buckets as this query may take: what
    // follows only reads its first remaining + 1.
    if (qi < ahead.size() && ahead[qi].buckets &&
        (!ahead[qi].buckets->ok() || (*ahead[qi].buckets)->size() < ahead[qi].max_buckets ||
         ahead[qi].max_buckets >= query.max_buckets)) {
      buckets = std::move(*ahead[qi].buckets);
    } else {
      buckets = reader.GetStatistics(query);
    }
    if (!buckets.ok()) return buckets.status();

    // One bucket per period (units are merged), so a page may end anywhere:
    // the token resumes after the last timestamp it holds.
    const size_t take = std::min(buckets->size(), remaining);
    MetricDataResult result;
    result.id = q.id;
    result.label = q.label;
    for (size_t i = 0; i < take; ++i) {
      const StatisticsBucket& b = (*buckets)[i];
      if (b.values.empty() || !b.values[0]) continue;  // e.g. no percentile for this bucket
      result.timestamps_ms.push_back(b.t_ms);
      result.values.push_back(*b.values[0]);
    }
    remaining -= take;
    bool more = take < buckets->size();
    if (more) {
      result.status_code = "PartialData";
      nlohmann::json cursor = {{"q", qi}};
      if (take > 0) cursor["t"] = (*buckets)[take - 1].t_ms;
      else if (query.resume_after_ms) cursor["t"] = *query.resume_after_ms;
      response.next_token = EncodeToken(CursorKind::kMetricData, TokenBinding(request), cursor);
    }
    response.results.push_back(std::move(result));
    if (more) break;
  }
  return response;
}

}  // namespace trainwatch::api::cloudwatch
