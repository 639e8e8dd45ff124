// ListMetrics (spec/aws-api.md §4.7): 500 metrics a page in (Namespace,
// MetricName, dimensions) order; the token is the last metric of the page.
#include "absl/strings/str_format.h"
#include "api/errors.h"
#include "api/cloudwatch/cloudwatch.h"
#include "api/cloudwatch/statistics.h"
#include "api/pagination.h"

namespace trainwatch::api::cloudwatch {
namespace {

nlohmann::json MetricToJson(const MetricId& m) {
  nlohmann::json dims = nlohmann::json::array();
  for (const model::Dimension& d : m.dimensions) dims.push_back({d.name, d.value});
  return {{"n", m.ns}, {"m", m.metric}, {"d", dims}};
}

std::optional<MetricId> MetricFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return std::nullopt;
  auto n = j.find("n"), m = j.find("m"), d = j.find("d");
  if (n == j.end() || m == j.end() || d == j.end() || !n->is_string() || !m->is_string() ||
      !d->is_array()) {
    return std::nullopt;
  }
  MetricId id{n->get<std::string>(), m->get<std::string>(), {}};
  for (const auto& pair : *d) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string()) {
      return std::nullopt;
    }
    id.dimensions.push_back({pair[0].get<std::string>(), pair[1].get<std::string>()});
  }
  return id;
}

}  // namespace

absl::StatusOr<ListMetricsRequest> DecodeListMetrics(const Node& input, const Context& context) {
  Problems problems;
  ListMetricsRequest request;
  request.query.ns = ReadNamespace(input["Namespace"], false, &problems);
  request.query.metric = ReadMetricName(input["MetricName"], false, &problems);

  Node dims = input["Dimensions"];
  absl::StatusOr<std::vector<Node>> filters = dims.List();
  if (!filters.ok()) {
    problems.Add("InvalidParameterValue", std::string(filters.status().message()));
  } else if (filters->size() > kMaxDimensionFilters) {
    problems.Add("InvalidParameterValue",
                 absl::StrFormat("The collection Dimensions must not have a size greater than %d.",
                                 kMaxDimensionFilters));
  } else {
    for (const Node& f : *filters) {
      Node name = f["Name"];
      if (!name.present()) {
        problems.Add("MissingParameter",
                     absl::StrFormat("The parameter %s is required.", name.path()));
        continue;
      }
      absl::StatusOr<std::string> n = name.String();
      if (!n.ok() || n->empty() || n->size() > model::kMaxNameBytes) {
        problems.Add("InvalidParameterValue",
                     absl::StrFormat("The parameter %s must be 1-255 characters.", name.path()));
        continue;
      }
      DimensionFilter filter{*n, std::nullopt};
      if (Node value = f["Value"]; value.present()) {
        absl::StatusOr<std::string> v = value.String();
        if (!v.ok() || v->empty() || v->size() > model::kMaxDimensionValueBytes) {
          problems.Add("InvalidParameterValue",
                       absl::StrFormat("The parameter %s must be 1-1024 characters.",
                                       value.path()));
          continue;
        }
        filter.value = *v;
      }
      request.query.dimensions.push_back(std::move(filter));
    }
  }

  request.query.active_since_ms = context.now_ms - 14 * kDayMs;
  if (Node recent = input["RecentlyActive"]; recent.present()) {
    absl::StatusOr<std::string> r = recent.String();
    if (!r.ok() || *r != "PT3H") {
      problems.Add("InvalidParameterValue", "The parameter RecentlyActive must be PT3H.");
    } else {
      request.query.active_since_ms = context.now_ms - 3 * kHourMs;
      request.recently_active = true;
    }
  }
  if (Node linked = input["IncludeLinkedAccounts"]; linked.present()) {
    absl::StatusOr<bool> b = linked.Bool();
    if (!b.ok()) {
      problems.Add("InvalidParameterValue", std::string(b.status().message()));
    } else {
      request.include_linked_accounts = *b;
    }
  }
  if (Node owner = input["OwningAccount"]; owner.present()) {
    absl::StatusOr<std::string> o = owner.String();
    request.other_account = !o.ok() || *o != context.account_id;
  }
  if (Node token = input["NextToken"]; token.present()) {
    absl::StatusOr<std::string> text = token.String();
    const std::string shown = text.ok() ? *text : "";
    absl::StatusOr<nlohmann::json> cursor = DecodeToken(
        CursorKind::kListMetrics, MetricListingBinding(request.query, request.recently_active ? "PT3H" : ""), shown,
        "InvalidParameterValue",
        absl::StrFormat("The parameter NextToken %s is invalid", QuoteValue(shown)));
    std::optional<MetricId> after;
    if (cursor.ok()) {
      if (auto a = cursor->find("a"); a != cursor->end()) after = MetricFromJson(*a);
    }
    if (!cursor.ok()) {
      problems.Add("InvalidParameterValue", std::string(MessageOf(cursor.status())));
    } else if (!after) {
      problems.Add("InvalidParameterValue",
                   absl::StrFormat("The parameter NextToken %s is invalid; pass the NextToken of "
                                   "the previous response.",
                                   QuoteValue(shown)));
    }
    request.query.after = after;
  }
  if (!problems.empty()) return problems.ToStatus();
  return request;
}

absl::StatusOr<ListMetricsResponse> RunListMetrics(const ListMetricsRequest& request,
                                                   const Context& context,
                                                   const Backends& backends) {
  if (backends.metrics == nullptr) {
    return BackendMissing("metric store");
  }
  ListMetricsResponse response;
  response.include_owning_accounts = request.include_linked_accounts;
  response.account_id = context.account_id;
  if (request.other_account) return response;
  ListMetricsQuery query = request.query;
  query.limit = kListMetricsPageSize + 1;
  absl::StatusOr<std::vector<MetricId>> metrics = backends.metrics->ListMetrics(query);
  if (!metrics.ok()) return metrics.status();
  if (metrics->size() > kListMetricsPageSize) {
    metrics->resize(kListMetricsPageSize);
    response.next_token = EncodeToken(CursorKind::kListMetrics,
                                      MetricListingBinding(request.query, request.recently_active ? "PT3H" : ""),
                                      {{"a", MetricToJson(metrics->back())}});
  }
  response.metrics = *std::move(metrics);
  return response;
}

}  // namespace trainwatch::api::cloudwatch
