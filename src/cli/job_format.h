#pragma once
// Human-readable rendering of training jobs for the terminal (`describe`,
// `jobs`, the end of `run`). The machine-readable shape (DescribeTrainingJob
// JSON) is the api layer's.

#include <cstdint>
#include <string>
#include <vector>

#include "model/job_record.h"

namespace trainwatch::cli {

// Multi-line description: status, times, command, failure reason, status
// transitions and final metrics. `now_ms` dates a running job's elapsed time.
std::string FormatJobDescription(const model::JobRecord& job, int64_t now_ms);

// One line per job (name, status, secondary status, created, duration), with a header.
// The "Rules:" section of a description: each configured rule's status and
// details, then its issues with their recommendations.
std::string FormatRuleStatuses(const model::JobRecord& job);

std::string FormatJobTable(const std::vector<model::JobRecord>& jobs, int64_t now_ms);

// "9s", "2m05s", "1h02m" from milliseconds.
std::string FormatElapsed(int64_t ms);

// Shortest text that parses back to the same double ("0.1", "1e-05", "3").
std::string FormatDouble(double value);

}  // namespace trainwatch::cli
