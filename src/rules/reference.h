#pragma once
// What rules may read besides their job's own inputs: another job's stored
// tensor statistics, for SimilarAcrossRuns (spec/rules.md §5.11). Rules stay
// functions of their inputs and parameters; the environment hands them a
// loader, which the engine's owner builds over the store (query/). Where
// there is no store (a configuration checked before it runs, unit tests),
// the loader is null and the rule says it could not read the other job.

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "query/reader.h"

namespace trainwatch::rules {

// One statistic of one tensor: "tensor|collection|stat" and, for the
// statistics of parts, "|part" (rules/rule.h's TensorStat, Input::part).
std::string TensorStatisticKey(std::string_view tensor, std::string_view collection, int stat,
                               int part);

// Another job's tensor statistics by step (the step current at each sample's
// time, from the job's step metric).
struct ReferenceRun {
  std::map<std::string, std::map<int64_t, double>> values;  // key -> step -> value
  int64_t last_step = -1;  // the newest step with statistics
  bool ended = false;      // the job had ended when it was read
};

// Reads a job's statistics of the tensors `want` takes (by name and
// collection); NotFound for a job that does not exist.
using TensorWanted = std::function<bool(std::string_view tensor, std::string_view collection)>;
using ReferenceLoader =
    std::function<absl::StatusOr<ReferenceRun>(const std::string& job, const TensorWanted& want)>;

struct RuleEnvironment {
  ReferenceLoader reference = nullptr;  // null: other jobs cannot be read here
};

// A loader over the store's readers (both must outlive it): the job's record
// (its step metric and span), then its raw trainwatch/Tensors samples of rank
// 0 (a distributed job's other ranks are not compared) and its steps.
ReferenceLoader StoreReferenceLoader(query::MetricsReader* metrics, query::JobsReader* jobs);

}  // namespace trainwatch::rules
