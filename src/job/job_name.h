#pragma once
// Names for jobs started without --name.

#include <cstdint>
#include <string>
#include <vector>

namespace trainwatch::job {

// "<base>-<YYYY-MM-DD-HH-MM-SS-mmm>" (UTC), as the SageMaker Python SDK names jobs;
// valid per model::IsValidJobName. The base is the script the command runs (the
// first argument ending in .py or .sh, e.g. "train" for "python3 src/train.py"),
// else the program's file name; letters and digits kept, other runs of characters
// turned into one hyphen, at most 39 characters; "job" when nothing is left.
std::string GenerateJobName(const std::vector<std::string>& command, int64_t now_ms);

}  // namespace trainwatch::job
